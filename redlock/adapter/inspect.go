package adapter

import (
	"context"
	"time"
)

// InspectNode is an optional capability of a Node: what an operator needs
// to see and manage the locks of a node (redlock.Client.Inspect, Locks,
// ForceRelease, and the owner records of redlock.WithOwner), read and
// written without a node command on the path of Lock or Unlock. Each
// method must be one atomic step on the node.
//
// A KeyState carries the lock's value and the readers' values, which are
// the holders' secrets (R4): the client uses them to tell holders apart
// and to release by compare-and-delete (R5); it never shows them.
type InspectNode interface {
	Node
	// Inspect reads key in one atomic step: absent, a lock key (a string:
	// its value and remaining time to live), or the readers' hash of a
	// read-write lock (adapter.RWNode: each live reader's value and
	// remaining time, and the waiting writers' marks).
	Inspect(ctx context.Context, key string) (KeyState, error)
	// Scan returns some of the keys that start with prefix, at most about
	// count, from cursor ("" to start), and the cursor of the next call
	// ("" when the scan is done), as Redis SCAN MATCH does: a key present
	// for the whole scan is returned at least once.
	Scan(ctx context.Context, prefix, cursor string, count int) (keys []string, next string, err error)
	// PutNote sets key to note with an expiry of ttl, whatever key held
	// (SET PX): a small public record beside the locks, such as the
	// owner label of a client.
	PutNote(ctx context.Context, key, note string, ttl time.Duration) error
	// Note returns the string under key and whether key exists.
	Note(ctx context.Context, key string) (note string, ok bool, err error)
}

// KeyKind is what a key holds, as InspectNode.Inspect reads it.
type KeyKind uint8

// The kinds of a key.
const (
	// KeyAbsent: no such key.
	KeyAbsent KeyKind = iota
	// KeyLock: a lock key (a string), held by Value.
	KeyLock
	// KeyReaders: a read-write lock's readers' hash (RWNode).
	KeyReaders
	// KeyOther: a key of another type, not a lock.
	KeyOther
)

// String returns the kind's name.
func (k KeyKind) String() string {
	switch k {
	case KeyAbsent:
		return "absent"
	case KeyLock:
		return "lock"
	case KeyReaders:
		return "readers"
	}
	return "other"
}

// KeyState is one key as InspectNode.Inspect read it.
type KeyState struct {
	// Kind is what the key holds.
	Kind KeyKind
	// Value is a lock key's value (KeyLock): a secret.
	Value string
	// TTL is the key's remaining time to live; negative when it has no
	// expiry.
	TTL time.Duration
	// Readers are the live readers of a KeyReaders key: each reader's
	// value (a secret) and remaining time.
	Readers []Reader
	// Waiters is how many writers wait on a KeyReaders key (their marks).
	Waiters int
}

// Reader is one live reader of a read-write lock (KeyState.Readers).
type Reader struct {
	// Value is the reader's lock value: a secret.
	Value string
	// TTL is the reader's remaining time.
	TTL time.Duration
}
