package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// resumingNode is the node of the process that resumed a handle: its
// extensions (Resume's confirmation) go straight to the MemNode, its
// releases through the orderedNode's forced order, so that the resumed
// lock's Unlock races the original holder's extension as
// TestReleaseByAnotherRacingExtensionHolds races Client.Release.
type resumingNode struct{ inspectedNode }

func (n resumingNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Extend(ctx, key, value, ttl)
}

func (n resumingNode) RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.RExtend(ctx, key, value, ttl)
}

// The Unlock of a lock resumed in another process (Client.Resume), racing
// the original holder's extension, must hold as a handle's Release does:
// where the release reaches a node first, the extension's restore must
// not set the key again there, and the holder's next Extend says
// ErrNotHeld. The same goes for the original's Unlock racing the resumed
// lock's extension: either lock crossed processes, so its Unlock leaves a
// release marker before it releases.
func TestResumedUnlockRacingTheHolderExtensionHolds(t *testing.T) {
	for _, kind := range []string{"Lock", "RLock"} {
		for _, mask := range []int{0b00001, 0b00011, 0b00101} {
			name := ""
			for i := range 5 {
				if mask&(1<<i) != 0 {
					name += fmt.Sprintf("m%d", i+1)
				}
			}
			t.Run(kind+" unlock first on "+name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { resumedUnlockRacingExtension(t, kind, mask) })
			})
		}
	}
}

func resumedUnlockRacingExtension(t *testing.T, kind string, mask int) {
	const ttl = 10 * time.Second
	_, mems := redlocktest.NewMemNodes(5)
	var ordered []*orderedNode
	var holderNodes, resumingNodes []redlock.Node
	for i, m := range mems {
		o := newOrderedNode(m, mask&(1<<i) != 0)
		ordered = append(ordered, o)
		holderNodes = append(holderNodes, inspectedNode{o})
		resumingNodes = append(resumingNodes, resumingNode{inspectedNode{o}})
	}
	holder, err := redlock.New(holderNodes, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	other, err := redlock.New(resumingNodes, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var l *redlock.Lock
	if kind == "RLock" {
		l, err = holder.RLock(t.Context(), "r")
	} else {
		l, err = holder.Lock(t.Context(), "r")
	}
	if err != nil {
		t.Fatal(err)
	}
	value := l.Value()
	synctest.Wait()
	resumed, err := other.Resume(t.Context(), l.Handle())
	if err != nil {
		t.Fatalf("Resume = %v", err)
	}
	synctest.Wait()
	extended := make(chan error, 1)
	go func() { extended <- l.Extend(context.Background()) }()
	for _, o := range ordered {
		<-o.extending
	}
	if err := resumed.Unlock(context.Background()); err != nil {
		t.Fatalf("the resumed lock's Unlock = %v, want nil", err)
	}
	eerr := <-extended
	synctest.Wait()
	holding := 0
	for _, m := range mems {
		if v, ok, _ := m.Value(context.Background(), "dlm:lock:r"); ok && v == value {
			holding++
		} else if readers, _ := m.Readers("dlm:lock:r"); len(readers) > 0 {
			holding++
		}
	}
	if holding > 0 {
		time.Sleep(ttl / 2)
		later := 0
		for _, m := range mems {
			if v, ok, _ := m.Value(context.Background(), "dlm:lock:r"); ok && v == value {
				later++
			} else if readers, _ := m.Readers("dlm:lock:r"); len(readers) > 0 {
				later++
			}
		}
		t.Errorf("%s: the resumed lock's Unlock returned nil, yet %d of 5 nodes hold the holder's value afterwards (%d still %v later); the racing Extend = %v", kind, holding, later, ttl/2, eerr)
	}
	if err := l.Extend(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("%s: the next Extend = %v, want ErrNotHeld", kind, err)
	}
}
