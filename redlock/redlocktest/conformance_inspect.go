package redlocktest

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runInspectConformance checks the InspectNode capability: Inspect tells
// an absent key, a lock key (its value and expiry), a readers' hash (each
// live reader and the waiting writers) and another type apart; Scan lists
// every key under a prefix, and only those, however the prefix is spelled
// (glob characters are literal); PutNote and Note keep a string with an
// expiry.
func runInspectConformance(t *testing.T, in Inspector, n adapter.InspectNode) {
	ctx := t.Context()
	const ttl = 5 * time.Second
	st, err := n.Inspect(ctx, "x:absent")
	if err != nil || st.Kind != adapter.KeyAbsent {
		t.Fatalf("Inspect of an absent key = %+v, %v; want absent", st.Kind, err)
	}
	if ok, err := n.Acquire(ctx, "x:l", "v1", ttl); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	st, err = n.Inspect(ctx, "x:l")
	if err != nil || st.Kind != adapter.KeyLock || st.Value != "v1" || st.TTL <= ttl-time.Second || st.TTL > ttl {
		t.Fatalf("Inspect of a lock key = kind %v value %q ttl %v, %v; want lock, v1, about %v", st.Kind, st.Value, st.TTL, err, ttl)
	}
	if rw, ok := n.(adapter.RWNode); ok {
		for _, v := range []string{"rb", "ra"} {
			if ok, err := rw.RAcquire(ctx, "x:rw", v, ttl); err != nil || !ok {
				t.Fatalf("RAcquire %s = %v, %v", v, ok, err)
			}
		}
		if ok, err := rw.WAcquire(ctx, "x:rw", "w1", "waiter1", ttl); err != nil || ok {
			t.Fatalf("WAcquire over readers = %v, %v; want a waiting mark", ok, err)
		}
		st, err = n.Inspect(ctx, "x:rw")
		if err != nil || st.Kind != adapter.KeyReaders || st.Waiters != 1 || len(st.Readers) != 2 {
			t.Fatalf("Inspect of readers = %+v, %v; want 2 readers and 1 waiter", st, err)
		}
		got := []string{st.Readers[0].Value, st.Readers[1].Value}
		slices.Sort(got)
		if !slices.Equal(got, []string{"ra", "rb"}) {
			t.Fatalf("readers = %q; want ra, rb", got)
		}
		for _, r := range st.Readers {
			if r.TTL <= ttl-time.Second || r.TTL > ttl {
				t.Fatalf("reader %s ttl %v; want about %v", r.Value, r.TTL, ttl)
			}
		}
	}
	if err := n.PutNote(ctx, "x:note", "alice pid 7", time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := n.Note(ctx, "x:note"); err != nil || !ok || v != "alice pid 7" {
		t.Fatalf("Note = %q, %v, %v; want alice pid 7", v, ok, err)
	}
	if d, ok, err := in.TTL(ctx, "x:note"); err != nil || !ok || d <= time.Hour-time.Minute || d > time.Hour {
		t.Fatalf("note TTL = %v, %v, %v; want about 1h", d, ok, err)
	}
	if _, ok, err := n.Note(ctx, "x:nonote"); err != nil || ok {
		t.Fatalf("Note of an absent key = %v, %v; want false, nil", ok, err)
	}
	st, err = n.Inspect(ctx, "x:note")
	if err != nil || st.Kind != adapter.KeyLock {
		t.Fatalf("Inspect of a string = %v, %v", st.Kind, err)
	}
	// Scan: a prefix with glob characters is literal.
	want := []string{}
	for i := range 25 {
		k := "s*[p]:" + strconv.Itoa(i)
		want = append(want, k)
		if err := in.Put(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Put(ctx, "sX[p]:decoy", "v"); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for range 1000 {
		keys, next, err := n.Scan(ctx, "s*[p]:", cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys...)
		if cursor = next; cursor == "" {
			break
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Scan of prefix s*[p]: = %q; want %q", got, want)
	}
}
