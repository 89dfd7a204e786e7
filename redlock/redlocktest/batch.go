package redlocktest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runBatchConformance checks the adapter.BatchNode capability (and so
// AsyncNode, R15): requests started on one node run in the order they were
// started, every operation answers as its blocking method does, deadlines
// hold inside the queue, unknown operations are refused, and a script the
// node has not run yet cannot let the commands behind it overtake it. Each
// case makes its own backend (a redis-server of its own).
func runBatchConformance(t *testing.T, newBackend BackendFactory) {
	t.Run("StartKeepsOrder", func(t *testing.T) { batchKeepsOrder(t, newBackend) })
	t.Run("StartAnswersEveryOp", func(t *testing.T) { batchAnswersEveryOp(t, newBackend) })
	t.Run("StartDeadlines", func(t *testing.T) { batchDeadlines(t, newBackend) })
	t.Run("StartRefusesUnknownOp", func(t *testing.T) { batchRefusesUnknownOp(t, newBackend) })
	t.Run("BatchKeepsOrderOnAFreshNode", func(t *testing.T) { batchKeepsOrderOnAFreshNode(t, newBackend) })
	t.Run("BatchOfManyTTLs", func(t *testing.T) { batchOfManyTTLs(t, newBackend) })
}

// One batch of acquisitions and extensions, each with a ttl of its own,
// over keys that a cluster spreads over its masters: every key gets its
// own ttl. A cluster node builds each master's part of a batch on its own
// goroutine once that master is reached (the adapters' reachedMaster),
// and a command's ttl argument comes from a formatter that one batch
// worker uses at a time (batch.TTLArg): built side by side without a
// lock, the race detector saw them (a fresh-clone run, goredis cluster).
func batchOfManyTTLs(t *testing.T, newBackend BackendFactory) {
	b, n, a := batchCase(t, newBackend)
	const keys, rounds = 24, 20
	ttlOf := func(k int) time.Duration { return time.Minute + time.Duration(k)*time.Second }
	for round := range rounds {
		calls := make([]adapter.Call, 0, 2*keys)
		for k := range keys {
			key := "ttls:" + strconv.Itoa(round) + ":" + strconv.Itoa(k)
			calls = append(calls,
				adapter.Call{Ctx: t.Context(), Req: adapter.Request{Op: adapter.OpAcquire, Key: key, Value: "v", TTL: ttlOf(k)}, To: a, Tag: 2 * (round*keys + k)},
				adapter.Call{Ctx: t.Context(), Req: adapter.Request{Op: adapter.OpExtend, Key: key, Value: "v", TTL: ttlOf(keys - k)}, To: a, Tag: 2*(round*keys+k) + 1})
		}
		n.StartAll(calls)
	}
	for tag := range 2 * keys * rounds {
		if r := a.wait(t, tag, 10*time.Second); !r.ok || r.err != nil {
			t.Fatalf("request %d (%s): ok=%v err=%v, want ok", tag, []string{"acquire", "extend"}[tag%2], r.ok, r.err)
		}
	}
	for k := range keys {
		key := "ttls:0:" + strconv.Itoa(k)
		d, ok, err := b.Inspect.TTL(t.Context(), key)
		if want := ttlOf(keys - k); err != nil || !ok || d > want || d < want-30*time.Second {
			t.Errorf("ttl of %s = %v (held %v, err %v), want about %v: its extension's own", key, d, ok, err, want)
		}
	}
}

// queuer is a node that tells how many requests wait in its queue, not yet
// taken into a batch (as redlock/rueidis's Node.Queued does).
type queuer interface{ Queued() int }

// batchCase makes a backend and returns it, its node, which must be a
// BatchNode, and a collector of answers.
func batchCase(t *testing.T, newBackend BackendFactory) (Backend, adapter.BatchNode, *answers) {
	t.Helper()
	b := newBackend(t)
	n, ok := b.Node.(adapter.BatchNode)
	if !ok {
		t.Fatalf("node %T is not a BatchNode", b.Node)
	}
	return b, n, newAnswers()
}

// mustKeys returns the keys of b that start with prefix.
func mustKeys(t *testing.T, b Backend, prefix string) []string {
	t.Helper()
	keys, err := b.Inspect.Keys(t.Context(), prefix)
	if err != nil {
		t.Fatalf("keys %s*: %v", prefix, err)
	}
	return keys
}

// answers collects the answers of started requests, by tag.
type answers struct {
	mu  sync.Mutex
	got map[int]answer
	ch  chan int // each tag as it is answered
}

type answer struct {
	ok  bool
	err error
}

func newAnswers() *answers { return &answers{got: map[int]answer{}, ch: make(chan int, 1024)} }

func (a *answers) Receive(tag int, ok bool, err error) {
	a.mu.Lock()
	if _, dup := a.got[tag]; dup {
		panic("request " + strconv.Itoa(tag) + " answered twice")
	}
	a.got[tag] = answer{ok, err}
	a.mu.Unlock()
	a.ch <- tag
}

// wait returns tag's answer, failing the test if it takes more than d.
func (a *answers) wait(t *testing.T, tag int, d time.Duration) answer {
	t.Helper()
	deadline := time.After(d)
	for {
		a.mu.Lock()
		r, ok := a.got[tag]
		a.mu.Unlock()
		if ok {
			return r
		}
		select {
		case <-a.ch:
		case <-deadline:
			t.Fatalf("request %d: no answer after %v", tag, d)
		}
	}
}

// A node executes the requests started on it in the order they were
// started: a release started right behind its acquisition, without waiting
// for it, always finds the key (R8.5: a release never overtakes what it
// undoes; AsyncNode's contract).
func batchKeepsOrder(t *testing.T, newBackend BackendFactory) {
	b, n, a := batchCase(t, newBackend)
	const keys = 300
	for k := range keys {
		key := "order:" + strconv.Itoa(k)
		n.Start(t.Context(), adapter.Request{Op: adapter.OpAcquire, Key: key, Value: "v", TTL: time.Minute}, a, 2*k)
		n.Start(t.Context(), adapter.Request{Op: adapter.OpRelease, Key: key, Value: "v"}, a, 2*k+1)
	}
	for tag := range 2 * keys {
		if r := a.wait(t, tag, 10*time.Second); !r.ok || r.err != nil {
			t.Fatalf("request %d (%s): ok=%v err=%v, want ok", tag, []string{"acquire", "release"}[tag%2], r.ok, r.err)
		}
	}
	if left := mustKeys(t, b, "order:"); len(left) != 0 {
		t.Fatalf("keys left: %v", left)
	}
}

// Every operation answers through Start as its blocking method does.
func batchAnswersEveryOp(t *testing.T, newBackend BackendFactory) {
	_, n, a := batchCase(t, newBackend)
	ctx := t.Context()
	steps := []struct {
		req  adapter.Request
		want bool
	}{
		{adapter.Request{Op: adapter.OpAcquire, Key: "{ops}", Value: "v1", TTL: time.Minute}, true},
		{adapter.Request{Op: adapter.OpAcquire, Key: "{ops}", Value: "v2", TTL: time.Minute}, false}, // held
		{adapter.Request{Op: adapter.OpExtend, Key: "{ops}", Value: "v2", TTL: time.Minute}, false},  // not ours
		{adapter.Request{Op: adapter.OpExtend, Key: "{ops}", Value: "v1", TTL: time.Minute}, true},
		{adapter.Request{Op: adapter.OpRelease, Key: "{ops}", Value: "v2"}, false},
		{adapter.Request{Op: adapter.OpReleaseAnnounce, Key: "{ops}", Value: "v1"}, true},
		{adapter.Request{Op: adapter.OpRelease, Key: "{ops}", Value: "v1"}, false},                                // gone
		{adapter.Request{Op: adapter.OpTransfer, Key: "{ops}", From: "v1", Value: "v3", TTL: time.Minute}, false}, // gone: not set
		{adapter.Request{Op: adapter.OpAcquire, Key: "{ops}", Value: "v3", TTL: time.Minute}, true},
		{adapter.Request{Op: adapter.OpTransfer, Key: "{ops}", From: "v3", Value: "v4", TTL: time.Minute}, true},
		{adapter.Request{Op: adapter.OpTransfer, Key: "{ops}", From: "v3", Value: "v5", TTL: time.Minute}, false}, // v4's
		{adapter.Request{Op: adapter.OpRelease, Key: "{ops}", Value: "v4"}, true},
	}
	for i, st := range steps {
		n.Start(ctx, st.req, a, i)
		if r := a.wait(t, i, 10*time.Second); r.ok != st.want || r.err != nil {
			t.Fatalf("step %d, %v %s: ok=%v err=%v, want ok=%v", i, st.req.Op, st.req.Value, r.ok, r.err, st.want)
		}
	}
}

// A request whose context ends while it waits behind a batch is answered
// with the context's error and never sent; a request with a later deadline
// in the same queue is not failed by it (a batch is bounded by its latest
// deadline). That a request expired in the queue is never sent is checked
// of nodes with a queue of their own (a queuer); a node without one, such
// as MemNode, has nothing between Start and the store.
func batchDeadlines(t *testing.T, newBackend BackendFactory) {
	s, n, a := batchCase(t, newBackend)
	q, queues := n.(queuer)

	done, cancel := context.WithCancel(t.Context())
	cancel()
	n.Start(done, adapter.Request{Op: adapter.OpAcquire, Key: "dl:done", Value: "v", TTL: time.Minute}, a, 0)
	if r := a.wait(t, 0, time.Second); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("request with a done context: err=%v, want context.Canceled", r.err)
	}

	s.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			s.Thaw()
		}
	}()
	first, cancel1 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel1()
	n.Start(first, adapter.Request{Op: adapter.OpAcquire, Key: "dl:first", Value: "v", TTL: time.Minute}, a, 1)
	// The first batch, this request alone, is on its way to the frozen node.
	if queues {
		Eventually(t, 5*time.Second, func() bool { return q.Queued() == 0 }, "the first request was not taken into a batch")
	}
	short, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	n.Start(short, adapter.Request{Op: adapter.OpAcquire, Key: "dl:short", Value: "v", TTL: time.Minute}, a, 2)
	long, cancel3 := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel3()
	n.Start(long, adapter.Request{Op: adapter.OpAcquire, Key: "dl:long", Value: "v", TTL: time.Minute}, a, 3)

	var timeout interface{ Timeout() bool }
	if r := a.wait(t, 1, 10*time.Second); !errors.Is(r.err, context.DeadlineExceeded) && !(errors.As(r.err, &timeout) && timeout.Timeout()) {
		t.Fatalf("request to a frozen node: err=%v, want a deadline or timeout error", r.err)
	}
	if r := a.wait(t, 2, 10*time.Second); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("request whose deadline passed in the queue: err=%v, want context.DeadlineExceeded", r.err)
	}
	s.Thaw()
	thawed = true
	if r := a.wait(t, 3, 20*time.Second); !r.ok || r.err != nil {
		t.Fatalf("request with a later deadline: ok=%v err=%v, want acquired", r.ok, r.err)
	}
	if !queues {
		return
	}
	keys := mustKeys(t, s, "dl:")
	for _, k := range keys {
		if k == "dl:short" {
			t.Fatalf("the expired request was sent: keys %v", keys)
		}
	}
}

