// Package redlock is a Redlock client: mutual exclusion over N independent
// Redis masters, as specified in the repository's docs/spec/redlock.md (rules
// R1-R18, cited in the code).
//
// # Getting started
//
// A Client is built over N nodes by an adapter package, which holds the Redis
// driver (this package imports none): redlock/rueidis and redlock/goredis each
// have a Dial that takes node URLs.
//
//	client, err := rueidis.Dial(urls, redlock.WithTTL(30*time.Second))
//	...
//	lock, err := client.Lock(ctx, "invoices") // retries until ctx ends
//	if err != nil { ... }                      // errors.Is(err, ErrNotAcquired)
//	defer lock.Unlock(ctx)
//	// work until lock.Until()
//
// Lock retries with a random delay until its context ends; TryLock makes one
// attempt. The lock is held until Lock.Until, after which it expires on its
// own unless extended (Lock.Extend, WithAutoExtend). Client.Do runs a
// function under a lock that extends itself and cancels the function's
// context the moment the lock is lost. Close the client when done: it waits
// for the releases still on their way.
//
// # What is promised
//
// Two clients never both hold a resource before Until, provided that the
// nodes are independent masters without replication; a node that crashes
// keeps its keys (AOF with appendfsync always) or stays down longer than the
// largest ttl in use; clocks run at about the same rate (slewed, never
// stepped); and the holder stops at Until. A pause of the holder past Until
// cannot be seen by the holder: a fencing token (WithFencing, Lock.Token)
// checked by the protected store makes that safe too. What the client can
// check of these itself, it checks before it relies on the nodes: each
// connection reads its server's run id, advertised max ttl (`dlm node
// --max-ttl`), persistence and replicas (read again every 2 s while the
// client locks), and every lock over two nodes that are one server is
// refused with ErrInvalid, without a request; a node whose max ttl is under
// the lock's ttl, that has a replica, or whose user may not read these
// facts (WithUncheckedNodes) is counted as a failed node, and the lock
// refused with ErrInvalid when the other nodes cannot make a quorum
// (Client.CheckNodes lists what was read, and warns). The
// argument for each
// guarantee, and for every feature below, is in the repository's
// docs/design.md; docs/guarantees.md shows what the safety checker measured
// under real faults.
//
// # Features, each an option or a call
//
//   - WithFencing: every grant carries a token larger than every earlier
//     grant's, kept on a quorum of nodes.
//   - WithAutoExtend, Lock.Done, Lock.Err: a lock that extends itself, and a
//     notice when it is lost. Extensions are bounded (WithMaxExtensions).
//   - Hand-off: Unlock announces the release and waiters retry at once, and a
//     waiter of the same client is handed the lock, acquired on its behalf
//     under a value of its own (WithHandoff, WithHandoffLimit; keeping the
//     lock as it is, at no round trip, with WithHandoffKeep).
//   - Client.LockAll: several resources in one lock, all or nothing, without
//     deadlock.
//   - Client.RLock, Client.WLock: read-write locks, writers and plain locks
//     not starved by readers.
//   - Lock.Handle, Client.Resume, Client.Release: a lock that crosses
//     processes (the handle's value is the secret).
//   - WithByzantineNodes: a quorum that tolerates f nodes that lie.
//   - Client.Inspect, Client.Locks, Client.ForceRelease, WithOwner: see who
//     holds what (never a byte of a lock's value) and release by hand.
//   - Nodes that are Redis Clusters: a node URL with cluster=true; the
//     keys on such a node carry hash tags, so every step on a resource runs
//     on one master, and those on the plain nodes of the same list do not
//     (unless WithHashTags): a cluster node in the list leaves the other
//     nodes' keys as they were. New refuses a cluster node with a replica
//     that may promote itself (ErrPromotableReplica), and a running client
//     counts it as failed from then on; failovers are made by hand,
//     after the ttl (docs/operations.md).
//   - WithObserver, WithLogger: every attempt, extension and end of a lock.
//
// The node timeout adapts to the round trips the client sees, so a healthy
// node that answers slowly on a loaded machine is not reported as failed
// (WithNodeTimeout is its floor, and twenty node timeouts or a tenth of the
// ttl its limit). A node that answers after that limit is waited for while
// the quorum needs it, as long as the grant would leave at least half the
// ttl of validity (ttl/2 - drift from the attempt's start; a fenced grant's
// second phase half the validity left at its start, so that one more
// round trip is left at the grant), an extension as long as the lock is
// valid, and a release for up to the ttl: a lock is granted, fenced or
// not, an auto-extended lock kept, and an Unlock confirmed, over such a
// node; over a slower one Lock fails, and its error says the nodes answer
// too late for the ttl (AcquireError.Patience). A lock kept by
// auto-extension is granted over nodes whose round trip leaves each
// extension landing with AutoExtendLead (a third of the ttl) left, about
// a third of the ttl: a grant slower than that returns after the lock's
// first extension, which tells the nodes' round trip from a new
// connection's set-up, and over slower nodes the lock is given back and
// Lock fails the same way (AcquireError.RoundTrip). A node that does not answer
// within that longer wait is timed out for the attempts of the next ttl.
// The validity is always ttl - elapsed - drift from the first request,
// however long the wait.
//
// # Nodes
//
// A Node speaks Redlock (acquire, release, extend a key with a value and a
// ttl). What only adapter writers need (Node's optional capabilities, the
// asynchronous requests) is in redlock/adapter. redlock/redlocktest holds the
// in-memory MemNode, the node conformance suite every adapter must pass,
// and the harness that starts real redis-server processes for tests.
package redlock
