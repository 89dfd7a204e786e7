package tcptest_test

import (
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/tcp/tcptest"
)

// TestHelloFloodCannotMakeLoyalLinksLate: a stranger without any key
// floods one loyal general's listener with connections that send a hello
// (unsigned, forged or cut short) and never prove anything, while one
// traitor (within m) flips its relays. No loyal general may then count a
// loyal peer as faulty, and a loyal general that saw at most m faults and
// kept the schedule (it would exit 0) must decide the loyal commander's
// attack. (A well-formed hello earned a pending connection protection
// from eviction before any proof, and loopback has no per-source budget:
// the flood held every handshake slot, the commander's link to the victim
// came up after round 0, the victim relayed RETREAT and, with the
// traitor's flip, general 1, which saw no fault at all, decided retreat.)
//
// Rounds of twice the light round, run twice: with the light round (1s
// under -race), run three times, the flooded general's links from 0 and 1
// came up after round 0 in 1 of 36 runs beside two busy loops at load 27
// (general 3 counts them "late" in round 0 while no general overran), a
// machine too starved to serve 300 strangers and 3 generals in a second.
func TestHelloFloodCannotMakeLoyalLinksLate(t *testing.T) {
	sc := tcptest.Scenario{Algorithm: byzantine.OM, N: 4, M: 1, Round: 2 * tcptest.LightRound(),
		Flood: 300, Hellos: true, Flooded: []byzantine.ID{3},
		Traitors: []tcptest.TraitorSpec{{ID: 2, Attack: tcptest.Lie, Strategy: byzantine.FlipOrders}}}
	for range 2 {
		tcptest.Check(t, sc, tcptest.Run(t, sc))
	}
}
