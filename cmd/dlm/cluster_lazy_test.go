package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestClusterNodeDownAtDial: a node that is a Redis Cluster behaves as a
// single node does when it cannot be reached: dialling it succeeds, its
// requests fail as a node that is down, and it works once the cluster is
// back, with every adapter. Before, the rueidis adapter's dial failed when
// no seed of the cluster answered ("dial tcp ...: connect: connection
// refused"), so a dlm command over several nodes failed as a whole because
// one of them was down at its start.
func TestClusterNodeDownAtDial(t *testing.T) {
	t.Parallel()
	cl := redlocktest.StartRedisCluster(t, 3, 0)
	url := cl.URL()
	for _, m := range cl.Masters() {
		m.Kill()
	}
	clients := map[string]*redlock.Client{}
	for _, a := range adapterTable() {
		c, closeC, err := dial(a.Name, []string{url}, tlsFiles{}, 0, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		if err != nil {
			t.Errorf("%s: dial of a cluster node that is down: %v; want a client whose node fails per request", a.Name, err)
			continue
		}
		t.Cleanup(closeC)
		clients[a.Name] = c
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, err = c.TryLock(ctx, "down")
		cancel()
		if !errors.Is(err, redlock.ErrNoQuorum) {
			t.Errorf("%s: TryLock with the cluster down: %v; want the node failing (ErrNoQuorum)", a.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, m := range cl.Masters() {
		if err := m.Restart(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	for name, c := range clients {
		i := 0
		var err error
		redlocktest.Eventually(t, 20*time.Second, func() bool {
			i++
			var l *redlock.Lock
			l, err = c.TryLock(ctx, fmt.Sprintf("up-%d", i))
			if err != nil {
				return false
			}
			return l.Unlock(ctx) == nil
		}, "%s: the cluster node never worked after the cluster came back: %v", name, err)
	}
}
