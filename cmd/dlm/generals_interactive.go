package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// interactiveFlags are the flags of "dlm generals --interactive".
type interactiveFlags struct {
	on     bool
	values string
	every  bool
	budget time.Duration // --budget of --every-traitor-set
}

// addInteractiveFlags registers the interactive-consistency flags of "dlm
// generals".
func addInteractiveFlags(cmd *cobra.Command, fi *interactiveFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&fi.on, "interactive", false, "interactive consistency: every general has a private value (--values) and the loyal ones agree on the vector of all values")
	fl.StringVar(&fi.values, "values", "", "with --interactive: the private values V0,V1,... of generals 0,1,... (default v0,v1,...)")
	fl.BoolVar(&fi.every, "every-traitor-set", false, "with --interactive: run every set of at most m traitors under every named strategy and check the vectors of each run (every behaviour: dlm generals exhaust --interactive)")
	fl.DurationVar(&fi.budget, "budget", time.Minute, "with --every-traitor-set: stop after this long; the runs go to every set in turn, one strategy at a time, and a search stopped early says INCOMPLETE and what it covered (exit 3 without a violation)")
}

// interactiveConfig builds the interactive run from the flags.
func interactiveConfig(f generalsFlags, fi interactiveFlags) (byzantine.InteractiveConfig, error) {
	cfg, err := generalsConfig(f)
	if err != nil {
		if errors.Is(err, byzantine.ErrUnsafe) && !f.unsafe {
			err = fmt.Errorf("%w (dlm: --unsafe)", err)
		}
		return byzantine.InteractiveConfig{}, err
	}
	ic := byzantine.InteractiveConfig{Config: cfg}
	if fi.values == "" {
		for i := range cfg.Generals {
			ic.Values = append(ic.Values, byzantine.Order(fmt.Sprintf("v%d", i)))
		}
	} else {
		for _, v := range strings.Split(fi.values, ",") {
			ic.Values = append(ic.Values, byzantine.Order(strings.TrimSpace(v)))
		}
		if len(ic.Values) != cfg.Generals {
			return ic, fmt.Errorf("--values: %d values for %d generals: give one per general, in id order", len(ic.Values), cfg.Generals)
		}
	}
	return ic, ic.Validate()
}

func runGeneralsInteractive(ctx context.Context, f generalsFlags, fi interactiveFlags, stdout io.Writer) error {
	switch {
	case f.transport != "memory" && f.transport != "tcp":
		return usageErrorf("--transport %q: want memory or tcp", f.transport)
	case fi.every && f.explain != "":
		return usageErrorf("--explain explains one run: drop --every-traitor-set")
	case f.trace && f.transport == "tcp":
		return usageErrorf("--trace with --interactive runs in memory only: drop --transport tcp")
	case fi.every && f.transport == "tcp":
		return usageErrorf("--every-traitor-set runs in memory only: drop --transport tcp")
	case fi.every && f.report != "":
		return usageErrorf("--report draws one run: drop --every-traitor-set")
	case fi.budget <= 0:
		return usageErrorf("--budget %v: want a positive duration", fi.budget)
	}
	ic, err := interactiveConfig(f, fi)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if fi.every {
		return runEveryTraitorSet(ctx, ic, fi.budget, f.json, stdout)
	}
	explain := ic.Config.Explain
	if f.report != "" {
		// The page lists every instance's messages (in memory) and says
		// why each general decided each entry, when the trees are small
		// enough to explain every general.
		all := ic
		all.Config.Explain, _ = parseExplain("all", ic.Config.Generals)
		if all.Validate() == nil {
			ic = all
		}
		if f.transport == "memory" {
			ic.Config.Trace = true
			if err := ic.Validate(); err != nil {
				return withCode(exitUsage, fmt.Errorf("--report: %w", err))
			}
		}
	}
	var res *byzantine.InteractiveResult
	if f.transport == "tcp" {
		res, err = tcp.LaunchInteractive(ctx, ic)
	} else {
		res, err = byzantine.RunInteractive(ctx, ic)
	}
	if err != nil {
		return withCode(exitCouldNotRun, err)
	}
	if f.report != "" {
		if err := writeInteractiveReport(f.report, f.transport, res); err != nil {
			return err
		}
		res.Config.Config.Trace = f.trace // print only what was asked for
		res.Config.Config.Explain = explain
	}
	if f.json {
		if err := writeInteractiveJSON(stdout, f.transport, res); err != nil {
			return err
		}
	} else {
		writeInteractiveText(stdout, f.transport, res)
	}
	return verdictExit(res, func() string { return interactiveTooManyFaultsText(res) })
}

