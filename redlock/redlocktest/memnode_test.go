package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// The conformance suite of the redis adapters, over MemNode: the same case
// bodies, the store read through MemNode's Inspector.
func TestMemNodeConformance(t *testing.T) {
	redlocktest.RunConformance(t, redlocktest.MemBackend())
}

// The cases of the fence floor, over MemNode.WithFloor: the floor of
// every kind of fenced acquisition, as the fencing scripts keep it.
func TestMemFloorNodeConformance(t *testing.T) {
	redlocktest.RunConformance(t, func(testing.TB) redlocktest.Backend {
		n := redlocktest.NewMemNode("mem")
		return redlocktest.Backend{Node: n.WithFloor(), Inspect: n, Freeze: n.Freeze, Thaw: n.Thaw}
	})
}

// Keys expire by the node's clock, which runs at its own rate and jumps
// (R9, R18); the faults act at run time. Everything runs on synctest's fake
// clock, so the durations are exact.
func TestMemNodeFaults(t *testing.T) {
	const ttl = time.Second
	tests := []struct {
		name string
		run  func(t *testing.T, n *redlocktest.MemNode)
	}{
		{"expiry by the node's clock", func(t *testing.T, n *redlocktest.MemNode) {
			mustAcquire(t, n, "k", "v", ttl, true)
			time.Sleep(ttl)
			wantValue(t, n, "k", "v", true) // alive up to its expiry, as in Redis
			time.Sleep(time.Millisecond)
			wantValue(t, n, "k", "", false)
		}},
		{"fast clock expires early", func(t *testing.T, n *redlocktest.MemNode) {
			n.SetClockRate(2)
			mustAcquire(t, n, "k", "v", ttl, true)
			time.Sleep(ttl/2 + time.Millisecond)
			wantValue(t, n, "k", "", false)
		}},
		{"clock jump expires at once", func(t *testing.T, n *redlocktest.MemNode) {
			mustAcquire(t, n, "k", "v", ttl, true)
			n.JumpClock(2 * ttl)
			wantValue(t, n, "k", "", false)
		}},
		{"down refuses and changes nothing", func(t *testing.T, n *redlocktest.MemNode) {
			n.SetDown(true)
			if _, err := n.Acquire(t.Context(), "k", "v", ttl); !errors.Is(err, redlocktest.ErrNodeDown) {
				t.Fatalf("Acquire on a down node: err = %v, want ErrNodeDown", err)
			}
			n.SetDown(false)
			wantValue(t, n, "k", "", false)
		}},
		{"slow answers late, applies at once", func(t *testing.T, n *redlocktest.MemNode) {
			n.SetSlow(100 * time.Millisecond)
			start := time.Now()
			mustAcquire(t, n, "k", "v", ttl, true)
			if got := time.Since(start); got != 100*time.Millisecond {
				t.Fatalf("slow answer after %v, want 100ms", got)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()
			if _, err := n.Acquire(ctx, "k2", "v", ttl); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("slow answer past the deadline: err = %v, want DeadlineExceeded", err)
			}
			wantValue(t, n, "k2", "v", true)
		}},
		{"dropped replies: only the context answers", func(t *testing.T, n *redlocktest.MemNode) {
			n.SetDropReplies(true)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()
			if _, err := n.Acquire(ctx, "k", "v", ttl); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("dropped reply: err = %v, want DeadlineExceeded", err)
			}
			wantValue(t, n, "k", "v", true)
		}},
		{"freeze holds requests until thaw, in order", func(t *testing.T, n *redlocktest.MemNode) {
			n.Freeze()
			a := &recv{}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			defer cancel()
			n.Start(ctx, adapter.Request{Op: adapter.OpAcquire, Key: "k", Value: "v1", TTL: ttl}, a, 0)
			n.Start(t.Context(), adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v1"}, a, 1)
			n.Start(t.Context(), adapter.Request{Op: adapter.OpAcquire, Key: "k", Value: "v2", TTL: ttl}, a, 2)
			time.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if got := a.get(); len(got) != 1 || !errors.Is(got[0].err, context.DeadlineExceeded) {
				t.Fatalf("answers while frozen = %v, want the first request's deadline only", got)
			}
			wantValue(t, n, "k", "", false)
			n.Thaw()
			synctest.Wait()
			if got := a.get(); len(got) != 3 || !got[1].ok || !got[2].ok {
				t.Fatalf("answers after thaw = %v, want the release and the second acquisition ok", got)
			}
			wantValue(t, n, "k", "v2", true)
		}},
		{"delayed restart forgets and stays down", func(t *testing.T, n *redlocktest.MemNode) { // R16.3
			mustAcquire(t, n, "k", "v", ttl, true)
			n.Restart(2 * ttl)
			if _, err := n.Acquire(t.Context(), "k", "v2", ttl); !errors.Is(err, redlocktest.ErrNodeDown) {
				t.Fatalf("Acquire during the restart: err = %v, want ErrNodeDown", err)
			}
			time.Sleep(2 * ttl)
			mustAcquire(t, n, "k", "v2", ttl, true)
		}},
		{"a liar acquires without setting", func(t *testing.T, n *redlocktest.MemNode) {
			mustAcquire(t, n, "k", "other", ttl, true)
			n.SetLie(redlocktest.LieAcquired)
			mustAcquire(t, n, "k", "v", ttl, true)
			wantValue(t, n, "k", "other", true)
		}},
		{"announced releases reach the watchers", func(t *testing.T, n *redlocktest.MemNode) {
			var mu sync.Mutex
			var got []string
			w, err := n.WatchReleases(func(key, value string) {
				mu.Lock()
				got = append(got, key+"="+value)
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Watch(t.Context(), "k"); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"k", "other"} {
				mustAcquire(t, n, key, "v", ttl, true)
				if ok, err := n.ReleaseAnnounce(t.Context(), key, "v"); !ok || err != nil {
					t.Fatalf("ReleaseAnnounce %s = %v, %v", key, ok, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0] != "k=v" {
				t.Fatalf("announcements = %v, want [k=v]", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { tt.run(t, redlocktest.NewMemNode("m")) })
		})
	}
}

// A client over MemNodes uses every capability: fenced, handed off,
// auto-extended, on the fake clock.
func TestMemNodeClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		c, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithHandoff(true))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mems[0].SetDown(true)
		mems[1].SetSlow(time.Hour)
		var last uint64
		for range 3 {
			l, err := c.Lock(t.Context(), "r", redlock.WithAutoExtend())
			if err != nil {
				t.Fatal(err)
			}
			if l.Token() <= last {
				t.Fatalf("token %d after %d, want it to grow", l.Token(), last)
			}
			last = l.Token()
			time.Sleep(time.Minute) // auto-extended past the default ttl
			if err := l.Err(); err != nil {
				t.Fatalf("auto-extended lock: %v", err)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		f, err := mems[2].Fence(t.Context(), redlock.DefaultFencePrefix+"r")
		if err != nil || f != last {
			t.Fatalf("fence on a node = %d, %v; want %d", f, err, last)
		}
		mems[1].SetSlow(0)
	})
}

type answer struct {
	tag int
	ok  bool
	err error
}

// recv records answers in the order they come.
type recv struct {
	mu  sync.Mutex
	got []answer
}

func (r *recv) Receive(tag int, ok bool, err error) {
	r.mu.Lock()
	r.got = append(r.got, answer{tag, ok, err})
	r.mu.Unlock()
}

func (r *recv) get() []answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]answer(nil), r.got...)
}

