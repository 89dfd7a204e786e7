package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestLocksWithHashTags: Locks (dlm status --all) must list a held lock
// under its resource name and as held when keys carry hash tags (a Redis
// Cluster node turns them on, or WithHashTags). It cut the key prefix only,
// so it listed "{x}" (and "{weird\]name}" for "weird}name"), inspected the
// resource "{x}" under the key "dlm:lock:{{x}}", and reported it free while
// a quorum held it; `dlm release --force '{x}'` then deleted nothing and
// exited 0. Found by attack on three `dlm node --cluster 3` nodes. The
// same when only the cluster nodes' keys carry tags (the other layouts).
func TestLocksWithHashTags(t *testing.T) {
	eachLayout(t, func(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) { locksWithHashTags(t, nodes, opts...) })
}

func locksWithHashTags(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) {
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, r := range []string{"x", "weird}name"} {
		l, err := c.Lock(ctx, r, redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
	}
	infos, complete, err := c.Locks(ctx, 0)
	if err != nil || !complete {
		t.Fatalf("Locks = %v, complete %v", err, complete)
	}
	got := map[string]redlock.LockMode{}
	for _, in := range infos {
		got[in.Resource] = in.Mode
	}
	for _, r := range []string{"x", "weird}name"} {
		if got[r] != redlock.ModeWrite {
			t.Errorf("Locks lists %v; want %q held for write", got, r)
		}
	}
}

// TestInspectTokenWithHashTags: Inspect (dlm status RESOURCE) must report
// a fenced lock's token when keys carry hash tags. It read the fence key
// without the tag ("dlm:fence:x" while the grant raised "dlm:fence:{x}"),
// so status on cluster nodes showed "token 0" and "fence 0" on every node
// for a lock taken with --fencing. Found by attack on `dlm node --cluster`.
// The same when only the cluster nodes' keys carry tags.
func TestInspectTokenWithHashTags(t *testing.T) {
	eachLayout(t, func(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) {
		inspectTokenWithHashTags(t, nodes, append(opts, redlock.WithFencing())...)
	})
}

func inspectTokenWithHashTags(t *testing.T, nodes []redlock.Node, opts ...redlock.Option) {
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.Lock(ctx, "x", redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	info, err := c.Inspect(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if info.Token != l.Token() || l.Token() == 0 {
		t.Errorf("Inspect(x).Token = %d, the lock's token is %d", info.Token, l.Token())
	}
}

// eachLayout runs body over three MemNodes in each key layout with hash
// tags, as a subtest: WithHashTags on plain nodes, nodes that are all
// clusters, and one cluster node among plain ones.
func eachLayout(t *testing.T, body func(t *testing.T, nodes []redlock.Node, opts ...redlock.Option)) {
	for _, row := range []struct {
		name     string
		clusters []int
		opts     []redlock.Option
	}{
		{"WithHashTags", nil, []redlock.Option{redlock.WithHashTags()}},
		{"clusters", []int{0, 1, 2}, nil},
		{"one cluster", []int{1}, nil},
	} {
		t.Run(row.name, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(3)
			for _, i := range row.clusters {
				nodes[i] = clusterMem{mems[i]}
			}
			body(t, nodes, row.opts...)
		})
	}
}
