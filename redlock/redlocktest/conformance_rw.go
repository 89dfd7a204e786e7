package redlocktest

import (
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runRWConformance checks the RWNode capability (read-write locks): readers
// share a key, a writer or a plain lock excludes them and they it, a
// waiting writer's (or plain lock's, WMark) mark keeps new readers out until it acquires or leaves,
// expired readers are pruned, and the plain operations answer "not held",
// never an error, for a key that readers hold.
func runRWConformance(t *testing.T, b Backend, n adapter.RWNode) {
	ctx := t.Context()
	in := b.Inspect
	const ttl = 5 * time.Second
	check := func(t *testing.T, name string, gotOK bool, err error, wantOK bool) {
		t.Helper()
		if err != nil || gotOK != wantOK {
			t.Fatalf("%s = %v, %v; want %v, nil", name, gotOK, err, wantOK)
		}
	}
	pttl := func(t *testing.T, key string) time.Duration {
		t.Helper()
		d, ok, err := in.TTL(ctx, key)
		if err != nil {
			t.Fatalf("TTL %s: %v", key, err)
		}
		if !ok {
			return -2
		}
		return d
	}

	t.Run("ReadersShareAndExcludeWriters", func(t *testing.T) {
		ok, err := n.RAcquire(ctx, "{rw}:s", "r1", ttl)
		check(t, "RAcquire of a free key", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:s", "r2", ttl)
		check(t, "RAcquire beside a reader", ok, err, true)
		if d := pttl(t, "{rw}:s"); d <= 0 || d > ttl {
			t.Fatalf("PTTL of a readers' key = %v, want in (0, %v]", d, ttl)
		}
		ok, err = n.WAcquire(ctx, "{rw}:s", "w", "", ttl)
		check(t, "WAcquire of a key held by readers", ok, err, false)
		ok, err = n.Acquire(ctx, "{rw}:s", "p", ttl)
		check(t, "plain Acquire of a key held by readers", ok, err, false)
		ok, err = n.RRelease(ctx, "{rw}:s", "r1")
		check(t, "RRelease of a reader", ok, err, true)
		ok, err = n.RRelease(ctx, "{rw}:s", "r1")
		check(t, "RRelease of a reader already gone", ok, err, false)
		ok, err = n.RRelease(ctx, "{rw}:s", "r2")
		check(t, "RRelease of the last reader", ok, err, true)
		if _, exists, _ := in.TTL(ctx, "{rw}:s"); exists {
			t.Fatal("the key outlived its last reader")
		}
	})
	t.Run("PlainOperationsOnReadersKeyAnswerNotHeld", func(t *testing.T) {
		// Regression: the plain scripts read the key with GET, which a
		// hash answers with WRONGTYPE: a lost plain lock whose key readers
		// now hold must be "not held", not an error.
		ok, err := n.RAcquire(ctx, "{rw}:p", "r", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.Release(ctx, "{rw}:p", "lost")
		check(t, "Release of a key held by readers", ok, err, false)
		ok, err = n.Extend(ctx, "{rw}:p", "lost", ttl)
		check(t, "Extend of a key held by readers", ok, err, false)
		if hn, is := n.(adapter.HandoffNode); is {
			ok, err = hn.ReleaseAnnounce(ctx, "{rw}:p", "lost")
			check(t, "ReleaseAnnounce of a key held by readers", ok, err, false)
		}
		if tn, is := n.(adapter.TransferNode); is {
			ok, err = tn.Transfer(ctx, "{rw}:p", "lost", "next", ttl)
			check(t, "Transfer of a key held by readers", ok, err, false)
		}
		if fn, is := n.(adapter.FencingNode); is {
			ok, err = fn.RaiseFence(ctx, "{rw}:p", "{rw}:p-fence", "lost", 1, 0)
			check(t, "RaiseFence on a key held by readers", ok, err, false)
		}
		if mn, is := n.(adapter.MultiNode); is {
			keys := []string{"{rw}:p", "{rw}:p2"}
			ok, err = mn.AcquireAll(ctx, keys, "set", ttl)
			check(t, "AcquireAll of a set with a key held by readers", ok, err, false)
			ok, err = mn.ReleaseAll(ctx, keys, "lost", false)
			check(t, "ReleaseAll of a set with a key held by readers", ok, err, false)
			ok, err = mn.ExtendAll(ctx, keys, "lost", ttl)
			check(t, "ExtendAll of a set with a key held by readers", ok, err, false)
		}
		if mf, is := n.(adapter.MultiNode); is {
			ok, err = mf.RaiseFences(ctx, []string{"{rw}:p"}, []string{"{rw}:p-fence"}, "lost", 1, 0)
			check(t, "RaiseFences on a set with a key held by readers", ok, err, false)
		}
		if rn, is := n.(adapter.RecordNode); is {
			ok, err = rn.PutRecord(ctx, "{rw}:p", "{rw}:p-rec", "lost", "1 a", 0)
			check(t, "PutRecord on a key held by readers", ok, err, false)
			_, ok, _, err = rn.ReadRecord(ctx, "{rw}:p", "{rw}:p-rec", "{rw}:p-fence")
			check(t, "ReadRecord of a key held by readers", ok, err, false)
		}
		ok, err = n.RExtend(ctx, "{rw}:p", "r", ttl)
		check(t, "RExtend of the reader after the plain operations", ok, err, true)
	})
	t.Run("WriterExcludesReadersAndIsAPlainKey", func(t *testing.T) {
		ok, err := n.WAcquire(ctx, "{rw}:w", "w", "", ttl)
		check(t, "WAcquire of a free key", ok, err, true)
		if v, _, err := in.Value(ctx, "{rw}:w"); err != nil || v != "w" {
			t.Fatalf("a writer's key = %q, %v; want the plain value w", v, err)
		}
		ok, err = n.RAcquire(ctx, "{rw}:w", "r", ttl)
		check(t, "RAcquire of a key held by a writer", ok, err, false)
		ok, err = n.RExtend(ctx, "{rw}:w", "w", ttl)
		check(t, "RExtend of a writer's key", ok, err, false)
		ok, err = n.RRelease(ctx, "{rw}:w", "w")
		check(t, "RRelease of a writer's key", ok, err, false)
		ok, err = n.WAcquire(ctx, "{rw}:w", "w2", "x", ttl)
		check(t, "WAcquire of a key held by a writer", ok, err, false)
		ok, err = n.Extend(ctx, "{rw}:w", "w", ttl)
		check(t, "plain Extend of a writer", ok, err, true)
		ok, err = n.Release(ctx, "{rw}:w", "w")
		check(t, "plain Release of a writer", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:w", "r", ttl)
		check(t, "RAcquire after the writer left", ok, err, true)
		ok, err = n.Acquire(ctx, "{rw}:w2", "p", ttl)
		check(t, "plain Acquire", ok, err, true)
		ok, err = n.WAcquire(ctx, "{rw}:w2", "w", "x", ttl)
		check(t, "WAcquire of a key held by a plain lock", ok, err, false)
	})
	t.Run("WaitingWriterKeepsNewReadersOut", func(t *testing.T) {
		ok, err := n.RAcquire(ctx, "{rw}:m", "r1", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.WAcquire(ctx, "{rw}:m", "w1", "W", ttl)
		check(t, "WAcquire while a reader holds", ok, err, false)
		ok, err = n.RAcquire(ctx, "{rw}:m", "r2", ttl)
		check(t, "RAcquire while a writer waits", ok, err, false)
		ok, err = n.RExtend(ctx, "{rw}:m", "r1", ttl)
		check(t, "RExtend of a reader while a writer waits", ok, err, true)
		ok, err = n.RRelease(ctx, "{rw}:m", "r1")
		check(t, "RRelease of the last reader", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:m", "r3", ttl)
		check(t, "RAcquire while only the mark is left", ok, err, false)
		ok, err = n.WAcquire(ctx, "{rw}:m", "w2", "W", ttl)
		check(t, "WAcquire over a key of marks only", ok, err, true)
		ok, err = n.Release(ctx, "{rw}:m", "w2")
		check(t, "Release of the writer", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:m", "r4", ttl)
		check(t, "RAcquire after the writer left (its mark went with its grant)", ok, err, true)
	})
	t.Run("UnwaitLetsReadersIn", func(t *testing.T) {
		ok, err := n.RAcquire(ctx, "{rw}:u", "r1", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.WAcquire(ctx, "{rw}:u", "w", "W", ttl)
		check(t, "WAcquire while a reader holds", ok, err, false)
		ok, err = n.WAcquire(ctx, "{rw}:u", "w", "V", ttl)
		check(t, "a second waiting writer", ok, err, false)
		ok, err = n.WUnwait(ctx, "{rw}:u", "W")
		check(t, "WUnwait of a live mark", ok, err, true)
		ok, err = n.WUnwait(ctx, "{rw}:u", "W")
		check(t, "WUnwait of a mark already gone", ok, err, false)
		ok, err = n.RAcquire(ctx, "{rw}:u", "r2", ttl)
		check(t, "RAcquire while the other writer waits", ok, err, false)
		ok, err = n.WUnwait(ctx, "{rw}:u", "V")
		check(t, "WUnwait of the other mark", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:u", "r2", ttl)
		check(t, "RAcquire once no writer waits", ok, err, true)
		ok, err = n.WUnwait(ctx, "{rw}:none", "W")
		check(t, "WUnwait of a free key", ok, err, false)
	})
	t.Run("TryWriterLeavesNoMark", func(t *testing.T) {
		ok, err := n.RAcquire(ctx, "{rw}:t", "r1", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.WAcquire(ctx, "{rw}:t", "w", "", ttl)
		check(t, "WAcquire without a waiter", ok, err, false)
		ok, err = n.RAcquire(ctx, "{rw}:t", "r2", ttl)
		check(t, "RAcquire after a writer that does not wait", ok, err, true)
	})
	t.Run("ExpiredReadersArePruned", func(t *testing.T) {
		const short = 60 * time.Millisecond
		ok, err := n.RAcquire(ctx, "{rw}:e", "old", short)
		check(t, "RAcquire of a short reader", ok, err, true)
		// A plain key set after the reader with the same ttl, on the same
		// clock: once it is gone, the reader has expired too.
		ok, err = n.Acquire(ctx, "{rw}:e-clock", "x", short)
		check(t, "Acquire of the clock key", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:e", "long", ttl)
		check(t, "RAcquire of a long reader", ok, err, true)
		Eventually(t, 5*time.Second, func() bool {
			_, exists, err := in.Value(ctx, "{rw}:e-clock")
			return err == nil && !exists
		}, "the clock key did not expire")
		ok, err = n.RExtend(ctx, "{rw}:e", "old", ttl)
		check(t, "RExtend of an expired reader", ok, err, false)
		ok, err = n.RRelease(ctx, "{rw}:e", "old")
		check(t, "RRelease of an expired reader", ok, err, false)
		ok, err = n.RRelease(ctx, "{rw}:e", "long")
		check(t, "RRelease of the live reader", ok, err, true)
		if _, exists, _ := in.TTL(ctx, "{rw}:e"); exists {
			t.Fatal("the key outlived its readers: expired readers were not pruned")
		}
		// The key's expiry follows the latest reader: it shrinks when that
		// reader leaves.
		ok, err = n.RAcquire(ctx, "{rw}:e2", "a", short)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:e2", "b", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.RRelease(ctx, "{rw}:e2", "b")
		check(t, "RRelease of the latest reader", ok, err, true)
		if d := pttl(t, "{rw}:e2"); d > short {
			t.Fatalf("PTTL after the latest reader left = %v, want at most %v", d, short)
		}
	})
	t.Run("PlainWaiterMark", func(t *testing.T) { // a plain lock behind readers
		ok, err := n.RAcquire(ctx, "{rw}:pm", "r", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, err = n.WMark(ctx, "{rw}:pm", "P", ttl)
		check(t, "WMark where a reader holds", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:pm", "r2", ttl)
		check(t, "RAcquire while a plain lock waits", ok, err, false)
		ok, err = n.WMark(ctx, "{rw}:pm-free", "P", ttl)
		check(t, "WMark of a free key", ok, err, false)
		if _, exists, _ := in.Value(ctx, "{rw}:pm-free"); exists {
			t.Fatal("WMark of a free key created it")
		}
		if ok, err := n.Acquire(ctx, "{rw}:pm-held", "v", ttl); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		ok, err = n.WMark(ctx, "{rw}:pm-held", "P", ttl)
		check(t, "WMark of a plain lock's key", ok, err, false)
		ok, err = n.WUnwait(ctx, "{rw}:pm", "P")
		check(t, "WUnwait of the plain lock's mark", ok, err, true)
		ok, err = n.RAcquire(ctx, "{rw}:pm", "r2", ttl)
		check(t, "RAcquire once the mark is gone", ok, err, true)
	})
	t.Run("FencedWriter", func(t *testing.T) { // R18 phase 1 for writers
		ok, err := n.RAcquire(ctx, "{rw}:fw", "r", ttl)
		check(t, "RAcquire", ok, err, true)
		ok, f, err := n.WAcquireFenced(ctx, "{rw}:fw", "{rw}:fw-fence", "w", "W", ttl)
		if ok || f != 0 || err != nil {
			t.Fatalf("WAcquireFenced while a reader holds = %v, %d, %v; want false, 0, nil", ok, f, err)
		}
		ok, err = n.RAcquire(ctx, "{rw}:fw", "r2", ttl)
		check(t, "RAcquire while the fenced writer waits", ok, err, false)
		ok, err = n.RRelease(ctx, "{rw}:fw", "r")
		check(t, "RRelease", ok, err, true)
		if err := in.Put(ctx, "{rw}:fw-fence", "41"); err != nil {
			t.Fatal(err)
		}
		ok, f, err = n.WAcquireFenced(ctx, "{rw}:fw", "{rw}:fw-fence", "w", "W", ttl)
		if !ok || f != 41 || err != nil {
			t.Fatalf("WAcquireFenced of a key of marks only = %v, %d, %v; want true, 41, nil", ok, f, err)
		}
		if v, _, err := in.Value(ctx, "{rw}:fw"); err != nil || v != "w" {
			t.Fatalf("a fenced writer's key = %q, %v; want the plain value w", v, err)
		}
		ok, f, err = n.WAcquireFenced(ctx, "{rw}:fw-free", "{rw}:fw-none", "w", "", ttl)
		if !ok || f != 0 || err != nil {
			t.Fatalf("WAcquireFenced of a free key without a fence = %v, %d, %v; want true, 0, nil", ok, f, err)
		}
	})
	t.Run("ScriptsSurviveScriptFlush", func(t *testing.T) {
		if b.FlushScripts == nil {
			t.Skip("the node runs no scripts")
		}
		if err := b.FlushScripts(ctx); err != nil {
			t.Fatal(err)
		}
		ok, err := n.RAcquire(ctx, "{rw}:f", "r", ttl)
		check(t, "RAcquire after SCRIPT FLUSH", ok, err, true)
	})
}