// A request for an operation that is not one of redlock's is answered at
// once with an error naming it, and nothing is sent; the others of the same
// StartAll go on.
func batchRefusesUnknownOp(t *testing.T, newBackend BackendFactory) {
	b, n, a := batchCase(t, newBackend)
	ctx := t.Context()
	n.Start(ctx, adapter.Request{Key: "unknown", Value: "v"}, a, 0)
	n.StartAll([]adapter.Call{
		{Ctx: ctx, Req: adapter.Request{Op: 99, Key: "unknown", Value: "v"}, To: a, Tag: 1},
		{Ctx: ctx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "known", Value: "v", TTL: time.Minute}, To: a, Tag: 2},
	})
	for tag := range 2 {
		if r := a.wait(t, tag, 10*time.Second); r.ok || r.err == nil || !strings.Contains(r.err.Error(), "unknown operation") {
			t.Fatalf("request %d: ok=%v err=%v, want an unknown operation error", tag, r.ok, r.err)
		}
	}
	if r := a.wait(t, 2, 10*time.Second); !r.ok || r.err != nil {
		t.Fatalf("the valid request beside it: ok=%v err=%v, want acquired", r.ok, r.err)
	}
	if keys := mustKeys(t, b, "unknown"); len(keys) != 0 {
		t.Fatalf("an unknown operation reached the node: %v", keys)
	}
}

