package redlock_test

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// CheckNodes over real nodes, both adapters: one server given twice (two
// URLs, 127.0.0.1 and localhost) is refused; a ttl over the max ttl that
// the nodes advertise is refused, and after the check so is every lock
// with a longer ttl, without a request; fencing over nodes that do not
// sync every write warns, naming dlm node --fencing; an even number of
// nodes warns. A ttl within the advertised max ttl passes.
func TestCheckNodes(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		urls := cl.URLs()
		alias := strings.Replace(urls[0], "127.0.0.1", "localhost", 1)
		c, err := a.dial([]string{urls[0], alias, urls[1]}, redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.CheckNodes(t.Context()); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "one server") {
			t.Errorf("CheckNodes with one server twice = %v, want ErrInvalid saying one server", err)
		}

		for _, s := range cl.Servers {
			if err := s.Client().Set(t.Context(), adapter.MaxTTLKey, "40s", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		long, err := a.dial(urls, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer long.Close()
		if _, err := long.CheckNodes(t.Context()); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "max ttl 40s") {
			t.Errorf("CheckNodes with a 1m ttl on nodes advertising 40s = %v, want ErrInvalid naming max ttl 40s", err)
		}

		c2, err := a.dial(urls, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		rep, err := c2.CheckNodes(t.Context())
		if err != nil {
			t.Fatalf("CheckNodes with a 30s ttl = %v", err)
		}
		if len(rep.Warnings) != 3 || !strings.Contains(rep.Warnings[0], "dlm node --fencing") {
			t.Errorf("warnings %q, want one per node naming dlm node --fencing", rep.Warnings)
		}
		if len(rep.Facts[0]) != 1 || rep.Facts[0][0].MaxTTL != 40*time.Second || rep.Facts[0][0].RunID == "" {
			t.Errorf("facts of node 1 = %+v, want one server with max ttl 40s and a run id", rep.Facts[0])
		}
		if l, err := c2.TryLock(t.Context(), "x", redlock.WithTTL(time.Minute)); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("TryLock with a 1m ttl after the check = %v, %v; want ErrInvalid", l, err)
		}
		l, err := c2.TryLock(t.Context(), "x")
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Unlock(t.Context())

		even, err := a.dial(append(urls, redlocktest.Start(t, 1).URLs()...), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer even.Close()
		rep, err = even.CheckNodes(t.Context())
		if err != nil || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "even") {
			t.Errorf("CheckNodes over 4 nodes = %q, %v; want one warning about an even number", rep.Warnings, err)
		}
	})
}

// warnings records the NodeWarnings a client tells.
type warnings struct {
	mu  sync.Mutex
	got []redlock.NodeWarning
}

func (w *warnings) Attempt(redlock.AttemptEvent)     {}
func (w *warnings) Extension(redlock.ExtensionEvent) {}
func (w *warnings) End(redlock.EndEvent)             {}
func (w *warnings) NodeWarning(nw redlock.NodeWarning) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, nw)
}

func (w *warnings) messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, nw := range w.got {
		out = append(out, nw.Message)
	}
	return out
}

