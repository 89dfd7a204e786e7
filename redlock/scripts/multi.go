package scripts

import _ "embed"

// The scripts of a set of resources locked as one (adapter.MultiNode,
// adapter.MultiNode). Each is one atomic step over every key of
// the set.
var (
	// AcquireAll sets every lock key only if each is free: none exists,
	// or it holds only waiting writers' marks (R3 for a set). KEYS lock
	// keys; ARGV[1] value; ARGV[2] ttl in ms. Returns 1 when every key was
	// set, else 0 (nothing set).
	AcquireAll = setFree + acquireAll

	// ReleaseAll deletes every lock key that holds the value, announcing
	// each deletion when ARGV[2] (a channel prefix) is not empty (R5,
	// R14). KEYS lock keys; ARGV[1] value; ARGV[2] prefix or "". Returns 1
	// when every key held the value, else 0.
	//
	//go:embed release_all.lua
	ReleaseAll string

	// ExtendAll resets every lock key's expiry only if every one holds
	// the value (R17 for a set). KEYS lock keys; ARGV[1] value; ARGV[2]
	// ttl in ms. Returns 1 when extended, else 0.
	//
	//go:embed extend_all.lua
	ExtendAll string

	// RestoreAll sets every lock key to the value with a new expiry only
	// if each one is missing or holds the value already (an extension's
	// restore of a set that a node forgot in part). KEYS lock keys;
	// ARGV[1] value; ARGV[2] ttl in ms. Returns 1 when set, else 0
	// (nothing set).
	//
	//go:embed restore_all.lua
	RestoreAll string

	// AcquireAllFenced is AcquireAll that also returns the largest fence
	// value of the set (R18 phase 1). KEYS lock keys, then fence keys,
	// then, to read the fence floor, floor keys (ARGV[3] the set's size).
	AcquireAllFenced = floor + setFree + acquireAllFenced

	// RaiseFences raises every fence of the set to the token only if
	// every lock key holds the value and every fence is below the token
	// (R18 phase 2). KEYS lock keys, then fence keys, then, to repair the
	// fence floor, floor keys (ARGV[4] the set's size).
	RaiseFences = floor + raiseFences
)

// The parts the scripts of a set are composed of: set_free.lua begins
// every acquisition of a set.
var (
	//go:embed set_free.lua
	setFree string
	//go:embed acquire_all.lua
	acquireAll string
)
