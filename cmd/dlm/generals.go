package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// generalsFlags are the flags of "dlm generals", as locals of the command.
type generalsFlags struct {
	algorithm    string
	generals     int
	traitors     int
	faulty       string
	strategy     string
	order        string
	majority     string
	transport    string
	seed         int64
	seq          uint64
	roundTimeout time.Duration
	unsafe       bool
	trace        bool
	json         bool
	crash        string
	explain      string
	report       string
}

// exitCouldNotRun is the status of a generals run that could not take
// place (a general's process could not start, the run was interrupted):
// distinct from exitFailure, which means IC1 or IC2 was violated.
const exitCouldNotRun = exitUnavailable

// newGeneralsCmd builds "dlm generals": one run of OM(m) or SM(m), with the
// decisions, the counters and the IC1/IC2 verdict.
func newGeneralsCmd() *cobra.Command {
	var f generalsFlags
	var fi interactiveFlags
	cmd := &cobra.Command{
		Use:   "generals",
		Short: "Run Byzantine agreement (OM(m) or SM(m)) and check IC1/IC2",
		Long: `Run the Byzantine generals algorithms: OM(m) with oral messages or SM(m)
with ed25519-signed messages, with chosen traitors and strategies, and check
the interactive consistency conditions: IC1, every loyal lieutenant follows
the same order; IC2, when the commander is loyal, every loyal lieutenant
follows the order it gave (docs/spec/agreement.md).

--interactive gives every general a private value (--values V0,V1,...)
and runs one instance per general, each general the commander of its own
value: every loyal general decides the vector of all values, the same
vector for all of them, with each loyal general's own value at its index
(--json adds "vectors"). --every-traitor-set runs that for every set of at
most m traitors under every named strategy, within --budget (1m; stopped
there, it says INCOMPLETE and what it covered, and exits 3 unless it
found a violation); "dlm generals exhaust
--interactive" searches every behaviour of a finite adversary in every
instance; "dlm generals node --interactive --value V" runs one general of
it as its own process, across machines.

The commander is general 0. --faulty lists the traitors, as ids (using
--strategy) or id:strategy pairs: --faulty 0:two-faced,3:silent.
Strategies: silent, flip, two-faced, random, colluding, late, and for SM
forge and replay. --trace prints the message flow round by round (SM chains
as attack:0:2:3). --transport tcp runs every general as its own dlm process
on loopback, authenticated by its own ed25519 key; these processes end
with dlm, however it ends (even killed).

OM needs n >= 3m+1 and SM n >= m+2; --unsafe runs a smaller n anyway, to
watch agreement break (the impossibility bound, argued in
docs/spec/agreement.md). The same --seed replays the same run.

--crash 2@1 makes general 2 crash at the start of round 1 (ids and rounds
comma-separated); a crashed general counts among the m faulty ones. With
--transport tcp a general whose process dies is reported as crashed too;
the verdict covers the loyal generals that survive.

--report run.html writes the run as one self-contained page: the messages
per round between generals (traitors marked), each loyal lieutenant's
decision tree (OM) or set V (SM), and the verdict.

--explain 2 prints how lieutenant 2 decided: for OM the value received
along every relay path of its tree (a missing message shown as the default
RETREAT) and the majority taken at each level; for SM its set V, each order
with the first chain that brought it. --explain all explains every general.
With --interactive it explains the general's decision in every instance,
what it decided for that commander's entry and why, and sums up the vector
conditions: the vectors the loyal generals share, each loyal entry against
its owner's value, the traitors and what the loyal generals hold for them.

Exit status:
  0   IC1 and IC2 hold (over the loyal survivors)
  1   IC1 or IC2 is violated
  3   inconclusive: over TCP a loyal general did not keep the schedule
      (ran out of time), or more than m generals were faulty (traitors,
      crashed, or seen absent, gone, late, unreachable or refused); the decisions prove nothing
  64  bad usage (with the reason)
  69  the run could not take place (a general could not start, or the run
      was interrupted: Ctrl-C, SIGTERM, SIGHUP)`,
		Example: `  dlm generals --algorithm om --generals 4 --traitors 1 --faulty 3 --strategy two-faced
  dlm generals --algorithm sm --generals 3 --traitors 1 --faulty 0 --trace
  dlm generals --algorithm om --generals 3 --traitors 1 --faulty 2 --strategy flip --unsafe
  dlm generals --generals 7 --traitors 2 --faulty 0,4 --strategy colluding --transport tcp --json
  dlm generals --transport tcp --crash 2@1
  dlm generals --interactive --values north,east,south,west --faulty 2 --strategy flip --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("budget") && !fi.every {
				return usageErrorf("--budget bounds --every-traitor-set: give both, or neither")
			}
			ctx, stop := stopOnHangup(cmd.Context())
			defer stop()
			if fi.on {
				return runGeneralsInteractive(ctx, f, fi, cmd.OutOrStdout())
			}
			if fi.values != "" || fi.every {
				return usageErrorf("--values and --every-traitor-set need --interactive")
			}
			return runGenerals(ctx, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addGeneralsRunFlags(cmd, &f)
	addInteractiveFlags(cmd, &fi)
	fl := cmd.Flags()
	fl.StringVar(&f.transport, "transport", "memory", "memory (deterministic, in process) or tcp (one process per general)")
	fl.BoolVar(&f.trace, "trace", false, "print the message flow round by round")
	fl.StringVar(&f.report, "report", "", "write the run as a self-contained HTML page: messages per round, each loyal lieutenant's decision, the verdict")
	cmd.AddCommand(newGeneralsServeCmd(), newGeneralsNodeCmd(), newGeneralsKeygenCmd(), newGeneralsExhaustCmd(), newGeneralsSweepCmd())
	cmd.AddCommand(newGeneralsEpochCmd(useLeader), newGeneralsEpochCmd(useFailures), newGeneralsEpochCmd(useClock))
	return cmd
}

// addGeneralsRunFlags registers the flags that describe a run, shared by
// "dlm generals" and "dlm generals node".
func addGeneralsRunFlags(cmd *cobra.Command, f *generalsFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.algorithm, "algorithm", "om", "om (oral messages, n >= 3m+1) or sm (signed messages, any n >= m+2); see docs/spec/agreement.md")
	fl.IntVarP(&f.generals, "generals", "n", 4, "number of generals n, the commander included")
	fl.IntVarP(&f.traitors, "traitors", "m", 1, "number of traitors m to tolerate: runs OM(m) or SM(m)")
	fl.StringVar(&f.faulty, "faulty", "", "traitor ids, comma-separated, each optionally id:strategy (0 is the commander)")
	fl.StringVar(&f.strategy, "strategy", "two-faced", "strategy of the traitors given without one")
	fl.StringVar(&f.order, "order", "attack", "the commander's order (any short string)")
	fl.StringVar(&f.majority, "majority", "vote", "how a lieutenant decides among the values it received: vote (majority or RETREAT) or median")
	fl.Int64Var(&f.seed, "seed", 1, "seed of every random choice; the same seed replays the run")
	fl.Uint64Var(&f.seq, "seq", 1, "sequence number signed into SM orders, so that an old order cannot be replayed; runs reusing keys need increasing numbers")
	fl.DurationVar(&f.roundTimeout, "round-timeout", 500*time.Millisecond, "bound of one round on tcp: a message later than this counts as missing")
	fl.BoolVar(&f.unsafe, "unsafe", false, "run even when n < 3m+1 (OM) or with more than m traitors")
	fl.BoolVar(&f.json, "json", false, "print one JSON object")
	fl.StringVar(&f.explain, "explain", "", "explain how general ID (or all of them: all) decided: OM's tree of values and majorities, SM's V with the first chain of each order; with --interactive, in every instance")
	fl.StringVar(&f.crash, "crash", "", "generals that crash, as id@round, comma-separated (2@1: general 2 stops at the start of round 1)")
}

// generalsConfig turns the flags into a run configuration.
func generalsConfig(f generalsFlags) (byzantine.Config, error) {
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm = byzantine.Algorithm(strings.ToLower(f.algorithm))
	cfg.Generals, cfg.MaxTraitors = f.generals, f.traitors
	cfg.Order = byzantine.Order(f.order)
	cfg.Majority = byzantine.MajorityVariant(strings.ToLower(f.majority))
	cfg.Seed, cfg.Seq, cfg.RoundTimeout = f.seed, f.seq, f.roundTimeout
	cfg.AllowUnsafe, cfg.Trace = f.unsafe, f.trace
	if f.faulty != "" {
		for _, item := range strings.Split(f.faulty, ",") {
			idText, strat, found := strings.Cut(strings.TrimSpace(item), ":")
			if !found {
				strat = f.strategy
			}
			id, err := strconv.Atoi(idText)
			if err != nil {
				return cfg, fmt.Errorf("--faulty: %q is not a general id", idText)
			}
			cfg.Faulty = append(cfg.Faulty, byzantine.Traitor{ID: byzantine.ID(id), Strategy: byzantine.Strategy(strat)})
		}
	}
	explain, err := parseExplain(f.explain, cfg.Generals)
	if err != nil {
		return cfg, err
	}
	cfg.Explain = explain
	if f.crash != "" {
		for _, item := range strings.Split(f.crash, ",") {
			idText, roundText, found := strings.Cut(strings.TrimSpace(item), "@")
			id, err1 := strconv.Atoi(idText)
			round, err2 := strconv.Atoi(roundText)
			if !found || err1 != nil || err2 != nil {
				return cfg, fmt.Errorf("--crash: %q: want id@round, as 2@1", item)
			}
			cfg.Crashes = append(cfg.Crashes, byzantine.Crash{ID: byzantine.ID(id), Round: round})
		}
	}
	return cfg, cfg.Validate()
}

// parseExplain reads --explain: a general's id, or all (every general of
// n; a commander's explanation is its own order).
func parseExplain(s string, n int) ([]byzantine.ID, error) {
	switch s = strings.TrimSpace(s); {
	case s == "":
		return nil, nil
	case strings.EqualFold(s, "all"):
		ids := make([]byzantine.ID, 0, max(n, 0))
		for i := range max(n, 0) {
			ids = append(ids, byzantine.ID(i))
		}
		return ids, nil
	}
	id, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("--explain %q: want a general's id or all", s)
	}
	return []byzantine.ID{byzantine.ID(id)}, nil
}

func runGenerals(ctx context.Context, f generalsFlags, stdout, stderr io.Writer) error {
	if f.transport != "memory" && f.transport != "tcp" {
		return usageErrorf("--transport %q: want memory or tcp", f.transport)
	}
	cfg, err := generalsConfig(f)
	if err != nil {
		if errors.Is(err, byzantine.ErrUnsafe) && !f.unsafe {
			anyway := f
			anyway.unsafe = true
			if _, uerr := generalsConfig(anyway); !errors.Is(uerr, byzantine.ErrUnsafe) {
				err = fmt.Errorf("%w (dlm: --unsafe)", err) // --unsafe would run it
			}
		}
		return withCode(exitUsage, err)
	}
	requested := cfg.Explain
	if f.report != "" {
		// The page needs the trace and every lieutenant's explanation.
		cfg.Trace = true
		cfg.Explain = nil
		for i := 1; i < cfg.Generals; i++ {
			cfg.Explain = append(cfg.Explain, byzantine.ID(i))
		}
		if err := cfg.Validate(); err != nil {
			return withCode(exitUsage, fmt.Errorf("--report: %w", err))
		}
	}
	var res *byzantine.Result
	if f.transport == "tcp" {
		res, err = launchGenerals(ctx, cfg, stderr)
	} else {
		res, err = byzantine.Run(ctx, cfg)
	}
	if err != nil {
		return withCode(exitCouldNotRun, err)
	}
	if f.report != "" {
		if err := writeGeneralsReport(f.report, f.transport, res); err != nil {
			return err
		}
		shown := *res // print only what was asked for
		shown.Config.Trace, shown.Config.Explain = f.trace, requested
		if !f.trace {
			shown.Trace = nil
		}
		res = &shown
	}
	if f.json {
		if err := writeGeneralsJSON(stdout, f.transport, res); err != nil {
			return err
		}
	} else {
		writeGeneralsText(stdout, f.transport, res)
	}
	return verdictExit(res, func() string { return tooManyFaultsText(res) })
}

// verdictExit is the exit of a run once its output is written: 3 when a
// general ran out of time or more than m generals were faulty (the run
// proves nothing), 1 when a condition of agreement failed, else 0.
func verdictExit(res interface {
	OutOfTime() []byzantine.ID
	TooManyFaults() bool
	Verify() error
}, tooMany func() string) error {
	if late := res.OutOfTime(); len(late) > 0 {
		return withCode(exitInconclusive, errors.New(outOfTimeText(late)))
	}
	if res.TooManyFaults() {
		return withCode(exitInconclusive, errors.New(tooMany()))
	}
	if err := res.Verify(); err != nil {
		return withCode(exitFailure, err)
	}
	return nil
}

// outOfTimeText says that a run did not keep its schedule, and what that
// means for its decisions.
func outOfTimeText(late []byzantine.ID) string {
	return fmt.Sprintf("ran out of time: loyal generals %v did not keep the schedule (they sent a round's messages after its deadline, were stopped over a deadline, took messages that had arrived in time too late, or could not send to a peer that stayed connected), so the rounds were not synchronous (a message on time could have been counted missing) and the decisions prove nothing; rerun with a longer --round-timeout", late)
}

// tooManyFaultsText says that more than m generals were faulty, counting
// those the loyal generals saw absent, gone, late, unreachable or refused over the network.
func tooManyFaultsText(res *byzantine.Result) string {
	f := res.FaultyGenerals()
	return fmt.Sprintf("too many faults: generals %v were faulty (traitors, crashed, or seen absent, gone, late, unreachable or refused by a loyal general), %d > m = %d, so agreement is not guaranteed and the decisions prove nothing", f, len(f), res.Config.MaxTraitors)
}

// launchGenerals runs every general as a "dlm generals serve" process.
func launchGenerals(ctx context.Context, cfg byzantine.Config, stderr io.Writer) (*byzantine.Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return launchProcesses(ctx, cfg, func(ctx context.Context, id byzantine.ID) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, "generals", "serve")
		cmd.Stderr = stderr
		// Killed with dlm, however it dies (its parent-death signal, where
		// the kernel has one; else the end of its standard input, a pipe
		// from dlm, stops its run: tcp.Serve).
		cmd.SysProcAttr = childAttr()
		return cmd
	})
}

// exitServeStopped is the status of a general's process (dlm generals
// serve) that a signal stopped: the coordinator reads it as the stop of
// the whole run (launchProcesses). 130 is the shell's for Ctrl-C.
const exitServeStopped = 130

// launchProcesses runs cfg with each general in the process command
// makes, which serves the launch protocol (tcp.Launch), and returns once
// every process has exited. A run that a signal stopped, in any phase, is
// one error wrapping byzantine.ErrStopped and context.Canceled (so dlm
// says "run stopped" once, and exits as for an interrupted run): ctx
// ended (Ctrl-C reached dlm), or a general's process was stopped by a
// signal, even one dlm has not heard of yet. A Ctrl-C reaches every
// process of the terminal's group at once, and a general stopped by it
// may end its part (no hello, no report, or one saying it stopped)
// before dlm's own handler has ended ctx: that is not a general that
// failed, nor one that crashed in the run.
func launchProcesses(ctx context.Context, cfg byzantine.Config, command func(ctx context.Context, id byzantine.ID) *exec.Cmd) (*byzantine.Result, error) {
	var procs []*exec.Cmd // tcp.Launch spawns in turn, and waits for each
	spawn := tcp.CommandSpawner(func(ctx context.Context, id byzantine.ID) *exec.Cmd {
		cmd := command(ctx, id)
		procs = append(procs, cmd)
		return cmd
	})
	// tcp.Launch starts every general from this goroutine and waits for
	// them all: a parent-death signal (childAttr) fires when the thread
	// that started the process ends, so this thread is the goroutine's
	// until then.
	runtime.LockOSThread()
	res, err := tcp.Launch(ctx, cfg, spawn)
	runtime.UnlockOSThread()
	if ctx.Err() != nil || slices.ContainsFunc(procs, stoppedBySignal) {
		return nil, fmt.Errorf("%w: %w", byzantine.ErrStopped, context.Canceled)
	}
	return res, err
}

// stoppedBySignal reports whether a general's process, waited for, ended
// on a signal that stops a run: killed by SIGINT, SIGTERM or SIGHUP
// before it handled them, or exited with exitServeStopped after it did.
func stoppedBySignal(cmd *exec.Cmd) bool {
	ps := cmd.ProcessState
	if ps == nil {
		return false // never started
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		switch ws.Signal() {
		case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
			return true
		}
		return false
	}
	return ps.ExitCode() == exitServeStopped
}

// stopOnHangup returns ctx ended by SIGHUP too (the terminal that ran dlm
// closed), as the root context is by SIGINT and SIGTERM: a run stops on
// each the same way. Call stop once the run is over.
func stopOnHangup(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGHUP)
}

// newGeneralsServeCmd is the hidden subcommand each general of a tcp run
// executes: it speaks the launch protocol of package tcp on stdin/stdout.
func newGeneralsServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Short:  "Serve one general of a tcp run (used by dlm generals --transport tcp)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := stopOnHangup(cmd.Context())
			defer stop()
			err := tcp.Serve(ctx, cmd.InOrStdin(), cmd.OutOrStdout())
			switch {
			case err != nil && ctx.Err() != nil:
				// Ctrl-C reached every general's process as well as the
				// coordinator's, which shares this stderr and says once
				// that the run stopped; the status tells it, should this
				// process end first.
				return withCode(exitServeStopped, nil)
			case errors.Is(err, tcp.ErrCoordinatorGone):
				// dlm died, or gave up on the run and says why itself.
				return withCode(exitCouldNotRun, nil)
			}
			return err
		},
	}
}

func loyalLabel(g byzantine.GeneralResult) string {
	if g.Loyal {
		return "loyal"
	}
	return "traitor (" + string(g.Strategy) + ")"
}

func holds(ok bool) string {
	if ok {
		return "holds"
	}
	return "VIOLATED"
}

// writeGeneralsText prints the run for people.
func writeGeneralsText(w io.Writer, transport string, res *byzantine.Result) {
	cfg := res.Config
	bound, rule := 3*cfg.MaxTraitors+1, "3m+1"
	if cfg.Algorithm == byzantine.SM {
		bound, rule = cfg.MaxTraitors+2, "m+2"
	}
	need := fmt.Sprintf("n >= %s = %d", rule, bound)
	if cfg.Generals < bound {
		need = fmt.Sprintf("below n >= %s = %d: unsafe", rule, bound)
	}
	fmt.Fprintf(w, "%s(%d) with %d generals (%s), order %s, majority %s, transport %s, seed %d\n",
		strings.ToUpper(string(cfg.Algorithm)), cfg.MaxTraitors, cfg.Generals, need, cfg.Order, cfg.Majority, transport, cfg.Seed)
	if cfg.AllowUnsafe {
		fmt.Fprintln(w, "unsafe configuration allowed: IC1/IC2 are not guaranteed")
	}
	if cfg.Trace {
		writeGeneralsTrace(w, res)
	}
	faulty := res.Faulty()
	if len(faulty) == 0 {
		fmt.Fprintln(w, "traitors: none")
	} else {
		var parts []string
		for _, id := range faulty {
			parts = append(parts, fmt.Sprintf("%d (%s)", id, res.Generals[id].Strategy))
		}
		fmt.Fprintf(w, "traitors: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "decisions:")
	for _, g := range res.Generals {
		role := "lieutenant"
		if g.ID == 0 {
			role = "commander"
		}
		decision := g.Decision.String()
		if !g.Loyal || g.Crashed {
			decision = "-"
		}
		label := loyalLabel(g)
		if g.Crashed {
			label += ", crashed"
			if r := cfg.CrashRound(g.ID); r >= 0 {
				label = fmt.Sprintf("%s, crashed at round %d", loyalLabel(g), r)
			}
		}
		line := fmt.Sprintf("  general %-3d %-10s %-22s %s", g.ID, role, label, decision)
		if cfg.Algorithm == byzantine.SM && g.ID != 0 && g.Loyal && !g.Crashed {
			line += fmt.Sprintf("   V=%v", g.Values)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	writeExplanations(w, res)
	fmt.Fprintf(w, "messages %d, rounds %d, bytes %d", res.Messages, res.Rounds, res.Bytes)
	if cfg.Algorithm == byzantine.SM {
		fmt.Fprintf(w, ", signatures %d made, %d verified", res.SignaturesMade, res.SignaturesVerified)
	}
	fmt.Fprintln(w)
	writeRejected(w, res.Rejected)
	if crashed := res.Crashed(); len(crashed) > 0 {
		fmt.Fprintf(w, "crashed: %v (the verdict covers the loyal survivors)\n", crashed)
	}
	fmt.Fprintf(w, "IC1 (all loyal lieutenants obey the same order): %s\n", holds(res.IC1()))
	ic2 := holds(res.IC2())
	switch {
	case !res.Generals[0].Loyal:
		ic2 += " (vacuously: the commander is a traitor)"
	case res.Generals[0].Crashed:
		ic2 += " (vacuously: the commander crashed)"
	}
	fmt.Fprintf(w, "IC2 (a loyal commander's order is obeyed):       %s\n", ic2)
	if late := res.OutOfTime(); len(late) > 0 {
		fmt.Fprintf(w, "verdict: %s\n", outOfTimeText(late))
	} else if res.TooManyFaults() {
		fmt.Fprintf(w, "verdict: %s\n", tooManyFaultsText(res))
	}
}

// writeExplanations prints how each explained general decided.
func writeExplanations(w io.Writer, res *byzantine.Result) {
	for _, g := range res.Generals {
		switch {
		case !slices.Contains(res.Config.Explain, g.ID):
		case g.Explanation == nil:
			fmt.Fprintf(w, "explain general %d: no decision to explain (crashed)\n", g.ID)
		case g.ID == 0:
			fmt.Fprintf(w, "explain general 0: the commander obeys his own order\n")
		default:
			how := "tree of values by relay path; missing messages count as RETREAT"
			if res.Config.Algorithm == byzantine.SM {
				how = "the set V, each order with the first chain that brought it"
			}
			note := ""
			if !g.Loyal {
				note = " (a traitor: what it would decide)"
			}
			fmt.Fprintf(w, "explain general %d%s: %s\n", g.ID, note, how)
			fmt.Fprintf(w, "  (%s)\n", pathHelp)
			for _, line := range g.Explanation.Lines() {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// writeGeneralsTrace prints the message flow round by round.
func writeGeneralsTrace(w io.Writer, res *byzantine.Result) {
	round := -1
	for _, ev := range res.Trace {
		if ev.Round != round {
			round = ev.Round
			label := ""
			if round > res.Config.MaxTraitors {
				label = " (after the last round: stragglers)"
			}
			fmt.Fprintf(w, "round %d%s:\n", round, label)
		}
		fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(ev.String(), fmt.Sprintf("round %d: ", ev.Round)))
	}
}

// generalsJSON is the --json output.
type generalsJSON struct {
	Algorithm          byzantine.Algorithm               `json:"algorithm"`
	Generals           int                               `json:"generals"`
	MaxTraitors        int                               `json:"max_traitors"`
	Faulty             []byzantine.ID                    `json:"faulty"`
	Crashed            []byzantine.ID                    `json:"crashed"`
	Strategies         map[string]byzantine.Strategy     `json:"strategies"`
	Order              byzantine.Order                   `json:"order"`
	Majority           byzantine.MajorityVariant         `json:"majority"`
	Transport          string                            `json:"transport"`
	Seed               int64                             `json:"seed"`
	Decisions          map[string]byzantine.Order        `json:"decisions"`
	Messages           int                               `json:"messages"`
	Rounds             int                               `json:"rounds"`
	Bytes              int64                             `json:"bytes"`
	SignaturesMade     int                               `json:"signatures_made"`
	SignaturesVerified int                               `json:"signatures_verified"`
	Rejected           map[byzantine.RejectReason]int    `json:"rejected"`
	IC1                bool                              `json:"ic1"`
	IC2                bool                              `json:"ic2"`
	Verdict            string                            `json:"verdict"`
	OutOfTime          []byzantine.ID                    `json:"out_of_time,omitempty"`
	FaultyGenerals     []byzantine.ID                    `json:"faulty_generals,omitempty"`
	Trace              []generalsTraceJSON               `json:"trace,omitempty"`
	Explanations       map[string]*byzantine.Explanation `json:"explanations,omitempty"`
}

type generalsTraceJSON struct {
	Round    int    `json:"round"`
	From     int    `json:"from"`
	To       int    `json:"to"`
	Chain    string `json:"chain"`
	Sent     int    `json:"sent_round"`
	Fault    string `json:"fault,omitempty"`
	Rejected string `json:"rejected,omitempty"`
}

func writeGeneralsJSON(w io.Writer, transport string, res *byzantine.Result) error {
	cfg := res.Config
	out := generalsJSON{
		Algorithm:          cfg.Algorithm,
		Generals:           cfg.Generals,
		MaxTraitors:        cfg.MaxTraitors,
		Faulty:             res.Faulty(),
		Strategies:         map[string]byzantine.Strategy{},
		Order:              cfg.Order,
		Majority:           cfg.Majority,
		Transport:          transport,
		Seed:               cfg.Seed,
		Decisions:          map[string]byzantine.Order{},
		Messages:           res.Messages,
		Rounds:             res.Rounds,
		Bytes:              res.Bytes,
		SignaturesMade:     res.SignaturesMade,
		SignaturesVerified: res.SignaturesVerified,
		Rejected:           res.Rejected,
		IC1:                res.IC1(),
		IC2:                res.IC2(),
		Verdict:            "ok",
	}
	if out.Faulty == nil {
		out.Faulty = []byzantine.ID{}
	}
	out.Crashed = res.Crashed()
	if out.Crashed == nil {
		out.Crashed = []byzantine.ID{}
	}
	if out.Rejected == nil {
		out.Rejected = map[byzantine.RejectReason]int{}
	}
	for _, id := range out.Faulty {
		out.Strategies[strconv.Itoa(int(id))] = res.Generals[id].Strategy
	}
	for id, d := range res.Decisions() {
		out.Decisions[strconv.Itoa(int(id))] = d
	}
	for _, g := range res.Generals {
		if g.Explanation != nil && slices.Contains(cfg.Explain, g.ID) {
			if out.Explanations == nil {
				out.Explanations = map[string]*byzantine.Explanation{}
			}
			out.Explanations[strconv.Itoa(int(g.ID))] = g.Explanation
		}
	}
	if err := res.Verify(); err != nil {
		out.Verdict = err.Error()
	}
	if late := res.OutOfTime(); len(late) > 0 {
		out.OutOfTime = late
		out.Verdict = outOfTimeText(late)
	} else if res.TooManyFaults() {
		out.Verdict = tooManyFaultsText(res)
	}
	out.FaultyGenerals = res.FaultyGenerals()
	for _, ev := range res.Trace {
		tj := generalsTraceJSON{Round: ev.Round, From: int(ev.Message.From), To: int(ev.Message.To), Chain: ev.Message.Chain(), Sent: ev.Message.Round, Rejected: string(ev.Rejected)}
		if ev.Fault != byzantine.Deliver {
			tj.Fault = ev.Fault.String()
		}
		out.Trace = append(out.Trace, tj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeRejected writes the line that counts the messages refused, by
// reason, when any was.
func writeRejected[R ~string](w io.Writer, rejected map[R]int) {
	if len(rejected) == 0 {
		return
	}
	var parts []string
	for _, r := range slices.Sorted(mapKeys(rejected)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, rejected[r]))
	}
	fmt.Fprintf(w, "rejected: %s\n", strings.Join(parts, ", "))
}
