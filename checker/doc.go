// Package checker holds dlm's safety checks: pure functions over a
// recorded History of lock operations, register writes and faults, with
// the standard library and porcupine as their only dependencies. The
// fault-injecting runner that records such histories against real
// redis-server processes is package dlm/checker/torture.
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
//     ended (a resurrected lock) is a violation too. Read-write histories
//     mark acquisitions with a Mode: two read holds (ModeRead) may overlap;
//     a read and a write hold, or two write holds, may not. An acquisition
//     without a mode is a write, so older histories keep their meaning.
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
// one amnesiac or clock-jumped node. torture.Run, with a torture.Config
// naming a scenario, reproduces each of these cases; torture.Config.Expect
// states what each configuration promises; docs/guarantees.md records the
// measured table.
//
// A history whose values are out of range (a ttl whose end overflows,
// negative times: History.OutOfRange) decides nothing: the checks answer
// Unknown for it.
//
// Times in a History are nanoseconds of one monotonic clock, counted from the
// start of the run, so intervals recorded by different clients compare.
package checker
