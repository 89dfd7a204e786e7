package redlock_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A release from another process (Client.Release of a handle, the Unlock
// of a lock whose handle was written) first keeps a release marker of the
// value on every node, so that the holder's extension racing it does not
// restore the key where the release came first. Over healthy nodes
// answering past the limit (1.5 s, ttl 10 s) the marker must reach them as
// the release does: it waits for a slow node as the release after it
// waits. Cases: a new client's Release of a handle (dlm release HANDLE),
// and the Unlock of a lock whose handle was written, by a client that
// knows the nodes are slow. In memory, under synctest.
//
// The nodes apply a note only when it reaches them, after the delay, as a
// real server behind a slow link does: a note whose writer gave up first
// is lost (MemNode alone applies every request at once).
//
// Failed before (each marker was bounded by the release timeout): "...:
// the release marker is on 1 of 3 nodes after the release returned <nil>".
func TestReleaseMarkersReachSlowNodes(t *testing.T) {
	for _, how := range []string{"a new client's Release of a handle", "Unlock of a lock whose handle was written"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl, late = 10 * time.Second, 1500 * time.Millisecond
				nodes, mems := redlocktest.NewMemNodes(3)
				for i, m := range mems[1:] {
					nodes[i+1] = notesOnTheWire{m, late}
				}
				_, l, h := handleOfR(t, nodes, ttl)
				var err error
				for _, m := range mems[1:] {
					m.SetSlow(late)
				}
				if how[0] == 'a' {
					fresh, ferr := redlock.New(nodes, redlock.WithTTL(ttl))
					if ferr != nil {
						t.Fatal(ferr)
					}
					defer fresh.Close()
					err = fresh.Release(context.Background(), h)
				} else {
					// The holder learns the nodes are slow (its extension
					// waits for them from its second try on).
					learn(t, l)
					err = l.Unlock(context.Background())
				}
				synctest.Wait()
				sum := sha256.Sum256([]byte(h.Value))
				marker := "dlm:info:rel:" + hex.EncodeToString(sum[:16])
				marked := 0
				for _, m := range mems {
					if _, ok, _ := m.Note(context.Background(), marker); ok {
						marked++
					}
				}
				if err != nil || marked < len(mems) {
					t.Errorf("nodes 2 and 3 healthy but answering %v late (ttl %v), %s: the release marker is on %d of %d nodes after the release returned %v",
						late, ttl, how, marked, len(mems), err)
				}
			})
		})
	}
}

// notesOnTheWire is a slow node whose notes reach it late: PutNote applies
// the note after the delay, unless its context ended first.
type notesOnTheWire struct {
	*redlocktest.MemNode
	late time.Duration
}

// PutNote writes the note once it reaches the node.
func (n notesOnTheWire) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	select {
	case <-time.After(n.late):
		return n.MemNode.PutNote(ctx, key, note, ttl)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// learn extends l until an extension succeeds (a few tries): its client
// then knows that the nodes are slow.
func learn(t *testing.T, l *redlock.Lock) {
	t.Helper()
	var err error
	for range 3 {
		if err = l.Extend(t.Context()); err == nil {
			return
		}
	}
	t.Fatalf("Extend over slow nodes: %v", err)
}
