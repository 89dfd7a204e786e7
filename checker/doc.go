// Package checker is dlm's safety checker: it runs Redlock clients against
// real redis-server processes, injects real faults (crashes with and without
// persistence and the delayed restart of R16.3, SIGSTOP pauses, slow and
// partitioned links through a toxiproxy TCP proxy per node and client group,
// clock jumps under libfaketime, client pauses past the ttl, a lying node
// that acknowledges SETs it never performs), records a history, and checks
// it.
//
// The checkers are pure functions over a recorded History, each returning a
// Result with a three-way Verdict (OK, Violated, Unknown) and a readable
// counterexample:
//
//   - CheckMutex: mutual exclusion (R1.1). No two locks on one resource were
//     believed held at overlapping times, where a lock is believed held from
//     the completion of its acquisition until the earliest of its validity end
//     (Until: T1 + ttl - drift, R9, moved by successful extensions, R17) and
//     the start of its release. An extension that succeeds after the validity
//     ended (a resurrected lock) is a violation too.
//   - CheckFencing: the protected resource (a register) never accepted a
//     write from an older grant after it had accepted one from a newer grant
//     (R18), grants ordered by the completion of their acquisitions; and
//     fencing tokens, when issued, increase from one grant to the next.
//   - CheckLinearizable: the register's history is linearizable against its
//     sequential model (a fenced or a plain register), with porcupine.
//   - CheckLiveness: while no fault is active (plus one ttl after each, the
//     availability penalty of R14), whenever a client wanted a resource
//     somebody held it within a bound; it reports the longest unavailable
//     window either way.
//
// What is promised, under which assumptions: mutual exclusion holds while a
// majority of the nodes keeps every key for its ttl, which is broken by a
// node that restarts empty inside the ttl (R16.1) and by a node clock that
// jumps forward; persistence with appendfsync always (R16.2) or a restart
// delayed past the largest ttl (R16.3) restores it. A holder that pauses past
// its validity still believes it holds the lock (R18): only a fenced resource
// rejects its late write, and only if the tokens themselves survive the
// faults (a fence value kept on a node that restarts empty is lost with it).
// A lying node breaks mutual exclusion under the majority quorum; the
// Byzantine quorum of redlock.WithByzantineNodes outvotes it, and with it
// one amnesiac or clock-jumped node. Run, with a Config naming a scenario,
// reproduces each of these cases; Config.Expect states what each
// configuration promises; docs/guarantees.md records the measured table.
//
// libfaketime and Debian's redis-server: the server links jemalloc, which
// deadlocks libfaketime's initialisation (libfaketime issue #130); the
// checker preloads libc after libfaketime so that malloc resolves to
// glibc's, and the clock-jump scenario works with the stock packages.
//
// Times in a History are nanoseconds of one monotonic clock, counted from the
// start of the run, so intervals recorded by different clients compare.
package checker
