// Package agreed puts interactive consistency to work: leader election,
// failure detection and clock agreement, each decided deterministically
// from the vector every loyal general agrees on (byzantine.RunInteractive,
// or byzantine.RunInteractiveGeneral over TCP), and the vector itself as
// the one picture every loyal general shares.
//
// # Guarantees
//
// Each general proposes a Proposal (whether it stands for leader, its
// clock reading, whom it heard from in the previous epoch), encoded as its
// private value. With at most m faulty generals and n within the bound of
// the algorithm (OM: n >= 3m+1; SM: n >= m+2), interactive consistency
// gives every loyal general the same vector, with every loyal general's
// own proposal at its index; Decide is a pure function of the vector and
// m, so every loyal general reaches the same Decision, and:
//
//   - Failure detection: a general is declared failed when its agreed
//     entry is missing or malformed (a loyal, running general's entry is
//     its own well-formed proposal, so it is faulty), or when at least m+1
//     agreed reports say it was silent (at least one of them loyal). The
//     m traitors alone cannot get a loyal general declared failed. A
//     general that crashes is declared failed by every loyal general in
//     the epoch it crashed in, when it had not sent its value yet, and
//     otherwise in the next: within two epochs.
//   - Leader election: the leader is the lowest-id general whose agreed
//     entry stands for leader and which is not declared failed. A traitor
//     cannot unseat a loyal candidate by lying about it (that takes m+1
//     reports) nor make loyal generals follow different leaders; a leader
//     that crashes is replaced within one epoch. A traitor that stands
//     for leader with a consistent proposal and a low id may lead: no rule
//     over proposals can tell it from a loyal candidate.
//   - Clock agreement: every loyal general adopts the lower median of the
//     well-formed readings. When fewer than half of those readings come
//     from faulty generals (always so for OM within its bound, and for SM
//     when n >= 2m+1), the median lies within the range of the loyal
//     generals' readings, whatever the traitors propose; with SM and
//     n <= 2m, m traitors with extreme readings can move it outside (no
//     function of the vector can prevent it).
//
// A loyal general whose messages are lost or late is faulty by A1 and
// counts among the m.
//
// # Epochs
//
// Team runs the uses in epochs in memory, one interactive-consistency run
// per epoch, each loyal general proposing what it heard in the previous
// one (byzantine.InteractiveResult.Heard). Check states the properties
// above for one epoch and is run by the tests on every epoch. Member is
// one general of a team over a real transport, one process per general
// (package tcp: RunInteractiveEpoch; the dlm command: "dlm generals
// leader", "failures" and "clock"). See docs/agreement.md.
package agreed
