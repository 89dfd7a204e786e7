package rueidis_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rd "github.com/redis/rueidis"

	"dlm/redlock"
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
// the node over its one connection and in Start order (redlock.AsyncNode):
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
				calls := make([]redlock.Call, 0, 2*pairs)
				for i := range pairs {
					v := strconv.Itoa(round) + ":" + strconv.Itoa(i)
					calls = append(calls,
						redlock.Call{Ctx: ctx, Req: redlock.Request{Op: redlock.OpAcquire, Key: "k", Value: v, TTL: time.Minute}, To: got, Tag: 2 * i},
						redlock.Call{Ctx: ctx, Req: redlock.Request{Op: redlock.OpRelease, Key: "k", Value: v}, To: got, Tag: 2*i + 1})
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
