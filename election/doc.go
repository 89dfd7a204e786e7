// Package election is leader election over the Redlock client of package
// redlock: candidates campaign for a named election with an identity; one
// of them at a time is the leader, for a term that is a fencing token; any
// process can read the current leader and its term, and observe changes.
// The rule numbers (R3, R8, ...) refer to docs/spec/redlock.md.
//
// # How
//
// An election named n is the lock of the resource "election:n", taken by a
// client built with redlock.WithFencing and kept with auto-extension (R17).
// Campaign (1) acquires the lock: a quorum of nodes holds the candidate's
// random value, and the fencing phase (R18) gave it a token, strictly
// greater than every earlier grant's, and confirmed on a quorum; then (2)
// publishes the record "term id" on every node that still holds its value,
// in one atomic script per node (adapter.RecordNode). The candidate is the
// leader once a quorum stored the record within the lock's validity; then
// Campaign returns its Leadership. Leader reads every node's record and
// fence in one atomic script per node, a record being returned only while
// the node's lock key holds the value that the record was stored for (the
// record holds a SHA-1 digest of the value, so that the value itself, the
// holder's secret (R4), is never published).
//
// # What is promised, and why
//
// Under Redlock's assumptions (crash faults only, R2; clocks that advance
// at about the same rate, R9; nodes that keep their keys or restart late,
// R16) for the one-leader promise, and those stated for terms:
//
//   - At most one leader at a time believes it leads. A leader is a holder
//     of the election's lock, and believes it leads from Campaign's return
//     until Done closes, which is no later than the lock's validity end
//     (Until) unless an extension moved it on a quorum. Two leaders at once
//     would be two holders of one lock at once, which Redlock's mutual
//     exclusion rules out (R1.1). A leader that is paused (a stop of the
//     process) past its validity may act after it; that is what terms are
//     for.
//   - Terms strictly increase with elections: a term is the lock's fencing
//     token, which increases with every grant of the resource (R18: the
//     fence is a quorum max-register, raised on a quorum by each grant,
//     and every two quorums share a node). A store that refuses writes
//     carrying a term below one it has seen refuses a deposed leader.
//     Nodes that restart without persistence, late or not, any number of
//     them at any times (a rolling restart included), do not make a term
//     go down when the nodes have adapter.FenceFloorNode (both Redis
//     adapters): a node that lost its keys is repaired by the next
//     election whose quorum includes it, whose term is then at least the
//     candidate's wall clock in microseconds (see redlock's package
//     documentation, "Restarts without persistence"). That rests on two
//     things more: the wall clock of a candidate that repairs is not
//     behind that of an earlier repairing candidate by more than the time
//     between them, and every candidate has the repair (this version or
//     later). Without a loss terms count 1, 2, 3...; the first election
//     on new nodes is a repair, so terms there start near 1.8e15. Over
//     nodes without FenceFloorNode, terms need nodes that keep their fence
//     values (AOF with appendfsync always, R16.2).
//   - Leader never reports a wrong term. A record is written only by the
//     holder of the lock, after its fencing phase, and carries the holder's
//     own token; a node returns it only while its key holds that holder's
//     value. So a candidate that holds the keys on a quorum but has not
//     finished its fencing phase or its record is not reported (it is not
//     the leader yet), and a previous leader's record is not returned once
//     its keys are gone. Leader reports a leader only when a quorum agrees
//     on (term, id): that candidate was elected with that term and held the
//     keys of a quorum when they answered. The read is not linearizable: it
//     describes a moment within the read.
//   - Liveness. When a leader resigns, its keys are deleted and the next
//     candidate is elected within the lock's retry delay (R10). When a
//     leader dies or is cut off, its keys expire within one ttl, and a
//     candidate is elected within ttl plus the retry delay and two round
//     trips (acquisition with its fencing phase, then the record), as long
//     as a quorum of nodes is up (R1.2, R1.3). The ttl (WithLockOptions,
//     redlock.WithTTL) is therefore the failover bound, against how long a
//     live leader may be stopped without losing its leadership.
//   - A leadership lasts for as long as the leader's process and a quorum
//     of nodes are alive: it renews every extension interval with the same
//     term, without a gap and without a bound on the extensions (a
//     campaign is a promise to keep leading; R17's bound protects locks
//     from holders that forgot them, which a leader that stops extending
//     cannot do for longer than the ttl).
//   - A leadership is noticed lost at once, as a lock with auto-extension:
//     Done closes and Err says why (an extension found the keys gone on too
//     many nodes, or the validity passed without one). A leader whose
//     process hangs makes no extension: its keys expire within the ttl, the
//     next candidate is elected, and when the process runs again its Done
//     closes at once (ErrExpired).
//
// Observe polls Status and reports every change of (leader, term); a
// leader whose term is below a term read before is reported with an error
// wrapping ErrTermDecreased rather than hidden. It may miss a leader that
// comes and goes between two polls. Run wraps Campaign and Observe in the
// style of client-go (callbacks for started leading, stopped leading and
// new leader; the leadership tied to a context, cancel resigns); Proclaim
// changes a leader's published identity; Leadership.Handle and Resume move
// a leadership to another process with its term; ReadStatus gives
// (leader, term, since) to tools such as dlm status.
package election
