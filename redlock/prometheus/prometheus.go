package prometheus

import (
	"errors"

	prom "github.com/prometheus/client_golang/prometheus"

	"dlm/redlock"
)

// DefaultBuckets returns the default latency buckets, in seconds: from
// 0.25 ms (a local node) to 2.5 s (far beyond any sensible node timeout).
func DefaultBuckets() []float64 {
	return []float64{.00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
}

// Option configures New.
type Option func(*config)

type config struct {
	namespace, subsystem string
	buckets              []float64
	constLabels          prom.Labels
}

// WithNamespace sets the metrics' namespace and subsystem. Default "dlm" and
// "redlock".
func WithNamespace(namespace, subsystem string) Option {
	return func(c *config) { c.namespace, c.subsystem = namespace, subsystem }
}

// WithBuckets sets the histograms' buckets, in seconds. Default
// DefaultBuckets().
func WithBuckets(b []float64) Option { return func(c *config) { c.buckets = b } }

// WithConstLabels adds labels to every metric, such as the name of the lock
// service when one process has several clients. Default none.
func WithConstLabels(l prom.Labels) Option { return func(c *config) { c.constLabels = l } }

// Observer is a redlock.Observer that records metrics. It is safe for
// concurrent use; one Observer may serve several clients.
type Observer struct {
	attempts     *prom.CounterVec
	attemptTime  *prom.HistogramVec
	nodeTime     *prom.HistogramVec
	nodeErrors   *prom.CounterVec
	held         prom.Gauge
	handovers    prom.Counter
	extensions   *prom.CounterVec
	releases     *prom.CounterVec
	losses       *prom.CounterVec
	collectorSet []prom.Collector
}

var _ redlock.Observer = (*Observer)(nil)

// New creates the metrics and registers them with reg
// (prometheus.DefaultRegisterer, or a registry of your own). It returns the
// registration error, such as a duplicate, unchanged.
func New(reg prom.Registerer, opts ...Option) (*Observer, error) {
	c := config{namespace: "dlm", subsystem: "redlock", buckets: DefaultBuckets()}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	co := func(name, help string) prom.Opts {
		return prom.Opts{Namespace: c.namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels}
	}
	ho := func(name, help string) prom.HistogramOpts {
		return prom.HistogramOpts{Namespace: c.namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels, Buckets: c.buckets}
	}
	o := &Observer{
		attempts:    prom.NewCounterVec(prom.CounterOpts(co("acquire_attempts_total", "Acquisition attempts (R8), by outcome.")), []string{"outcome"}),
		attemptTime: prom.NewHistogramVec(ho("acquire_attempt_duration_seconds", "Duration of acquisition attempts, from before the first request to the decision, by outcome."), []string{"outcome"}),
		nodeTime:    prom.NewHistogramVec(ho("node_request_duration_seconds", "Time each node took to answer, by node and operation."), []string{"node", "op"}),
		nodeErrors:  prom.NewCounterVec(prom.CounterOpts(co("node_errors_total", "Node errors and timeouts, by node, operation and kind.")), []string{"node", "op", "kind"}),
		held:        prom.NewGauge(prom.GaugeOpts(co("held_locks", "Locks granted and not yet ended."))),
		handovers:   prom.NewCounter(prom.CounterOpts(co("handovers_total", "Locks passed by Unlock to a waiting Lock call of the same client, without an attempt (redlock.WithHandoffLimit)."))),
		extensions:  prom.NewCounterVec(prom.CounterOpts(co("extensions_total", "Lock extensions (R17), by mode (auto, manual) and result (ok, failed).")), []string{"mode", "result"}),
		releases:    prom.NewCounterVec(prom.CounterOpts(co("releases_total", "Unlock calls, by result (released, not_held, handed: passed to a waiter of the same client).")), []string{"result"}),
		losses:      prom.NewCounterVec(prom.CounterOpts(co("losses_total", "Locks lost while held, by reason (lost, expired, extension_bound, closed).")), []string{"reason"}),
	}
	o.collectorSet = []prom.Collector{o.attempts, o.attemptTime, o.nodeTime, o.nodeErrors, o.held, o.handovers, o.extensions, o.releases, o.losses}
	for _, col := range o.collectorSet {
		if err := reg.Register(col); err != nil {
			for _, done := range o.collectorSet {
				if done == col {
					break
				}
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return o, nil
}

// nodes records each node's latency and errors for one operation.
func (o *Observer) nodes(op string, rs []redlock.NodeResult) {
	for _, r := range rs {
		switch r.Outcome {
		case redlock.NoReply:
			continue
		case redlock.Failed:
			o.nodeErrors.WithLabelValues(r.Node, op, "error").Inc()
		case redlock.TimedOut:
			o.nodeErrors.WithLabelValues(r.Node, op, "timeout").Inc()
		}
		o.nodeTime.WithLabelValues(r.Node, op).Observe(r.Latency.Seconds())
	}
}

// Attempt records one acquisition attempt.
func (o *Observer) Attempt(e redlock.AttemptEvent) {
	if e.Handed {
		// A pass, not an attempt: no node was asked, nothing to time.
		o.handovers.Inc()
		o.held.Inc()
		return
	}
	if e.Resumed {
		// Taken over from a handle: held here from now on, not an attempt.
		o.held.Inc()
		return
	}
	out := e.Outcome.String()
	o.attempts.WithLabelValues(out).Inc()
	o.attemptTime.WithLabelValues(out).Observe(e.Elapsed.Seconds())
	o.nodes("acquire", e.Nodes)
	o.nodes("fence", e.Fence)
	if e.Outcome == redlock.AttemptAcquired {
		o.held.Inc()
	}
}

// Extension records one extension.
func (o *Observer) Extension(e redlock.ExtensionEvent) {
	mode, result := "manual", "ok"
	if e.Auto {
		mode = "auto"
	}
	if e.Err != nil {
		result = "failed"
	}
	o.extensions.WithLabelValues(mode, result).Inc()
	o.nodes("extend", e.Nodes)
}

// End records the end of a lock.
func (o *Observer) End(e redlock.EndEvent) {
	o.held.Dec()
	o.nodes("release", e.Nodes)
	switch {
	case errors.Is(e.Reason, redlock.ErrUnlocked):
		result := "released"
		switch {
		case e.Handed:
			result = "handed"
		case e.Err != nil:
			result = "not_held"
		}
		o.releases.WithLabelValues(result).Inc()
	case errors.Is(e.Reason, redlock.ErrMaxExtensions):
		o.losses.WithLabelValues("extension_bound").Inc()
	case errors.Is(e.Reason, redlock.ErrLost):
		o.losses.WithLabelValues("lost").Inc()
	case errors.Is(e.Reason, redlock.ErrExpired):
		o.losses.WithLabelValues("expired").Inc()
	case errors.Is(e.Reason, redlock.ErrClosed):
		o.losses.WithLabelValues("closed").Inc()
	default:
		o.losses.WithLabelValues("other").Inc()
	}
}
