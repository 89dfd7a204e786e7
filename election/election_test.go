package election_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// errCut is the answer of a node cut off from one client (cutNode).
var errCut = errors.New("test: cut off")

// cutNode is a MemNode as one client sees it: while cut is set, the
// client's asynchronous requests (acquisition, extension, release) fail,
// as behind a partition, while other clients reach the node.
type cutNode struct {
	*redlocktest.MemNode
	cut *atomic.Bool
}

func (c cutNode) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	if c.cut.Load() {
		to.Receive(tag, false, errCut)
		return
	}
	c.MemNode.Start(ctx, req, to, tag)
}

func (c cutNode) StartAll(calls []adapter.Call) {
	for _, cl := range calls {
		c.Start(cl.Ctx, cl.Req, cl.To, cl.Tag)
	}
}

// holdNode is a MemNode that holds back a candidate between the phases of
// its campaign: RaiseFence (fencing's phase 2) waits while fence is open,
// PutRecord while record is open, each until the channel is closed or the
// request's context ends.
type holdNode struct {
	*redlocktest.MemNode
	fence, record chan struct{}
}

func wait(ctx context.Context, gate chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h holdNode) RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error) {
	if err := wait(ctx, h.fence); err != nil {
		return false, err
	}
	return h.MemNode.RaiseFence(ctx, key, fenceKey, value, token, retention)
}

func (h holdNode) PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error) {
	if err := wait(ctx, h.record); err != nil {
		return false, err
	}
	return h.MemNode.PutRecord(ctx, key, recordKey, value, record, retention)
}

const ttl = 2 * time.Second

// newClient returns a fenced client over nodes, closed at the end of the
// test, with a node timeout of 1s (fake time under synctest).
func newClient(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second / 2)}, opts...)
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newElection(t *testing.T, c *redlock.Client, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(c, "db", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustLeader(t *testing.T, e *election.Election, wantOK bool, want election.Leader) {
	t.Helper()
	got, ok, err := e.Leader(t.Context())
	if err != nil || ok != wantOK || got != want {
		t.Fatalf("Leader = %+v, %v, %v; want %+v, %v, nil", got, ok, err, want, wantOK)
	}
}

// lockKeys counts the lock keys on the nodes.
func lockKeys(t *testing.T, mems []*redlocktest.MemNode) int {
	t.Helper()
	n := 0
	for _, m := range mems {
		keys, _ := m.Keys(t.Context(), redlock.DefaultKeyPrefix)
		n += len(keys)
	}
	return n
}

func TestCampaignBlocksUntilResign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		e := newElection(t, newClient(t, nodes))
		a, err := e.Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *election.Leadership, 1)
		go func() {
			b, err := newElection(t, newClient(t, nodes)).Campaign(t.Context(), "b")
			if err != nil {
				t.Error(err)
			}
			got <- b
		}()
		time.Sleep(5 * ttl) // fake time: b keeps campaigning while a leads
		select {
		case b := <-got:
			t.Fatalf("b elected while a leads: %+v", b)
		default:
		}
		mustLeader(t, e, true, election.Leader{ID: "a", Term: a.Term()})
		resigned := time.Now()
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		b := <-got
		if b == nil {
			return
		}
		if d := time.Since(resigned); d > redlock.DefaultRetryMax+time.Second {
			t.Errorf("b elected %v after a resigned, want within the retry delay", d)
		}
		if b.Term() <= a.Term() {
			t.Errorf("term of b = %d, want above a's %d", b.Term(), a.Term())
		}
		if !errors.Is(a.Err(), redlock.ErrUnlocked) {
			t.Errorf("a.Err() = %v, want ErrUnlocked", a.Err())
		}
		mustLeader(t, e, true, election.Leader{ID: "b", Term: b.Term()})
		_ = b.Resign(t.Context())
	})
}