func mustAcquire(t *testing.T, n *redlocktest.MemNode, key, value string, ttl time.Duration, want bool) {
	t.Helper()
	if ok, err := n.Acquire(t.Context(), key, value, ttl); ok != want || err != nil {
		t.Fatalf("Acquire %s = %v, %v; want %v, nil", key, ok, err, want)
	}
}

func wantValue(t *testing.T, n *redlocktest.MemNode, key, want string, exists bool) {
	t.Helper()
	got, ok, _ := n.Value(t.Context(), key)
	if got != want || ok != exists {
		t.Fatalf("value of %s = %q (exists %v), want %q (exists %v)", key, got, ok, want, exists)
	}
}

// Five in-memory nodes, one of them down: the lock still takes a majority
// (R1.3), and the inspection shows where the keys are.
func ExampleMemNode() {
	nodes, mems := redlocktest.NewMemNodes(5)
	mems[4].SetDown(true)
	client, err := redlock.New(nodes)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	lock, err := client.TryLock(ctx, "report")
	if err != nil {
		panic(err)
	}
	for _, m := range mems {
		_, held, _ := m.Value(ctx, redlock.DefaultKeyPrefix+"report")
		fmt.Println(m, held)
	}
	fmt.Println(lock.Unlock(ctx) == nil)
	// Output:
	// m1 true
	// m2 true
	// m3 true
	// m4 true
	// m5 false
	// true
}
