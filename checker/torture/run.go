package torture

import (
	"context"
	"dlm/checker"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"dlm/redlock/redisproc"
)

// Report is the outcome of a run: what happened, what the checkers found,
// and whether that is what the configuration promises.
type Report struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Seed replays the run (--seed).
	Seed uint64 `json:"seed"`
	// Config is the whole configuration.
	Config Config `json:"config"`
	// Expected is what the configuration promises (Config.Expect).
	Expected Expectation `json:"expected"`
	// Acquisitions counts the acquisitions that succeeded.
	Acquisitions int `json:"acquisitions"`
	// Attempts counts the acquisitions invoked.
	Attempts int `json:"attempts"`
	// Violations counts the safety violations found: overlapping holders,
	// resurrected locks, stale writes accepted, a register that is not
	// linearizable.
	Violations int `json:"violations"`
	// Counterexample describes the first safety violation, or is nil.
	Counterexample *string `json:"counterexample"`
	// StaleWritesAccepted counts the writes the register accepted from an
	// older grant after a newer grant's write (R18).
	StaleWritesAccepted int `json:"stale_writes_accepted"`
	// MaxUnavailableMS is the longest window, faults included, in which a
	// client wanted a resource and nobody held it, in milliseconds.
	MaxUnavailableMS float64 `json:"max_unavailable_ms"`
	// Faults lists the faults injected.
	Faults []checker.Fault `json:"faults"`
	// Checks holds each checker's result.
	Checks []checker.Result `json:"checks"`
	// Matches is true when the outcome is what the configuration promises:
	// no violation (and liveness held) where safety is promised, the
	// violation reproduced where the scenario breaks it. It is false when
	// the report is Inconclusive.
	Matches bool `json:"matches"`
	// Inconclusive is true when the history cannot decide what was
	// promised: it holds no successful acquisition, a safety check ran out
	// of time or could not decide, or its values are out of range (a ttl
	// whose end overflows, negative times). Outcome says which.
	Inconclusive bool `json:"inconclusive"`
	// Outcome says in words what was found against what was expected.
	Outcome string `json:"outcome"`
	// ElapsedMS is the run's wall time in milliseconds.
	ElapsedMS float64 `json:"elapsed_ms"`
	// History is the recorded history (written with --history, not in the
	// JSON summary).
	History *checker.History `json:"-"`
}

// Check returns the result of the named check, or a zero Result.
func (r *Report) Check(name string) checker.Result {
	for _, c := range r.Checks {
		if c.Check == name {
			return c
		}
	}
	return checker.Result{}
}

// Option adjusts how Run reports its progress.
type Option func(*runOptions)

type runOptions struct {
	log io.Writer
	dlm string // the dlm executable (WithDLM)
}

// WithLog makes Run narrate the run's steps to w. Default: silent.
func WithLog(w io.Writer) Option { return func(o *runOptions) { o.log = w } }

// Run performs the run cfg describes against real redis-server processes
// it starts and stops, checks the history and returns the report. An error
// means the run could not be performed (a bad Config, a missing
// redis-server or libfaketime: errors.Is(err, ErrEnvironment)); a violation
// is not an error but a finding in the report.
func Run(ctx context.Context, cfg Config, opts ...Option) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	sc, _ := lookup(cfg.Scenario)
	seedRng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5deece66d))
	spec := clusterSpec{nodes: cfg.Nodes, groups: sc.groups, persistence: cfg.Persistence, liar: -1}
	if sc.liar {
		spec.liar = seedRng.IntN(cfg.Nodes)
	}
	if sc.faketime(cfg) {
		spec.faketime = make([]bool, cfg.Nodes)
		for i := range spec.faketime {
			spec.faketime[i] = true
		}
	}
	began := time.Now()
	var cl *cluster
	var err error
	cn := clusterNodes{n: cfg.ClusterNodes, masters: randomClusterMasters, replicas: cfg.ClusterReplicas,
		persistence: cfg.Persistence, partitionable: true}
	if sc.clusters {
		if !redisproc.Available() {
			return nil, fmt.Errorf("%w: %v", ErrEnvironment, redisproc.ErrNotFound)
		}
		cl = &cluster{toxics: map[string]bool{}}
		cn = clusterNodes{n: cfg.Nodes, masters: max(sc.masters, clusterMasters), replicas: sc.replicas, persistence: cfg.Persistence,
			partitionable: sc.partitionable, promotable: cfg.PromotableReplicas}
	} else {
		// Random mode's cluster nodes are the last ClusterNodes nodes.
		spec.nodes -= cfg.ClusterNodes
		if spec.faketime != nil {
			spec.faketime = spec.faketime[:spec.nodes]
		}
		cl, err = startCluster(ctx, spec)
		if err != nil {
			return nil, err
		}
	}
	if cn.n > 0 {
		cl.redis, err = startRedisClusters(ctx, cn) // scenario_cluster.go
		if err != nil {
			cl.close()
			return nil, err
		}
	}
	defer cl.close()
	e := &env{
		cfg: cfg,
		rng: seedRng,
		cl:  cl,
		rec: newRecorder(cfg.Nodes, cfg.Fencing),
		dlm: o.dlm,
		reg: newRegister(cfg.Fencing),
		log: func(format string, args ...any) {
			if o.log != nil {
				fmt.Fprintf(o.log, format+"\n", args...)
			}
		},
	}
	runErr := sc.run(ctx, e)
	for _, a := range e.actors {
		_ = a.client.Close()
	}
	if runErr != nil {
		return nil, runErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep := Analyze(cfg, e.rec.history())
	rep.ElapsedMS = float64(time.Since(began)) / float64(time.Millisecond)
	return rep, nil
}

