package redlock_test

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Lock.Token promises a token above every earlier grant's by any fenced
// client, whatever retention each client has: a service built
// WithFenceRetention and `dlm lock --fencing` (no retention) on one
// resource are an ordinary mix. A's fence keys expire; B, without
// retention, must not then read the resource's fence from a floor kept
// below A's tokens.
func TestMixedRetentionTokensIncrease(t *testing.T) {
	const ttl, retention = time.Second, 2 * time.Second
	type grant struct {
		by   string        // "A" (WithFenceRetention) or "B" (without)
		kind string        // "Lock", "WLock", or "LockAll" of the resource and its twin (res+"2")
		res  string        // the resource
		gap  time.Duration // the time before the grant
	}
	cases := []struct {
		name   string
		grants []grant
	}{
		{"the same resource after A's fence expired", []grant{
			{"B", "Lock", "r", 0}, {"A", "Lock", "r", 100 * time.Millisecond}, {"B", "Lock", "r", retention + time.Second},
		}},
		{"a set of A's after A's fences expired", []grant{
			{"B", "Lock", "r", 0}, {"A", "LockAll", "r", 100 * time.Millisecond}, {"B", "Lock", "r", retention + time.Second},
		}},
		{"a writer of A's after A's fence expired", []grant{
			{"B", "Lock", "r", 0}, {"A", "WLock", "r", 100 * time.Millisecond}, {"B", "WLock", "r", retention + time.Second},
		}},
		{"a resource B never locked", []grant{
			{"B", "Lock", "x", 0}, {"A", "Lock", "r", 100 * time.Millisecond}, {"B", "Lock", "r", retention + time.Second},
		}},
		// A's later grant of another resource keeps the node's floor
		// alive past r's fence: the floor must then hold r's token.
		{"while A's later grant of another resource lives", []grant{
			{"B", "Lock", "x", 0}, {"A", "Lock", "r", 100 * time.Millisecond}, {"A", "Lock", "s", retention / 2},
			{"B", "Lock", "r", retention/2 + 100*time.Millisecond},
		}},
		{"B's set while A's later set lives", []grant{
			{"B", "LockAll", "x", 0}, {"A", "LockAll", "r", 100 * time.Millisecond}, {"A", "LockAll", "s", retention / 2},
			{"B", "LockAll", "r", retention/2 + 100*time.Millisecond},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, mems := redlocktest.NewMemNodes(3)
				nodes := make([]redlock.Node, len(mems))
				for i, m := range mems {
					nodes[i] = m.WithFloor()
					// Every node kept its floor (as a repair that reached
					// every node leaves it), so that no grant below is a
					// repair that would hide what is tested: a repair's
					// token is the clock.
					if err := m.Put(t.Context(), redlock.DefaultFencePrefix, strconv.FormatUint(uint64(time.Now().UnixMicro()), 10)); err != nil {
						t.Fatal(err)
					}
				}
				clients := map[string]*redlock.Client{}
				for by, opts := range map[string][]redlock.Option{
					"A": {redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithFenceRetention(retention)},
					"B": {redlock.WithFencing(), redlock.WithTTL(ttl)},
				} {
					c, err := redlock.New(nodes, opts...)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					clients[by] = c
				}
				last := map[string]uint64{} // each resource's last token
				for i, g := range tc.grants {
					time.Sleep(g.gap)
					c := clients[g.by]
					var (
						l   *redlock.Lock
						err error
					)
					switch g.kind {
					case "LockAll":
						l, err = c.LockAll(t.Context(), []string{g.res, g.res + "2"})
					case "WLock":
						l, err = c.WLock(t.Context(), g.res)
					default:
						l, err = c.Lock(t.Context(), g.res)
					}
					if err != nil {
						t.Fatal(err)
					}
					if tok := l.Token(); tok <= last[g.res] {
						t.Errorf("grant %d (%s of %q): token %d, not above the resource's last %d", i+1, g.by, g.res, tok, last[g.res])
					}
					last[g.res] = l.Token()
					if g.kind == "LockAll" {
						last[g.res+"2"] = l.Token()
					}
					if err := l.Unlock(t.Context()); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
				}
			})
		})
	}
}
