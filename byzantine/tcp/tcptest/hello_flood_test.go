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
func TestHelloFloodCannotMakeLoyalLinksLate(t *testing.T) {
	sc := tcptest.Scenario{Algorithm: byzantine.OM, N: 4, M: 1, Round: tcptest.LightRound(),
		Flood: 300, Hellos: true, Flooded: []byzantine.ID{3},
		Traitors: []tcptest.TraitorSpec{{ID: 2, Attack: tcptest.Lie, Strategy: byzantine.FlipOrders}}}
	for range 3 {
		tcptest.Check(t, sc, tcptest.Run(t, sc))
	}
}
