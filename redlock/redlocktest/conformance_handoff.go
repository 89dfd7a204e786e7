package redlocktest

import (
	"context"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runHandoffConformance checks the HandoffNode capability (R10, R14): a
// release is announced, with the value released, only when it deleted the
// key and only to the watchers of that key; Watch and Unwatch take effect
// before they return. Absence is checked by order, not by waiting: the
// requests of one node run in the order they were made, and its
// announcements arrive in that order, so an announcement that should not
// have been made would arrive before the one that should.
func runHandoffConformance(t *testing.T, n adapter.HandoffNode) {
	ctx := t.Context()
	const ttl = 5 * time.Second
	check := func(name string, ok bool, err error, want bool) {
		t.Helper()
		if err != nil || ok != want {
			t.Fatalf("%s = %v, %v; want %v, nil", name, ok, err, want)
		}
	}
	watch := func(t *testing.T, keys ...string) (adapter.ReleaseWatch, <-chan string) {
		t.Helper()
		heard := make(chan string, 16)
		w, err := n.WatchReleases(func(key, value string) { heard <- key + "=" + value })
		if err != nil {
			t.Fatalf("WatchReleases: %v", err)
		}
		t.Cleanup(func() { _ = w.Close() })
		for _, k := range keys {
			if err := w.Watch(ctx, k); err != nil {
				t.Fatalf("Watch %s: %v", k, err)
			}
		}
		return w, heard
	}
	next := func(t *testing.T, heard <-chan string) string {
		t.Helper()
		select {
		case s := <-heard:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no announcement within 10s")
			return ""
		}
	}

	t.Run("AnnouncesTheValueOnlyWhenDeleted", func(t *testing.T) { // R5, R14
		_, heard := watch(t, "{h}:a")
		ok, err := n.Acquire(ctx, "{h}:a", "first", ttl)
		check("Acquire", ok, err, true)
		ok, err = n.Release(ctx, "{h}:a", "first")
		check("plain Release", ok, err, true)
		ok, err = n.Acquire(ctx, "{h}:a", "second", ttl)
		check("Acquire again", ok, err, true)
		ok, err = n.ReleaseAnnounce(ctx, "{h}:a", "other")
		check("ReleaseAnnounce of another value", ok, err, false)
		ok, err = n.ReleaseAnnounce(ctx, "{h}:a", "second")
		check("ReleaseAnnounce", ok, err, true)
		ok, err = n.ReleaseAnnounce(ctx, "{h}:a", "second")
		check("ReleaseAnnounce of a missing key", ok, err, false)
		ok, err = n.Acquire(ctx, "{h}:a", "third", ttl)
		check("Acquire a third time", ok, err, true)
		ok, err = n.ReleaseAnnounce(ctx, "{h}:a", "third")
		check("ReleaseAnnounce a third time", ok, err, true)
		for _, want := range []string{"{h}:a=second", "{h}:a=third"} {
			if got := next(t, heard); got != want {
				t.Fatalf("heard %q, want %q", got, want)
			}
		}
	})
	t.Run("UnwatchStopsThatKeyOnly", func(t *testing.T) {
		w, heard := watch(t, "{h}:u1", "{h}:u2")
		if err := w.Unwatch(ctx, "{h}:u1"); err != nil {
			t.Fatalf("Unwatch: %v", err)
		}
		for _, k := range []string{"{h}:u1", "{h}:u2"} {
			ok, err := n.Acquire(ctx, k, "v", ttl)
			check("Acquire "+k, ok, err, true)
			ok, err = n.ReleaseAnnounce(ctx, k, "v")
			check("ReleaseAnnounce "+k, ok, err, true)
		}
		if got := next(t, heard); got != "{h}:u2=v" {
			t.Fatalf("heard %q first, want h:u2=v (h:u1 was unwatched)", got)
		}
	})
	t.Run("CloseIsFinal", func(t *testing.T) {
		w, _ := watch(t, "{h}:c")
		if err := w.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := w.Watch(cctx, "{h}:c2"); err == nil {
			t.Fatal("Watch after Close succeeded")
		}
	})
}
