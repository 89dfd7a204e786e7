package rueidis_test

import (
	"strings"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// A batch of announced releases runs as one script call (batch.lua) over
// either adapter, and announces a release only on a channel that has a
// subscriber: the waiter of k1 hears its release, and the release of k2,
// which nobody waits for, costs the node no PUBLISH.
func TestBatchAnnouncesOnlyToListeners(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	gn, err := goredis.DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gn.Close() })
	for _, tt := range []struct {
		name string
		n    adapter.BatchNode
	}{{"rueidis", node(t, s)}, {"goredis", gn}} {
		n := tt.n
		t.Run(tt.name, func(t *testing.T) {
			c := s.Client()
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			ps := c.Subscribe(ctx, rueidis.ChannelPrefix+"k1")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil { // the confirmation
				t.Fatal(err)
			}
			for _, k := range []string{"k1", "k2"} {
				if ok, err := n.Acquire(ctx, k, "v-"+k, time.Minute); !ok || err != nil {
					t.Fatalf("Acquire %s: %v %v", k, ok, err)
				}
			}
			got := newCollect(3)
			n.StartAll([]adapter.Call{
				{Ctx: ctx, Req: adapter.Request{Op: adapter.OpReleaseAnnounce, Key: "k1", Value: "v-k1"}, To: got, Tag: 0},
				{Ctx: ctx, Req: adapter.Request{Op: adapter.OpReleaseAnnounce, Key: "k2", Value: "v-k2"}, To: got, Tag: 1},
				{Ctx: ctx, Req: adapter.Request{Op: adapter.OpReleaseAnnounce, Key: "k2", Value: "v-k2"}, To: got, Tag: 2},
			})
			got.wait(t)
			for tag, want := range []bool{true, true, false} {
				if got.ok[tag] != want || got.err[tag] != nil {
					t.Errorf("release %d: ok=%v err=%v, want ok=%v", tag, got.ok[tag], got.err[tag], want)
				}
			}
			msg, err := ps.ReceiveMessage(ctx)
			if err != nil || msg.Payload != "v-k1" {
				t.Fatalf("the waiter of k1 heard %v, %v; want the released value v-k1", msg, err)
			}
			stats, err := c.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			var publish, batch string
			for line := range strings.Lines(stats) {
				if v, ok := strings.CutPrefix(line, "cmdstat_publish:"); ok {
					publish = v
				}
				if v, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
					batch = v
				}
				if v, ok := strings.CutPrefix(line, "cmdstat_eval:"); ok {
					batch = v
				}
			}
			if !strings.HasPrefix(publish, "calls=1,") || !strings.HasPrefix(batch, "calls=1,") {
				t.Errorf("the node ran PUBLISH %q and one script %q; want calls=1 each (one script call, one PUBLISH)", publish, batch)
			}
		})
	}
}