// A script the node has not run yet goes by EVAL inside a batch, so that the
// commands queued behind it cannot run first: on a fresh node, a release and
// the next acquisition of the same key, sent together, both succeed (as the
// hand-off sends them).
func batchKeepsOrderOnAFreshNode(t *testing.T, newBackend BackendFactory) {
	for _, op := range []adapter.Op{adapter.OpRelease, adapter.OpReleaseAnnounce} {
		t.Run(op.String(), func(t *testing.T) {
			_, n, a := batchCase(t, newBackend)
			ctx := t.Context()
			n.StartAll([]adapter.Call{
				{Ctx: ctx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "{fresh}", Value: "v1", TTL: time.Minute}, To: a, Tag: 0},
				{Ctx: ctx, Req: adapter.Request{Op: op, Key: "{fresh}", Value: "v1"}, To: a, Tag: 1},
				{Ctx: ctx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "{fresh}", Value: "v2", TTL: time.Minute}, To: a, Tag: 2},
			})
			for tag, what := range []string{"first acquisition", "release", "acquisition behind the release"} {
				if r := a.wait(t, tag, 10*time.Second); !r.ok || r.err != nil {
					t.Fatalf("%s: ok=%v err=%v, want ok", what, r.ok, r.err)
				}
			}
		})
	}
}
