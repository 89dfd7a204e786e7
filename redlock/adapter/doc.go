// Package adapter holds what only the writers of node adapters need: the
// interface a Redis client must offer to serve as a Redlock node (Node), and
// the optional capabilities that the lock client discovers by type assertion
// (fencing, asynchronous and batched requests, release announcements for the
// hand-off, the local hand-over, a set of keys locked as one). Users of locks need none of it: they build
// nodes with an adapter package (redlock/goredis, redlock/rueidis) and pass
// them to redlock.New, where Node is also known as redlock.Node.
//
// Every method speaks Redlock's level of meaning (acquire, release, extend a
// key with a value and a ttl), never raw Redis commands, so an in-memory
// node (redlock/redlocktest) implements the same interfaces without
// emulating EVAL. The rule numbers (R3, R5, ...) refer to docs/spec/redlock.md.
//
// An implementation states each capability it has with a compile-time check:
//
//	var _ adapter.BatchNode = (*Node)(nil)
package adapter
