package prometheus_test

import (
	"errors"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"dlm/redlock"
	"dlm/redlock/goredis"
	rlprom "dlm/redlock/prometheus"
	"dlm/redlock/redlocktest"
)

// value returns the value of the metric name whose labels include want, or
// -1 when there is none.
func value(t *testing.T, reg prom.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metrics
				}
			}
			return metricValue(m)
		}
	}
	return -1
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func TestMetrics(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	reg := prom.NewPedanticRegistry()
	obs, err := rlprom.New(reg, rlprom.WithConstLabels(prom.Labels{"service": "test"}))
	if err != nil {
		t.Fatal(err)
	}
	// Blocking nodes: every fan-out waits for every node, so that the
	// answers of a node no quorum needed are recorded too (over AsyncNodes,
	// Unlock returns at a quorum).
	var nodes []redlock.Node
	for _, u := range cl.URLs() {
		n, err := goredis.DialNode(u)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, redlocktest.Blocking(n))
	}
	c, err := redlock.New(nodes, redlock.WithObserver(obs), redlock.WithFencing(),
		redlock.WithTTL(time.Second), redlock.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()

	// A grant, a contended attempt, a manual extension, a release.
	l, err := c.TryLock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryLock(ctx, "a"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second TryLock = %v, want ErrNotAcquired", err)
	}
	if got := value(t, reg, "dlm_redlock_held_locks", nil); got != 1 {
		t.Errorf("held_locks while held = %v, want 1", got)
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A lock lost under auto-extension: its keys deleted on every node.
	la, err := c.TryLock(ctx, "b", redlock.WithAutoExtend())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cl.Servers {
		s.Client().Del(ctx, redlock.DefaultKeyPrefix+"b")
	}
	select {
	case <-la.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("auto-extended lock not lost within 10s of its keys' deletion")
	}
	// Nodes down: their errors are counted under their names. A quorum of
	// them, so that the failed TryLock waits for every node's answer (Unlock
	// and a granted attempt return at a quorum, before a slower node's).
	down := cl.Servers[0]
	for _, s := range cl.Servers[:3] {
		s.Kill()
	}
	if _, err := c.TryLock(ctx, "c"); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("TryLock with 3 of 5 nodes down: %v, want ErrNoQuorum", err)
	}

	tests := []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"dlm_redlock_acquire_attempts_total", map[string]string{"outcome": "acquired", "service": "test"}, 2},
		{"dlm_redlock_acquire_attempts_total", map[string]string{"outcome": "contended"}, 1},
		{"dlm_redlock_acquire_attempt_duration_seconds", map[string]string{"outcome": "acquired"}, 2},
		{"dlm_redlock_acquire_attempts_total", map[string]string{"outcome": "no_quorum"}, 1},
		{"dlm_redlock_extensions_total", map[string]string{"mode": "manual", "result": "ok"}, 1},
		{"dlm_redlock_extensions_total", map[string]string{"mode": "auto", "result": "failed"}, 1},
		{"dlm_redlock_releases_total", map[string]string{"result": "released"}, 1},
		{"dlm_redlock_losses_total", map[string]string{"reason": "lost"}, 1},
		{"dlm_redlock_held_locks", nil, 0},
	}
	for _, tt := range tests {
		if got := value(t, reg, tt.metric, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.metric, tt.labels, got, tt.want)
		}
	}
	if got := value(t, reg, "dlm_redlock_node_errors_total", map[string]string{"node": down.Addr(), "op": "acquire", "kind": "error"}); got < 1 {
		t.Errorf("node_errors_total of the killed node %s for acquire = %v, want >= 1", down.Addr(), got)
	}
	// Per-node latencies, by operation: a node not needed for a quorum may
	// answer after the decision and go unrecorded, so look at all of them.
	for _, op := range []string{"acquire", "fence", "extend", "release"} {
		n := 0.0
		for _, s := range cl.Servers {
			n += max(0, value(t, reg, "dlm_redlock_node_request_duration_seconds", map[string]string{"node": s.Addr(), "op": op}))
		}
		if n < 3 {
			t.Errorf("node_request_duration_seconds{op=%s}: %v observations over all nodes, want at least a quorum's", op, n)
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Errorf("GatherAndCount = %d, %v", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A lock passed between two Lock calls of one client (redlock/pass.go) is
// a hand-over, not an attempt: it moves the held gauge and the hand-over
// counter, and its Unlock counts as handed.
func TestHandOverMetrics(t *testing.T) {
	reg := prom.NewRegistry()
	o, err := rlprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	o.Attempt(redlock.AttemptEvent{Resource: "r", Outcome: redlock.AttemptAcquired, Elapsed: time.Millisecond})
	o.End(redlock.EndEvent{Resource: "r", Reason: redlock.ErrUnlocked, Handed: true})
	o.Attempt(redlock.AttemptEvent{Resource: "r", Outcome: redlock.AttemptAcquired, Validity: time.Second, Handed: true})
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dlm_redlock_acquire_attempts_total", map[string]string{"outcome": "acquired"}, 1},
		{"dlm_redlock_acquire_attempt_duration_seconds", map[string]string{"outcome": "acquired"}, 1},
		{"dlm_redlock_handovers_total", nil, 1},
		{"dlm_redlock_held_locks", nil, 1},
		{"dlm_redlock_releases_total", map[string]string{"result": "handed"}, 1},
	} {
		if got := value(t, reg, m.name, m.labels); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
}

func TestNewReportsDuplicateRegistration(t *testing.T) {
	reg := prom.NewRegistry()
	if _, err := rlprom.New(reg); err != nil {
		t.Fatal(err)
	}
	_, err := rlprom.New(reg)
	var are prom.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New on one registry = %v, want AlreadyRegisteredError", err)
	}
	if _, err := rlprom.New(reg, rlprom.WithNamespace("other", "locks")); err != nil {
		t.Fatalf("New with another namespace: %v", err)
	}
}
