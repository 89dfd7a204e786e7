package tcp

import (
	"context"
	"testing"
	"time"

	"dlm/byzantine"
)

// TestQueuedMessageLostOnResetIsReported: Send only queues a frame for the
// peer's writer. When the link to a live peer resets before the writer got
// the frame through (here its connection is closed under it, as "ss -K"
// does) and cannot be dialled again (the peer's listener is gone), the
// frame waits undelivered; a message waiting so must be reported by Lost
// (which RunGeneral turns into an out-of-time round), a marker alone is
// no lost message. (A link that comes back loses nothing: see
// TestResetLinkLosesNoFrame.) Before the fix the dropped message was counted
// nowhere: general 3 of TestGeneralsNodeTimingAttacks/ResetLinkReports
// relayed retreat to general 1 (Send returned nil), the writer's write
// failed on the reset connection, and every general exited 0 with 1
// deciding attack.
func TestQueuedMessageLostOnResetIsReported(t *testing.T) {
	tests := []struct {
		name string
		send func(ctx context.Context, n *Node) error
		want bool
	}{
		{"message", func(ctx context.Context, n *Node) error {
			return n.Send(ctx, byzantine.Message{From: 0, To: 1, Round: 1, Order: byzantine.Retreat})
		}, true},
		{"marker only", func(ctx context.Context, n *Node) error { return n.EndRound(ctx, 1) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			nodes := linkedPair(ctx, t)
			if !nodes[0].Linked(1) {
				t.Fatal("general 0 has no link to 1 after Start")
			}
			// Reset the link under the writer, with no way back.
			nodes[1].ln.Close()
			oc := nodes[0].out[1]
			oc.mu.Lock()
			oc.conn.Close()
			oc.mu.Unlock()
			if err := tt.send(ctx, nodes[0]); err != nil {
				t.Fatalf("send on a link not yet known broken: %v, want it queued", err)
			}
			waitFor(t, 20*time.Second, func() bool { return !nodes[0].Linked(1) })
			if nodes[0].Linked(1) {
				t.Fatal("the writer did not find the link broken")
			}
			if got := nodes[0].Lost(1); got != tt.want {
				t.Errorf("Lost(1) = %v after the link reset for good with the frame queued, want %v", got, tt.want)
			}
		})
	}
}
