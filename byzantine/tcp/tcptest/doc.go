// Package tcptest is the TCP adversary of package tcp: traitors that
// control timing and links, played over real Nodes on loopback, and the
// checks every run must pass.
//
// A Scenario names the generals, the algorithm, m and the round timeout,
// and for each traitor a TraitorSpec: an Attack (lie only, withhold
// end-of-round markers from chosen victims, stall every handshake, stop
// reading, reset its connections at a round, replay every message a round
// late, run a round ahead, or time its frames: just before each deadline,
// late to half the generals, at its own moment on each link) combined
// with a lying strategy; generals may be absent, loyal generals may have
// their connections reset every round, and strangers may flood the loyal
// generals with connections.
// Run plays it once; Check verifies IC1 and IC2 when no loyal general was
// out of time and at most m generals were faulty, and that every traitor
// whose attack its victims can see is among the faults they report. Fixed
// returns the attacks that broke the runtime before, Timing the timed
// ones; Random draws others from a seed.
//
// The pieces work for other runtimes over tcp.Node as well: Wrap and
// WrapOnSchedule turn a node into a traitor's endpoint (for
// tcp.RunOver), StallListener and
// DeafListener stand in for traitors that stall or stop reading, and
// ConnFlood floods addresses with connections.
package tcptest
