// Package redlock is a Redlock client: mutual exclusion over N independent
// Redis masters, as specified in the repository's docs/spec/redlock.md (rules
// R1-R18, cited in the code).
//
// # What it does
//
// An acquisition (Client.Lock, Client.TryLock) reads the monotonic clock (T1),
// sends SET key value NX PX ttl to all N nodes at once (R8.2, R15), each
// request bounded by the node timeout, and decides as soon as the outcome is
// known: a quorum (N/2+1, R8.3) acquired, or too many nodes refused or
// failed for a quorum to be reached. It never waits for a slow or frozen
// node beyond that point. The value is 20 bytes from crypto/rand (R4), after
// a tag that names the client (6 random bytes, drawn once per client).
//
// # The node timeout on a loaded machine
//
// Healthy nodes that are loaded are never reported as failed by a fixed
// clock: the node timeout (WithNodeTimeout, 50 ms by default) is a floor,
// and the bound the client applies is measured against the round trips it
// sees, as TCP's retransmission timeout is (RFC 6298). Each fan-out's sample
// is the time from T1 to its quorum-th answer that is not an error; the
// bound is the smoothed sample plus four mean deviations, between the
// node timeout and its limit, twenty node timeouts or a tenth of the ttl,
// whichever is less (and never below the node timeout). Time the request
// spent queued in the client, or waiting for a core on a busy machine,
// counts in the samples exactly as it counts in the waits, so the bound
// follows the load. A fan-out whose time ran out before a quorum answered
// doubles the bound of the next ones (up to the limit) until a sample
// comes, and a new client waits up to the limit until its first sample.
// When the bound passes, the attempt reads it again (the attempts that ran
// out meanwhile may have raised it), and a node that has not answered this
// request but has answered another within the last limit is busy, not
// failed: the attempt waits on for it, one bound at a time, up to the limit
// (a node silent for longer than the limit is timed out at the bound); and an
// attempt whose timer fires late by more than a quarter of the bound (the
// client itself was not running) judges one bound later. One
// slow or frozen node among N never moves the bound, since it is not among
// the quorum-th fastest, so it still costs an acquisition nothing when a
// quorum answers; a quorum of frozen nodes costs an attempt the current
// bound: the node timeout once the client has seen fast answers. Safety
// does not depend on the bound: validity is counted from T1 (R9).
//
// The lock is held only if validity = ttl - (T2 - T1) - drift is positive,
// where T2 is the deciding reply and drift = ttl x factor + 2 ms (R8.4, R9).
// A failed attempt releases on every node, including those that answer after
// the decision (R8.5, R11); a failed final attempt (TryLock) also waits for
// those, so that its error reports every node and leaves no key behind. Lock
// retries after a random delay (R10).
//
// When the nodes support it (adapter.HandoffNode, as redlock/rueidis and redlock/goredis do),
// Unlock announces the release and the client's waiters for that resource
// retry at once, one at a time in FIFO order, instead of sleeping out their
// delay; the timed random retry stays as the fallback for a lost
// announcement. When another Lock call of the same client waits for the
// resource, Unlock hands the lock over. When nobody read the lock's value
// (Value, Handle) nor published a record bound to it (PutRecord), no
// extension found it gone from too many nodes, it was not the caller's
// (WithValue), fencing is off, the client is not closing, the
// waiter asked for the same ttl and drift factor, and at least 7/8 of the
// waiter's validity (ttl - drift) remains, the waiter keeps the lock as it
// is: same value, same Until, and no node is asked, since the keys already
// hold that value on a quorum until then (R9, R13) and this client alone
// decides which of its calls relies on them. Otherwise Unlock acquires on
// the waiter's behalf, sending the waiter's SET NX to each node right
// behind the release (in the same batch over redlock/rueidis and
// redlock/goredis), or, when every node is an adapter.TransferNode, turning
// the key from the holder's value into the waiter's in one atomic step so
// that the key is never free; the waiter's Lock returns that lock only once
// a quorum holds its new value within its validity, exactly as after its
// own attempt (R8.3, R9); otherwise it retries at once. A value that was
// read is never passed on, so it stays a check-and-set guard of one holder
// (R18); once a lock was kept, its old Value is "" and its Handle carries
// no value, so read the value before Unlock (a *Lock printed with fmt or
// logged with log/slog shows no value). WithHandoffLimit bounds the hand-overs in a row within
// one client (default 16) before a release is announced to every client's
// waiters alike, and a lock handed over keeps counting the extensions of
// the locks before it (R17). A waiting client listens for a resource's
// releases on two nodes (every node announces each release; two keep the
// announcements coming while one node is down). The clients woken by one
// announced release attempt in turn, not all at once: each value starts
// with a tag drawn once per client, so every client knows which clients
// released the resource in which order, and a client lets one slot (its
// smoothed round trip to the nodes, twice, plus four deviations) pass per
// client that released before it did: the client that released least
// recently (or never, as far as it heard) goes at once, with no jitter, and
// the last holder last; a client alone at the resource lets one slot pass
// after its own release. After a split vote the first rank draws a
// jitter too (R10). Known limits: the values of WithValue carry no tag, so
// the other clients cannot rank a client that uses it, and its share of
// the turns among tagged clients is not bounded by 2 (seen: 2.2 times
// theirs, TestHandoffUntaggedClientTakesItsShare, skipped); and anyone who
// may PUBLISH on a node can forge an announcement, which costs each
// waiting client about one attempt. A lock that had already ended (lost, expired) is never
// handed over. WithHandoff(false) turns the hand-off off.
// Unlock releases on every node with a compare-and-delete script (R5, R12),
// even when its context is already done, each release bounded by the
// release timeout (WithReleaseTimeout, 1s by default), not the node
// timeout: a healthy node that answers slowly because its machine is busy
// must not turn a release into a failure and leave the key for a ttl.
// No call waits past its context's end (a context live when the call
// began): TryLock, Lock, the read-write and set locks, Extend, Resume,
// Unlock and Release return by it, and what they still owe the nodes (the
// releases of a failed attempt, a writer's waiting marks) goes on in the
// background, bounded by its timeouts; Client.Close waits for it.
// Extend re-sets the expiry on every node that still holds the value and
// succeeds only if a quorum confirmed within the remaining validity; it
// never re-creates an expired key (R17).
//
// Every operation that goes to all nodes runs through one engine: the
// request starts on every node at once, through adapter.AsyncNode.Start
// where every node has it (no goroutine per node; redlock/rueidis and
// redlock/goredis batch the requests of all concurrent operations to a node
// into one round trip),
// else on a goroutine per node; the answers are collected until the quorum
// rule decides or the node timeout passes, and an explicit rule settles the
// answers that come later (a failed acquisition releases them, R8.5).
// Unlock and Extend return as soon as a quorum confirmed; the slower nodes'
// requests finish in the background, and Close waits for them.
//
// Close makes Lock calls that wait to retry return at once with an error
// that satisfies errors.Is(err, ErrClosed). Client.Do releases the lock
// however fn ends, a panic included. An acquisition ended by its context
// reports the nodes that had not answered as NoReply, so such an error
// never claims ErrNoQuorum.
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
//     storage makes that safe (R18, WithFencing below);
//   - every node answers truthfully, unless WithByzantineNodes says how many
//     may lie (below).
//
// Deadlock freedom (R1.2) rests on expiry; fault tolerance (R1.3) on a quorum
// of nodes answering. Under partitions an unlucky client may wait a ttl
// (R14).
//
// # Nodes that are Redis Clusters
//
// Each of the N nodes may itself be a Redis Cluster, so that a node's keys,
// requests and memory are spread over many masters while the quorum is
// still counted over the N nodes (a node URL with cluster=true; see
// ParseNodeURL and adapter.ClusterNode). The client then builds every key
// with a hash tag, prefix{resource} (WithHashTags): the lock key, fence
// key, record key and release channel of a resource are in one hash slot,
// so each script on a resource runs on one master, atomically, as on a
// single server. A set of resources (LockAll) may span slots; a cluster
// node then steps each slot's keys in one script and grants the set only
// when every slot did, releasing the slots that did when one did not: still
// all or nothing on the node, never waiting while holding part of a set
// (so no deadlock), at worst two overlapping sets both refused there and
// retried (R10).
//
// The argument for mutual exclusion is the one above, applied per slot:
// the N clusters must be independent (no master in two of them, R2), and a
// master that loses its keys is a node that forgot its locks for the slots
// it serves (R16). A master loses them when it restarts without persistence,
// and when a replica takes its slots over after asynchronous replication
// had not yet copied the latest SET (a failover: the replica is promoted
// without the keys the master acknowledged last). So the guarantees hold
// on a cluster node that has
//
//   - no replicas, and masters that either persist with appendfsync always
//     or restart only after the largest ttl (dlm node --cluster does the
//     latter); or
//   - replicas whose failover is delayed past the largest ttl (a
//     cluster-node-timeout above it, or cluster-replica-no-failover yes with
//     failovers made by hand once the ttl has passed), so that a promoted
//     replica serves only after every lock it may have missed expired.
//
// They do not hold with replicas that fail over automatically within a ttl
// (Redis' default, cluster-node-timeout 15s, is shorter than many ttls),
// unless the other N-1 nodes still make a quorum without the node (one
// amnesiac node is outvoted only with WithByzantineNodes, as for any node
// that forgets). A lost master makes the locks of its slots unavailable on
// that node only, until its slots are served again, provided the other
// masters are a majority of the cluster's (Redis Cluster stops a minority;
// so use 3 masters or more); at worst the node stops whole: one node of N,
// which the quorum tolerates. dlm doctor reports each master's persistence,
// replicas and failover setting. The checker (dlm torture, scenarios
// cluster-master-killed and cluster-replica-promoted) measures both cases:
// see docs/guarantees.md.
//
// # Fencing tokens (WithFencing)
//
// A lock built on expiry cannot protect a resource from a holder that
// paused past its validity (R18). With WithFencing every grant carries a
// token, Lock.Token, and the protected storage remembers the largest token
// it has seen and refuses a write that carries a smaller one. The token is
// kept on the nodes as a quorum max-register, in two phases:
//
//   - phase 1 is the acquisition itself: one script per node sets the lock
//     key (SET NX PX) and, when it set it, reads the node's fence value for
//     the resource (a separate key, prefix "dlm:fence:", that does not
//     expire with the lock);
//   - the client takes t = the largest fence value read from the acquiring
//     quorum, plus one;
//   - phase 2: one script per node sets the fence to t only if the lock key
//     still holds this client's value and the fence is below t. The lock is
//     granted only if a quorum confirmed phase 2 within the validity (both
//     phases count in T2 - T1, R9); otherwise it is released everywhere
//     (R8.5).
//
// What it promises, and why:
//
//   - Any two granted tokens of a resource differ. Their confirming quorums
//     share a node, and on that node the second raise succeeded only because
//     its token was above the fence, which the first raise had set. This
//     needs only that nodes keep their fence values.
//   - A grant that follows another gets a larger token. Let grant A confirm
//     token a on quorum P, and grant B come after A. B's acquiring quorum Q
//     shares a node x with P. On x, B's SET NX found no key; A's key was
//     there from A's SET until at least A's raise; and B's key could not
//     have been set and gone before A's SET, because B's keys live for the
//     ttl (R13) and B was granted after A. So B read x's fence after A
//     raised it: a value of at least a, and B's token is at least a + 1.
//     This needs the assumptions of mutual exclusion above (keys live their
//     ttl) plus durable fence values.
//   - A client that stops between the phases (a pause, R18) and resumes
//     after its keys are gone is refused in phase 2: it never holds a token
//     older than a later holder's.
//
// The cost is a second round trip to the nodes per acquisition (see
// BenchmarkFencing) and a Lua script instead of SET for phase 1; Unlock and
// Extend are unchanged. Every node must implement adapter.FencingNode (New
// refuses others), and nodes must not evict keys (maxmemory-policy
// noeviction).
//
// Restarts without persistence. A node that restarts empty forgets its
// fence values, and after such restarts on enough nodes a quorum may read
// a smaller value than the last token. Nodes with adapter.FenceFloorNode
// (redlock/goredis, redlock/rueidis) are repaired, for single-resource
// locks (Lock and TryLock of one resource): each keeps a floor key
// (the fence prefix itself, never expiring) whose absence tells that the
// node is new or lost its keys; phase 1 reads it (the fence counts as at
// least the floor), and when a node of the acquiring quorum lacks it, the
// token is at least the client's wall clock in microseconds and phase 2
// sets the missing floors to the token. Then tokens strictly increase
// across any sequence of restarts without persistence (all nodes at once
// included), provided that the wall clock of a client that repairs is not
// behind that of an earlier repairing client by more than the time between
// them (the grants counted since then, each taking round trips, stay below
// the clock in microseconds), and that every client of the resource has
// the repair; without a
// loss the clock is not used. The first grant on new nodes is a repair, so
// tokens start at about 1.8e15 there, then count. The argument is in
// fencing.go and docs/fencing.md. Sets (LockAll) and read-write locks read
// no floor: their tokens need durable fence values, AOF with appendfsync
// always (R16.2); the delayed restart of R16.3 protects lock keys but not
// fence values.
//
// Memory: by default a fence key is never deleted, about 100 bytes per
// resource name ever locked, on each node. For workloads with millions of
// short-lived names, WithFenceRetention(d) gives fence keys an expiry of d
// after their last grant, and every token is then at least the granting
// client's wall clock in microseconds since 1970 (a clock-derived floor,
// tokens around 1.8e15, far from overflow). A resource idle for longer
// than d starts again from that floor, which exceeds every earlier token
// as long as the clients' wall clocks are within d of true time, and were
// never stepped back by d or more: with a retention of days, an error of
// days. That is the price: past the retention, ordering rests on
// wall clocks instead of on the nodes.
//
// # Auto-extension and the loss of a lock
//
// WithAutoExtend extends a lock (R17) every ttl/3 (WithExtendInterval) in a
// background goroutine, which stops on Unlock and on Client.Close.
// Lock.Done closes when the lock is no longer held and Lock.Err says why:
// ErrUnlocked; ErrLost when an extension found the keys gone on too many
// nodes (detected at the next extension, within about ttl/3); ErrExpired
// when the validity passed without a successful extension (failed
// extensions are retried until then); ErrClosed. Extensions are bounded by
// WithMaxExtensions (default DefaultMaxExtensions, 1000), manual or
// automatic, because unbounded extension lets one client keep a resource
// forever (R17, R1.2); at the bound an auto-extended lock runs out at its
// validity with ErrExpired and ErrMaxExtensions. Client.Do acquires,
// auto-extends, runs a function with a context cancelled the moment the
// lock is lost (its cause is the reason), and releases. Done closing is a
// notice, not a guarantee: a holder that is paused does not see it, which
// is what fencing is for.
//
// # Several resources in one lock (LockAll)
//
// Client.LockAll, Client.TryLockAll and Client.DoAll lock a set of
// resources as one lock, all or nothing, in one round: one key per
// resource on every node, all holding the lock's one value. Each operation on the set is one atomic
// step per node (adapter.MultiNode, one Lua script): AcquireAll sets every
// key of the set only if none exists; ExtendAll extends them only if every
// one holds the value; ReleaseAll deletes those that do. The engine carries
// these requests as it carries those of one key, so the quorum, the
// validity (T1 before the first request, T2 at the deciding answer), the
// release of a failed attempt on every node (R8.5), the timeouts and the
// observers are those of one resource. The names are sorted; an empty
// list, an empty name or a duplicate is refused (ErrInvalid). What is
// promised, and why:
//
//   - Mutual exclusion per resource, against sets and single locks alike
//     (the keys are the same). A grant of the set S rests on a quorum where
//     S's keys were all set at one instant (the script is atomic) and live
//     the ttl (R13). Any other grant that includes a resource r of S needs a
//     quorum where r's key was free; the two quorums share a node, where r's
//     key held S's value throughout. This is the argument for one resource,
//     applied to each resource of the set, under the same assumptions.
//   - All or nothing: no node ever holds part of a set for one value
//     (short of an outside deletion or an eviction), so a grant is of the
//     whole set. An attempt that fails releases the whole set everywhere,
//     even where it got nothing.
//   - No deadlock, and never both: two clients whose sets overlap on r never
//     both succeed on one node, so never both on a quorum; and neither ever
//     waits while holding part of its set, which is how locking resources
//     one at a time deadlocks (two clients taking a then b and b then a
//     each hold one key until its ttl). A split vote is resolved as for one
//     key: release, then a random delay (R10).
//   - Extension is all or nothing per node: a node counts for the set only
//     where it holds the whole set. A node that lost one key of the set
//     extends none of them: its remaining keys then expire instead of
//     blocking others for a lock that node no longer counts for. When too
//     many nodes lost any key, Extend says ErrNotHeld and auto-extension
//     ends the lock with ErrLost, as for one resource. ReleaseAll reports a
//     node as released only when it held the whole set.
//   - Fencing (WithFencing) gives one token for the set, and every node must
//     implement adapter.MultiFencingNode. Phase 1 reads, atomically with the
//     acquisition, the largest fence of the set's resources on each node;
//     the token is computed from them as for one resource; phase 2 raises
//     every fence of the set to the token, on a node only if the node holds
//     the set and every fence there is below the token. For each resource r
//     of the set, the argument for one resource then holds word for word
//     (r's fence is among those read, and r's raise only succeeds above
//     it): tokens of r grow strictly across every grant that includes r,
//     by a set or alone.
//   - Hand-off: a waiting set is woken by the announced release of any of
//     its resources, and retries at once, as the first rank does (with a
//     jitter only after a split vote, R10). It waits in no
//     resource's queue, so it never holds up the waiters of one resource
//     while another of its resources is held, and Unlock never hands it
//     one key of its set; the release of a set is never handed over either
//     (its waiters are woken). Nothing orders a set against a stream of
//     single locks on one of its resources: under such a stream a set may
//     wait long, as under R10 without hand-off.
//
// A set costs what one resource costs in round trips (one per acquisition,
// two with fencing), with a script instead of SET; its keys count one per
// resource on every node.
//
// # Locks that cross processes (Handle, Resume, Release)
//
// A lock need not end in the process that acquired it. Lock.Handle writes
// it down as a Handle (the resource, or the set of LockAll, value, the
// end of its validity by the writer's wall clock, ttl, fencing token,
// extensions so far, whether it is a read lock, key prefix);
// Handle.MarshalText turns it into one word of text ("dlm1." and base64url
// JSON) and ParseHandle reads it back. Another process, with a client over
// the same nodes and key prefix, passes it to Client.Resume to get a *Lock
// it can Extend, Unlock and auto-extend, or to Client.Release to release
// it in one round. A CI pipeline can so lock a deployment in one step and
// release it in a later one (`dlm acquire`, `dlm extend`, `dlm release`).
//
// The value is the secret (R4, R5): the nodes extend and delete a key only
// when it holds the value they are given, so a handle with a guessed or
// forged value extends and releases nothing, and a stolen handle is as
// good as the lock itself, like a password. Handle's String, GoString and
// LogValue leave the value out; the text form is the one way to it.
// WithValue lets the caller choose the value (a secret shared ahead of
// time), between MinValueLen and MaxValueLen printable bytes; it must be as
// unique as a random one (R4). Because every attempt of one Lock call then
// carries the same value, a failed attempt waits for every node's answer
// and release before the next (R8.5: a late release would delete the next
// attempt's key, which holds the same value), and such a call is never
// handed a lock with another value by its client's Unlock.
//
// Resume does not trust the handle's Until: it comes from another
// machine's wall clock, and clocks are not assumed to agree (R9). It
// confirms the lock instead, by extending it (R17) on every node that
// still holds the value, and resumes it only if a quorum confirmed within
// the validity of that extension, counted from this process's T1 before
// the requests: the new Until is T1 + ttl - drift. Why this is as safe as
// an Extend: values are unique (R4), so a key that holds the value was set
// by the one acquisition that drew it and has held it ever since (SET NX
// never overwrites, and no other client writes that value); a quorum that
// confirmed holds those keys at some instant after T1, and each lives at
// least ttl from its confirmation (R13). Any other client's quorum shares
// a node with it, on which that client's key could not exist while ours
// did, so no other client holds the lock until the new Until, exactly as
// after the acquisition. A handle whose lock expired, was released or was
// taken over finds too few nodes holding its value: Resume then returns
// ErrNotHeld (with ErrExpired when the handle's Until has passed by this
// machine's clock, to tell a late resume from a lost lock), extends
// nothing, and leaves nothing behind. The confirmation is an extension:
// it counts against WithMaxExtensions. A handle is data its holder can
// edit, so the count is not taken from it alone: the nodes keep the count
// and the least bound of a lock whose handle was written beside it (a note
// named by a digest of the value, under WithInfoPrefix, on
// adapter.InspectNodes), and Resume counts on from the larger count; its
// ttl is bounded by WithMaxTTL and its key prefix is the client's
// (WithKeyPrefix), so a handle reaches nothing the client would not.
//
// Release needs no confirmation: it is the release of R12, on every node
// with the value of the handle, and reports as Unlock does. What a handle
// does not give: the resumed lock's fencing token is the one written in
// the handle (whoever knows the value is the holder, and a lying holder is
// not covered); and a lock written into a handle and not extended lives
// its ttl, whatever its holder does, as every lock does (R6).
//
// # Seeing and managing locks
//
// Client.Inspect, which any client may call, reads a resource on every
// node (adapter.InspectNode) and returns the quorum's view: held for write
// by its owner, for read by its readers, or free; the validity left on a
// quorum and the fence token; and each node's view. Client.Locks lists the
// resources under the key prefix, and Client.ForceRelease is an
// operator's release of a lock whoever holds it. None shows a byte of a
// value. Owners are labels (WithOwner, default host and pid) that each
// client keeps once on each node, keyed by its tag (the random bytes that
// start its values), so that naming the holder costs Lock and Unlock no
// request.
//
// # Byzantine quorum mode (WithByzantineNodes)
//
// WithByzantineNodes(f) tolerates up to f nodes that lie: answer OK to a
// SET they did not perform, report that they hold, extended, released or
// fenced a value they do not hold, report any fence value. The quorum
// becomes ceil((N+f+1)/2), so that the honest nodes of two quorums
// overlap: if two clients each counted a quorum of "yes", at most f of
// those came from liars, and the honest yeses (at least quorum - f each,
// an honest node saying yes to at most one of them) cannot both fit among
// the N - f honest nodes. A quorum must also be reachable without the f
// liars, so New requires N >= 3f+1 (the B3 bound of the agreement spec)
// and names both numbers when refusing. An extension counted the same way
// leaves at least quorum - f honest nodes extended, which keeps the
// argument. With fencing, the token is the (f+1)-th largest value read
// from the acquiring quorum plus one, so that f liars cannot inflate it;
// for a later grant to still find f+1 honest nodes holding the previous
// token among the quorum it acquires, every two quorums must share 2f+1
// nodes, so the quorum is ceil((N+2f+1)/2) and N >= 4f+1 (N = 5 tolerates
// one liar in both modes).
//
// The mode does not cover: more than f lying nodes; a node that colludes
// with a client; a lying client (anyone holding a value can release the
// lock); clocks (a node whose clock runs fast expires keys early, which is
// a timing fault, not a lie, R9); liveness when liars refuse every request
// and fewer than a quorum of honest nodes are up. Liars can make an Unlock
// look more successful than it was, by up to f nodes.
//
// # Read-write locks (RLock, WLock)
//
// Client.RLock and Client.TryRLock acquire a resource for reading, shared
// with any number of readers; Client.WLock and Client.TryWLock for writing,
// exclusive of readers, other writers and plain locks (Lock). Both return a
// *Lock with the usual Extend, Unlock, WithAutoExtend, Done and Err;
// Lock.Shared tells a read lock. The nodes must implement adapter.RWNode
// (the shared script redlock/scripts/rw.lua; MemNode, goredis, rueidis).
//
// On each node, one atomic step decides (as SET NX does for R3): a writer
// holds the lock key as a string, exactly like a plain lock, and readers
// hold the same key as a hash of reader values to expiries on the node's
// clock. So on every node the key is held by one writer or plain lock, or
// by readers, never both. A reader or a writer is granted only once a
// quorum of nodes admitted it within its validity (R8.3, R9), and any two
// quorums share a node (two majorities of N; with WithByzantineNodes(f),
// quorums of ceil((N+f+1)/2) share f+1 nodes, so an honest one): if a
// reader and a writer were both believed held at one moment, that shared
// node would hold the writer's string and the reader's field at once, each
// until its own expiry on that node, which R9's validity does not outlast.
// Readers never exclude each other. Each reader has its own expiry (its
// hash field), the key's expiry is the latest of them, and every step
// prunes the fields whose expiry passed, so a reader that crashed holds
// nothing past its ttl, as a plain lock.
//
// Writers are not starved by a stream of readers. A WLock attempt that
// finds readers on a node leaves a waiting mark there (its waiter id, drawn
// once per WLock call, with an expiry of its ttl, refreshed by each
// attempt), and a node admits no new reader while a mark is alive. After
// the writer's first failed attempt, the nodes where readers held it admit
// no one new, so the readers already in leave within their holds (at most
// ttl x (1+WithMaxExtensions) for an auto-extended reader, like any lock),
// and the writer acquires at its next attempt after that, unless another
// writer or a plain lock takes the resource first (writers compete as
// plain locks do, without order). A WLock that is granted or gives up
// (context, tries, Close) removes its marks from every node before it
// returns; a writer that dies leaves marks that keep readers out for at
// most one ttl after its last attempt. The marks stay alive between
// attempts while the retry delay (WithRetryDelay) is below the ttl, as it
// is by default. Limits, stated: a node held by a writer or a plain lock
// (a string) cannot carry a mark, so right after that holder's release
// readers may get in before the waiting writer; its next failed attempt
// marks those nodes. Readers, in turn, can be delayed by a stream of
// writers: the preference is the writers'. TryWLock leaves no mark.
//
// Read-write locks take no part in the hand-off: they retry after R10's
// random delay, and Unlock never hands a read lock over. With WithFencing,
// a writer gets a fencing token exactly as a plain lock does (R18): its
// acquisition reads the resource's fence in the same atomic step
// (RWNode.WAcquireFenced), and phase 2 raises the fence where the
// writer's key, a plain string, still holds its value; writers and plain
// locks of a resource share one sequence of tokens. A reader's Token is 0:
// it writes nothing that needs fencing, and it neither reads nor raises
// the fence.
//
// # Observability
//
// WithObserver registers an Observer called with every attempt's outcome
// and per-node results and latencies (including the fencing phase), every
// extension, and the end of every lock; redlock/prometheus implements it
// with client_golang. WithLogger logs the same events through log/slog.
//
// # Nodes
//
// The package imports no Redis driver: a Node speaks Redlock (acquire,
// release, extend a key with a value and a ttl). What only adapter writers
// need (Node's optional capabilities, the asynchronous requests) is in
// redlock/adapter. redlock/goredis adapts
// go-redis v9 and provides Dial over node URLs (ParseNodeURL);
// redlock/redlocktest starts real redis-server processes for tests and
// holds the node conformance suite every adapter must pass.
package redlock
