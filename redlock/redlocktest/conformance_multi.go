package redlocktest

import (
	"context"
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runMultiConformance checks the MultiNode capability (a set of keys as one
// lock): AcquireAll sets all keys or none, ReleaseAll deletes only the keys
// that hold the value and says whether all did, ExtendAll extends all keys
// or none and never creates one, RestoreAll sets the missing keys of a set
// held in part and never overwrites another value, the scripts survive
// SCRIPT FLUSH, started
// set requests keep their order with single-key ones (AsyncNode), a release
// of a set is announced per key (HandoffNode), and, for a
// MultiNode, the fenced acquisition reads the largest fence of the
// set and the raise is all or nothing.
func runMultiConformance(t *testing.T, b Backend, n adapter.MultiNode) {
	ctx := t.Context()
	in := b.Inspect
	const ttl = 5 * time.Second
	get := func(key string) (string, bool) { t.Helper(); return inspectValue(t, in, key) }
	pttl := func(key string) time.Duration { t.Helper(); return inspectTTL(t, in, key) }
	check := func(name string, gotOK bool, err error, wantOK bool) {
		t.Helper()
		if err != nil || gotOK != wantOK {
			t.Fatalf("%s = %v, %v; want %v, nil", name, gotOK, err, wantOK)
		}
	}
	holds := func(name, value string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if v, ok := get(k); !ok || v != value {
				t.Fatalf("%s: %s holds %q (exists %v), want %q", name, k, v, ok, value)
			}
		}
	}
	absent := func(name string, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if v, ok := get(k); ok {
				t.Fatalf("%s: %s exists with %q, want no key", name, k, v)
			}
		}
	}

	t.Run("AcquireAllIsAllOrNothing", func(t *testing.T) { // R3 for a set
		ok, err := n.AcquireAll(ctx, []string{"{m:a1}", "{m:a2}", "{m:a3}"}, "v1", ttl)
		check("AcquireAll of free keys", ok, err, true)
		holds("after AcquireAll", "v1", "{m:a1}", "{m:a2}", "{m:a3}")
		for _, k := range []string{"{m:a1}", "{m:a3}"} {
			if d := pttl(k); d <= 0 || d > ttl {
				t.Fatalf("PTTL %s = %v, want in (0, %v]", k, d, ttl)
			}
		}
		// An overlapping set: one key held, the others free.
		ok, err = n.AcquireAll(ctx, []string{"{m:a0}", "{m:a3}", "{m:a4}"}, "v2", ttl)
		check("AcquireAll of a set with one held key", ok, err, false)
		absent("a failed AcquireAll", "{m:a0}", "{m:a4}")
		holds("a failed AcquireAll", "v1", "{m:a3}")
		// One key held by a single-key lock.
		if ok, err := n.Acquire(ctx, "{m:a9}", "single", ttl); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		ok, err = n.AcquireAll(ctx, []string{"{m:a8}", "{m:a9}"}, "v3", ttl)
		check("AcquireAll over a key of a single-key lock", ok, err, false)
		absent("a failed AcquireAll", "{m:a8}")
	})
	if rn, ok := n.(adapter.RWNode); ok {
		// A key that holds only a waiting writer's mark is free for a
		// set, as for a writer; one with a live reader is not, and the
		// refused set changes nothing (the reader and the mark stay).
		t.Run("AcquireAllOverReadersMarks", func(t *testing.T) {
			if ok, err := rn.RAcquire(ctx, "{m:w1}", "reader", ttl); !ok || err != nil {
				t.Fatalf("RAcquire = %v, %v", ok, err)
			}
			if ok, err := rn.WMark(ctx, "{m:w1}", "waiter", ttl); !ok || err != nil {
				t.Fatalf("WMark = %v, %v", ok, err)
			}
			ok, err := n.AcquireAll(ctx, []string{"{m:w0}", "{m:w1}"}, "set", ttl)
			check("AcquireAll over a live reader", ok, err, false)
			absent("AcquireAll over a live reader", "{m:w0}")
			if ok, err := rn.RRelease(ctx, "{m:w1}", "reader"); !ok || err != nil {
				t.Fatalf("RRelease = %v, %v", ok, err)
			}
			if ok, err := rn.RAcquire(ctx, "{m:w1}", "late reader", ttl); ok || err != nil {
				t.Fatalf("RAcquire behind the mark = %v, %v; want false, nil", ok, err)
			}
			ok, err = n.AcquireAll(ctx, []string{"{m:w0}", "{m:w1}"}, "set", ttl)
			check("AcquireAll over a key with only a waiting mark", ok, err, true)
			holds("AcquireAll over a key with only a waiting mark", "set", "{m:w0}", "{m:w1}")
			// The same for the fenced acquisition of a set.
			if _, err := n.ReleaseAll(ctx, []string{"{m:w0}", "{m:w1}"}, "set", false); err != nil {
				t.Fatal(err)
			}
			if ok, err := rn.RAcquire(ctx, "{m:w1}", "reader", ttl); !ok || err != nil {
				t.Fatalf("RAcquire = %v, %v", ok, err)
			}
			if ok, err := rn.WMark(ctx, "{m:w1}", "waiter", ttl); !ok || err != nil {
				t.Fatalf("WMark = %v, %v", ok, err)
			}
			if ok, err := rn.RRelease(ctx, "{m:w1}", "reader"); !ok || err != nil {
				t.Fatalf("RRelease = %v, %v", ok, err)
			}
			ok, _, err = n.AcquireAllFenced(ctx, []string{"{m:w0}", "{m:w1}"}, []string{"{m:w0}f", "{m:w1}f"}, "fset", ttl)
			check("AcquireAllFenced over a key with only a waiting mark", ok, err, true)
			holds("AcquireAllFenced over a key with only a waiting mark", "fset", "{m:w0}", "{m:w1}")
		})
	}
	t.Run("ReleaseAllOnlyOwnValue", func(t *testing.T) { // R5 for a set
		keys := []string{"{m:r1}", "{m:r2}"}
		_, _ = n.AcquireAll(ctx, keys, "mine", ttl)
		ok, err := n.ReleaseAll(ctx, keys, "other", false)
		check("ReleaseAll with another value", ok, err, false)
		holds("a foreign ReleaseAll", "mine", keys...)
		if err := in.Put(ctx, "{m:r2}", "taken"); err != nil {
			t.Fatal(err)
		}
		ok, err = n.ReleaseAll(ctx, keys, "mine", false)
		check("ReleaseAll of a set held in part", ok, err, false)
		absent("ReleaseAll of a set held in part", "{m:r1}")
		holds("ReleaseAll of a set held in part", "taken", "{m:r2}")
		_, _ = n.AcquireAll(ctx, []string{"{m:r3}", "{m:r4}"}, "mine", ttl)
		ok, err = n.ReleaseAll(ctx, []string{"{m:r3}", "{m:r4}"}, "mine", true)
		check("ReleaseAll of a held set", ok, err, true)
		absent("ReleaseAll of a held set", "{m:r3}", "{m:r4}")
		ok, err = n.ReleaseAll(ctx, []string{"{m:r3}", "{m:r4}"}, "mine", false)
		check("ReleaseAll of a released set", ok, err, false)
	})
	t.Run("ExtendAllIsAllOrNothingNeverCreates", func(t *testing.T) { // R17 for a set
		keys := []string{"{m:e1}", "{m:e2}"}
		_, _ = n.AcquireAll(ctx, keys, "mine", 2*time.Second)
		ok, err := n.ExtendAll(ctx, keys, "other", ttl)
		check("ExtendAll with another value", ok, err, false)
		ok, err = n.ExtendAll(ctx, keys, "mine", ttl)
		check("ExtendAll of a held set", ok, err, true)
		for _, k := range keys {
			if d := pttl(k); d < ttl-time.Second || d > ttl {
				t.Fatalf("PTTL %s after ExtendAll = %v, want about %v", k, d, ttl)
			}
		}
		_, _ = n.AcquireAll(ctx, []string{"{m:e3}"}, "mine", 2*time.Second)
		ok, err = n.ExtendAll(ctx, []string{"{m:e3}", "{m:e4}"}, "mine", ttl)
		check("ExtendAll of a set held in part", ok, err, false)
		if d := pttl("{m:e3}"); d > 2*time.Second && !spansSlots(n) {
			t.Fatalf("PTTL of the held key after a refused ExtendAll = %v, want at most 2s (unchanged)", d)
		}
		absent("ExtendAll of a set held in part", "{m:e4}")
	})
	t.Run("RestoreAllSetsOnlyMissingOrOwnKeys", func(t *testing.T) { // an extension's restore of a set
		keys := []string{"{m:s1}", "{m:s2}", "{m:s3}"}
		_, _ = n.AcquireAll(ctx, keys, "mine", 2*time.Second)
		// The node forgot part of the set (one master of a cluster
		// restarted).
		_, _ = n.ReleaseAll(ctx, keys[1:2], "mine", false)
		ok, err := n.RestoreAll(ctx, keys, "other", ttl)
		check("RestoreAll with another value", ok, err, false)
		holds("a foreign RestoreAll", "mine", keys[0], keys[2])
		if !spansSlots(n) { // a cluster node steps it per slot
			absent("a foreign RestoreAll", keys[1])
		} else {
			_, _ = n.ReleaseAll(ctx, keys[1:2], "other", false)
		}
		ok, err = n.RestoreAll(ctx, keys, "mine", ttl)
		check("RestoreAll of a set held in part", ok, err, true)
		holds("RestoreAll of a set held in part", "mine", keys...)
		for _, k := range keys {
			if d := pttl(k); d < ttl-time.Second || d > ttl {
				t.Fatalf("PTTL %s after RestoreAll = %v, want about %v", k, d, ttl)
			}
		}
		ok, err = n.RestoreAll(ctx, []string{"{m:s4}", "{m:s5}"}, "mine", ttl)
		check("RestoreAll of a set the node forgot whole", ok, err, true)
		holds("RestoreAll of a set the node forgot whole", "mine", "{m:s4}", "{m:s5}")
		// Another client's key is never overwritten.
		if err := in.Put(ctx, "{m:s7}", "taken"); err != nil {
			t.Fatal(err)
		}
		ok, err = n.RestoreAll(ctx, []string{"{m:s6}", "{m:s7}"}, "mine", ttl)
		check("RestoreAll over another client's key", ok, err, false)
		holds("RestoreAll over another client's key", "taken", "{m:s7}")
		if !spansSlots(n) { // a cluster node steps it per slot
			absent("RestoreAll over another client's key", "{m:s6}")
		}
	})
	t.Run("ScriptsSurviveScriptFlush", func(t *testing.T) {
		if b.FlushScripts == nil {
			t.Skip("the node runs no scripts")
		}
		keys := []string{"{m:f1}", "{m:f2}"}
		if err := b.FlushScripts(ctx); err != nil {
			t.Fatal(err)
		}
		ok, err := n.AcquireAll(ctx, keys, "mine", ttl)
		check("AcquireAll after SCRIPT FLUSH", ok, err, true)
		if err := b.FlushScripts(ctx); err != nil {
			t.Fatal(err)
		}
		ok, err = n.ExtendAll(ctx, keys, "mine", ttl)
		check("ExtendAll after SCRIPT FLUSH", ok, err, true)
		if err := b.FlushScripts(ctx); err != nil {
			t.Fatal(err)
		}
		ok, err = n.RestoreAll(ctx, keys, "mine", ttl)
		check("RestoreAll after SCRIPT FLUSH", ok, err, true)
		if err := b.FlushScripts(ctx); err != nil {
			t.Fatal(err)
		}
		ok, err = n.ReleaseAll(ctx, keys, "mine", false)
		check("ReleaseAll after SCRIPT FLUSH", ok, err, true)
	})
	if an, ok := n.(adapter.AsyncNode); ok {
		t.Run("StartKeepsOrderWithSingleKeys", func(t *testing.T) { // AsyncNode order
			a := newAnswers()
			k := []string{"{m:o1}", "{m:o2}"}
			reqs := []adapter.Request{
				{Op: adapter.OpAcquireAll, Keys: k, Value: "x", TTL: ttl},
				{Op: adapter.OpAcquire, Key: "{m:o1}", Value: "y", TTL: ttl},
				{Op: adapter.OpExtendAll, Keys: k, Value: "x", TTL: ttl},
				{Op: adapter.OpReleaseAll, Keys: k, Value: "x"},
				{Op: adapter.OpAcquire, Key: "{m:o2}", Value: "z", TTL: ttl},
				{Op: adapter.OpAcquireAll, Keys: k, Value: "w", TTL: ttl},
				{Op: adapter.OpReleaseAllAnnounce, Keys: []string{"{m:o2}"}, Value: "z"},
			}
			want := []bool{true, false, true, true, true, false, true}
			for i, r := range reqs {
				an.Start(ctx, r, a, i)
			}
			for i := range reqs {
				if got := a.wait(t, i, 5*time.Second); got.err != nil || got.ok != want[i] {
					t.Fatalf("request %d (%v) = %v, %v; want %v, nil", i, reqs[i].Op, got.ok, got.err, want[i])
				}
			}
			absent("after the started requests", k...)
		})
	}
	if hn, ok := n.(adapter.HandoffNode); ok {
		t.Run("ReleaseAllAnnouncesEachKey", func(t *testing.T) { // R14
			heard := make(chan string, 4)
			w, err := hn.WatchReleases(func(key, value string) { heard <- key + "=" + value })
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for _, k := range []string{"{m:p1}", "{m:p2}"} {
				if err := w.Watch(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			_, _ = n.AcquireAll(ctx, []string{"{m:p1}", "{m:p2}", "{m:p3}"}, "mine", ttl)
			ok, err := n.ReleaseAll(ctx, []string{"{m:p1}", "{m:p2}", "{m:p3}"}, "mine", true)
			check("ReleaseAll with announcement", ok, err, true)
			got := map[string]bool{}
			timeout := time.After(5 * time.Second)
			for len(got) < 2 {
				select {
				case s := <-heard:
					got[s] = true
				case <-timeout:
					t.Fatalf("announcements heard: %v; want {m:p1}=mine and {m:p2}=mine", got)
				}
			}
			if !got["{m:p1}=mine"] || !got["{m:p2}=mine"] {
				t.Fatalf("announcements = %v, want {m:p1}=mine and {m:p2}=mine", got)
			}
		})
	}
	t.Run("Fencing", func(t *testing.T) { runMultiFencingConformance(t, in, n) })
}

// runMultiFencingConformance checks MultiNode's fencing (R18 for a set): the
// fenced acquisition sets all keys or none and reads the largest fence of
// the set, the raise acts only for the holder of every key and only when
// every fence is below the token, and sets every fence of the set.
func runMultiFencingConformance(t *testing.T, in Inspector, n adapter.MultiNode) {
	ctx := context.WithoutCancel(t.Context())
	const ttl = 5 * time.Second
	check := func(name string, gotOK bool, err error, wantOK bool) {
		t.Helper()
		if err != nil || gotOK != wantOK {
			t.Fatalf("%s = %v, %v; want %v, nil", name, gotOK, err, wantOK)
		}
	}
	fence := func(k string) uint64 {
		t.Helper()
		f, err := in.Fence(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	keys, fences := []string{"mf{a}", "mf{b}"}, []string{"mff{a}", "mff{b}"}
	ok, f, err := n.AcquireAllFenced(ctx, keys, fences, "one", ttl)
	check("AcquireAllFenced of a free set", ok, err, true)
	if f != 0 {
		t.Fatalf("fence of new resources = %d, want 0", f)
	}
	ok, _, err = n.AcquireAllFenced(ctx, []string{"mf{b}", "mf{c}"}, []string{"mff{b}", "mff{c}"}, "two", ttl)
	check("AcquireAllFenced over a held key", ok, err, false)
	if _, exists, _ := in.Value(ctx, "mf{c}"); exists {
		t.Fatal("a failed AcquireAllFenced set a key")
	}
	ok, err = n.RaiseFences(ctx, keys, fences, "other", 7, 0)
	check("RaiseFences by a non-holder", ok, err, false)
	ok, err = n.RaiseFences(ctx, keys, fences, "one", 7, 0)
	check("RaiseFences by the holder", ok, err, true)
	if fa, fb := fence("mff{a}"), fence("mff{b}"); fa != 7 || fb != 7 {
		t.Fatalf("fences = %d, %d; want 7, 7", fa, fb)
	}
	if _, err := n.ReleaseAll(ctx, keys, "one", false); err != nil {
		t.Fatal(err)
	}
	// A single-key grant of b raises b alone above a.
	if ok, _, err := n.AcquireAllFenced(ctx, []string{"mf{b}"}, []string{"mff{b}"}, "solo", ttl); !ok || err != nil {
		t.Fatalf("AcquireAllFenced of b = %v, %v", ok, err)
	}
	ok, err = n.RaiseFences(ctx, []string{"mf{b}"}, []string{"mff{b}"}, "solo", 12, 0)
	check("RaiseFences of b", ok, err, true)
	_, _ = n.ReleaseAll(ctx, []string{"mf{b}"}, "solo", false)
	ok, f, err = n.AcquireAllFenced(ctx, keys, fences, "three", ttl)
	check("AcquireAllFenced after the releases", ok, err, true)
	if f != 12 {
		t.Fatalf("fence read for {a, b} = %d, want 12 (the largest of 7 and 12)", f)
	}
	ok, err = n.RaiseFences(ctx, keys, fences, "three", 10, 0)
	check("RaiseFences to a token above one fence and below the other", ok, err, false)
	if fa := fence("mff{a}"); fa != 7 && !spansSlots(n) {
		t.Fatalf("fence of a after a refused raise = %d, want 7 (all or nothing)", fa)
	}
	const big = 18_446_744_073_709_551_615
	ok, err = n.RaiseFences(ctx, keys, fences, "three", big, time.Hour)
	check("RaiseFences to 2^64-1 with retention", ok, err, true)
	if fa, fb := fence("mff{a}"), fence("mff{b}"); fa != big || fb != big {
		t.Fatalf("fences = %d, %d; want %d", fa, fb, uint64(big))
	}
	if d, _, _ := in.TTL(ctx, "mff{b}"); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("fence PTTL with retention 1h = %v", d)
	}
	if err := in.Put(ctx, "mff{bad}", "not a number"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := n.AcquireAllFenced(ctx, []string{"mf{x}", "mf{bad}"}, []string{"mff{x}", "mff{bad}"}, "v", ttl); err == nil {
		t.Fatalf("AcquireAllFenced over a corrupt fence value = %v, nil; want an error", ok)
	}
}

// inspectValue returns key's value in the store and whether it exists.
func inspectValue(t *testing.T, in Inspector, key string) (string, bool) {
	t.Helper()
	v, ok, err := in.Value(t.Context(), key)
	if err != nil {
		t.Fatalf("value of %s: %v", key, err)
	}
	return v, ok
}

// inspectTTL returns key's remaining time to live in the store: NoExpiry
// for a key without one, -2 for a missing key.
func inspectTTL(t *testing.T, in Inspector, key string) time.Duration {
	t.Helper()
	d, ok, err := in.TTL(t.Context(), key)
	if err != nil {
		t.Fatalf("TTL %s: %v", key, err)
	}
	if !ok {
		return -2
	}
	return d
}

// spansSlots reports whether n is a Redis Cluster, on which a set of keys
// in several hash slots is stepped once per slot: an ExtendAll refused on
// one slot still extends the keys of the others, and a RaiseFences refused
// on one slot may still raise the fences of the others (see
// redlock/internal/slots).
func spansSlots(n adapter.Node) bool {
	cn, ok := n.(adapter.ClusterNode)
	return ok && cn.Cluster()
}
