package batch

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A Listener sets the marker before the first subscription, not again for
// a subscription within ListenRefresh, every ListenRefresh while any key
// is watched, never once none is, and not after Close; Mark sets it at
// once.
func TestListenerKeepsTheMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sets atomic.Int64
		l := NewListener(func(context.Context) error { sets.Add(1); return nil })
		ctx := context.Background()
		want := func(n int64, when string) {
			t.Helper()
			synctest.Wait()
			if got := sets.Load(); got != n {
				t.Fatalf("%s: the marker set %d times, want %d", when, got, n)
			}
		}
		_ = l.Watch(ctx, "a")
		want(1, "first Watch")
		_ = l.Watch(ctx, "b")
		want(1, "second Watch at once")
		time.Sleep(ListenRefresh + time.Millisecond)
		want(2, "one refresh period while watching")
		time.Sleep(2 * ListenRefresh)
		want(4, "three refresh periods while watching")
		l.Unwatch("a")
		l.Unwatch("b")
		time.Sleep(3 * ListenRefresh)
		want(4, "nothing watched")
		_ = l.Mark(ctx)
		want(5, "Mark")
		_ = l.Watch(ctx, "c")
		l.Close()
		time.Sleep(3 * ListenRefresh)
		want(5, "after Close")
	})
}
