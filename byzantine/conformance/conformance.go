package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dlm/byzantine"
)

// Runner runs one configuration over a transport.
type Runner func(ctx context.Context, cfg byzantine.Config) (*byzantine.Result, error)

// Case is one conformance case.
type Case struct {
	// Name names the subtest.
	Name string
	// Config is the run.
	Config byzantine.Config
	// Check inspects the result.
	Check func(t *testing.T, res *byzantine.Result)
}

func cfg(alg byzantine.Algorithm, n, m int, faulty ...byzantine.Traitor) byzantine.Config {
	c := byzantine.DefaultConfig()
	c.Algorithm, c.Generals, c.MaxTraitors, c.Faulty = alg, n, m, faulty
	return c
}

func traitor(id byzantine.ID, s byzantine.Strategy) byzantine.Traitor {
	return byzantine.Traitor{ID: id, Strategy: s}
}

// agree checks IC1 and IC2 (B1) in a run that kept its schedule. A run
// out of time (see RunCases) guarantees neither, and says so: a
// disagreement in it is logged, not a defect.
func agree(t *testing.T, res *byzantine.Result) {
	t.Helper()
	if err := res.Verify(); err != nil {
		if len(res.OutOfTime()) > 0 {
			t.Logf("Verify() = %v in a run out of time (it proves nothing, and says so)\n%s", err, diagnose(res))
		} else {
			t.Errorf("Verify() = %v, want nil\n%s", err, diagnose(res))
		}
	}
	for id, d := range res.Decisions() {
		if d == "" {
			t.Errorf("loyal general %d has no decision", id)
		}
	}
}

func messages(want int) func(*testing.T, *byzantine.Result) {
	return func(t *testing.T, res *byzantine.Result) {
		t.Helper()
		agree(t, res)
		if res.Messages != want {
			t.Errorf("messages = %d, want %d", res.Messages, want)
		}
		if len(res.Rejected) != 0 {
			t.Errorf("rejected = %v, want none", res.Rejected)
		}
	}
}

func rejects(reasons ...byzantine.RejectReason) func(*testing.T, *byzantine.Result) {
	return func(t *testing.T, res *byzantine.Result) {
		t.Helper()
		agree(t, res)
		for _, r := range reasons {
			if res.Rejected[r] == 0 {
				t.Errorf("rejected[%s] = 0, want > 0 (rejected = %v)", r, res.Rejected)
			}
		}
	}
}

// Cases returns the conformance cases.
func Cases() []Case {
	om, sm := byzantine.OM, byzantine.SM
	unsafe := cfg(om, 3, 1, traitor(2, byzantine.FlipOrders))
	unsafe.AllowUnsafe = true
	return []Case{
		{"OM/n4m1/loyal/B6-count", cfg(om, 4, 1), messages(9)},
		{"OM/n7m2/loyal/B6-count", cfg(om, 7, 2), messages(156)},
		{"OM/n4m1/lieutenant-two-faced", cfg(om, 4, 1, traitor(3, byzantine.TwoFaced)), agree},
		{"OM/n4m1/commander-two-faced", cfg(om, 4, 1, traitor(0, byzantine.TwoFaced)), agree},
		{"OM/n4m1/lieutenant-silent", cfg(om, 4, 1, traitor(2, byzantine.Silent)), agree},
		{"OM/n4m1/lieutenant-late", cfg(om, 4, 1, traitor(1, byzantine.Late)), rejects(byzantine.RejectLate)},
		{"OM/n7m2/colluding", cfg(om, 7, 2, traitor(0, byzantine.Colluding), traitor(4, byzantine.Colluding)), agree},
		{"OM/n3m1/unsafe-B3", unsafe, func(t *testing.T, res *byzantine.Result) {
			if err := res.Verify(); !errors.Is(err, byzantine.ErrIC2) {
				t.Errorf("Verify() = %v, want ErrIC2 (B3: n=3 cannot tolerate one traitor)", err)
			}
		}},
		{"SM/n4m1/loyal/count", cfg(sm, 4, 1), messages(9)},
		{"SM/n5m2/loyal/count", cfg(sm, 5, 2), messages(16)},
		{"SM/n3m1/commander-two-faced", cfg(sm, 3, 1, traitor(0, byzantine.TwoFaced)), func(t *testing.T, res *byzantine.Result) {
			agree(t, res)
			for _, id := range []byzantine.ID{1, 2} {
				v := slices.Clone(res.Generals[id].Values)
				slices.Sort(v)
				if !slices.Equal(v, []byzantine.Order{byzantine.Attack, byzantine.Retreat}) {
					t.Errorf("V of lieutenant %d = %v, want [attack retreat] (equivocation detected)", id, v)
				}
			}
		}},
		{"SM/n4m2/forge", cfg(sm, 4, 2, traitor(0, byzantine.TwoFaced), traitor(2, byzantine.Forge)), rejects(byzantine.RejectForged)},
		{"SM/n5m3/mixed", cfg(sm, 5, 3, traitor(0, byzantine.Colluding), traitor(1, byzantine.Replay), traitor(3, byzantine.Late)), rejects(byzantine.RejectDuplicate, byzantine.RejectLate)},
		{"SM/n4m1/lieutenant-silent", cfg(sm, 4, 1, traitor(3, byzantine.Silent)), agree},
		{"OM/n4m1/lieutenant-crashes-round1", crash(cfg(om, 4, 1), 2, 1), crashed(2, 2)},
		{"OM/n4m1/commander-crashes-round0", crash(cfg(om, 4, 1), 0, 0), crashed(0, 3)},
		{"SM/n4m1/lieutenant-crashes-round1", crash(cfg(sm, 4, 1), 3, 1), crashed(3, 2)},
		{"SM/n5m2/crash-and-traitor", crash(cfg(sm, 5, 2, traitor(0, byzantine.TwoFaced)), 2, 1), crashed(2, 3)},
	}
}

