package redlock_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Nodes that cannot keep a lock, as dlm doctor FAILs them, are refused on
// the path of the lock, read with the nodes' facts (no request): a plain
// master with a replica (a promotion by Sentinel or by hand can lose its
// last lock keys) unless WithPromotableReplicas, a replica given as a
// node, and a server that evicts keys under memory pressure. Real nodes,
// both adapters.
func TestLockRefusesUnsafeNodes(t *testing.T) {
	t.Parallel()
	cl := redlocktest.Start(t, 3)
	master := cl.Servers[0]
	replica := redlocktest.StartServer(t, redlocktest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	evicts := redlocktest.StartServer(t, redlocktest.WithArgs("--maxmemory", "100mb", "--maxmemory-policy", "volatile-ttl"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := master.Client().Info(t.Context(), "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not connect to its master within 30s: %q, %v", info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	urls := cl.URLs()
	tests := []struct {
		name    string
		urls    []string
		opts    []redlock.Option
		wantErr error    // nil: the lock is granted
		say     []string // in the error
	}{
		// Alone, each is refused; one of three is counted as a failed
		// node, and the other two grant the lock.
		{"master with a replica", urls[:1], nil, redlock.ErrPromotableReplica, []string{master.Addr(), "1 replica(s)", "WithPromotableReplicas"}},
		{"master with a replica, one of three", urls, nil, nil, nil},
		{"master with a replica, accepted", urls, []redlock.Option{redlock.WithPromotableReplicas()}, nil, nil},
		{"a replica as a node", []string{replica.URL()}, nil, redlock.ErrInvalid, []string{replica.Addr(), "is a replica"}},
		{"eviction", []string{evicts.URL()}, nil, redlock.ErrInvalid, []string{evicts.Addr(), "volatile-ttl", "noeviction"}},
		{"eviction, one of three", []string{urls[1], urls[2], evicts.URL()}, nil, nil, nil},
	}
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				opts := append([]redlock.Option{redlock.WithNodeTimeout(500 * time.Millisecond)}, tt.opts...)
				c := dialURLs(t, a, tt.urls, opts...)
				resource := a.name + "-" + strings.ReplaceAll(tt.name, " ", "-")
				l, err := c.TryLock(t.Context(), resource, redlock.WithTTL(5*time.Second))
				if tt.wantErr == nil {
					if err != nil {
						t.Fatalf("TryLock: %v", err)
					}
					_ = l.Unlock(t.Context())
					return
				}
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, redlock.ErrInvalid) {
					t.Fatalf("TryLock = %v, %v; want %v (and ErrInvalid)", l, err, tt.wantErr)
				}
				for _, want := range tt.say {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if _, err := c.CheckNodes(t.Context()); !errors.Is(err, tt.wantErr) {
					t.Errorf("CheckNodes = %v, want %v", err, tt.wantErr)
				}
			})
		}
	})
}
