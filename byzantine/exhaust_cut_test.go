package byzantine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlm/byzantine"
)

// cutAfter is a context that ends at its k-th Err call, so that a search
// stops at the same point of its work on every machine, loaded or not.
type cutAfter struct {
	context.Context
	k     int64
	calls atomic.Int64
	once  sync.Once
	done  chan struct{}
	at    atomic.Pointer[time.Time]
}

func newCutAfter(parent context.Context, k int64) *cutAfter {
	return &cutAfter{Context: parent, k: k, done: make(chan struct{})}
}

func (c *cutAfter) Err() error {
	if c.calls.Add(1) <= c.k {
		return c.Context.Err()
	}
	c.once.Do(func() {
		now := time.Now()
		c.at.Store(&now)
		close(c.done)
	})
	return context.Canceled
}

func (c *cutAfter) Done() <-chan struct{} { return c.done }

// TestExhaustStopsInsideARound: a search whose context ends early in the
// last round of its first run (OM(5) with 22 generals, whose round 5 holds
// tens of millions of relays and a relay tree of about 30 MB per general)
// returns at once (regression: after the cut every other general still
// made all its relays of the round, and the next round's trees were
// allocated unchecked, so a 1 s --budget ran 3.8 s and a 2 s one 5.8 s).
func TestExhaustStopsInsideARound(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("large runs (about 700 MB; several GB under the race detector)")
	}
	cfg := byzantine.DefaultConfig()
	cfg.Generals, cfg.MaxTraitors = 22, 5
	// The context is checked every 4,096 messages; rounds 0-4 send about
	// 4 million, so the 1,500th check falls early in round 5.
	ctx := newCutAfter(t.Context(), 1500)
	res, err := byzantine.Exhaust(ctx, cfg, byzantine.ExhaustOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cut := ctx.at.Load()
	if cut == nil {
		t.Fatalf("the search ended (%d runs) before it checked its context 1,500 times", res.Runs)
	}
	after := time.Since(*cut)
	if res.Complete {
		t.Errorf("a search cut in its first run says it is complete")
	}
	if after > 1500*time.Millisecond {
		t.Errorf("the search returned %v after its context ended", after)
	}
	t.Logf("returned %v after the cut", after)
}