// crash makes general id of c crash at the start of round r.
func crash(c byzantine.Config, id byzantine.ID, r int) byzantine.Config {
	c.Crashes = append(c.Crashes, byzantine.Crash{ID: id, Round: r})
	return c
}

// crashed checks that general id is reported crashed, that survivors loyal
// lieutenants decided, and that IC1 and IC2 hold over them.
func crashed(id byzantine.ID, survivors int) func(*testing.T, *byzantine.Result) {
	return func(t *testing.T, res *byzantine.Result) {
		t.Helper()
		agree(t, res)
		if !res.Generals[id].Crashed {
			t.Errorf("general %d not reported crashed", id)
		}
		if got := res.Crashed(); len(got) != 1 {
			t.Errorf("crashed = %v, want [%d]", got, id)
		}
		if got := len(res.Decisions()); got != survivors {
			t.Errorf("%d loyal survivors decided (%v), want %d", got, res.Decisions(), survivors)
		}
	}
}

// Run runs every case over run.
func Run(t *testing.T, run Runner) { RunCases(t, run, Cases()) }

// Select returns the cases whose names are listed.
func Select(names ...string) []Case {
	var out []Case
	for _, c := range Cases() {
		if slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// diagnose describes what each general of res saw: its decision, the
// rounds it ran out of time in, the faults it saw and what it refused.
func diagnose(res *byzantine.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "out of time: %v; too many faults: %v; rejected: %v", res.OutOfTime(), res.TooManyFaults(), res.Rejected)
	for _, g := range res.Generals {
		fmt.Fprintf(&b, "\n  general %d loyal=%v crashed=%v decision=%q overran=%v faults=%v rejected=%v",
			g.ID, g.Loyal, g.Crashed, g.Decision, g.Overran, g.Faults, g.Stats.Rejected)
	}
	return b.String()
}

// maxAttempts is how many times RunCases runs a case whose run proved
// nothing (over a real transport, on a loaded machine).
const maxAttempts = 3

// provesNothing says why res proves nothing of its case, "" when it does:
// a loyal general did not keep the schedule, or the generals saw more
// faulty generals than m where the case makes at most m faulty (a link
// between two loyal generals that ran late or failed counts each end
// faulty to the other).
func provesNothing(res *byzantine.Result) string {
	if late := res.OutOfTime(); len(late) > 0 {
		return fmt.Sprintf("loyal generals %v ran out of time", late)
	}
	cfg := res.Config
	if res.TooManyFaults() && len(cfg.Faulty)+len(cfg.Crashes) <= cfg.MaxTraitors {
		return fmt.Sprintf("the generals saw %v faulty, more than m = %d", res.FaultyGenerals(), cfg.MaxTraitors)
	}
	return ""
}

// RunCases runs the given cases over run. A run in which a loyal general
// did not keep the schedule (Result.OutOfTime), or in which the generals
// saw more faulty generals than m though the case makes at most m faulty
// (a link that failed), over a real transport on a loaded machine, proves
// nothing, agreeing or not, and says so (a dlm process exits 3 for it):
// it is run again, up to maxAttempts times in all, and the last is
// checked. A violation of IC1 or IC2 in a run that kept its schedule is a
// defect, and so is one in a last run with more faulty generals than the
// case makes.
func RunCases(t *testing.T, run Runner, cases []Case) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			res, err := run(t.Context(), c.Config)
			for attempt := 1; attempt < maxAttempts && err == nil && provesNothing(res) != ""; attempt++ {
				t.Logf("attempt %d proves nothing (%s): running it again\n%s", attempt, provesNothing(res), diagnose(res))
				res, err = run(t.Context(), c.Config)
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if got, want := res.Rounds, c.Config.MaxTraitors+1; got != want {
				t.Errorf("rounds = %d, want %d", got, want)
			}
			for _, g := range res.Generals {
				if g.Loyal == slices.ContainsFunc(c.Config.Faulty, func(tr byzantine.Traitor) bool { return tr.ID == g.ID }) {
					t.Errorf("general %d loyal = %v, contradicts the config", g.ID, g.Loyal)
				}
			}
			c.Check(t, res)
		})
	}
}

// Benchmark runs the same benchmark bodies over a transport: OM and SM
// with 4 and 7 generals and a traitor.
func Benchmark(b *testing.B, run Runner) {
	for _, c := range []struct {
		name string
		cfg  byzantine.Config
	}{
		{"OM/n4m1", cfg(byzantine.OM, 4, 1, traitor(3, byzantine.TwoFaced))},
		{"OM/n7m2", cfg(byzantine.OM, 7, 2, traitor(0, byzantine.Colluding), traitor(4, byzantine.Colluding))},
		{"SM/n4m1", cfg(byzantine.SM, 4, 1, traitor(0, byzantine.TwoFaced))},
		{"SM/n7m2", cfg(byzantine.SM, 7, 2, traitor(0, byzantine.TwoFaced), traitor(3, byzantine.Forge))},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var res *byzantine.Result
			for b.Loop() {
				var err error
				if res, err = run(b.Context(), c.cfg); err != nil {
					b.Fatal(err)
				}
			}
			if err := res.Verify(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.Messages), "msgs/op")
		})
	}
}
