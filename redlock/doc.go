// Package redlock is a Redlock client: mutual exclusion over N independent
// Redis masters, as specified in the project's spec/redlock.md (rules R1-R18,
// cited in the code).
//
// # What it does
//
// An acquisition (Client.Lock, Client.TryLock) reads the monotonic clock (T1),
// sends SET key value NX PX ttl to all N nodes at once (R8.2, R15), each
// request bounded by the node timeout, and decides as soon as the outcome is
// known: a quorum (N/2+1, R8.3) acquired, or too many nodes refused or
// failed for a quorum to be reached. It never waits for a slow or frozen
// node beyond that point. The value is 20 bytes from crypto/rand (R4).
//
// The lock is held only if validity = ttl - (T2 - T1) - drift is positive,
// where T2 is the deciding reply and drift = ttl x factor + 2 ms (R8.4, R9).
// A failed attempt releases on every node, including those that answer after
// the decision (R8.5, R11), and Lock retries after a random delay (R10).
// Unlock releases on every node with a compare-and-delete script (R5, R12).
// Extend re-sets the expiry on every node that still holds the value and
// succeeds only if a quorum confirmed within the remaining validity; it never
// re-creates an expired key (R17).
//
// # What is promised, under which assumptions
//
// Mutual exclusion (R1.1) holds until Lock.Until, provided that
//
//   - the nodes are independent masters, with no replication (R2);
//   - a node that crashes either keeps its keys (AOF with appendfsync always)
//     or stays down for longer than the largest ttl in use before serving
//     again (R16: the delayed restart);
//   - clocks, on the client and on every node, advance at about the same
//     rate: the drift allowance covers a relative error of the drift factor
//     (1% by default). A node whose clock jumps forward expires keys early,
//     and then two clients may hold the lock at once. Clocks must be slewed,
//     never stepped (R18);
//   - the holder stops using the lock at Until. A process pause (GC, page
//     fault, SIGSTOP) or a network delay that outlasts the validity cannot be
//     seen by the holder; only a fencing token checked by the protected
//     storage makes that safe (R18).
//
// Deadlock freedom (R1.2) rests on expiry; fault tolerance (R1.3) on a quorum
// of nodes answering. Under partitions an unlucky client may wait a ttl
// (R14).
//
// # Nodes
//
// The package imports no Redis driver: a Node speaks Redlock (acquire,
// release, extend a key with a value and a ttl). redlock/goredis adapts
// go-redis v9 and provides Dial over node URLs (ParseNodeURL);
// redlock/redlocktest starts real redis-server processes for tests and
// holds the node conformance suite every adapter must pass.
package redlock