// Analyze runs every checker over h and judges the outcome against what cfg
// promises. It is pure: Run calls it on the history it recorded, and a
// stored history can be judged again.
func Analyze(cfg Config, h *checker.History) *Report {
	return analyze(cfg, h, checkers{})
}

// checkers are the checks analyze runs; a nil field is the package's own
// check (tests replace one to force its verdict).
type checkers struct {
	mutex, fencing, linearizable, liveness func(*checker.History) checker.Result
}

func analyze(cfg Config, h *checker.History, cs checkers) *Report {
	or := func(f, def func(*checker.History) checker.Result) func(*checker.History) checker.Result {
		if f != nil {
			return f
		}
		return def
	}
	checkMutex, checkFencing := or(cs.mutex, checker.CheckMutex), or(cs.fencing, checker.CheckFencing)
	checkLin := or(cs.linearizable, func(h *checker.History) checker.Result { return checker.CheckLinearizable(h, 10*time.Second) })
	checkLive := or(cs.liveness, func(h *checker.History) checker.Result { return checker.CheckLiveness(h, cfg.livenessBound(), cfg.TTL) })
	rep := &Report{Scenario: cfg.Scenario, Seed: cfg.Seed, Config: cfg, Expected: cfg.Expect(), History: h, Faults: h.Faults}
	if rep.Faults == nil {
		rep.Faults = []checker.Fault{}
	}
	for _, op := range h.Ops {
		if op.Kind == checker.Acquire {
			rep.Attempts++
			if op.OK {
				rep.Acquisitions++
			}
		}
	}
	mutex, fencing, lin := checkMutex(h), checkFencing(h), checkLin(h)
	live := checkLive(h)
	rep.Checks = []checker.Result{mutex, fencing, lin, live}
	rep.StaleWritesAccepted = len(checker.StaleWrites(h))
	safety := []checker.Result{mutex, fencing, lin}
	if cfg.Scenario == "election" {
		el := checker.CheckElection(h, cfg.livenessBound(), cfg.TTL)
		rep.Checks, safety = append(rep.Checks, el), append(safety, el)
	}
	for _, r := range safety {
		rep.Violations += r.Violations
		if r.Verdict == checker.Violated && rep.Counterexample == nil {
			s := r.Check + ": " + r.Counterexample
			rep.Counterexample = &s
		}
	}
	if u, ok := checker.MaxUnavailable(h); ok {
		rep.MaxUnavailableMS = float64(u.Duration()) / float64(time.Millisecond)
	}
	// What cannot decide, decides nothing: never "as promised" for it.
	var undecided string
	switch {
	case rep.Acquisitions == 0 && live.Verdict != checker.Violated:
		// Safety holds vacuously when nothing was granted; only a liveness
		// violation (wanted, and granted to nobody) is evidence then.
		undecided = fmt.Sprintf("no acquisition succeeded (%d attempted): an empty history shows nothing", rep.Attempts)
	case h.OutOfRange() != "":
		undecided = "values out of range: " + h.OutOfRange()
	}
	if undecided == "" && rep.Violations == 0 {
		for _, r := range safety {
			if r.Verdict == checker.Unknown {
				undecided = "check " + r.Check + " undecided: " + r.Counterexample
				break
			}
		}
	}
	if undecided != "" && !(rep.Expected == ExpectViolation && rep.Violations > 0) {
		rep.Inconclusive, rep.Matches = true, false
		rep.Outcome = "inconclusive: " + undecided
		return rep
	}
	switch rep.Expected {
	case ExpectViolation:
		rep.Matches = rep.Violations > 0
		if need := cfg.violationFaults(); !hasFault(h, need) {
			// A violation is the scenario's only if its fault happened: a
			// history without one (a run of another scenario, a recording
			// with no faults) does not reproduce it.
			rep.Matches = false
			rep.Outcome = fmt.Sprintf("violation not reproduced: the history holds no %s fault, which this scenario's violation needs", strings.Join(need, " or "))
			if rep.Violations > 0 {
				rep.Outcome += "; the violations it shows happened without it, where safety is promised"
			}
			return rep
		}
		if rep.Matches {
			rep.Outcome = "violation reproduced, as expected"
		} else {
			rep.Outcome = "expected a violation, found none"
		}
	case ExpectSafe:
		rep.Matches = rep.Violations == 0 && live.Verdict != checker.Violated
		switch {
		case rep.Violations > 0:
			rep.Outcome = "safety violated where it is promised"
		case live.Verdict == checker.Violated:
			rep.Outcome = "safe, but liveness violated where it is promised"
		default:
			rep.Outcome = "no violation, as promised"
		}
	case ExpectNoPromise:
		rep.Matches = true
		if rep.Violations > 0 {
			rep.Outcome = "violation found (this configuration promises nothing under these faults)"
		} else {
			rep.Outcome = "no violation found (this configuration promises nothing under these faults)"
		}
	}
	return rep
}

// hasFault reports whether h records a fault of one of kinds.
func hasFault(h *checker.History, kinds []string) bool {
	for _, f := range h.Faults {
		if slices.Contains(kinds, f.Kind) {
			return true
		}
	}
	return false
}
