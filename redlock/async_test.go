package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// withholding is an AsyncNode over a real rueidis node whose answers to
// started requests the test can hold back (hold) and then let go: a node
// whose replies arrive as late as the test likes. The requests themselves
// reach the node at once. It is deliberately not a BatchNode or a
// HandoffNode, so that every request goes through its Start.
type withholding struct {
	node *rueidis.Node

	mu      sync.Mutex
	holding bool
	held    []func()
}

var _ adapter.AsyncNode = (*withholding)(nil)

func (w *withholding) String() string { return w.node.String() }

func (w *withholding) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return w.node.Acquire(ctx, key, value, ttl)
}

func (w *withholding) Release(ctx context.Context, key, value string) (bool, error) {
	return w.node.Release(ctx, key, value)
}

func (w *withholding) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return w.node.Extend(ctx, key, value, ttl)
}

func (w *withholding) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	w.node.Start(ctx, req, withheldReceiver{w, to}, tag)
}

// hold starts holding answers back (on) or lets every held answer go.
func (w *withholding) hold(on bool) {
	w.mu.Lock()
	w.holding = on
	held := w.held
	w.held = nil
	w.mu.Unlock()
	for _, f := range held {
		f()
	}
}

type withheldReceiver struct {
	w  *withholding
	to adapter.Receiver
}

func (r withheldReceiver) Receive(tag int, ok bool, err error) {
	r.w.mu.Lock()
	if r.w.holding {
		r.w.held = append(r.w.held, func() { r.to.Receive(tag, ok, err) })
		r.w.mu.Unlock()
		return
	}
	r.w.mu.Unlock()
	r.to.Receive(tag, ok, err)
}

// withholdingCluster starts 5 real nodes and a client over withholding
// nodes on them.
func withholdingCluster(t *testing.T, opts ...redlock.Option) (*redlocktest.Cluster, []*withholding, *redlock.Client) {
	t.Helper()
	cl := redlocktest.Start(t, 5)
	ws := make([]*withholding, len(cl.Servers))
	nodes := make([]redlock.Node, len(ws))
	for i, s := range cl.Servers {
		n, err := rueidis.DialNode(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		ws[i] = &withholding{node: n}
		nodes[i] = ws[i]
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return cl, ws, c
}

// An attempt over AsyncNodes is decided at the node timeout even when a
// majority's answers have not come (R8.2): those nodes count as timed out,
// and their answers, when they come, are released as late ones (R8.5), so
// no key is left behind and Close waits for them.
func TestAsyncAttemptEndsAtTheNodeTimeout(t *testing.T) {
	rec := &recorder{}
	// A ttl of 1s puts the adaptive bound's limit (a tenth of the ttl)
	// at the node timeout itself (timeout.go): the attempt ends there.
	cl, ws, c := withholdingCluster(t, redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithTTL(time.Second),
		redlock.WithRetryDelay(5*time.Millisecond, 10*time.Millisecond), redlock.WithObserver(rec))
	for _, w := range ws[:3] {
		w.hold(true)
	}
	// The context leaves the first attempt time to end at its node
	// timeout on a loaded machine: with half a second, a first attempt
	// that began late (a new client first waits up to four node timeouts
	// for its nodes' facts) was cut by the context, its nodes NoReply
	// (seen in a fresh-clone run at load 40).
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Lock(ctx, "late")
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Lock did not return while three nodes' answers were held: the attempt waited past the node timeout")
	}
	var ae *redlock.AcquireError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &ae) {
		t.Fatalf("Lock: %v, want ErrNotAcquired", err)
	}
	if ae.Attempts < 1 {
		t.Fatalf("attempts = %d, want at least 1", ae.Attempts)
	}
	// The first attempt ended at the node timeout; the last one may have
	// been ended by the context instead (its nodes are then NoReply).
	rec.mu.Lock()
	first := rec.attempts[0]
	rec.mu.Unlock()
	for _, r := range first.Nodes[:3] {
		if r.Outcome != redlock.TimedOut && r.Outcome != redlock.Failed {
			t.Fatalf("node %s: outcome %v, want timed out (its answer was held)", r.Node, r.Outcome)
		}
	}
	for _, w := range ws[:3] {
		w.hold(false) // the late answers: acquired, to be released
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
		"keys left after the late answers came")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// Over AsyncNodes, Unlock returns once a quorum released, without waiting
// for the other nodes' answers.
func TestAsyncUnlockReturnsAtAQuorum(t *testing.T) {
	cl, ws, c := withholdingCluster(t, redlock.WithNodeTimeout(time.Second))
	l, err := c.TryLock(t.Context(), "quorum")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws[3:] {
		w.hold(true)
	}
	done := make(chan error, 1)
	go func() { done <- l.Unlock(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Unlock waited for the two nodes whose answers were held")
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool { return keysEverywhere(cl, redlock.DefaultKeyPrefix) == 0 },
		"keys left: the releases reach every node, answered or not")
	for _, w := range ws[3:] {
		w.hold(false)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A settler that Close finds running (a lock or an attempt left behind by a
// Lock call whose context ended) may still release on the nodes: Close
// waits for it, and no key outlives the client (R12).
func TestSettlerReleasesAfterCloseBegan(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	c, err := rueidis.Dial(cl.URLs(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	l := lockOnAll(t, cl, c, "r")
	unlocked := make(chan error, 1)
	sawClose := false
	if !redlock.Settle(c, func() {
		for deadline := time.Now().Add(10 * time.Second); !sawClose && time.Now().Before(deadline); {
			runtime.Gosched() // Close sets its flag before it waits for the settler
			sawClose = redlock.Closing(c)
		}
		unlocked <- l.Unlock(context.Background())
	}) {
		t.Fatal("Settle refused on an open client")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-unlocked; err != nil || !sawClose {
		t.Fatalf("Unlock by a settler while Close waited = %v (Close seen: %v), want nil", err, sawClose)
	}
	if n := keysEverywhere(cl, redlock.DefaultKeyPrefix); n != 0 {
		t.Fatalf("%d keys left after Close", n)
	}
}
