package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A cluster node in a client's list leaves the keys of its plain nodes as
// they were. Three plain masters P1-P3 and a one-master Redis Cluster C:
// while a rollout puts C in place of P3, clients on the old list (P1, P2,
// P3) and on the new one (P1, P2, C) lock the same keys on P1 and P2, so a
// resource (or an election) held through one list is refused through the
// other, as when P3 is replaced by an empty plain master P4. (A cluster
// node used to turn hash tags on for every node of the client: the two
// lists then held the same resource, and an election had two leaders.)
// Then every capability over the new list, both adapters: the plain
// masters hold untagged keys only, the cluster tagged ones only, and the
// names read back are the resources'.
func TestClusterNodeRollout(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	rc := redlocktest.StartRedisCluster(t, 1, 0)
	p4 := redlocktest.StartServer(t)
	u := cl.URLs()
	old, next, fresh := u, []string{u[0], u[1], rc.URL()}, []string{u[0], u[1], p4.URL()}
	ctx := t.Context()
	// onShared waits until both masters the lists share hold resource's
	// key: the rollout's premise (a grant needs only 2 of 3 nodes, and a
	// holder whose third key is on P3 alone is outvoted by any list
	// without P3, a replaced node that forgot, R16).
	onShared := func(t *testing.T, resource string) {
		t.Helper()
		for _, s := range cl.Servers[:2] {
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				v, _, err := s.Inspector().Value(ctx, redlock.DefaultKeyPrefix+resource)
				return err == nil && v != ""
			}, "%s never held the key of %s", s.Addr(), resource)
		}
	}

	t.Run("Exclusion", func(t *testing.T) {
		for _, a := range adapters() {
			r := "rollout-" + a.name
			l, err := dialURLs(t, a, old).TryLock(ctx, r)
			if err != nil {
				t.Fatalf("%s: the old list's TryLock: %v", a.name, err)
			}
			onShared(t, r)
			for _, row := range []struct {
				what  string
				nodes []string
			}{
				{"an empty plain master in place of node 3", fresh},
				{"a Redis Cluster in place of node 3", next},
			} {
				if got, err := dialURLs(t, a, row.nodes).TryLock(ctx, r); !errors.Is(err, redlock.ErrNotAcquired) {
					if err == nil {
						_ = got.Unlock(ctx)
					}
					t.Errorf("%s: TryLock of %q held by the old list's client, over a list with %s = %v, want ErrNotAcquired (two holders)", a.name, r, row.what, err)
				}
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("%s: Unlock: %v", a.name, err)
			}
		}
	})

	t.Run("OneLeader", func(t *testing.T) {
		a := adapters()[0]
		eo, err := election.New(dialURLs(t, a, old, redlock.WithFencing()), "jobs")
		if err != nil {
			t.Fatal(err)
		}
		en, err := election.New(dialURLs(t, a, next, redlock.WithFencing()), "jobs")
		if err != nil {
			t.Fatal(err)
		}
		lo, err := eo.Campaign(ctx, "old-a")
		if err != nil {
			t.Fatal(err)
		}
		defer lo.Resign(context.WithoutCancel(ctx))
		onShared(t, election.ResourcePrefix+"jobs")
		// And the leader's record: Campaign returned once a quorum of the
		// old list stored it, which may leave one shared master to go.
		for _, s := range cl.Servers[:2] {
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				n, err := s.Client().Exists(ctx, redlock.DefaultRecordPrefix+election.ResourcePrefix+"jobs").Result()
				return err == nil && n == 1
			}, "%s never held the leader's record", s.Addr())
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if ln, err := en.Campaign(cctx, "new-b"); err == nil {
			defer ln.Resign(context.WithoutCancel(ctx))
			t.Fatalf("two leaders of election jobs: %q (term %d) on the old list and %q (term %d) on the new one", lo.ID(), lo.Term(), ln.ID(), ln.Term())
		}
		if leader, ok, err := en.Leader(ctx); err != nil || !ok || leader.ID != "old-a" {
			t.Errorf("the new list's Leader = %+v, %v, %v; want old-a", leader, ok, err)
		}
	})

	t.Run("NewList", func(t *testing.T) {
		clients := map[string]*redlock.Client{}
		for _, a := range adapters() {
			clients[a.name] = dialURLs(t, a, next, redlock.WithFencing(), redlock.WithNodeTimeout(500*time.Millisecond))
		}
		for _, a := range adapters() {
			c, other := clients[a.name], clients["goredis"]
			if a.name == "goredis" {
				other = clients["rueidis"]
			}
			r := "new-" + a.name + ":"
			l, err := c.TryLock(ctx, r+"x}")
			if err != nil {
				t.Fatalf("%s: TryLock: %v", a.name, err)
			}
			if _, err := other.TryLock(ctx, r+"x}"); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("%s: the other adapter locked a held resource: %v", a.name, err)
			}
			resumed, err := other.Resume(ctx, l.Handle())
			if err != nil {
				t.Fatalf("%s: Resume by the other adapter: %v", a.name, err)
			}
			info, err := c.Inspect(ctx, r+"x}")
			if err != nil || info.Mode != redlock.ModeWrite || info.Token != l.Token() {
				t.Errorf("%s: Inspect = %+v, %v; want held, token %d", a.name, info, err, l.Token())
			}
			s, err := c.TryLockAll(ctx, []string{r + "a", r + "b"})
			if err != nil {
				t.Fatalf("%s: TryLockAll: %v", a.name, err)
			}
			w, err := c.TryWLock(ctx, r+"rw")
			if err != nil || w.Token() == 0 {
				t.Fatalf("%s: TryWLock = %v, token %d", a.name, err, w.Token())
			}
			infos, complete, err := other.Locks(ctx, 0)
			var names []string
			for _, in := range infos {
				if strings.HasPrefix(in.Resource, r) && in.Held() {
					names = append(names, in.Resource)
				}
			}
			if want := []string{r + "a", r + "b", r + "rw", r + "x}"}; err != nil || !complete || !slices.Equal(names, want) {
				t.Errorf("%s: Locks lists %q held (%v, complete %v), want %q", a.name, names, err, complete, want)
			}
			for _, l := range []*redlock.Lock{resumed, s, w} {
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("%s: Unlock: %v", a.name, err)
				}
			}
			e, err := election.New(c, r+"e")
			if err != nil {
				t.Fatal(err)
			}
			lead, err := e.Campaign(ctx, "me")
			if err != nil {
				t.Fatalf("%s: Campaign: %v", a.name, err)
			}
			oe, _ := election.New(other, r+"e")
			if got, ok, err := oe.Leader(ctx); err != nil || !ok || got.ID != "me" || got.Term != lead.Term() {
				t.Errorf("%s: leader read by the other adapter = %+v, %v, %v; want me, term %d", a.name, got, ok, err, lead.Term())
			}
			_ = lead.Resign(ctx)
		}
		// The layout on each node: nothing tagged on the plain masters,
		// nothing untagged on the cluster.
		for i, s := range cl.Servers[:2] {
			if keys := s.MustKeys("dlm:"); slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "{") }) {
				t.Errorf("plain master %d holds hash-tagged keys: %q", i+1, keys)
			}
		}
		keys, err := rc.Inspector().Keys(ctx, "dlm:")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !strings.Contains(k, "{") && !strings.HasPrefix(k, "dlm:info:") && k != "dlm:fence:" {
				t.Errorf("the cluster node holds an untagged key %q; its keys %q", k, keys)
				break
			}
		}
	})
}
