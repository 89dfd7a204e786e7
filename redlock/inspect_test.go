package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// Any client sees who holds a resource, in which mode,
// for how long, with which token, and never a byte of the value.
func TestInspect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		alice := memClient(t, nodes, redlock.WithOwner("alice on build-7"), redlock.WithFencing())
		bob := memClient(t, nodes, redlock.WithOwner("bob"))
		carol := memClient(t, nodes, redlock.WithOwner("carol"))
		viewer := memClient(t, nodes)
		ctx := t.Context()

		info, err := viewer.Inspect(ctx, "w")
		if err != nil || info.Mode != redlock.ModeFree || info.Held() {
			t.Fatalf("Inspect of a free resource = %v, %v; want free", info.Mode, err)
		}
		l, err := alice.Lock(ctx, "w", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the owner note, written in the background
		time.Sleep(time.Second)
		info, err = viewer.Inspect(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode != redlock.ModeWrite || info.Owner != "alice on build-7" || info.Token != l.Token() || info.Token == 0 {
			t.Errorf("Inspect of a held lock = mode %v owner %q token %d; want write, alice on build-7, %d", info.Mode, info.Owner, info.Token, l.Token())
		}
		if info.Validity != 29*time.Second {
			t.Errorf("validity %v; want 29s (30s ttl, 1s later)", info.Validity)
		}
		for _, n := range info.Nodes {
			if n.Holder != 1 || n.Kind != adapter.KeyLock || n.Owner != "alice on build-7" {
				t.Errorf("node view %+v; want holder 1, lock, alice", n)
			}
		}
		if s := fmt.Sprintf("%+v %#v", info, info); strings.Contains(s, redlock.RawValue(l)[:8]) {
			t.Errorf("Inspect shows bytes of the value (its tag): %s", s)
		}

		// Readers: held by readers, not free.
		r1, err := bob.RLock(ctx, "r", redlock.WithTTL(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		r2, err := carol.RLock(ctx, "r", redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		info, err = viewer.Inspect(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode != redlock.ModeRead || len(info.Readers) != 2 || info.Readers[0].Owner != "bob" || info.Readers[1].Owner != "carol" ||
			info.Readers[0].Validity != 20*time.Second || info.Readers[1].Validity != 10*time.Second {
			t.Errorf("Inspect of a read lock = %v %+v; want read by bob (20s) and carol (10s)", info.Mode, info.Readers)
		}
		if s := fmt.Sprintf("%+v", info); strings.Contains(s, redlock.RawValue(r1)[:8]) || strings.Contains(s, redlock.RawValue(r2)[:8]) {
			t.Errorf("Inspect shows bytes of a reader's value: %s", s)
		}

		// A remnant on one node is not a lock.
		if ok, err := mems[0].Acquire(ctx, redlock.DefaultKeyPrefix+"p", "a-remnant-value-0123456789", time.Minute); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if info, _ := viewer.Inspect(ctx, "p"); info.Mode != redlock.ModeFree || info.Nodes[0].Holder != 1 || info.Nodes[0].Owner != "" {
			t.Errorf("a key on 1 of 3 nodes: %v, %+v; want free, holder 1 of unknown owner", info.Mode, info.Nodes[0])
		}

		infos, complete, err := viewer.Locks(ctx, 0)
		if err != nil || !complete {
			t.Fatal(err, complete)
		}
		var got []string
		for _, i := range infos {
			got = append(got, i.Resource+"="+i.Mode.String())
		}
		if want := "p=free r=read w=write"; strings.Join(got, " ") != want {
			t.Errorf("Locks = %q; want %q", got, want)
		}
		if infos, complete, _ := viewer.Locks(ctx, 2); len(infos) != 2 || complete {
			t.Errorf("Locks(limit 2) = %d, complete %v; want 2, false", len(infos), complete)
		}

		// An operator's release: the holder finds its lock gone.
		rep, err := viewer.ForceRelease(ctx, "w")
		if err != nil || rep.Before.Owner != "alice on build-7" || rep.Released[0]+rep.Released[1]+rep.Released[2] != 3 {
			t.Fatalf("ForceRelease = %+v, %v", rep, err)
		}
		if info, _ := viewer.Inspect(ctx, "w"); info.Mode != redlock.ModeFree {
			t.Errorf("after ForceRelease: %v; want free", info.Mode)
		}
		if err := l.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("the holder's Extend after ForceRelease: %v; want ErrNotHeld", err)
		}
		if rep, err := viewer.ForceRelease(ctx, "r"); err != nil || rep.Released[0] != 2 {
			t.Errorf("ForceRelease of readers = %+v, %v; want 2 entries per node", rep.Released, err)
		}
		if info, _ := viewer.Inspect(ctx, "r"); info.Mode != redlock.ModeFree {
			t.Errorf("after ForceRelease of readers: %v; want free", info.Mode)
		}
	})
}

// The owner label costs nothing per lock: the note is written once per
// client and node (and again only for a lock it does not cover), never on
// the path of Lock or Unlock. It lives twice the validity it covers, at
// least a minute: a process that takes one lock and exits leaves a note of
// a minute, not of twice WithMaxTTL (before, every client left one of 48
// hours: a cron job every minute kept about 2,880 per node).
func TestOwnerNoteIsNotOnTheHotPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c := memClient(t, nodes, redlock.WithOwner("worker"))
		const pairs = 20
		for range pairs {
			l, err := c.Lock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if got, want := memApplied(mems), int64(pairs*2*3+3); got != want {
			t.Errorf("%d lock/unlock pairs over 3 nodes applied %d requests; want %d (2 per pair and node, and one owner note per node)", pairs, got, want)
		}
		keys, _ := mems[0].Keys(context.Background(), redlock.DefaultInfoPrefix+"owner:")
		if len(keys) != 1 {
			t.Fatalf("owner notes %v; want one", keys)
		}
		if d, _, _ := mems[0].TTL(context.Background(), keys[0]); d <= 0 || d > max(2*redlock.DefaultTTL, time.Minute) {
			t.Errorf("owner note lives %v; want twice the lock's validity, at least a minute (at most %v)", d, max(2*redlock.DefaultTTL, time.Minute))
		}
	})
}

