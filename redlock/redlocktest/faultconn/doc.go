// Package faultconn breaks the connections between a Redis client and its
// node on purpose, so that tests find the defects of an adapter's
// connection handling: a reply handed to the wrong request, a request
// answered twice or never, a lock request answered "acquired" for a value
// the node does not hold.
//
// An Injector dials connections (its Dial has the signature of go-redis'
// Options.Dialer; a rueidis client takes it through ClientOption.DialCtxFn)
// and wraps each in a Conn that, drawn from a seeded source at the rates of
// its Config, fails a Write, writes part of
// it and closes, closes the connection shortly after a write (in the middle
// of a batch's replies), delays a Read, truncates a Read and closes, and
// stalls a connection's reader after its connection failed (a late reader,
// which the scheduler has not run yet); a dial fails, or the connection it
// makes is reset moments later, while the redial and the first batch on it
// are under way. RunLocks drives concurrent lock requests through such
// nodes and checks every answer against the node's own state, read over a
// separate client that no fault touches; Suite runs that as an adapter's
// TestWireFaults (see redlock/goredis and redlock/rueidis), against real
// redis-server nodes started by redlocktest.
//
// The faults are drawn from Config.Seed, so a failing run names its seed and
// the same seed replays the same sequence of draws; which request meets
// which draw still depends on the scheduler, so a replay is likely, not
// certain, to fail the same way.
package faultconn