// A leader cut off from the nodes notices its loss (Done) before the next
// leader is elected, and the next term is higher, so that a store that
// fences by term refuses the deposed leader.
func TestDeposedLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		var cut atomic.Bool
		cutNodes := make([]redlock.Node, len(mems))
		for i, m := range mems {
			cutNodes[i] = cutNode{m, &cut}
		}
		a, err := newElection(t, newClient(t, cutNodes)).Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		cut.Store(true)
		b, err := newElection(t, newClient(t, nodes)).Campaign(t.Context(), "b")
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Done():
		default:
			t.Fatal("b elected while a still believes it leads")
		}
		if !errors.Is(a.Err(), redlock.ErrExpired) {
			t.Errorf("a.Err() = %v, want ErrExpired", a.Err())
		}
		if b.Term() <= a.Term() {
			t.Fatalf("term of b = %d, want above a's %d", b.Term(), a.Term())
		}
		// A store that fences by term: it refuses a term below one seen.
		var seen uint64
		write := func(term uint64) bool {
			if term < seen {
				return false
			}
			seen = term
			return true
		}
		if !write(b.Term()) || write(a.Term()) {
			t.Fatalf("fenced store: b's term %d accepted, a's term %d must be refused", b.Term(), a.Term())
		}
		_ = b.Resign(t.Context())
	})
}

// Leader never reports a candidate that is between its acquisition and its
// record, nor the previous leader's record once the keys are another's.
func TestLeaderMidCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		fence, record := make(chan struct{}), make(chan struct{})
		held := make([]redlock.Node, len(mems))
		for i, m := range mems {
			held[i] = holdNode{m, fence, record}
		}
		reader := newElection(t, newClient(t, nodes))
		a, err := newElection(t, newClient(t, nodes)).Campaign(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		mustLeader(t, reader, true, election.Leader{ID: "a", Term: 1})
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := make(chan *election.Leadership, 1)
		go func() {
			b, err := newElection(t, newClient(t, held)).Campaign(t.Context(), "b")
			if err != nil {
				t.Error(err)
			}
			got <- b
		}()
		synctest.Wait() // b holds the keys of every node, fencing's phase 2 held back
		if n := lockKeys(t, mems); n != 5 {
			t.Fatalf("%d lock keys, want b's on all 5 nodes", n)
		}
		mustLeader(t, reader, false, election.Leader{Term: 1})
		close(fence)
		synctest.Wait() // b has its token, its record held back
		mustLeader(t, reader, false, election.Leader{Term: 2})
		close(record)
		b := <-got
		if b == nil {
			return
		}
		mustLeader(t, reader, true, election.Leader{ID: "b", Term: 2})
		_ = b.Resign(t.Context())
	})
}

// A campaign ended by its context while it held the keys (its record held
// back) leaves no lock key on any node.
func TestCampaignCancelLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(5)
		fence, record := make(chan struct{}), make(chan struct{})
		close(fence)
		held := make([]redlock.Node, len(mems))
		for i, m := range mems {
			held[i] = holdNode{m, fence, record}
		}
		e := newElection(t, newClient(t, held, redlock.WithTTL(5*time.Minute), redlock.WithNodeTimeout(time.Minute)))
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := e.Campaign(ctx, "a")
			errc <- err
		}()
		synctest.Wait()
		if n := lockKeys(t, mems); n != 5 {
			t.Fatalf("%d lock keys mid-campaign, want 5", n)
		}
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Campaign = %v, want context.Canceled", err)
		}
		synctest.Wait()
		if n := lockKeys(t, mems); n != 0 {
			t.Fatalf("%d lock keys left after a cancelled campaign, want 0", n)
		}
	})
}

func TestObserveInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(5)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := newElection(t, newClient(t, nodes), election.WithPollInterval(100*time.Millisecond)).Observe(ctx)
		seen := make(chan []election.Leader, 1)
		go func() {
			var all []election.Leader
			for c := range changes {
				if c.Err != nil {
					t.Errorf("change %+v: %v", c.Leader, c.Err)
				}
				all = append(all, c.Leader)
			}
			seen <- all
		}()
		e := newElection(t, newClient(t, nodes))
		for _, id := range []string{"a", "b", "c"} {
			l, err := e.Campaign(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if err := l.Resign(t.Context()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
		}
		cancel()
		all := <-seen
		var ids []string
		for i, ld := range all {
			if ld.ID != "" {
				ids = append(ids, ld.ID)
			}
			if i > 0 && (ld.Term < all[i-1].Term || ld == all[i-1]) {
				t.Errorf("change %d %+v after %+v: terms must not go back, changes must differ", i, ld, all[i-1])
			}
		}
		if got := strings.Join(ids, ","); got != "a,b,c" {
			t.Errorf("leaders observed %q (all: %+v), want a,b,c", got, all)
		}
	})
}

func TestLeaderWithoutQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(5)
		e := newElection(t, newClient(t, nodes))
		for _, m := range mems[:3] {
			m.SetDown(true)
		}
		_, ok, err := e.Leader(t.Context())
		if ok || !errors.Is(err, election.ErrNoQuorum) || !errors.Is(err, redlocktest.ErrNodeDown) {
			t.Fatalf("Leader with 3 of 5 nodes down = %v, %v; want ErrNoQuorum with the nodes' errors", ok, err)
		}
	})
}

// fencingOnly hides every capability of a MemNode but fencing.
type fencingOnly struct{ adapter.FencingNode }

func TestBadInput(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(3)
	fenced := newClient(t, nodes)
	plain, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	bare := make([]redlock.Node, len(mems))
	for i, m := range mems {
		bare[i] = fencingOnly{m}
	}
	noRecords := newClient(t, bare)
	// A record prefix that overlaps the lock prefix is refused by the lock
	// client already, before any election could use it.
	if _, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithRecordPrefix("dlm:lock:rec:")); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("a record prefix inside the lock prefix: %v; want ErrInvalid saying overlap", err)
	}
	long := strings.Repeat("x", election.MaxNameLen+1)
	tests := []struct {
		name   string
		client *redlock.Client
		elect  string
		opts   []election.Option
		id     string
		want   error
		says   string
	}{
		{"nil client", nil, "db", nil, "a", election.ErrInvalid, "nil lock client"},
		{"client without fencing", plain, "db", nil, "a", election.ErrInvalid, "WithFencing"},
		{"empty name", fenced, "", nil, "a", election.ErrInvalid, "election name is empty"},
		{"long name", fenced, long, nil, "a", election.ErrInvalid, "at most 256"},
		{"unprintable name", fenced, "d\nb", nil, "a", election.ErrInvalid, "unprintable"},
		{"invalid UTF-8 name", fenced, "d\xffb", nil, "a", election.ErrInvalid, "not valid UTF-8"},
		{"poll interval", fenced, "db", []election.Option{election.WithPollInterval(0)}, "a", election.ErrInvalid, "poll interval"},
		{"empty id", fenced, "db", nil, "", election.ErrInvalid, "candidate id is empty"},
		{"long id", fenced, "db", nil, long, election.ErrInvalid, "at most 256"},
		{"id with a tab", fenced, "db", nil, "a\tb", election.ErrInvalid, "unprintable"},
		{"nodes without records", noRecords, "db", nil, "a", redlock.ErrInvalid, "adapter.RecordNode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := election.New(tt.client, tt.elect, tt.opts...)
			if err == nil {
				_, err = e.Campaign(t.Context(), tt.id)
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("got %v, want %v saying %q", err, tt.want, tt.says)
			}
		})
	}
	// Unlock returns once a quorum released (R12): the last node's
	// release may land a moment later.
	redlocktest.Eventually(t, 10*time.Second, func() bool { return lockKeys(t, mems) == 0 },
		"lock keys left by bad input 10s after it, want 0")
}

// floorMemNodes returns n in-memory nodes that keep fence floors (a fenced
// client needs them), and the MemNodes behind them.
func floorMemNodes(n int) ([]redlock.Node, []*redlocktest.MemNode) {
	nodes, mems := redlocktest.NewMemNodes(n)
	for i, m := range mems {
		nodes[i] = m.WithFloor()
	}
	return nodes, mems
}

// fencedClient returns a fenced client of ttl over nodes, with the default
// node timeout, closed at the end of the test.
func fencedClient(t *testing.T, nodes []redlock.Node, ttl time.Duration) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// electA elects "a" in election "db" of c, and (under synctest) lets the
// requests still on their way after the quorum land.
func electA(t *testing.T, c *redlock.Client) (*election.Election, *election.Leadership) {
	t.Helper()
	e := newElection(t, c)
	lead, err := e.Campaign(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return e, lead
}