// interactiveTooManyFaultsText says that more than m generals were
// faulty in an interactive run.
func interactiveTooManyFaultsText(res *byzantine.InteractiveResult) string {
	f := res.FaultyGenerals()
	return fmt.Sprintf("too many faults: generals %v were faulty (%s), %d > m = %d, so the vector conditions are not guaranteed and the vectors prove nothing", f, faultReasonsText(res), len(f), res.Config.Config.MaxTraitors)
}

// interactiveHeader names the run in one line.
func interactiveHeader(ic byzantine.InteractiveConfig, transport string) string {
	cfg := ic.Config
	need := fmt.Sprintf("n >= 3m+1 = %d", 3*cfg.MaxTraitors+1)
	if cfg.Algorithm == byzantine.SM {
		need = fmt.Sprintf("n >= m+2 = %d", cfg.MaxTraitors+2)
	}
	return fmt.Sprintf("interactive consistency: %d instances of %s(%d), one per general, %d generals (%s), majority %s, transport %s, seed %d",
		cfg.Generals, strings.ToUpper(string(cfg.Algorithm)), cfg.MaxTraitors, cfg.Generals, need, cfg.Majority, transport, cfg.Seed)
}

// oneInstanceMessages is the loyal message count of one instance.
func oneInstanceMessages(cfg byzantine.Config) int {
	if cfg.Algorithm == byzantine.SM {
		return byzantine.SMLoyalMessages(cfg.Generals, cfg.MaxTraitors)
	}
	return byzantine.OMMessages(cfg.Generals, cfg.MaxTraitors)
}

// loyalFormulaText states the loyal message count of an interactive run
// as its formula, with the run's numbers: n instances, each sending OM's
// (n-1) + (n-1)(n-2) + ... (m+1 terms) or SM's (n-1)^2.
func loyalFormulaText(cfg byzantine.Config) string {
	n, m := cfg.Generals, cfg.MaxTraitors
	one := oneInstanceMessages(cfg)
	total := byzantine.LoyalMessages(cfg.Algorithm, n, m)
	var sym, num string
	switch {
	case cfg.Algorithm == byzantine.SM && m == 0:
		sym, num = "(n-1)", strconv.Itoa(n-1)
	case cfg.Algorithm == byzantine.SM:
		sym, num = "(n-1)^2", fmt.Sprintf("%d^2", n-1)
	default:
		var syms, nums []string
		fs, ns := "", ""
		for k := 1; k <= m+1 && n-k > 0; k++ {
			fs += fmt.Sprintf("(n-%d)", k)
			if ns != "" {
				ns += "x"
			}
			ns += strconv.Itoa(n - k)
			syms, nums = append(syms, fs), append(nums, ns)
		}
		sym, num = "("+strings.Join(syms, " + ")+")", "("+strings.Join(nums, " + ")+")"
	}
	return fmt.Sprintf("n x %s = %d x %s = %d x %d = %d", sym, n, num, n, one, total)
}

// messagesText states a run's message count against the loyal formula.
func messagesText(res *byzantine.InteractiveResult) string {
	cfg := res.Config.Config
	formula := byzantine.LoyalMessages(cfg.Algorithm, cfg.Generals, cfg.MaxTraitors)
	diff := ""
	switch d := res.Messages - formula; {
	case d > 0:
		diff = fmt.Sprintf("; %d more, from what the traitors sent and the relays it caused", d)
	case d < 0:
		diff = fmt.Sprintf("; %d fewer: traitors withheld messages, or generals crashed, or messages were lost", -d)
	}
	return fmt.Sprintf("messages %d (all loyal: %s%s)", res.Messages, loyalFormulaText(cfg), diff)
}

