package redlock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A master of a Redis Cluster named without cluster=true refuses the keys
// of the other masters' slots (MOVED) and a fenced lock's or a set's keys
// (CROSSSLOT): the client reads cluster_enabled with its facts and refuses
// the node, naming the fix (cluster=true in its URL), counted as a failed
// node like the other refused nodes: with two plain masters beside it
// every lock, fenced or not, is granted by those two and leaves nothing on
// it; alone, every lock is refused. Real servers, both adapters.
func TestClusterMasterWithoutClusterFlagRefused(t *testing.T) {
	cs := redlocktest.StartRedisClusters(t, 1, 2, 0)
	m := cs[0].Masters()[0]
	urls := append(redlocktest.Start(t, 2).URLs(), "redis://"+m.Addr())
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		for _, fenced := range []bool{false, true} {
			opts := []redlock.Option{redlock.WithNodeTimeout(time.Second)}
			if fenced {
				opts = append(opts, redlock.WithFencing())
			}
			c := dialURLs(t, a, urls, opts...)
			rep, err := c.CheckNodes(t.Context())
			if err != nil {
				t.Fatalf("CheckNodes = %v, want the cluster master counted as a failed node", err)
			}
			if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, m.Addr()+" is counted as a failed node") || !strings.Contains(w, "add cluster=true to its URL") {
				t.Errorf("warnings %q, want the cluster master counted as a failed node, naming cluster=true", rep.Warnings)
			}
			for i := range 10 {
				l, err := c.TryLock(t.Context(), fmt.Sprintf("res-%s-%v-%d", a.name, fenced, i))
				if err != nil {
					t.Fatalf("fenced %v: TryLock %d = %v, want granted by the two plain masters", fenced, i, err)
				}
				if keys, _ := m.Client().Keys(t.Context(), "dlm:*").Result(); len(keys) > 0 {
					t.Errorf("fenced %v: the refused cluster master holds %q", fenced, keys)
				}
				_ = l.Unlock(t.Context())
			}
		}
		_, err := dialURLs(t, a, urls[2:]).TryLock(t.Context(), "alone")
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "named without cluster=true") {
			t.Errorf("TryLock over the cluster master alone = %v, want ErrInvalid naming cluster=true", err)
		}
	})
}
