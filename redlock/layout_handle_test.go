package redlock_test

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A handle is taken by a client exactly when the client names the
// handle's keys as its writer did on every node that both could share,
// and refused with ErrInvalid, naming what to change, otherwise. Nodes
// 1-3 are Redis Clusters (keys always tagged there) and nodes 4-6 plain
// masters (keys tagged only WithHashTags); every pair of node lists and
// layouts writes a handle with one client and gives it to the other. The
// handle cannot tell which plain masters its writer had, so it is
// refused when both clients have plain masters and tag them differently,
// and taken when either client has none: a writer over clusters only
// left no key on any plain master, and a reader over clusters only names
// every key tagged. Each handle taken is then released by its reader:
// no node of both clients still holds the value under any name.
func TestHandleTakenWhereItsKeysAreNamedAlike(t *testing.T) {
	type layout struct {
		name  string
		nodes []int // of the six nodes
		tags  bool  // WithHashTags
	}
	layouts := []layout{
		{"clusters", []int{0, 1, 2}, false},
		{"clusters WithHashTags", []int{0, 1, 2}, true},
		{"clusters and a plain master", []int{0, 1, 2, 3}, false},
		{"clusters and a plain master WithHashTags", []int{0, 1, 2, 3}, true},
		{"a cluster and plain masters", []int{0, 3, 4}, false},
		{"plain masters WithHashTags", []int{3, 4, 5}, true},
		{"plain masters", []int{3, 4, 5}, false},
	}
	plain := func(l layout) bool { return l.nodes[len(l.nodes)-1] >= 3 }
	for _, w := range layouts {
		for _, r := range layouts {
			t.Run(w.name+" to "+r.name, func(t *testing.T) {
				_, mems := redlocktest.NewMemNodes(6)
				client := func(l layout) *redlock.Client {
					var nodes []redlock.Node
					for _, i := range l.nodes {
						if i < 3 {
							nodes = append(nodes, clusterMem{mems[i]})
						} else {
							nodes = append(nodes, mems[i])
						}
					}
					var opts []redlock.Option
					if l.tags {
						opts = append(opts, redlock.WithHashTags())
					}
					return memClient(t, nodes, opts...)
				}
				ctx := t.Context()
				lk, err := client(w).TryLock(ctx, "job")
				if err != nil {
					t.Fatal(err)
				}
				h := lk.Handle()
				text, err := h.MarshalText()
				if err != nil {
					t.Fatal(err)
				}
				if h, err = redlock.ParseHandle(string(text)); err != nil {
					t.Fatal(err)
				}
				// Lists of other sizes cross here; the check of their
				// quorums is TestHandleOverOtherNodesIsRefused's.
				h.Nodes = 0
				err = client(r).Release(ctx, h)
				refuse := plain(w) && plain(r) && w.tags != r.tags
				switch {
				case refuse && !errors.Is(err, redlock.ErrInvalid):
					t.Fatalf("Release = %v, want ErrInvalid: the clients name the keys on plain masters differently", err)
				case refuse && !strings.Contains(err.Error(), "WithHashTags"):
					t.Fatalf("Release = %v, want an error naming WithHashTags", err)
				case refuse:
					return
				case errors.Is(err, redlock.ErrInvalid):
					t.Fatalf("Release = %v, want the handle taken: its keys are named alike on every node both clients can share", err)
				}
				for _, i := range w.nodes {
					for _, key := range []string{"dlm:lock:job", "dlm:lock:{job}"} {
						if v, ok, _ := mems[i].Value(ctx, key); ok && v == h.Value && slices.Contains(r.nodes, i) {
							t.Errorf("node %d still holds the handle's value under %s after its release by the reader (release: %v)", i+1, key, err)
						}
					}
				}
			})
		}
	}
}

// The handles of earlier versions stay readable, and are taken as they
// were: a handle of a client over cluster nodes only, written before
// Handle.ClustersOnly, says only HashTags, and is refused by a client that
// tags only its cluster nodes' keys, and taken by one built WithHashTags.
// A handle of a client with a plain master carries no clusters_only
// field, so that earlier versions read it.
func TestHandleOfAnEarlierVersionOverClusters(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(4)
	for i := range 3 {
		nodes[i] = clusterMem{mems[i]}
	}
	ctx := t.Context()
	l, err := memClient(t, nodes[:3]).TryLock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	h := l.Handle()
	if !h.HashTags || !h.ClustersOnly {
		t.Fatalf("handle of a client over clusters only: HashTags %v, ClustersOnly %v; want both true", h.HashTags, h.ClustersOnly)
	}
	h.ClustersOnly, h.Nodes = false, 0 // as an earlier version wrote it
	text, err := h.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(decodeHandle(t, string(text)), "clusters_only") {
		t.Errorf("a handle without ClustersOnly names clusters_only in its text, which earlier versions refuse")
	}
	old, err := redlock.ParseHandle(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := memClient(t, nodes).Resume(ctx, old); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "earlier version over Redis Cluster nodes only") {
		t.Errorf("Resume of an earlier version's handle by a client tagging its cluster nodes only = %v, want ErrInvalid naming the earlier version", err)
	}
	r, err := memClient(t, nodes, redlock.WithHashTags()).Resume(ctx, old)
	if err != nil {
		t.Fatalf("Resume of an earlier version's handle by a client WithHashTags: %v", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}

// decodeHandle returns the JSON inside a handle's text form.
func decodeHandle(t *testing.T, text string) string {
	t.Helper()
	js, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(text, "dlm1."))
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}
