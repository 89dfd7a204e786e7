package election_test

import (
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock/redlocktest"
)

// TestLeadershipSurvivesRollingRestart: issue 24 item 1 promises that a
// leadership renews while the leader's process and a quorum of nodes are
// alive. A rolling restart without persistence, one node at a time, each
// down longer than the ttl (R16's delayed restart, the routine way to
// upgrade the nodes), leaves a quorum alive at every moment; the leader
// should keep leading, in the same term.
//
// Finding (review): it does not. An extension only extends keys that still
// hold the value (R17); the first restarted node comes back empty and stays
// so, and when the second node goes down only one node holds the key: the
// leadership ends ("validity passed without a successful extension"; `dlm
// elect --ttl 2s` exits 74 under the same rolling restart). The same holds
// for any lock kept by extension (dlm lock). A fix is a change of R17 (an
// extension within the validity may also set the key on a node where it
// is absent: no other client can hold a quorum during the validity), in
// the extension scripts of both adapters and MemNode: not small, left for
// the lead.
func TestLeadershipSurvivesRollingRestart(t *testing.T) {
	t.Skip("finding: a rolling restart (one node at a time, each down past the ttl) ends a healthy leadership: extensions do not restore the key on a restarted node (see the comment)")
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			cl := redlocktest.Start(t, 3)
			client := dialRedis(t, a.dial, cl.URLs(), restartTTL)
			e, err := election.New(client, "db")
			if err != nil {
				t.Fatal(err)
			}
			lead, err := e.Campaign(t.Context(), "a")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range cl.Servers {
				s.Restart(restartDown)
				// Let the restarted node serve a few renewals.
				time.Sleep(2 * restartTTL) // a renewal period to pass; the assertion below does not depend on its length
			}
			select {
			case <-lead.Done():
				t.Fatalf("leadership ended during a rolling restart that kept a quorum alive: %v", lead.Err())
			default:
			}
			if err := lead.Resign(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
}
