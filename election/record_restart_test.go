package election_test

import (
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock/redlocktest"
)

// TestLeaderStaysVisibleThroughRollingRestart: a leadership that survives a
// rolling restart without persistence (each node down past the ttl) must
// stay visible: Leader, Status and Observe (and so dlm leader and a waiting
// dlm elect) report the leader and its term once the restarted nodes have
// had a few renewal periods. Before the fix the lock's keys were restored
// on the restarted nodes by the extensions, its record was not, and after
// the roll Status reported no leader (term 0) for as long as the leader
// lived, on both adapters (seen first with dlm elect --ttl 1s over three
// redis-server: dlm leader said "no leader (last term 0)" while the leader
// kept leading).
func TestLeaderStaysVisibleThroughRollingRestart(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			cl := redlocktest.Start(t, 3)
			client := dialRedis(t, a.dial, cl.URLs(), restartTTL)
			e, err := election.New(client, "seen")
			if err != nil {
				t.Fatal(err)
			}
			lead, err := e.Campaign(t.Context(), "a")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range cl.Servers {
				s.Restart(restartDown)
				time.Sleep(2 * restartTTL) // renewal periods for the restarted node; the check below polls
			}
			select {
			case <-lead.Done():
				t.Fatalf("leadership ended during the rolling restart: %v", lead.Err())
			default:
			}
			var st election.Status
			for deadline := time.Now().Add(20 * restartTTL); ; {
				if st, err = e.Status(t.Context()); err == nil && st.OK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the rolling restart Status = %+v, %v: the living leader is not reported", st, err)
				}
				time.Sleep(restartTTL / 10)
			}
			if st.Leader.ID != "a" || st.Leader.Term != lead.Term() {
				t.Errorf("Status = %+v, want leader a in term %d", st, lead.Term())
			}
			if err := lead.Resign(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
}
