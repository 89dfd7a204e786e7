package rueidis_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// A batch of announced releases runs as one script call (batch.lua) over
// either adapter, and announces a release only where a client listens: with
// a waiter watching k1 (through the adapter, which sets the node's
// listening marker first), the release of k1 reaches it and the release of
// k2, which nobody watches, costs the node no PUBLISH; with nobody
// watching, no release of the batch costs one.
func TestBatchAnnouncesOnlyToListeners(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	gn, err := goredis.DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gn.Close() })
	type batchNode interface {
		adapter.BatchNode
		adapter.HandoffNode
	}
	for _, tt := range []struct {
		name     string
		n        batchNode
		watch    bool
		publish  int
		notified string
	}{
		{"rueidis, a waiter", node(t, s), true, 1, "v-k1"},
		{"rueidis, nobody waits", node(t, s), false, 0, ""},
		{"goredis, a waiter", gn, true, 1, "v-k1"},
		{"goredis, nobody waits", gn, false, 0, ""},
	} {
		n := tt.n
		t.Run(tt.name, func(t *testing.T) {
			c := s.Client()
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			heard := make(chan string, 4)
			if tt.watch {
				w, err := n.WatchReleases(func(key, value string) { heard <- key + "=" + value })
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				if err := w.Watch(ctx, "k1"); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []string{"k1", "k2"} {
				if ok, err := n.Acquire(ctx, k, "v-"+k, time.Minute); !ok || err != nil {
					t.Fatalf("Acquire %s: %v %v", k, ok, err)
				}
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
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
			if tt.watch {
				select {
				case h := <-heard:
					if h != "k1=v-k1" {
						t.Errorf("the waiter heard %q, want k1=v-k1", h)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the waiter of k1 heard nothing in 10s")
				}
			}
			calls := commandCalls(t, s)
			if calls["publish"] != tt.publish || calls["evalsha"]+calls["eval"] != 1 {
				t.Errorf("the node ran %d PUBLISH and %d scripts, want %d and 1", calls["publish"], calls["evalsha"]+calls["eval"], tt.publish)
			}
			// The marker spares a node where nobody listens the look
			// for subscribers.
			if numsub := calls["pubsub|numsub"]; numsub != tt.publish {
				t.Errorf("the node ran PUBSUB NUMSUB %d times, want %d", numsub, tt.publish)
			}
		})
	}
}

// commandCalls returns the calls of each command since the last CONFIG
// RESETSTAT, from INFO commandstats.
func commandCalls(t *testing.T, s *redlocktest.Server) map[string]int {
	t.Helper()
	stats, err := s.Client().Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for line := range strings.Lines(stats) {
		name, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(v, ",")
		x, err := strconv.Atoi(n)
		if err != nil {
			t.Fatalf("commandstats %q: %v", line, err)
		}
		calls[name] = x
	}
	return calls
}
