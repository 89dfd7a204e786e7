package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
)

// inspectedNode is an orderedNode that an operator's ForceRelease, and
// the release markers, can read and write (adapter.InspectNode).
type inspectedNode struct{ *orderedNode }

func (n inspectedNode) Inspect(ctx context.Context, key string) (adapter.KeyState, error) {
	return n.m.Inspect(ctx, key)
}

func (n inspectedNode) Scan(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	return n.m.Scan(ctx, prefix, cursor, count)
}

func (n inspectedNode) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	return n.m.PutNote(ctx, key, note, ttl)
}

func (n inspectedNode) Note(ctx context.Context, key string) (string, bool, error) {
	return n.m.Note(ctx, key)
}

// A release by someone other than the holder (an operator's
// ForceRelease; Client.Release of the lock's handle in another process)
// that races the holder's extension must hold: the extension's restore
// of nodes that "forgot" the key (restore.go) must not set it again. The
// race looks to the extension exactly like forgetting nodes: where the
// release came first the node answers "not held". Before the fix, with
// the release first on m1 and m2, every node held the lock again
// afterwards and the racing Extend returned nil ("ForceRelease of Lock:
// 5 of 5 nodes hold the holder's value afterwards; the racing Extend =
// <nil>"). Every one of the 32 per-node orders runs, for each kind of
// lock each release can end, and again where the nodes that saw the
// release first answer the extension after the others (at most 2 of them,
// so that the others decide it): their "not held" then comes after the
// decision, and the restore that it calls for (restore.go) must hold too.
func TestReleaseByAnotherRacingExtensionHolds(t *testing.T) {
	for _, by := range []string{"ForceRelease", "Release"} {
		for _, kind := range []string{"Lock", "LockAll", "RLock"} {
			if by == "ForceRelease" && kind == "LockAll" {
				continue // ForceRelease ends one resource, not a set
			}
			for _, o := range racingOrders() {
				t.Run(by+" of "+kind+" first on "+o.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { releaseRacingExtension(t, by, kind, o.mask, o.late) })
				})
			}
		}
	}
}

// releaseRacingExtension races the holder's Extend of a lock of kind with
// a release by another client (by: ForceRelease, or Release of the lock's
// handle) over 5 nodes, the release first on the nodes of mask, which
// answer the extension late after the others.
func releaseRacingExtension(t *testing.T, by, kind string, mask int, late time.Duration) {
	const ttl = 10 * time.Second
	mems, ordered := orderedMemNodes(mask, late)
	nodes := make([]redlock.Node, len(ordered))
	for i, o := range ordered {
		nodes[i] = inspectedNode{o}
	}
	holder, err := redlock.New(nodes, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	other, err := redlock.New(nodes, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	l := lockOfKind(t, holder, kind)
	value := l.Value()
	extended := startRacingExtension(l, ordered)
	var rerr error
	if by == "ForceRelease" {
		_, rerr = other.ForceRelease(context.Background(), "r")
	} else {
		rerr = other.Release(context.Background(), l.Handle())
	}
	if rerr != nil {
		t.Fatalf("%s = %v, want nil", by, rerr)
	}
	eerr := <-extended
	time.Sleep(time.Second) // every request answered, the late ones too
	synctest.Wait()
	holding := 0
	for _, m := range mems {
		held := false
		for _, key := range []string{"dlm:lock:r", "dlm:lock:s"} {
			if v, ok, _ := m.Value(context.Background(), key); ok && v == value {
				held = true
			}
		}
		if readers, _ := m.Readers("dlm:lock:r"); len(readers) > 0 {
			held = true
		}
		if held {
			holding++
		}
	}
	if holding > 0 {
		t.Errorf("%s of %s: %d of 5 nodes hold the holder's value afterwards; the racing Extend = %v", by, kind, holding, eerr)
	}
	if late > 0 && mask != 0 && !errors.Is(l.Err(), redlock.ErrNotHeld) {
		// The late "not held" of a node that saw the release first
		// found its marker.
		t.Errorf("%s of %s: the lock's Err = %v after the late answers, want ErrNotHeld (the racing Extend = %v)", by, kind, l.Err(), eerr)
	}
	// The racing extension may have been confirmed by a quorum before
	// the release reached it; the next one finds the lock gone.
	if err := l.Extend(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("%s of %s: the next Extend = %v, want ErrNotHeld", by, kind, err)
	}
}
