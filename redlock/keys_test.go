package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// clusterMem is a MemNode that says it is a Redis Cluster
// (adapter.ClusterNode).
type clusterMem struct{ *redlocktest.MemNode }

func (clusterMem) Cluster() bool { return true }

func (clusterMem) Replicas(context.Context) ([]adapter.Replica, error) { return nil, nil }

// The keys on a node that is a cluster carry hash tags, and those on the
// plain nodes of the same client do not, for one resource and for a set:
// a cluster node in the list leaves the plain nodes' keys as a client
// without it names them. The names are read back (Resources, Locks), and
// a handle is taken by a client that names the keys alike on each of its
// nodes, refused by one that would not (WithHashTags on plain nodes).
func TestClusterNodeKeysTaggedOnItsOwn(t *testing.T) {
	// In a bubble: the test waits for every request to be answered
	// (synctest.Wait) before it reads the nodes.
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		nodes[1] = clusterMem{mems[1]}
		c := memClient(t, nodes, redlock.WithFencing())
		ctx := t.Context()
		l, err := c.TryLock(ctx, "a}b")
		if err != nil {
			t.Fatal(err)
		}
		// A fenced TryLock returns once a quorum confirmed: the slowest node
		// may not hold the key yet, so the key is looked for on every node,
		// once every request is answered (the plain client's Release below
		// needs both plain masters to hold it).
		synctest.Wait()
		holders := 0
		for i, m := range mems {
			key := "dlm:lock:a}b"
			if i == 1 {
				key = `dlm:lock:{a\]b}`
			}
			if _, ok, _ := m.Value(ctx, key); ok {
				holders++
			}
		}
		if holders < c.Quorum() {
			keys, _ := mems[1].Keys(ctx, "")
			t.Fatalf("lock key (tagged on the cluster node only) on %d nodes, want at least %d; keys of the cluster node %q", holders, c.Quorum(), keys)
		}
		var fence uint64
		for i, m := range mems {
			key := "dlm:fence:a}b"
			if i == 1 {
				key = `dlm:fence:{a\]b}`
			}
			f, _ := m.Fence(ctx, key)
			fence = max(fence, f)
		}
		if fence != l.Token() {
			t.Errorf("fence under the nodes' fence keys = %d, want the token %d", fence, l.Token())
		}
		infos, complete, err := c.Locks(ctx, 0)
		if err != nil || !complete || len(infos) != 1 || infos[0].Resource != "a}b" || infos[0].Mode != redlock.ModeWrite {
			t.Errorf("Locks = %+v, %v, %v; want a}b held once", infos, complete, err)
		}
		s, err := c.TryLockAll(ctx, []string{"y{", "x}"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := s.Resources(); !slices.Equal(got, []string{"x}", "y{"}) {
			t.Errorf("Resources() = %q, want [x} y{]", got)
		}
		if _, ok, _ := mems[1].Value(ctx, `dlm:lock:{x\]}`); !ok {
			t.Errorf("the set's key of x} is not tagged on the cluster node")
		}
		plain := memClient(t, []redlock.Node{mems[0], mems[1], mems[2]}, redlock.WithFencing())
		tagged := memClient(t, []redlock.Node{mems[0], clusterMem{mems[1]}, mems[2]}, redlock.WithFencing(), redlock.WithHashTags())
		for _, h := range []redlock.Handle{l.Handle(), s.Handle()} {
			if h.HashTags {
				t.Errorf("handle of a client tagging its cluster node only: HashTags true, want false")
			}
			if err := tagged.Release(ctx, h); !errors.Is(err, redlock.ErrInvalid) {
				t.Errorf("Release of the handle by a client WithHashTags = %v, want ErrInvalid", err)
			}
			// The plain client names the keys of the plain masters alike:
			// a quorum of its nodes holds the lock.
			if err := plain.Release(ctx, h); err != nil {
				t.Errorf("Release by a client over the same masters: %v", err)
			}
		}
		tl, err := tagged.TryLock(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		h := tl.Handle()
		if !h.HashTags {
			t.Errorf("handle of a client WithHashTags: HashTags false, want true")
		}
		if _, err := c.Resume(ctx, h); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "build it WithHashTags") {
			t.Errorf("Resume of a handle tagged on every node by a client tagging its cluster node only = %v, want ErrInvalid naming WithHashTags", err)
		}
		// A client whose nodes are all clusters tags every key either way.
		all := []redlock.Node{clusterMem{mems[0]}, clusterMem{mems[1]}, clusterMem{mems[2]}}
		if _, err := memClient(t, all, redlock.WithFencing()).Resume(ctx, h); err != nil {
			t.Errorf("Resume by a client over cluster nodes only: %v", err)
		}
	})
}

// bareCluster is a node that says it is a Redis Cluster and has none of
// the other capabilities.
type bareCluster struct{ redlock.Node }

func (bareCluster) Cluster() bool { return true }

func (bareCluster) Replicas(context.Context) ([]adapter.Replica, error) { return nil, nil }

// A cluster node whose keys the client cannot tag on the way (it lacks the
// capabilities the client hands keys through) is refused, naming the fix;
// built WithHashTags, the client takes it.
func TestClusterNodeWithoutCapabilitiesRefused(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(3)
	nodes[2] = bareCluster{mems[2]}
	_, err := redlock.New(nodes)
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "WithHashTags") {
		t.Fatalf("New over a bare cluster node = %v, want ErrInvalid naming WithHashTags", err)
	}
	c := memClient(t, nodes, redlock.WithHashTags())
	if _, err := c.TryLock(t.Context(), "r"); err != nil {
		t.Fatalf("TryLock WithHashTags: %v", err)
	}
	// The lock is granted at a quorum: the third node's answer may come
	// after TryLock returns (a node without AsyncNode answers on a
	// goroutine of its own).
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		_, ok, _ := mems[2].Value(t.Context(), "dlm:lock:{r}")
		return ok
	}, "WithHashTags: the key on the cluster node is not tagged")
}
