package redlock

import (
	"context"
	"sync"
	"testing"
	"time"
)

// memFenceNode is an in-memory FencingNode for the logic tests of fencing:
// the scripts' semantics (checked against redis-server by the conformance
// suite), with a gate that holds the next phase-1 request in flight, as a
// slow network does: the node applies it late, after the client gave up
// waiting.
type memFenceNode struct {
	strict bool // RaiseFence refuses a token not above the fence (the scripts do)

	mu     sync.Mutex
	keys   map[string]string
	fences map[string]uint64
	gate   chan struct{} // when set, the next AcquireFenced waits for it
	held   chan struct{} // closed when that request arrived

	late sync.WaitGroup
}

func newMemFenceNode(strict bool) *memFenceNode {
	return &memFenceNode{strict: strict, keys: map[string]string{}, fences: map[string]uint64{}}
}

func (n *memFenceNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, _, err := n.AcquireFenced(ctx, key, "", value, ttl)
	return ok, err
}

func (n *memFenceNode) Release(_ context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keys[key] == value {
		delete(n.keys, key)
		return true, nil
	}
	return false, nil
}

func (n *memFenceNode) Extend(_ context.Context, key, value string, _ time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.keys[key] == value, nil
}

func (n *memFenceNode) set(key, fenceKey, value string) (bool, uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, held := n.keys[key]; held {
		return false, 0
	}
	n.keys[key] = value
	return true, n.fences[fenceKey]
}

func (n *memFenceNode) AcquireFenced(ctx context.Context, key, fenceKey, value string, _ time.Duration) (bool, uint64, error) {
	n.mu.Lock()
	gate, held := n.gate, n.held
	n.gate = nil
	if gate != nil {
		n.late.Add(1)
	}
	n.mu.Unlock()
	if gate != nil {
		close(held)
		go func() {
			defer n.late.Done()
			<-gate
			n.set(key, fenceKey, value) // applied late; nobody reads the answer
		}()
		<-ctx.Done()
		return false, 0, ctx.Err()
	}
	ok, f := n.set(key, fenceKey, value)
	return ok, f, nil
}

func (n *memFenceNode) RaiseFence(_ context.Context, key, fenceKey, value string, token uint64, _ time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keys[key] != value || (n.strict && n.fences[fenceKey] >= token) {
		return false, nil
	}
	n.fences[fenceKey] = max(n.fences[fenceKey], token)
	return true, nil
}

// TestFencingTokensDifferUnderKeyLoss plays the schedule in which two
// grants would read the same fences: nodes z, w, y; client A sets z and w
// (its request to y is held in flight) and stops between the phases; A's
// key vanishes from z (a restart without persistence, a clock jump); B
// acquires z and y, gets token 1, raises it there and releases; A's late
// request sets y; A resumes with token 1 and raises it on w and y. With
// phase 2 refusing a token that is not above the fence, y refuses A, and A
// is not granted; with a plain "raise to at least the token", A would be
// granted the same token as B, and the storage would accept both.
func TestFencingTokensDifferUnderKeyLoss(t *testing.T) { // R18
	tests := []struct {
		name          string
		strict        bool
		wantDuplicate bool
	}{
		{"phase 2 only above the fence (the scripts)", true, false},
		{"phase 2 as a plain max (counterexample)", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, w, y := newMemFenceNode(tt.strict), newMemFenceNode(tt.strict), newMemFenceNode(tt.strict)
			nodes := []Node{z, w, y}
			opts := []Option{WithFencing(), WithNodeTimeout(20 * time.Millisecond), WithTTL(10 * time.Second)}
			a, err := New(nodes, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := New(nodes, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()

			gate, held := make(chan struct{}), make(chan struct{})
			y.gate, y.held = gate, held // A's request to y stays in flight
			var gateOnce sync.Once
			open := func() { gateOnce.Do(func() { close(gate) }) }
			defer open()

			paused, resume := make(chan struct{}), make(chan struct{})
			var resumeOnce sync.Once
			unpause := func() { resumeOnce.Do(func() { close(resume) }) }
			defer unpause() // before the Closes, even when the test fails
			hooked := WithPhaseHook(context.Background(), func(string) { close(paused); <-resume })
			type result struct {
				l   *Lock
				err error
			}
			got := make(chan result, 1)
			go func() {
				l, err := a.TryLock(hooked, "r")
				got <- result{l, err}
			}()
			select {
			case <-paused:
			case r := <-got:
				t.Fatalf("A did not reach phase 2: %v", r.err)
			}
			<-held
			z.mu.Lock()
			delete(z.keys, DefaultKeyPrefix+"r") // A's key lost on z
			z.mu.Unlock()
			lb, err := b.TryLock(t.Context(), "r")
			if err != nil {
				t.Fatalf("B: %v", err)
			}
			if err := lb.Unlock(t.Context()); err != nil {
				t.Fatalf("B's Unlock: %v", err)
			}
			open() // A's request reaches y
			y.late.Wait()
			unpause()
			ra := <-got
			duplicate := ra.err == nil && ra.l.Token() == lb.Token()
			if duplicate != tt.wantDuplicate {
				t.Fatalf("A: lock %v, err %v; B's token %d; duplicate token = %v, want %v", ra.l, ra.err, lb.Token(), duplicate, tt.wantDuplicate)
			}
			if ra.l != nil {
				_ = ra.l.Unlock(t.Context())
			}
		})
	}
}