// An extended lock keeps its owner note: each extension whose validity
// ends past what the note covers writes it again, so that the note
// outlives the lock however long it is held.
func TestOwnerNoteOutlivesAnExtendedLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		c := memClient(t, nodes, redlock.WithOwner("worker"))
		l, err := c.Lock(t.Context(), "r", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 { // 400 s, many times the note's first life
			time.Sleep(20 * time.Second)
			if err := l.Extend(t.Context()); err != nil {
				t.Fatalf("extension %d: %v", i, err)
			}
			synctest.Wait()
			keys, _ := mems[0].Keys(context.Background(), redlock.DefaultInfoPrefix+"owner:")
			if len(keys) != 1 {
				t.Fatalf("after %d extensions (%v held): owner notes %v; want one", i+1, time.Duration(i+1)*20*time.Second, keys)
			}
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWithOwnerRefusesBadLabels(t *testing.T) {
	nodes, _ := redlocktest.NewMemNodes(3)
	for _, label := range []string{"", "a\nb", strings.Repeat("x", 201), "tab\there"} {
		if _, err := redlock.New(nodes, redlock.WithOwner(label)); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("WithOwner(%q): %v; want ErrInvalid", label, err)
		}
	}
}

// TestOwnerKnownWhileAnotherProcessExtends: a lock acquired by one client
// and extended by another that resumed its handle (dlm acquire, then dlm
// extend: the pattern of CI jobs) shows its acquirer's owner for as long
// as it is held. Before, the acquirer's note, sized for the validity it
// knew, expired while the resumed lock was held, and Inspect said the
// owner was unknown (an operator reads that as a dead holder).
func TestOwnerKnownWhileAnotherProcessExtends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(3)
		a := memClient(t, nodes, redlock.WithOwner("deploy-pipeline-42"))
		l, err := a.Lock(t.Context(), "r", redlock.WithTTL(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		b := memClient(t, nodes, redlock.WithOwner("extender"))
		time.Sleep(10 * time.Second)
		r, err := b.Resume(t.Context(), h, redlock.WithTTL(5*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 { // 4 minutes, past any note the acquirer wrote
			time.Sleep(time.Minute)
			synctest.Wait()
			info, err := b.Inspect(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			if info.Owner != "deploy-pipeline-42" {
				t.Fatalf("%d min after the resume: owner %q, want the acquirer's %q", i+1, info.Owner, "deploy-pipeline-42")
			}
			if err := r.Extend(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
