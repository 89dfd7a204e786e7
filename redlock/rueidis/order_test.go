package rueidis_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rd "github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// collect gathers the answers of started requests by tag and says when all
// of them came.
type collect struct {
	mu   sync.Mutex
	ok   []bool
	err  []error
	left int
	done chan struct{}
}

func newCollect(n int) *collect {
	return &collect{ok: make([]bool, n), err: make([]error, n), left: n, done: make(chan struct{})}
}

func (c *collect) Receive(tag int, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok[tag], c.err[tag] = ok, err
	if c.left--; c.left == 0 {
		close(c.done)
	}
}

func (c *collect) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("not every request answered after 30s")
	}
}

// connections returns how many connections the server accepted so far.
func connections(t *testing.T, s *redlocktest.Server) int {
	t.Helper()
	info, err := s.Client().Info(t.Context(), "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("total_connections_received %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_connections_received")
	return 0
}

// A queue of thousands of requests, far more than rueidis sends over its
// ordered pipeline in one DoMulti (BlockingPipeline, 2000 by default: a
// larger DoMulti goes over a pooled connection of its own), still reaches
// the node over its one connection and in Start order (adapter.AsyncNode):
// interleaved acquisitions and releases of one key all succeed, and the
// server never sees a second connection. Both for the clients that Dial
// builds and for a client with rueidis's default BlockingPipeline given to
// NewNode.
func TestLargeQueueKeepsOneConnection(t *testing.T) {
	builds := []struct {
		name string
		node func(t *testing.T, s *redlocktest.Server) *rueidis.Node
	}{
		{"DialNode", func(t *testing.T, s *redlocktest.Server) *rueidis.Node { return node(t, s) }},
		{"NewNode", func(t *testing.T, s *redlocktest.Server) *rueidis.Node {
			c, err := rd.NewClient(rd.ClientOption{
				InitAddress: []string{s.Addr()}, DisableCache: true, DisableRetry: true,
				PipelineMultiplex: -1, AlwaysPipelining: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return rueidis.NewNode(c, s.Addr())
		}},
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			s := redlocktest.StartServer(t)
			n := b.node(t, s)
			ctx := t.Context()
			// One request first, so that the node's connection exists.
			if ok, err := n.Acquire(ctx, "warm", "v", time.Minute); !ok || err != nil {
				t.Fatalf("first Acquire: %v %v", ok, err)
			}
			before := connections(t, s)
			const pairs = 3000
			for round := range 3 {
				got := newCollect(2 * pairs)
				calls := make([]adapter.Call, 0, 2*pairs)
				for i := range pairs {
					v := strconv.Itoa(round) + ":" + strconv.Itoa(i)
					calls = append(calls,
						adapter.Call{Ctx: ctx, Req: adapter.Request{Op: adapter.OpAcquire, Key: "k", Value: v, TTL: time.Minute}, To: got, Tag: 2 * i},
						adapter.Call{Ctx: ctx, Req: adapter.Request{Op: adapter.OpRelease, Key: "k", Value: v}, To: got, Tag: 2*i + 1})
				}
				// Half in one StartAll, the rest one Start at a time behind it.
				n.StartAll(calls[:pairs])
				for _, c := range calls[pairs:] {
					n.Start(c.Ctx, c.Req, c.To, c.Tag)
				}
				got.wait(t)
				for tag := range got.ok {
					if !got.ok[tag] || got.err[tag] != nil {
						t.Fatalf("round %d, request %d (%s): ok=%v err=%v, want ok (order broken)",
							round, tag, []string{"acquire", "release"}[tag%2], got.ok[tag], got.err[tag])
					}
				}
			}
			if after := connections(t, s); after != before {
				t.Fatalf("the server accepted %d more connections during the large batches, want none", after-before)
			}
		})
	}
}

// warm runs op once on an unrelated key, so that the node knows its script
// is cached and sends it by EVALSHA from then on.
// warmBatch, in place of an op, warms the batch script: a batch of two
// releases.
func warm(t *testing.T, n adapter.BatchNode, op adapter.Op) {
	t.Helper()
	k := 1
	if op == warmBatch {
		k, op = 2, adapter.OpRelease
	}
	got := newCollect(k)
	calls := make([]adapter.Call, k)
	for i := range calls {
		calls[i] = adapter.Call{Ctx: t.Context(), Req: adapter.Request{Op: op, Key: "warm:" + op.String() + strconv.Itoa(i), Value: "x", From: "x", TTL: time.Minute}, To: got, Tag: i}
	}
	n.StartAll(calls)
	got.wait(t)
	for i := range calls {
		if got.err[i] != nil {
			t.Fatalf("warming %v: %v", op, got.err[i])
		}
	}
}

// warmBatch is warm's op for the batch script.
const warmBatch adapter.Op = 255

// The requests of a batch run in Start order whatever the node's script
// cache holds: after SCRIPT FLUSH, a script the node is known to have had
// (so sent by EVALSHA, answered NOSCRIPT and sent again) does not let the
// requests of the same key behind it in the batch run first.
func TestNoScriptKeepsOrder(t *testing.T) {
	type step struct {
		req  adapter.Request
		want bool
	}
	acquire := func(v string) adapter.Request {
		return adapter.Request{Op: adapter.OpAcquire, Key: "k", Value: v, TTL: time.Minute}
	}
	tests := []struct {
		name   string
		warm   []adapter.Op // scripts the node ran before the flush
		held   string       // the key's value before the batch
		batch  []step
		holder string // the key's value after it ("": absent)
	}{
		{"release then acquire", []adapter.Op{adapter.OpRelease}, "v1", []step{
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v1"}, true},
			{acquire("v2"), true},
		}, "v2"},
		{"announced release then acquire", []adapter.Op{adapter.OpReleaseAnnounce}, "v1", []step{
			{adapter.Request{Op: adapter.OpReleaseAnnounce, Key: "k", Value: "v1"}, true},
			{acquire("v2"), true},
		}, "v2"},
		// A transfer moves only a key that still holds its holder's
		// value: after the release it finds none (run first, it would
		// have moved v1's key to v2, and the release would find v2).
		{"release then transfer", []adapter.Op{adapter.OpRelease}, "v1", []step{
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v1"}, true},
			{adapter.Request{Op: adapter.OpTransfer, Key: "k", From: "v1", Value: "v2", TTL: time.Minute}, false},
		}, ""},
		{"transfer then release", []adapter.Op{adapter.OpTransfer}, "v1", []step{
			{adapter.Request{Op: adapter.OpTransfer, Key: "k", From: "v1", Value: "v2", TTL: time.Minute}, true},
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v2"}, true},
		}, ""},
		{"extend then release", []adapter.Op{adapter.OpExtend}, "v1", []step{
			{adapter.Request{Op: adapter.OpExtend, Key: "k", Value: "v1", TTL: time.Minute}, true},
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v1"}, true},
		}, ""},
		{"the batch script cached", []adapter.Op{warmBatch}, "v1", []step{
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v1"}, true},
			{acquire("v2"), true},
			{adapter.Request{Op: adapter.OpExtend, Key: "k", Value: "v2", TTL: time.Minute}, true},
		}, "v2"},
		{"every script cached", []adapter.Op{adapter.OpRelease, adapter.OpTransfer, adapter.OpExtend, warmBatch}, "v1", []step{
			{adapter.Request{Op: adapter.OpExtend, Key: "k", Value: "v1", TTL: time.Minute}, true},
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v1"}, true},
			{acquire("v2"), true},
			{adapter.Request{Op: adapter.OpTransfer, Key: "k", From: "v2", Value: "v3", TTL: time.Minute}, true},
			{acquire("v4"), false},
			{adapter.Request{Op: adapter.OpRelease, Key: "k", Value: "v3"}, true},
			{acquire("v5"), true},
		}, "v5"},
	}
	s := redlocktest.StartServer(t)
	// The go-redis adapter batches the same way, with its own writer:
	// every case runs over both.
	dial := map[string]func(t *testing.T) adapter.BatchNode{
		"rueidis": func(t *testing.T) adapter.BatchNode { return node(t, s) },
		"goredis": func(t *testing.T) adapter.BatchNode {
			n, err := goredis.DialNode(s.URL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			return n
		},
	}
	for _, name := range []string{"rueidis", "goredis"} {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				n := dial[name](t)
				ctx := t.Context()
				if err := s.Client().FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				for _, op := range tt.warm {
					warm(t, n, op)
				}
				if ok, err := n.Acquire(ctx, "k", tt.held, time.Minute); !ok || err != nil {
					t.Fatalf("Acquire before the batch: %v %v", ok, err)
				}
				if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
					t.Fatalf("SCRIPT FLUSH: %v", err)
				}
				got := newCollect(len(tt.batch))
				calls := make([]adapter.Call, len(tt.batch))
				for i, st := range tt.batch {
					calls[i] = adapter.Call{Ctx: ctx, Req: st.req, To: got, Tag: i}
				}
				n.StartAll(calls)
				got.wait(t)
				for i, st := range tt.batch {
					if got.ok[i] != st.want || got.err[i] != nil {
						t.Errorf("step %d (%v): ok=%v err=%v, want ok=%v", i, st.req.Op, got.ok[i], got.err[i], st.want)
					}
				}
				v, err := s.Client().Get(ctx, "k").Result()
				if err != nil {
					v = ""
				}
				if v != tt.holder {
					t.Errorf("key holds %q after the batch, want %q", v, tt.holder)
				}
			})
		}
	}
}
