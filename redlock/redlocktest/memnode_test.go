package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
		{"a rate change never jumps the clock", func(t *testing.T, n *redlocktest.MemNode) {
			for _, rate := range []float64{0.98, 1, 1.02, 1, 0.99, 1.01, 1} {
				before := n.Now()
				n.SetClockRate(rate)
				if got := n.Now(); !got.Equal(before) {
					t.Fatalf("SetClockRate(%v): the node's clock jumped by %v", rate, got.Sub(before))
				}
				time.Sleep(ttl)
			}
		}},
		{"a key set on a slow clock outlives its ttl when the rate heals", func(t *testing.T, n *redlocktest.MemNode) {
			n.SetClockRate(0.985)
			time.Sleep(2 * ttl) // the node's clock is 30ms behind
			mustAcquire(t, n, "k", "v", ttl, true)
			time.Sleep(ttl / 4)
			n.SetClockRate(1)
			time.Sleep(ttl - ttl/4)
			wantValue(t, n, "k", "v", true) // a clock never faster than the reference
		}},
		{"the trace keeps what changed a key, by the node's clock", func(t *testing.T, n *redlocktest.MemNode) {
			n.SetTrace(true)
			n.SetClockRate(0.5)
			mustAcquire(t, n, "k", "v", ttl, true)
			mustAcquire(t, n, "k", "w", ttl, false) // refused: not kept
			time.Sleep(ttl)
			if ok, err := n.Extend(t.Context(), "k", "v", ttl); !ok || err != nil {
				t.Fatalf("Extend = %v, %v", ok, err)
			}
			got := n.Trace()
			if len(got) != 2 || got[0].OpName() != "acquire" || got[1].OpName() != "extend" {
				t.Fatalf("trace = %+v, want the acquisition and the extension", got)
			}
			e := got[1]
			if e.Holds != "v" || e.Life != ttl || e.Offset != -ttl/2 || e.End().Sub(e.At) != 2*ttl {
				t.Fatalf("extension traced as %+v (ends %v after), want v held for %v on a clock %v behind, ending %v after", e, e.End().Sub(e.At), ttl, ttl/2, 2*ttl)
			}
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
		{"a restart loses what a frozen node held", func(t *testing.T, n *redlocktest.MemNode) { // R16.3
			n.Freeze()
			a := &recv{}
			n.Start(t.Context(), adapter.Request{Op: adapter.OpAcquire, Key: "k", Value: "v", TTL: ttl}, a, 0)
			n.Restart(2 * ttl)
			synctest.Wait()
			if got := a.get(); len(got) != 1 || !errors.Is(got[0].err, redlocktest.ErrNodeDown) {
				t.Fatalf("answers after the restart = %v, want ErrNodeDown for the held request", got)
			}
			n.Thaw() // a restarted process is no longer stopped: nothing to do
			if n.Applied() != 0 {
				t.Fatalf("the restarted node applied %d requests held before its restart, want none", n.Applied())
			}
			wantValue(t, n, "k", "", false)
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

// The class of the test above: whatever the node's clock rates before and
// during a key's life, as long as they stay within [lo, hi], the key lives
// between ttl/hi and ttl/lo on the reference clock (R9: keys expire by
// clocks whose rates differ by little). Rate changes come at random
// instants before the key is set (so that the node's clock is off the
// reference by then) and during its life, the rate 1 among them.
func TestMemNodeKeyLifeWithinClockRates(t *testing.T) {
	const (
		ttl    = time.Second
		trials = 40
		slack  = time.Microsecond // float rounding of the node's clock
	)
	lo, hi := 0.98, 1.008
	shortest, longest := time.Duration(float64(ttl)/hi), time.Duration(float64(ttl)/lo)
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		n := redlocktest.NewMemNode("m")
		rate := func() float64 { // the reference's own rate at times
			if rng.IntN(3) == 0 {
				return 1
			}
			return lo + rng.Float64()*(hi-lo)
		}
		for i := range trials {
			for range rng.IntN(4) {
				n.SetClockRate(rate())
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
			}
			key := fmt.Sprintf("k%d", i)
			mustAcquire(t, n, key, "v", ttl, true)
			set := time.Now()
			alive, gone := set.Add(shortest-slack), set.Add(longest+slack)
			// Rate changes during the key's life, then the two checks.
			var at []time.Time
			for range rng.IntN(4) {
				at = append(at, set.Add(time.Duration(rng.Int64N(int64(gone.Sub(set))))))
			}
			slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
			checked := false
			for _, when := range append(at, gone) {
				if !checked && !when.Before(alive) {
					time.Sleep(time.Until(alive))
					if _, ok, _ := n.Value(t.Context(), key); !ok {
						t.Fatalf("trial %d: key gone %v after it was set, before ttl/%v = %v", i, time.Since(set), hi, shortest)
					}
					checked = true
				}
				time.Sleep(time.Until(when))
				if when.Equal(gone) {
					break
				}
				n.SetClockRate(rate())
			}
			if _, ok, _ := n.Value(t.Context(), key); ok {
				t.Fatalf("trial %d: key alive %v after it was set, past ttl/%v = %v", i, time.Since(set), lo, longest)
			}
		}
	})
}

// A node in the down time of a delayed restart (R16.3) refuses every
// request, whatever its path, and applies none: a node that answered
// (empty) before its down time was over would let a second client take a
// lock the first still holds.
func TestMemNodeRestartRefusesEveryPath(t *testing.T) {
	const ttl = time.Second
	keys, fences := []string{"a", "b"}, []string{"fa", "fb"}
	type path struct {
		name string
		call func(ctx context.Context, n *redlocktest.MemNode) error
	}
	paths := []path{
		{"Acquire", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.Acquire(ctx, "k", "v", ttl)
			return err
		}},
		{"Release", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.Release(ctx, "k", "v")
			return err
		}},
		{"Extend", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.Extend(ctx, "k", "v", ttl)
			return err
		}},
		{"ReleaseAnnounce", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.ReleaseAnnounce(ctx, "k", "v")
			return err
		}},
		{"Transfer", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.Transfer(ctx, "k", "v", "w", ttl)
			return err
		}},
		{"AcquireFenced", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, _, err := n.AcquireFenced(ctx, "k", "f", "v", ttl)
			return err
		}},
		{"RaiseFence", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.RaiseFence(ctx, "k", "f", "v", 1, 0)
			return err
		}},
		{"AcquireFencedFloor", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, _, _, err := n.WithFloor().AcquireFencedFloor(ctx, "k", "f", "fl", "v", ttl)
			return err
		}},
		{"RaiseFenceRepair", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.WithFloor().RaiseFenceRepair(ctx, "k", "f", "fl", "v", 1, 0)
			return err
		}},
		{"AcquireAll", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.AcquireAll(ctx, keys, "v", ttl)
			return err
		}},
		{"ReleaseAll", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.ReleaseAll(ctx, keys, "v", true)
			return err
		}},
		{"ExtendAll", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.ExtendAll(ctx, keys, "v", ttl)
			return err
		}},
		{"RestoreAll", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.RestoreAll(ctx, keys, "v", ttl)
			return err
		}},
		{"AcquireAllFenced", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, _, err := n.AcquireAllFenced(ctx, keys, fences, "v", ttl)
			return err
		}},
		{"RaiseFences", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.RaiseFences(ctx, keys, fences, "v", 1, 0)
			return err
		}},
		{"RAcquire", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.RAcquire(ctx, "k", "v", ttl)
			return err
		}},
		{"RRelease", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.RRelease(ctx, "k", "v")
			return err
		}},
		{"RExtend", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.RExtend(ctx, "k", "v", ttl)
			return err
		}},
		{"WAcquire", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.WAcquire(ctx, "k", "v", "w", ttl)
			return err
		}},
		{"WUnwait", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.WUnwait(ctx, "k", "w")
			return err
		}},
		{"WAcquireFenced", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, _, err := n.WAcquireFenced(ctx, "k", "f", "v", "w", ttl)
			return err
		}},
		{"PutRecord", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, err := n.PutRecord(ctx, "k", "rk", "v", "rec", 0)
			return err
		}},
		{"ReadRecord", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, _, _, err := n.ReadRecord(ctx, "k", "rk", "f")
			return err
		}},
		{"Inspect", func(ctx context.Context, n *redlocktest.MemNode) error { _, err := n.Inspect(ctx, "k"); return err }},
		{"Scan", func(ctx context.Context, n *redlocktest.MemNode) error {
			_, _, err := n.Scan(ctx, "", "0", 10)
			return err
		}},
		{"PutNote", func(ctx context.Context, n *redlocktest.MemNode) error { return n.PutNote(ctx, "k", "note", ttl) }},
		{"Note", func(ctx context.Context, n *redlocktest.MemNode) error { _, _, err := n.Note(ctx, "k"); return err }},
		{"Connect", func(ctx context.Context, n *redlocktest.MemNode) error { return n.Connect(ctx) }},
		{"WatchReleases", func(ctx context.Context, n *redlocktest.MemNode) error {
			w, err := n.WatchReleases(func(string, string) {})
			if err == nil {
				w.Close()
			}
			return err
		}},
	}
	for _, op := range []adapter.Op{adapter.OpAcquire, adapter.OpRelease, adapter.OpReleaseAnnounce, adapter.OpExtend, adapter.OpTransfer,
		adapter.OpAcquireAll, adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce, adapter.OpExtendAll} {
		req := adapter.Request{Op: op, Key: "k", Value: "v", From: "w", TTL: ttl}
		if op.IsMulti() {
			req.Key, req.Keys = "", keys
		}
		start := func(ctx context.Context, n *redlocktest.MemNode, batch bool) error {
			a := &recv{}
			if batch {
				n.StartAll([]adapter.Call{{Ctx: ctx, Req: req, To: a, Tag: 0}})
			} else {
				n.Start(ctx, req, a, 0)
			}
			synctest.Wait()
			if got := a.get(); len(got) == 1 {
				return got[0].err
			}
			return fmt.Errorf("%v answers, want 1", len(a.get()))
		}
		paths = append(paths,
			path{"Start " + op.String(), func(ctx context.Context, n *redlocktest.MemNode) error { return start(ctx, n, false) }},
			path{"StartAll " + op.String(), func(ctx context.Context, n *redlocktest.MemNode) error { return start(ctx, n, true) }})
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := redlocktest.NewMemNode("m")
				mustAcquire(t, n, "k", "v", ttl, true)
				n.Restart(3 * ttl)
				before := n.Applied()
				for _, after := range []time.Duration{0, 3*ttl - time.Millisecond} {
					time.Sleep(after)
					if err := p.call(t.Context(), n); !errors.Is(err, redlocktest.ErrNodeDown) {
						t.Fatalf("%v into the down time: err = %v, want ErrNodeDown", after, err)
					}
				}
				if got := n.Applied(); got != before {
					t.Fatalf("the node applied %d requests in its down time, want none", got-before)
				}
				time.Sleep(time.Millisecond)
				if err := p.call(t.Context(), n); errors.Is(err, redlocktest.ErrNodeDown) {
					t.Fatalf("after the down time: err = %v, want the node up", err)
				}
			})
		})
	}
}
