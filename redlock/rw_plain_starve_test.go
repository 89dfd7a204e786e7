package redlock_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Readers that overlap, one taking the resource before the other leaves,
// keep it held for ever; neither a writer (WLock) nor a plain lock (Lock,
// which readers exclude as they exclude a writer) may wait behind them
// for ever: each leaves a waiting mark that keeps new readers out. A set
// (LockAll of several resources: dlm lock r s) leaves one on each of its
// resources that readers hold; before, it left none, and waited 30 s
// ("LockAll of r and s waited 30s behind two overlapping readers: ... 679
// attempt(s)").
func TestPlainLockNotStarvedByReaders(t *testing.T) {
	for _, kind := range []string{"WLock", "Lock", "LockAll of one", "LockAll of r and s", "LockAll of s and r", "fenced LockAll of r and s"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes, mems := redlocktest.NewMemNodes(3)
				opts := []redlock.Option{redlock.WithTTL(2 * time.Second)}
				if strings.HasPrefix(kind, "fenced") {
					opts = append(opts, redlock.WithFencing())
				}
				c, err := redlock.New(nodes, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, stop := context.WithCancel(t.Context())
				defer stop()
				// Two readers in turn, each holding 300 ms, overlapping.
				for r := range 2 {
					go func() {
						time.Sleep(time.Duration(r) * 150 * time.Millisecond)
						for ctx.Err() == nil {
							l, err := c.RLock(ctx, "r")
							if err != nil {
								continue
							}
							time.Sleep(300 * time.Millisecond)
							_ = l.Unlock(context.Background())
						}
					}()
				}
				time.Sleep(time.Second)
				wctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				start := time.Now()
				var l *redlock.Lock
				switch kind {
				case "WLock":
					l, err = c.WLock(wctx, "r")
				case "Lock":
					l, err = c.Lock(wctx, "r")
				case "LockAll of one":
					l, err = c.LockAll(wctx, []string{"r"})
				case "LockAll of s and r":
					l, err = c.LockAll(wctx, []string{"s", "r"})
				default:
					l, err = c.LockAll(wctx, []string{"r", "s"})
				}
				switch waited := time.Since(start); {
				case err != nil:
					t.Errorf("%s waited 30s behind two overlapping readers: %v", kind, err)
				case waited > 5*time.Second:
					t.Errorf("%s waited %v behind readers that each hold 300ms", kind, waited)
				default:
					t.Logf("%s waited %v", kind, waited)
				}
				if l != nil {
					if err := l.Unlock(t.Context()); err != nil {
						t.Error(err)
					}
				}
				stop()
				time.Sleep(time.Second)
				synctest.Wait()
				for i, m := range mems {
					if _, waiters := m.Readers("dlm:lock:r"); len(waiters) > 0 {
						t.Errorf("node %d keeps waiting marks %q after the call returned", i+1, waiters)
					}
				}
			})
		})
	}
}
