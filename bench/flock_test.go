package main

import (
	"context"
	"errors"
	"testing"
)

// flock(2) excludes two holders of one key, within one process too (each
// acquisition has its own open file description), and a release lets
// the next one in.
func TestFlockExcludes(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a, err := flockLib().open(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := flockLib().open(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release, err := a.Lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryLock(ctx, "k"); !errors.Is(err, errFlockHeld) {
		t.Fatalf("TryLock of a held key: %v, want errFlockHeld", err)
	}
	if _, err := a.TryLock(ctx, "k"); !errors.Is(err, errFlockHeld) {
		t.Fatalf("TryLock of a key its own locker holds: %v, want errFlockHeld", err)
	}
	other, err := b.TryLock(ctx, "other")
	if err != nil {
		t.Fatalf("TryLock of another key: %v", err)
	}
	if err := other(ctx); err != nil {
		t.Fatal(err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := b.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if err := again(ctx); err != nil {
		t.Fatal(err)
	}
}