// The checks on the lock path, over in-memory nodes that tell their facts
// (each row a client that never calls CheckNodes): what each lock is
// refused for, and what the client warns of, once.
func TestLockChecksNodeFacts(t *testing.T) {
	durable := adapter.Facts{PersistenceKnown: true, AppendOnly: true, FsyncAlways: true}
	facts := func(run string, maxTTL time.Duration, f adapter.Facts) adapter.Facts {
		f.RunID, f.MaxTTL = run, maxTTL
		return f
	}
	tests := []struct {
		name     string
		facts    []adapter.Facts
		opts     []redlock.Option
		ttl      time.Duration
		refused  string // in the error; "" when the lock is granted
		warnings []string
		out      int // 1 + the node counted as failed (granted without it); 0: none
	}{
		{"within the max ttl", []adapter.Facts{facts("a", 40*time.Second, durable), facts("b", 0, durable), facts("c", 0, durable)},
			nil, 30 * time.Second, "", nil, 0},
		// One node refused of three: counted as failed, the other two
		// make the quorum.
		{"over one node's max ttl", []adapter.Facts{facts("a", 0, durable), facts("b", 40*time.Second, durable), facts("c", time.Minute, durable)},
			nil, 50 * time.Second, "", nil, 2},
		{"over two nodes' max ttls", []adapter.Facts{facts("a", 0, durable), facts("b", 40*time.Second, durable), facts("c", time.Minute, durable)},
			nil, 70 * time.Second, "2 of 3 nodes refused, leaving fewer than the quorum of 2: ttl 1m10s is over the max ttls that nodes m2 (40s), m3 (1m0s) advertise", nil, 0},
		{"one server twice", []adapter.Facts{facts("a", 0, durable), facts("a", 0, durable), facts("c", 0, durable)},
			nil, time.Second, "nodes m1 and m2 are one server", nil, 0},
		{"fencing over a node that forgets", []adapter.Facts{facts("a", 0, adapter.Facts{PersistenceKnown: true}), facts("b", 0, durable), facts("c", 0, durable)},
			[]redlock.Option{redlock.WithFencing()}, time.Second, "", []string{"node m1 keeps no keys across a restart (appendonly no, no RDB snapshots)"}, 0},
		{"fencing over nodes that keep an older copy", []adapter.Facts{facts("a", 0, adapter.Facts{PersistenceKnown: true, AppendOnly: true}), facts("b", 0, adapter.Facts{PersistenceKnown: true, Snapshots: true}), facts("c", 0, durable)},
			[]redlock.Option{redlock.WithFencing()}, time.Second, "", []string{"node m1 can come back from a crash with an older copy of its keys (appendfsync not always)", "node m2 can come back from a crash with an older copy of its keys (appendonly no, RDB snapshots)"}, 0},
		{"no fencing: no persistence warning", []adapter.Facts{facts("a", 0, adapter.Facts{PersistenceKnown: true, AppendOnly: true}), facts("b", 0, durable), facts("c", 0, durable)},
			nil, time.Second, "", nil, 0},
		{"even number", []adapter.Facts{{}, {}, {}, {}}, nil, time.Second, "", []string{"4 nodes: an even number"}, 0},
		{"replicas, accepted", []adapter.Facts{facts("a", 0, adapter.Facts{Replicas: 2}), facts("b", 0, durable), facts("c", 0, durable)},
			[]redlock.Option{redlock.WithPromotableReplicas()}, time.Second, "", []string{"node m1 has 2 replica(s)"}, 0},
		{"replicas", []adapter.Facts{facts("a", 0, adapter.Facts{Replicas: 2}), facts("b", 0, durable), facts("c", 0, durable)},
			nil, time.Second, "", []string{"node m1 is counted as a failed node by every lock (refused while the other nodes make a quorum without it): node m1 has 2 replica(s)"}, 1},
		{"replicas on two nodes", []adapter.Facts{facts("a", 0, adapter.Facts{Replicas: 2}), facts("b", 0, adapter.Facts{Replicas: 1}), facts("c", 0, durable)},
			nil, time.Second, "node m1 has 2 replica(s)", []string{"node m1 is counted", "node m2 is counted"}, 0},
		{"a replica as a node", []adapter.Facts{facts("a", 0, durable), facts("b", 0, adapter.Facts{ReplicaOf: "10.0.0.1:6379"}), facts("c", 0, durable)},
			[]redlock.Option{redlock.WithPromotableReplicas()}, time.Second, "", []string{"node m2 is counted as a failed node by every lock (refused while the other nodes make a quorum without it): node m2 is a replica"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(len(tt.facts))
			for i, f := range tt.facts {
				if !reflect.DeepEqual(f, adapter.Facts{}) {
					mems[i].SetFacts(f)
				}
			}
			var w warnings
			c, err := redlock.New(nodes, append(tt.opts, redlock.WithObserver(&w))...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for range 3 {
				l, err := c.TryLock(t.Context(), "x", redlock.WithTTL(tt.ttl))
				switch {
				case tt.refused == "" && err != nil:
					t.Fatalf("TryLock = %v, want granted", err)
				case tt.refused != "" && (!errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tt.refused)):
					t.Fatalf("TryLock = %v, %v; want ErrInvalid saying %q", l, err, tt.refused)
				case err == nil:
					if tt.out > 0 {
						if keys, _ := mems[tt.out-1].Keys(t.Context(), ""); len(keys) > 0 {
							t.Errorf("node m%d, counted as failed, holds keys %q while the lock is held", tt.out, keys)
						}
					}
					_ = l.Unlock(t.Context())
				}
			}
			got := w.messages()
			if len(got) != len(tt.warnings) {
				t.Fatalf("warnings %q over 3 locks, want %d, each once", got, len(tt.warnings))
			}
			for i, want := range tt.warnings {
				if !strings.Contains(got[i], want) {
					t.Errorf("warning %q, want it to say %q", got[i], want)
				}
			}
		})
	}
}

// A node whose facts change (a new connection after a restart) is judged
// again on the next lock, without CheckNodes: a smaller max ttl refuses
// it, a larger one grants it again.
func TestLockReadsChangedFacts(t *testing.T) {
	nodes, mems := redlocktest.NewMemNodes(3)
	for _, m := range mems {
		m.SetFacts(adapter.Facts{RunID: m.String(), MaxTTL: 40 * time.Second})
	}
	c, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lock := func() error {
		l, err := c.TryLock(t.Context(), "x", redlock.WithTTL(30*time.Second))
		if err == nil {
			_ = l.Unlock(t.Context())
		}
		return err
	}
	if err := lock(); err != nil {
		t.Fatalf("30s under 40s: %v", err)
	}
	mems[1].SetFacts(adapter.Facts{RunID: "m2-again", MaxTTL: 10 * time.Second})
	mems[2].SetFacts(adapter.Facts{RunID: "m3-again", MaxTTL: 20 * time.Second})
	if err := lock(); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "nodes m2 (10s), m3 (20s) advertise") {
		t.Fatalf("30s after m2 and m3 came back with 10s and 20s = %v, want ErrInvalid naming both", err)
	}
	mems[1].SetFacts(adapter.Facts{RunID: "m2-third", MaxTTL: time.Minute})
	mems[2].SetFacts(adapter.Facts{RunID: "m3-third", MaxTTL: time.Minute})
	if err := lock(); err != nil {
		t.Fatalf("30s after m3 came back with 1m = %v", err)
	}
}
