package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// A node that is a Redis Cluster with a replica that may promote itself is
// refused at Dial (New), whatever its node timeout: a master cut from its
// cluster keeps granting locks until the node timeout, and its replica is
// promoted without them. Replicas with cluster-replica-no-failover yes are
// accepted, and WithPromotableReplicas accepts the others.
func TestClusterNodeWithPromotableReplicaRefused(t *testing.T) {
	redlocktest.Require(t)
	ctx := context.Background()
	auto, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 3, Replicas: 1, NodeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auto.Close)
	safe := redlocktest.StartRedisCluster(t, 3, 1)
	if err := auto.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// A generous node timeout bounds the check on a loaded machine:
		// a node that does not answer it in time is not refused.
		// Each Dial asks another server of the cluster: every one of
		// them must name every replica with its master.
		for range 4 {
			c, err := a.dial([]string{auto.URL()}, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(5*time.Second))
			if err == nil {
				_ = c.Close()
				t.Fatalf("Dial of a cluster node with a replica that may promote itself succeeded; want ErrPromotableReplica")
			}
			if !errors.Is(err, redlock.ErrPromotableReplica) || !errors.Is(err, redlock.ErrInvalid) {
				t.Fatalf("Dial = %v; want ErrPromotableReplica and ErrInvalid", err)
			}
			want := []string{"CONFIG SET cluster-replica-no-failover yes"}
			for i, m := range auto.Masters() {
				want = append(want, "replica "+auto.Replicas(i)[0].Addr()+" of master "+m.Addr())
			}
			for _, want := range want {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("Dial's error %q does not name %q", err, want)
				}
			}
		}
		dialURLs(t, a, []string{auto.URL()}, redlock.WithPromotableReplicas())
		l, err := dialURLs(t, a, []string{safe.URL()}).TryLock(t.Context(), "replicas:"+a.name)
		if err != nil {
			t.Fatalf("TryLock on a cluster node whose replicas never promote themselves: %v", err)
		}
		_ = l.Unlock(t.Context())
	})
}
