package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// A running client reads its nodes' facts again while it locks: a cluster
// node's replica allowed to promote itself after New (CONFIG SET
// cluster-replica-no-failover no, as an operator letting the cluster fail
// over alone) is refused, as a fresh Dial refuses it, within a few
// seconds, for new locks and for the extension of a lock already held
// (which then ends at its validity). Real cluster, both adapters.
func TestRunningClientRefusesReplicaMadePromotable(t *testing.T) {
	redlocktest.Require(t)
	ctx := context.Background()
	cl, err := redisproc.StartCluster(ctx, redisproc.ClusterConfig{Masters: 1, Replicas: 1, ReplicaNoFailover: true, NodeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	rep := cl.Replicas(0)[0]
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		setNoFailover(t, cl, rep, true)
		c := dialURLs(t, a, []string{cl.URL()}, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(2*time.Second))
		held, err := c.TryLock(t.Context(), "held:"+a.name)
		if err != nil {
			t.Fatalf("TryLock on a node whose replica never promotes itself: %v", err)
		}
		setNoFailover(t, cl, rep, false)
		refusedWithin(t, c, "fresh:"+a.name, redlock.ErrPromotableReplica)
		if err := held.Extend(t.Context()); !errors.Is(err, redlock.ErrPromotableReplica) {
			t.Errorf("Extend of a lock held when the replica became promotable = %v, want ErrPromotableReplica", err)
		}
	})
}

// setNoFailover sets cluster-replica-no-failover on the replica and waits
// until the master lists it so (CLUSTER NODES, as the clients read it).
func setNoFailover(t *testing.T, cl *redisproc.Cluster, rep *redisproc.Process, on bool) {
	t.Helper()
	val := map[bool]string{true: "yes", false: "no"}[on]
	if err := rep.Client().ConfigSet(t.Context(), "cluster-replica-no-failover", val).Err(); err != nil {
		t.Fatal(err)
	}
	m := cl.Masters()[0]
	redlocktest.Eventually(t, 30*time.Second, func() bool {
		txt, err := m.Client().ClusterNodes(context.Background()).Result()
		if err != nil {
			return false
		}
		for line := range strings.Lines(txt) {
			if f := strings.Fields(line); len(f) > 2 && strings.Contains(f[2], "slave") {
				return strings.Contains(f[2], "nofailover") == on
			}
		}
		return false
	}, "the master never listed the replica's nofailover flag as %v", on)
}

// refusedWithin waits until a TryLock of resource is refused with want, as
// a running client's reading of its nodes' facts again (every 2 s while it
// locks) makes it: generously bounded, for a loaded machine.
func refusedWithin(t *testing.T, c *redlock.Client, resource string, want error) {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < 30*time.Second {
		var l *redlock.Lock
		if l, err = c.TryLock(t.Context(), resource); err == nil {
			_ = l.Unlock(t.Context())
		}
		if errors.Is(err, want) {
			t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
			return
		}
		time.Sleep(100 * time.Millisecond) // polling: the reading is the client's, every 2 s
	}
	t.Fatalf("the running client never refused the node within 30s: last TryLock = %v, want %v", err, want)
}

// The same for a plain master that gets a replica attached (REPLICAOF on
// another server) while the client's connections live: the replica count
// is read again on the live connections, and the node, one of three, is
// counted as a failed node by the locks that begin after (the other two
// grant them), and named to the observers. Real servers, both adapters.
func TestRunningClientRefusesReplicaAttached(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		var w warnings
		c := dial(t, a, cl, redlock.WithObserver(&w))
		l, err := c.TryLock(t.Context(), "plain")
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Unlock(t.Context())
		m := cl.Servers[0]
		redlocktest.StartServer(t, redlocktest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(m.Port())))
		redlocktest.Eventually(t, 30*time.Second, func() bool {
			return strings.Contains(m.Client().Info(context.Background(), "replication").Val(), "connected_slaves:1")
		}, "the replica never connected")
		warned := func(msgs []string) bool {
			got := strings.Join(msgs, "\n")
			return strings.Contains(got, "node "+m.Addr()+" is counted as a failed node") && strings.Contains(got, "1 replica(s)")
		}
		start := time.Now()
		for {
			l, err := c.TryLock(t.Context(), "plain")
			if err != nil {
				t.Fatalf("TryLock with one node of three refused: %v, want it granted by the other two", err)
			}
			vals := cl.MustValues("dlm:lock:plain")
			_ = l.Unlock(t.Context())
			// Counted out, and named to the observers: a node may miss a
			// key for another reason on a loaded machine (a timeout), so
			// the warning decides.
			if vals[0] == "" && vals[1] != "" && vals[2] != "" && warned(w.messages()) {
				break
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the running client still locks on the master with a replica 30s after it was attached, or never named it to the observers (values %q, warnings %q)", vals, w.messages())
			}
			time.Sleep(100 * time.Millisecond) // polling: the reading is the client's, every 2 s
		}
		t.Logf("counted out after %v", time.Since(start).Round(time.Millisecond))
		// Alone, it is refused.
		refusedWithin(t, dialURLs(t, a, cl.URLs()[:1], redlock.WithNodeTimeout(time.Second)), "plain", redlock.ErrPromotableReplica)
	})
}

