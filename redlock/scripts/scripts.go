// Package scripts holds the Lua scripts that every Redis node adapter runs,
// as real .lua files embedded in the binary: one copy, so that the adapters
// (redlock/goredis, redlock/rueidis) cannot drift apart in what a node does.
// Each script cites the rule it implements.
package scripts

import _ "embed"

// ChannelPrefix starts the name of every release channel: ReleasePublish
// announces the release of lock key k on ChannelPrefix+k (hand-off, R14).
// Every adapter uses it, so that clients over different adapters hear each
// other's releases.
const ChannelPrefix = "dlm:released:"

// ListenKey is a node's listening marker: a client sets it, with a short
// expiry, before it subscribes to any release channel on the node, and
// keeps it set while it listens. The batch script (Batch) announces its
// releases only while it exists, and then only on channels that have a
// subscriber.
const ListenKey = "dlm:listening"

var (
	// Inspect reads a lock key for operators (adapter.InspectNode): its
	// kind, expiry, value, and a read-write lock's live readers and
	// waiting writers, in one atomic step, changing nothing.
	//
	//go:embed inspect.lua
	Inspect string

	// Release deletes the lock key only if it holds the value (R5).
	// KEYS[1] lock key; ARGV[1] value. Returns 1 when deleted, else 0.
	//
	//go:embed release.lua
	Release string

	// ReleasePublish is Release that also publishes the released value on
	// the key's hand-off channel in the same atomic step (R10, R14).
	//
	//go:embed release_publish.lua
	ReleasePublish string

	// Batch runs a node's batch of single-resource acquisitions,
	// releases (announced or not), extensions and transfers in one call,
	// in order, each as its own command or script would (R3, R5, R14,
	// R17). KEYS the key of each operation; ARGV[1] the operations, one
	// letter each (a, r, p, e, t); ARGV[2] the channel prefix; then their
	// arguments. Returns one character per operation (1 acted, 0 not, E
	// error), then a newline and the errors when there is an E.
	//
	//go:embed batch.lua
	Batch string

	// Extend resets the lock key's expiry only if it holds the value, and
	// never creates a key (R17).
	//
	//go:embed extend.lua
	Extend string

	// Transfer hands the lock key from one value to another in one step,
	// or sets it when it is absent; a key that holds any other value is
	// left alone (R3, R5; the local hand-over of adapter.TransferNode).
	// KEYS[1] lock key; ARGV[1] value handed over; ARGV[2] new value;
	// ARGV[3] ttl in ms. Returns 1 when the key holds the new value, else 0.
	//
	//go:embed transfer.lua
	Transfer string

	// AcquireFenced is SET NX PX that also returns the node's fence value
	// for the resource (R18, phase 1 of fencing), and the fence floor's
	// given its key.
	AcquireFenced = floor + acquireFenced

	// RaiseFence raises the fence value to the token only if the lock key
	// still holds the value and the token is above the fence (R18, phase
	// 2), and repairs the fence floor given its key.
	RaiseFence = floor + raiseFence

	// RW runs the operations of read-write locks (adapter.RWNode): readers
	// share the lock key as a hash of expiries, a writer holds it as a
	// string like a plain lock, and a waiting writer's mark keeps new
	// readers out. KEYS[1] lock key; ARGV[1] the operation (racquire,
	// rrelease, rextend, wacquire, wunwait, wmark, wacquirefenced), then
	// its arguments (see the script; RWSteps sends each). Returns 1 when it
	// acted, else 0.
	RW = floor + rw
	// PutRecord stores the record of a lock's holder, bound to the SHA-1
	// of its value, only if the lock key holds that value
	// (adapter.RecordNode).
	//
	//go:embed put_record.lua
	PutRecord string

	// ReadRecord returns the record of the lock key's current holder, and
	// the fence value, in one step (adapter.RecordNode).
	//
	//go:embed read_record.lua
	ReadRecord string
)

// The fence floor (floor.lua: the restart repair of redlock/fencing.go)
// begins every script that reads or repairs it, which are composed of it
// and their own file here.
var (
	//go:embed floor.lua
	floor string
	//go:embed acquire_fenced.lua
	acquireFenced string
	//go:embed raise_fence.lua
	raiseFence string
	//go:embed rw.lua
	rw string
	//go:embed acquire_all_fenced.lua
	acquireAllFenced string
	//go:embed raise_fences.lua
	raiseFences string
)