// writeInteractiveText prints an interactive run for people.
func writeInteractiveText(w io.Writer, transport string, res *byzantine.InteractiveResult) {
	ic := res.Config
	cfg := ic.Config
	fmt.Fprintln(w, interactiveHeader(ic, transport))
	if cfg.AllowUnsafe {
		fmt.Fprintln(w, "unsafe configuration allowed: the vector conditions are not guaranteed")
	}
	var vals []string
	for i, v := range ic.Values {
		vals = append(vals, fmt.Sprintf("%d=%s", i, v))
	}
	fmt.Fprintf(w, "private values: %s\n", strings.Join(vals, " "))
	if cfg.Trace {
		for i, inst := range res.Instances {
			fmt.Fprintf(w, "instance %d (general %d commands, value %s):\n", i, i, ic.Values[i])
			round := -1
			for _, ev := range inst.Trace {
				ev.Message = byzantine.RelabelMessage(byzantine.ID(i), ev.Message)
				if ev.Round != round {
					round = ev.Round
					fmt.Fprintf(w, "  round %d:\n", round)
				}
				fmt.Fprintf(w, "    %s\n", strings.TrimPrefix(ev.String(), fmt.Sprintf("round %d: ", ev.Round)))
			}
		}
	}
	if len(cfg.Faulty) == 0 {
		fmt.Fprintln(w, "traitors: none")
	} else {
		var parts []string
		for _, t := range cfg.Faulty {
			parts = append(parts, fmt.Sprintf("%d (%s)", t.ID, t.Strategy))
		}
		fmt.Fprintf(w, "traitors: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "vectors (entry i is general i's value as this general decided it):")
	for i := range cfg.Generals {
		id := byzantine.ID(i)
		label := "loyal"
		if s := cfg.StrategyOf(id); s != "" {
			label = "traitor (" + string(s) + ")"
		}
		vec := "-"
		if v, ok := res.Vectors[id]; ok {
			vec = fmt.Sprint(v)
		}
		if r := cfg.CrashRound(id); r >= 0 {
			label += fmt.Sprintf(", crashed at round %d", r)
			vec = "-"
		}
		fmt.Fprintf(w, "  general %-3d %-28s %s\n", id, label, vec)
	}
	if len(cfg.Explain) > 0 {
		writeInteractiveExplanations(w, res)
	}
	fmt.Fprintf(w, "%s, rounds %d, bytes %d", messagesText(res), res.Rounds, res.Bytes)
	if cfg.Algorithm == byzantine.SM {
		fmt.Fprintf(w, ", signatures %d made, %d verified", res.SignaturesMade, res.SignaturesVerified)
	}
	fmt.Fprintln(w)
	writeRejected(w, res.Rejected)
	fmt.Fprintf(w, "IC1 (all loyal generals decide the same vector):   %s\n", holds(res.IC1()))
	fmt.Fprintf(w, "IC2 (each loyal general's entry is its own value): %s\n", holds(res.IC2()))
	var ve *byzantine.VectorError
	if errors.As(res.Verify(), &ve) {
		for _, e := range ve.Entries {
			fmt.Fprintf(w, "  general %d holds %q for general %d, want %q\n", e.General, e.Got, e.Entry, e.Want)
		}
	}
	if len(cfg.Explain) > 0 {
		fmt.Fprintln(w, "vector conditions:")
		for _, line := range vectorSummary(res) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	if late := res.OutOfTime(); len(late) > 0 {
		fmt.Fprintf(w, "verdict: %s\n", outOfTimeText(late))
	} else if res.TooManyFaults() {
		fmt.Fprintf(w, "verdict: %s\n", interactiveTooManyFaultsText(res))
	}
}

// interactiveJSON is the --interactive --json output.
type interactiveJSON struct {
	Interactive         bool                           `json:"interactive"`
	Algorithm           byzantine.Algorithm            `json:"algorithm"`
	Generals            int                            `json:"generals"`
	MaxTraitors         int                            `json:"max_traitors"`
	Faulty              []byzantine.ID                 `json:"faulty"`
	Crashed             []byzantine.ID                 `json:"crashed"`
	Strategies          map[string]byzantine.Strategy  `json:"strategies"`
	Values              []byzantine.Order              `json:"values"`
	Majority            byzantine.MajorityVariant      `json:"majority"`
	Transport           string                         `json:"transport"`
	Seed                int64                          `json:"seed"`
	Vectors             map[string][]byzantine.Order   `json:"vectors"`
	Messages            int                            `json:"messages"`
	MessagesOneInstance int                            `json:"messages_one_instance_loyal"`
	MessagesLoyal       int                            `json:"messages_loyal_formula"`
	MessagesFormula     string                         `json:"messages_formula"`
	Rounds              int                            `json:"rounds"`
	Bytes               int64                          `json:"bytes"`
	SignaturesMade      int                            `json:"signatures_made"`
	SignaturesVerified  int                            `json:"signatures_verified"`
	Rejected            map[byzantine.RejectReason]int `json:"rejected"`
	IC1                 bool                           `json:"ic1"`
	IC2                 bool                           `json:"ic2"`
	Conditions          map[string]string              `json:"conditions"`
	Violations          []byzantine.EntryError         `json:"violations"`
	Verdict             string                         `json:"verdict"`
	OutOfTime           []byzantine.ID                 `json:"out_of_time,omitempty"`
	FaultyGenerals      []byzantine.ID                 `json:"faulty_generals"`
	// FaultyWhy says, for each faulty general's id, why it is counted.
	FaultyWhy map[string][]string `json:"faulty_why"`
	// Explanations (with --explain): for each instance's id, for each
	// explained general's id, how it decided that instance's entry, in
	// the generals' own ids.
	Explanations map[string]map[string]icExplainJSON `json:"explanations,omitempty"`
	// Summary (with --explain) states the vector conditions in words.
	Summary []string `json:"summary,omitempty"`
}

// icExplainJSON is one explained decision of an interactive run: the
// explanation (decision, OM tree or SM set V) and why, in one line.
type icExplainJSON struct {
	*byzantine.Explanation
	Why string `json:"why"`
}

func writeInteractiveJSON(w io.Writer, transport string, res *byzantine.InteractiveResult) error {
	ic := res.Config
	cfg := ic.Config
	out := interactiveJSON{
		Interactive:         true,
		Algorithm:           cfg.Algorithm,
		Generals:            cfg.Generals,
		MaxTraitors:         cfg.MaxTraitors,
		Faulty:              []byzantine.ID{},
		Crashed:             []byzantine.ID{},
		Strategies:          map[string]byzantine.Strategy{},
		Values:              ic.Values,
		Majority:            cfg.Majority,
		Transport:           transport,
		Seed:                cfg.Seed,
		Vectors:             map[string][]byzantine.Order{},
		Messages:            res.Messages,
		MessagesOneInstance: oneInstanceMessages(cfg),
		MessagesLoyal:       byzantine.LoyalMessages(cfg.Algorithm, cfg.Generals, cfg.MaxTraitors),
		MessagesFormula:     loyalFormulaText(cfg),
		Rounds:              res.Rounds,
		Bytes:               res.Bytes,
		SignaturesMade:      res.SignaturesMade,
		SignaturesVerified:  res.SignaturesVerified,
		Rejected:            res.Rejected,
		IC1:                 res.IC1(),
		IC2:                 res.IC2(),
		Conditions: map[string]string{
			"ic1": "all loyal generals decide the same vector",
			"ic2": "in every loyal general's vector, the entry of each loyal general is its own value",
		},
		Violations: []byzantine.EntryError{},
		Verdict:    "ok",
	}
	for _, t := range cfg.Faulty {
		out.Faulty = append(out.Faulty, t.ID)
		out.Strategies[strconv.Itoa(int(t.ID))] = t.Strategy
	}
	slices.Sort(out.Faulty)
	for _, c := range cfg.Crashes {
		out.Crashed = append(out.Crashed, c.ID)
	}
	slices.Sort(out.Crashed)
	if out.Rejected == nil {
		out.Rejected = map[byzantine.RejectReason]int{}
	}
	for id, v := range res.Vectors {
		out.Vectors[strconv.Itoa(int(id))] = v
	}
	if err := res.Verify(); err != nil {
		out.Verdict = err.Error()
		var ve *byzantine.VectorError
		if errors.As(err, &ve) {
			out.Violations = ve.Entries
		}
	}
	out.FaultyGenerals = res.FaultyGenerals()
	if out.FaultyGenerals == nil {
		out.FaultyGenerals = []byzantine.ID{}
	}
	out.FaultyWhy = map[string][]string{}
	for id, why := range res.FaultReasons() {
		out.FaultyWhy[strconv.Itoa(int(id))] = why
	}
	if late := res.OutOfTime(); len(late) > 0 {
		out.OutOfTime = late
		out.Verdict = outOfTimeText(late)
	} else if res.TooManyFaults() {
		out.Verdict = interactiveTooManyFaultsText(res)
	}
	if len(cfg.Explain) > 0 {
		out.Explanations = map[string]map[string]icExplainJSON{}
		for _, g := range explainedShown(cfg) {
			for i, e := range res.Explain(g) {
				if e == nil {
					continue
				}
				inst := strconv.Itoa(i)
				if out.Explanations[inst] == nil {
					out.Explanations[inst] = map[string]icExplainJSON{}
				}
				why := e.Why()
				switch {
				case byzantine.ID(i) == g && cfg.StrategyOf(g) == "":
					why = "the commander's entry is its own value"
				case byzantine.ID(i) == g:
					why = "the commander is a traitor: what it sends is its strategy's"
				}
				out.Explanations[inst][strconv.Itoa(int(g))] = icExplainJSON{Explanation: e, Why: why}
			}
		}
		out.Summary = vectorSummary(res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// everySetJSON is one line of --every-traitor-set --json.
type everySetJSON struct {
	Traitors  []byzantine.ID     `json:"traitors"`
	Strategy  byzantine.Strategy `json:"strategy"`
	Messages  int                `json:"messages"`
	Formula   int                `json:"messages_loyal_formula"`
	IC1       bool               `json:"ic1"`
	IC2       bool               `json:"ic2"`
	Violation string             `json:"violation,omitempty"`
}

// runEveryTraitorSet runs ic with every set of at most m traitors (the
// crashes of ic kept), each set with every strategy given to all its
// members, and reports the runs that break the vector conditions. The
// runs go one strategy at a time to every set in turn (the sets are
// enumerated as they run, never held), so that a search stopped by its
// budget has run every set under the same first strategies: it says
// INCOMPLETE and what it covered, and exits 3 unless it found a
// violation (1), as dlm generals exhaust does.
func runEveryTraitorSet(ctx context.Context, ic byzantine.InteractiveConfig, budget time.Duration, asJSON bool, w io.Writer) error {
	cfg := ic.Config
	strategies := byzantine.OralStrategies()
	if cfg.Algorithm == byzantine.SM {
		strategies = byzantine.Strategies()
	}
	most := cfg.MaxTraitors - len(cfg.Crashes)
	if cfg.AllowUnsafe {
		most = cfg.MaxTraitors
	}
	var candidates []byzantine.ID // the generals that can be traitors: not crashed
	for i := range cfg.Generals {
		if cfg.CrashRound(byzantine.ID(i)) < 0 {
			candidates = append(candidates, byzantine.ID(i))
		}
	}
	// eachSet calls f with every set of 0 to most candidates, in order,
	// until f returns false; it reports whether it went through all.
	var eachSet func(start int, cur []byzantine.ID, f func([]byzantine.ID) bool) bool
	eachSet = func(start int, cur []byzantine.ID, f func([]byzantine.ID) bool) bool {
		if !f(cur) {
			return false
		}
		if len(cur) == most {
			return true
		}
		for i := start; i < len(candidates); i++ {
			if !eachSet(i+1, append(cur, candidates[i]), f) {
				return false
			}
		}
		return true
	}
	sets := setsUpTo(len(candidates), most)
	total := satAdd(1, satMul(sets-1, uint64(len(strategies)))) // the empty set runs once
	if !asJSON {
		fmt.Fprintln(w, interactiveHeader(ic, "memory"))
		fmt.Fprintf(w, "every set of 0 to %d traitors (%d sets), each under every strategy %v given to all its members\n", most, sets, strategies)
		fmt.Fprintf(w, "messages of a run with all loyal: %s\n", loyalFormulaText(cfg))
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	enc := json.NewEncoder(w)
	var (
		runs, bad uint64
		done      int    // strategies every set has run under
		partial   uint64 // sets run under strategies[done], when stopped
		stopErr   error
	)
	for si, s := range strategies {
		partial = 0
		complete := eachSet(0, nil, func(set []byzantine.ID) bool {
			if len(set) == 0 && si > 0 {
				return true // the empty set runs once, with no strategy
			}
			if bctx.Err() != nil {
				return false
			}
			run := ic
			run.Config.Faulty = nil
			strategy := s
			if len(set) == 0 {
				strategy = ""
			}
			for _, id := range set {
				run.Config.Faulty = append(run.Config.Faulty, byzantine.Traitor{ID: id, Strategy: strategy})
			}
			res, err := byzantine.RunInteractive(bctx, run)
			if err != nil {
				if bctx.Err() == nil {
					stopErr = withCode(exitCouldNotRun, err)
				}
				return false
			}
			runs++
			partial++
			line := everySetJSON{Traitors: slices.Clone(set), Strategy: strategy, Messages: res.Messages, Formula: byzantine.LoyalMessages(cfg.Algorithm, cfg.Generals, cfg.MaxTraitors), IC1: res.IC1(), IC2: res.IC2()}
			if line.Traitors == nil {
				line.Traitors = []byzantine.ID{}
			}
			if err := res.Verify(); err != nil {
				bad++
				line.Violation = err.Error()
			}
			switch {
			case asJSON:
				if err := enc.Encode(line); err != nil {
					stopErr = err
					return false
				}
			case line.Violation != "":
				fmt.Fprintf(w, "  traitors %v (%s): VIOLATED: %s\n", set, strategy, line.Violation)
			}
			return true
		})
		if stopErr != nil {
			return stopErr
		}
		if !complete {
			break
		}
		done++
	}
	if ctx.Err() != nil { // interrupted, not out of budget
		return withCode(exitCouldNotRun, context.Cause(ctx))
	}
	incomplete := ""
	if done < len(strategies) {
		// The empty set runs once, under the first strategy's turn.
		under, of := fmt.Sprintf("every set ran under %v", strategies[:done]), sets-1
		if done == 0 {
			under, of = "no strategy ran over every set", sets
		}
		incomplete = fmt.Sprintf("INCOMPLETE: --budget %v ran out after %d of %d runs: %s, %d of %d sets under %s, none under %v; no violation in the runs not made is ruled out",
			budget, runs, total, under, partial, of, strategies[done], strategies[done+1:])
	}
	if !asJSON {
		fmt.Fprintf(w, "%d runs, %d violating the vector conditions\n", runs, bad)
		if incomplete != "" {
			fmt.Fprintln(w, incomplete)
		}
		fmt.Fprintln(w, "these are the named strategies; \"dlm generals exhaust --interactive --values ...\" searches every behaviour of a finite adversary in every instance")
	}
	switch {
	case bad > 0:
		return withCode(exitFailure, fmt.Errorf("%d of %d runs violate the vector conditions", bad, runs))
	case incomplete != "" && asJSON:
		return withCode(exitInconclusive, errors.New(incomplete))
	case incomplete != "":
		return withCode(exitInconclusive, nil)
	}
	return nil
}

// setsUpTo is the number of sets of 0 to k of n elements (saturating).
func setsUpTo(n, k int) uint64 {
	var sum, c uint64 = 0, 1 // c = C(n, i)
	for i := 0; i <= k && i <= n; i++ {
		sum = satAdd(sum, c)
		// C(n, i+1) = C(n, i) * (n-i) / (i+1), exact while it fits.
		if n > i && c > math.MaxUint64/uint64(n-i) {
			return math.MaxUint64
		}
		c = c * uint64(n-i) / uint64(i+1)
	}
	return sum
}

// satAdd is a+b, or the largest uint64 when that overflows.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// satMul is a*b, or the largest uint64 when that overflows.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
