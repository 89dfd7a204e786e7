package batch

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

type got map[int]error

func (g got) Receive(tag int, _ bool, err error) { g[tag] = err }

// Live answers the items whose context is done and bounds the others by
// the latest deadline among them; an item without a deadline unbounds the
// batch.
func TestLive(t *testing.T) {
	now := time.Now()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	early, c1 := context.WithDeadline(context.Background(), now.Add(time.Second))
	defer c1()
	late, c2 := context.WithDeadline(context.Background(), now.Add(time.Hour))
	defer c2()
	tests := []struct {
		name        string
		ctxs        []context.Context
		live        int
		deadline    time.Time
		bounded     bool
		answeredTag []int
	}{
		{"bounded by the latest", []context.Context{early, done, late}, 2, now.Add(time.Hour), true, []int{1}},
		{"one without a deadline", []context.Context{early, context.Background()}, 2, now.Add(time.Second), false, nil},
		{"all done", []context.Context{done, done}, 0, time.Time{}, true, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := got{}
			var items []Item
			for i, ctx := range tt.ctxs {
				items = append(items, Item{Ctx: ctx, Req: adapter.Request{Op: adapter.OpAcquire}, To: g, Tag: i})
			}
			live, deadline, bounded := Live(items)
			if len(live) != tt.live || !deadline.Equal(tt.deadline) || bounded != tt.bounded {
				t.Fatalf("Live = %d items, %v, %v; want %d, %v, %v", len(live), deadline, bounded, tt.live, tt.deadline, tt.bounded)
			}
			for _, tag := range tt.answeredTag {
				if !errors.Is(g[tag], context.Canceled) {
					t.Errorf("item %d: answered %v, want context.Canceled", tag, g[tag])
				}
			}
			if len(g) != len(tt.answeredTag) {
				t.Errorf("%d items answered, want %d", len(g), len(tt.answeredTag))
			}
		})
	}
}

// A DeadlineCtx re-armed before its deadline is reusable; once the deadline
// passes it is done with context.DeadlineExceeded and Disarm says so.
func TestDeadlineCtx(t *testing.T) {
	d := NewDeadlineCtx()
	ctx := d.Arm(time.Now().Add(time.Hour))
	if ctx.Err() != nil || !d.Disarm() {
		t.Fatalf("armed an hour ahead: Err %v; want nil and a stopped timer", ctx.Err())
	}
	ctx = d.Arm(time.Now().Add(time.Millisecond))
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed 10s after a 1ms deadline")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || d.Disarm() {
		t.Fatalf("after the deadline: Err %v, Disarm true; want DeadlineExceeded and false", ctx.Err())
	}
}

// A queue refuses an operation that is not redlock's, naming the adapter
// and the operation, without sending anything.
func TestQueueRefusesUnknownOp(t *testing.T) {
	var q Queue
	sent := 0
	q.Init("test", 10, func(items []Item) { sent += len(items) })
	_, err := q.Do(context.Background(), adapter.Request{Op: 42})
	if err == nil || err.Error() != "test: unknown operation Op(42): expected acquire, release, release-announce, extend, transfer or their -all forms for a set" {
		t.Fatalf("Do(Op 42) = %v, want the unknown operation error", err)
	}
	if sent != 0 || q.Len() != 0 {
		t.Fatalf("sent %d, queued %d; want nothing", sent, q.Len())
	}
}

// order records the tags of the items its batches held, batch by batch.
type order struct {
	mu      sync.Mutex
	batches [][]int
}

// send records the batch before it answers its items: a test that waits
// for every answer then finds every batch (answered first, the last batch
// could be missing: "98 items sent, want 100" under -race).
func (o *order) send(items []Item) {
	tags := make([]int, len(items))
	for i, it := range items {
		tags[i] = it.Tag
	}
	o.mu.Lock()
	o.batches = append(o.batches, tags)
	o.mu.Unlock()
	for _, it := range items {
		it.To.Receive(it.Tag, true, nil)
	}
}

type count struct{ wg *sync.WaitGroup }

func (c count) Receive(int, bool, error) { c.wg.Done() }

// A queue longer than the batch size leaves in batches of at most that
// size, every item once, in the order the items were queued.
func TestQueueCapsBatches(t *testing.T) {
	const max, n = 7, 100
	var (
		q  Queue
		o  order
		wg sync.WaitGroup
	)
	q.Init("test", max, o.send)
	wg.Add(n)
	calls := make([]adapter.Call, n)
	for i := range calls {
		calls[i] = adapter.Call{Ctx: context.Background(), Req: adapter.Request{Op: adapter.OpAcquire}, To: count{&wg}, Tag: i}
	}
	q.StartAll(calls)
	wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	next := 0
	for _, b := range o.batches {
		if len(b) == 0 || len(b) > max {
			t.Fatalf("a batch of %d items, want 1..%d", len(b), max)
		}
		for _, tag := range b {
			if tag != next {
				t.Fatalf("item %d sent where %d was due (batches %v)", tag, next, o.batches)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("%d items sent, want %d", next, n)
	}
}

// Tails marks the last item of each key in a batch, and only those.
func TestTails(t *testing.T) {
	tests := []struct {
		keys []string
		want []bool
	}{
		{[]string{"a"}, []bool{true}},
		{[]string{"a", "b", "c"}, []bool{true, true, true}},
		{[]string{"a", "a", "b", "a"}, []bool{false, false, true, true}},
		{nil, nil},
	}
	var tl Tails
	for _, tt := range tests {
		items := make([]Item, len(tt.keys))
		for i, k := range tt.keys {
			items[i].Req.Key = k
		}
		if got := tl.Mark(items); !slices.Equal(got, tt.want) {
			t.Errorf("Mark(%v) = %v, want %v", tt.keys, got, tt.want)
		}
	}
}

// Tails counts every key of a set's request (adapter.Request.Keys): a
// request on one key is no tail when a later set touches that key, and a
// set is a tail only when no later request touches any of its keys, so a
// NOSCRIPT retry never moves a request behind a set that shares its key.
func TestTailsOfSets(t *testing.T) {
	tests := []struct {
		name string
		reqs []adapter.Request
		want []bool
	}{
		{"one key, then a set over it", []adapter.Request{{Key: "a"}, {Keys: []string{"a", "b"}}}, []bool{false, true}},
		{"a set, then one of its keys", []adapter.Request{{Keys: []string{"a", "b"}}, {Key: "b"}}, []bool{false, true}},
		{"disjoint", []adapter.Request{{Key: "c"}, {Keys: []string{"a", "b"}}}, []bool{true, true}},
		{"overlapping sets", []adapter.Request{{Keys: []string{"a", "b"}}, {Key: "z"}, {Keys: []string{"b", "c"}}}, []bool{false, true, true}},
	}
	var tl Tails
	for _, tt := range tests {
		items := make([]Item, len(tt.reqs))
		for i, r := range tt.reqs {
			items[i].Req = r
		}
		if got := tl.Mark(items); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Mark = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// BenchmarkTailsMark measures Mark over a batch of 64 requests on 40 keys:
//
//	go test -run '^$' -bench TailsMark ./redlock/internal/batch/
func BenchmarkTailsMark(b *testing.B) {
	items := make([]Item, 64)
	for i := range items {
		items[i].Req.Key = "key-" + strconv.Itoa(i%40)
	}
	var tl Tails
	b.ReportAllocs()
	for b.Loop() {
		tl.Mark(items)
	}
}