// A least-privilege ACL user hides the facts the client checks: "+@all
// -@dangerous" refuses INFO, CONFIG and CLIENT KILL, "+@all -@admin"
// CONFIG and CLIENT KILL (the reconnect fence), and a key pattern the GET
// of the advertised max ttl. Each lock is then refused (ErrInvalid),
// naming what the server refused and what to grant, where before the
// client went on unchecked: one server given twice counted twice toward
// the quorum, a ttl over the advertised max ttl was accepted, and nothing
// said so. WithUncheckedNodes accepts such nodes, with a warning
// (CheckNodes, observers). The default user is checked as always. Real
// servers, both adapters.
func TestNodesThatHideFactsRefused(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	ctx := context.Background()
	users := []struct {
		name  string
		rules []string
		want  []string // named in the refusal
	}{
		{"dangerless", []string{"~*", "&*", "+@all", "-@dangerous"}, []string{"INFO", "CONFIG GET", "CLIENT KILL", "+info"}},
		{"adminless", []string{"~*", "&*", "+@all", "-@admin"}, []string{"CONFIG GET", "CLIENT KILL", "+client|kill"}},
		{"keyed", []string{"~dlm:lock:*", "&*", "+@all"}, []string{"GET " + adapter.MaxTTLKey, "%R~" + adapter.MaxTTLKey}},
	}
	for _, s := range cl.Servers {
		for _, u := range users {
			args := append([]any{"ACL", "SETUSER", u.name, "on", ">hidden-pw"}, anys(u.rules)...)
			if err := s.Client().Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	advertise(t, cl.Servers, 5*time.Second)
	url := func(user, host string, i int) string {
		cred := ""
		if user != "" {
			cred = user + ":hidden-pw@"
		}
		return fmt.Sprintf("redis://%s%s:%d", cred, host, cl.Servers[i].Port())
	}
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		// The default user: one server given twice, a ttl over the max
		// ttl, each refused.
		dup := dialURLs(t, a, []string{url("", "127.0.0.1", 0), url("", "localhost", 0), url("", "127.0.0.1", 1)}, redlock.WithNodeTimeout(time.Second))
		if _, err := dup.TryLock(t.Context(), "hide", redlock.WithTTL(2*time.Second)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "one server") {
			t.Errorf("default user, one server given twice: TryLock = %v, want ErrInvalid naming one server", err)
		}
		for _, u := range users {
			// One server given twice went unseen where INFO is refused.
			dup := dialURLs(t, a, []string{url(u.name, "127.0.0.1", 0), url(u.name, "localhost", 0), url(u.name, "127.0.0.1", 1)}, redlock.WithNodeTimeout(time.Second))
			if _, err := dup.TryLock(t.Context(), "hide", redlock.WithTTL(2*time.Second)); !errors.Is(err, redlock.ErrInvalid) {
				t.Errorf("user %s, one server given twice: TryLock = %v, want ErrInvalid", u.name, err)
			}
			// A ttl over the max ttl went unseen where INFO or the GET is
			// refused.
			urls := []string{url(u.name, "127.0.0.1", 0), url(u.name, "127.0.0.1", 1), url(u.name, "127.0.0.1", 2)}
			c := dialURLs(t, a, urls, redlock.WithNodeTimeout(time.Second))
			_, err := c.TryLock(t.Context(), "hide", redlock.WithTTL(30*time.Second))
			if !errors.Is(err, redlock.ErrInvalid) {
				t.Errorf("user %s: TryLock = %v, want ErrInvalid", u.name, err)
				continue
			}
			t.Logf("user %s: %v", u.name, err)
			for _, want := range append(u.want, "WithUncheckedNodes") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("user %s: TryLock's error %q does not name %q", u.name, err, want)
				}
			}
			if strings.Contains(err.Error(), "hidden-pw") {
				t.Errorf("user %s: the error prints the password: %q", u.name, err)
			}
			var w warnings
			c = dialURLs(t, a, urls, redlock.WithNodeTimeout(time.Second), redlock.WithUncheckedNodes(), redlock.WithObserver(&w))
			l, err := c.TryLock(t.Context(), "hide", redlock.WithTTL(2*time.Second))
			if err != nil {
				t.Errorf("user %s, WithUncheckedNodes: TryLock = %v", u.name, err)
				continue
			}
			_ = l.Unlock(t.Context())
			rep, _ := c.CheckNodes(t.Context())
			if !strings.Contains(strings.Join(rep.Warnings, "\n"), u.want[0]) || !strings.Contains(strings.Join(w.messages(), "\n"), u.want[0]) {
				t.Errorf("user %s, WithUncheckedNodes: CheckNodes warnings %q, observed %q; want both to name %q", u.name, rep.Warnings, w.messages(), u.want[0])
			}
		}
	})
}

// anys returns ss as a []any.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
