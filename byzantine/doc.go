// Package byzantine implements the Byzantine generals algorithms of
// Lamport, Shostak and Pease as restated in the project's spec
// (agreement.md, rules B1-B11): OM(m) with oral messages (B6) and SM(m) with
// signed messages (B9), with majority (B5) and choice (B8).
//
// # Guarantees
//
// A run satisfies the interactive consistency conditions of B1 (IC1: all
// loyal lieutenants obey the same order; IC2: if the commander is loyal,
// every loyal lieutenant obeys his order) when at most m generals are
// traitors and:
//
//   - for OM(m): n >= 3m+1 (B3), and the oral message assumptions hold:
//     every message sent is delivered (A1), the receiver knows the sender
//     (A2), and a missing message is detected (A3, by the end of its round);
//   - for SM(m): n >= m+2, A1-A3 as above, and signatures cannot be forged
//     (A4, ed25519 here). Forged, altered, malformed, oversized, late and
//     duplicate messages are rejected, counted and never believed.
//
// A faulty link cannot be told from a faulty general (A1): a test or a
// deployment that loses a loyal general's messages must count that general
// among the m traitors. Config.Validate refuses n < 3m+1 for OM and n < m+2
// for SM unless Config.AllowUnsafe is set, which exists to demonstrate B3.
//
// Every run ends in m+2 rounds (m+1 rounds of messages, then one in which
// stragglers are rejected as late); every loyal lieutenant then decides one
// of the orders sent or Retreat: there is no "undecided" outcome.
//
// # Shape
//
// A General is a message-driven state machine: Advance, Outbox, Receive,
// Decide. It knows nothing of networks. Run drives n generals over a
// deterministic in-memory transport with fault hooks (drop, delay,
// duplicate, corrupt, partition); RunGeneral drives one general over any
// Endpoint with round timers, which package byzantine/tcp implements over
// TCP between processes. Traitors follow a named Strategy, seeded from
// Config.Seed, so every run replays.
//
// OM messages carry their relay path, which attributes each to its
// sub-execution of OM(m-1); a lieutenant stores one value per path, in
// arrays indexed by the path's rank, and decides by applying majority
// bottom-up over the tree of paths. SM messages carry their signature chain
// v:0:j1:...:jk; each link signs the order, the run id and sequence number
// of the run, the chain so far and the previous signature, and is verified link by link
// with a cache, so a prefix verified once is not verified again. Following
// B9, the m-th link is not signed: it is never relayed, and A2 names its
// sender.
//
// # Runs
//
// Every message carries the run's sequence number and RunID (Config.Run);
// OM and SM refuse another run's messages as stale, and SM signatures
// cover the run id, so an order signed in one run cannot be replayed in
// another (B9). Package tcp derives the run id from the cluster, the start
// time and the sequence number.
//
// # Crashes, explanations, custom traitors
//
// Config.Crashes stops generals at chosen rounds (B11: a crash counts
// among the m faults); results mark them Crashed and the verdict covers
// the loyal survivors. Config.Explain asks for an Explanation of a
// decision (OM's tree of values and majorities, SM's V with first chains).
// A Custom traitor runs a caller's TraitorFunc, signing with Signer.
// Exhaust enumerates, for small runs, every traitor set of at most m
// generals (up to renaming the lieutenants) and every behaviour of a
// stated finite adversary, and says what it did and did not enumerate.
//
// # Interactive consistency
//
// RunInteractive gives every general a private value and runs n
// instances of OM(m) or SM(m) side by side, general i commanding instance
// i; every loyal general decides the vector of the instances' decisions.
// Under the bounds above, all loyal generals decide the same vector (IC1)
// and each loyal general's entry is its own value (IC2);
// InteractiveResult.Verify checks both. RunInteractiveGeneral runs one
// general's n instances over one Endpoint (package tcp), told apart by
// their run ids. A general listed in Config.Explain is explained in every
// instance (InteractiveResult.Explain, in the generals' own ids).
// ExhaustInteractive searches every instance of every interactive run
// with given private values: instance i is the one-commander run of
// general i's value with the ids renamed (InstanceID), and depends on its
// own messages only, so the one-commander search over those values covers
// them all (docs/agreement.md argues it). Package agreed builds leader
// election, failure detection and clock agreement on the agreed vector.
//
// # Bounds
//
// RunGeneral keeps messages that arrive before their round only after
// checking their shape, and at most once per slot: for OM one value per
// relay path (so no more per peer and round than the peer's relay paths,
// exactly what a loyal peer sends), for SM at most what a loyal general
// sends any one general in a run (the rest is refused as RejectFlood). No
// message a loyal peer sends is refused for lack of room, and memory stays
// within what the algorithm itself sends.
package byzantine
