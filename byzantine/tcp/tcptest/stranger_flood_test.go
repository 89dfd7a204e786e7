package tcptest_test

import (
	"context"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
	"dlm/byzantine/tcp/tcptest"
)

// TestStrangerFloodCannotCutLoyalDials: strangers open connections to
// general 0 as fast as it takes them, some sending nothing and some a
// hello cut short, while general 1's link to it is reset and dialled
// again, over and over. Every one of 1's dials must get through at the
// first attempt (regression: the oldest connection whose hello had not
// been read was closed to make room, whatever its age, so a stranger
// opening connections faster than the general read hellos closed loyal
// dials before their hello was read).
func TestStrangerFloodCannotCutLoyalDials(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	keys := tcptest.NewKeys(t, 2)
	nodes := tcptest.ListenAll(t, keys, 2)
	c := tcptest.ClusterOf(tcptest.Addrs(nodes), keys)
	stopIdle := tcptest.ConnFlood([]string{nodes[0].Addr()}, 150)
	defer stopIdle()
	ready, stopHellos := tcptest.HelloFlood([]string{nodes[0].Addr()}, 1, 150)
	defer stopHellos()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	terms := tcp.Terms{Start: time.Now(), Seq: 1}
	done := make(chan error, 2)
	for _, nd := range nodes {
		go func() { done <- nd.Start(ctx, c, terms) }()
	}
	for range nodes {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	const resets = 20
	for i := range resets {
		nodes[1].ResetLinks()
		// A message sent now reaches 0 once the link is back.
		if err := nodes[1].Send(ctx, byzantine.Message{From: 1, To: 0, Seq: uint64(i), Path: []byzantine.ID{0}, Order: byzantine.Attack}); err != nil {
			t.Fatalf("send after reset %d: %v", i, err)
		}
		for {
			ev, err := nodes[0].Recv(ctx)
			if err != nil {
				t.Fatalf("general 0 did not get general 1's message after reset %d: %v (dial failures %d)", i, err, nodes[1].DialFailures())
			}
			if ev.Gone {
				t.Fatalf("general 0 sees general 1 gone after reset %d", i)
			}
			if ev.Message != nil && ev.Message.Seq == uint64(i) {
				break
			}
		}
	}
	if got := nodes[1].DialFailures(); got > 0 {
		t.Errorf("general 1 needed %d dials more than its %d under the strangers' flood (general 0 refused %d connections): loyal dials were cut", got, resets+1, nodes[0].Refused())
	}
}
