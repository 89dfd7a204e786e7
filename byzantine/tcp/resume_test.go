package tcp

import (
	"context"
	"testing"
	"time"

	"dlm/byzantine"
)

// linkedPair starts two nodes of a two-general cluster and links them;
// their links are redialled until ctx ends.
func linkedPair(ctx context.Context, t *testing.T) []*Node {
	t.Helper()
	keys := newKeys(t, 2)
	nodes := []*Node{listenAt(t, "127.0.0.1:0", 0, keys[0]), listenAt(t, "127.0.0.1:0", 1, keys[1])}
	c := clusterOf([]string{nodes[0].Addr(), nodes[1].Addr()}, keys)
	run := RunID(c, time.Now(), 1)
	done := make(chan error, 2)
	for _, n := range nodes {
		go func() { done <- n.Start(ctx, c, run) }()
	}
	for range nodes {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// TestResetLinkLosesNoFrame: general 0 sends general 1 far more messages
// than 1 takes before the link is reset: 1's queue is full, its socket
// buffer and 0's hold what the kernels accepted, and the reset (linger 0)
// discards 0's. General 1 must still
// receive every message once, in order, and never see 0 gone: 0 redials
// and resends from the last frame 1 took, which 1 names in the handshake
// (regression: a link that broke after its handshake was not redialled,
// the frames the kernel had accepted were lost unseen, and the peer was
// reported gone, a fault, for one transient reset).
func TestResetLinkLosesNoFrame(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nodes := linkedPair(ctx, t)
	const total = 100_000 // about 10 MB: more than the kernel buffers hold
	for i := range total {
		msg := byzantine.Message{From: 0, To: 1, Round: 0, Order: byzantine.Attack, Seq: uint64(i), Path: []byzantine.ID{0}}
		if err := nodes[0].Send(ctx, msg); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	// General 1 takes nothing until its queue of general 0's events is
	// full: the rest waits in the kernels' buffers and 0's writer.
	waitFor(t, 20*time.Second, func() bool { return len(nodes[1].slots[0]) == PeerQueue })
	nodes[0].ResetLinks()
	if err := nodes[0].EndRound(ctx, 0); err != nil {
		t.Fatalf("EndRound after the reset: %v, want it queued for the redialled link", err)
	}
	for i := 0; i <= total; i++ {
		ev, err := nodes[1].Recv(ctx)
		if err != nil {
			t.Fatalf("general 1 received %d of %d messages, then: %v", i, total, err)
		}
		switch {
		case ev.Gone:
			t.Fatalf("general 1 sees general 0 gone after %d of %d messages (rejected %q): a transient reset made a loyal peer a fault", i, total, ev.Rejected)
		case i == total:
			if !ev.Marker || ev.EndOfRound != 0 {
				t.Fatalf("after every message, general 1 got %+v, want the marker of round 0", ev)
			}
		case ev.Message == nil || ev.Message.Seq != uint64(i):
			t.Fatalf("event %d of general 1 is %+v, want message %d (each once, in order)", i, ev, i)
		}
	}
	if nodes[0].Lost(1) {
		t.Errorf("Lost(1) = true after every frame was delivered")
	}
}
