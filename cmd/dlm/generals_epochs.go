package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dlm/byzantine"
	"dlm/byzantine/agreed"
	"dlm/byzantine/tcp"
)

// epochUse names one use of "dlm generals leader|failures|clock".
type epochUse string

const (
	useLeader   epochUse = "leader"
	useFailures epochUse = "failures"
	useClock    epochUse = "clock"
)

// epochFlags are the flags of the epoch subcommands.
type epochFlags struct {
	algorithm    string
	generals     int
	traitors     int
	faulty       string
	strategy     string
	roundTimeout time.Duration
	cluster      string
	id           int
	keyPath      string
	start        string
	anyKeyMode   bool // accept a key file others may read
	period       time.Duration
	epochs       int
	anyAddr      bool
	candidate    bool
	clockOffset  time.Duration
	claimDead    bool
	unsafe       bool
}

// newGeneralsEpochCmd builds one of "dlm generals leader", "failures" and
// "clock": one general of a team that agrees, epoch after epoch, over TCP.
func newGeneralsEpochCmd(use epochUse) *cobra.Command {
	var f epochFlags
	short := map[epochUse]string{
		useLeader:   "Elect a leader every epoch, with up to m lying generals (one process per general)",
		useFailures: "Agree every epoch on which generals failed, with up to m lying generals",
		useClock:    "Agree every epoch on a clock reading (the median), with up to m lying generals",
	}[use]
	what := map[epochUse]string{
		useLeader: `The leader is the lowest-id general that stood for leader (--candidate)
and is not declared failed. A traitor cannot unseat a loyal candidate by
claiming it is silent (that takes m+1 reports), and a leader that crashes
is replaced within one epoch.`,
		useFailures: `A general is declared failed when its own agreed value is missing or
malformed (a loyal general's own value is always agreed), or when at least
m+1 generals report it silent in the previous epoch: the m traitors alone
cannot get a loyal general declared failed, and a general that crashes is
declared failed by every loyal one within two epochs.`,
		useClock: `Every general proposes its clock reading at the epoch's wake-up; all
loyal generals adopt the lower median of the agreed readings, which lies
within the loyal generals' readings whatever m traitors propose when fewer
than half of the readings are faulty (always with OM; with SM when
n >= 2m+1). --clock-offset makes this general's clock read that far off.`,
	}[use]
	cmd := &cobra.Command{
		Use:   string(use) + " --cluster FILE --id N --key FILE --start TIME --period D [flags]",
		Short: short,
		Long: short + `.

Each epoch k starts at --start + k x --period and is one run of interactive
consistency among all generals of the cluster file (the same file, flags
and --start on every machine, each with its own --id and --key, as for
"dlm generals node"): every general's proposal (whether it stands for
leader, its clock reading, whom it heard from in the previous epoch) is
agreed by every loyal general, and each decides from the agreed vector.

` + what + `

The command prints one JSON line per epoch: the decision (leader, failed
generals and why, the agreed clock), the agreed vector (the one picture
every loyal general shares), the peers this general saw fail on the
network, and whom it heard from (an epoch this general skipped says so,
with no proposal). --epochs 0 runs until interrupted. The
period must cover the wake-up (one round timeout before the start), a run
whose every round waits its timeout (m+2 rounds) and half a round of
slack: --period >= (m+3.5) x --round-timeout; the default is (m+4) x.

A --start in the past joins a team already under way: a general that
crashed is started again with the same command line, and runs from the
first epoch that has not begun (epochs keep the team's numbers; --epochs
counts from epoch 0, so those already over are not run again).

Exit status:
  0   every epoch decided
  3   some epoch proves nothing (this general could not run it, did not
      keep the schedule, or saw more than m peers fail)
  64  bad usage (with the reason)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGeneralsEpochs(cmd.Context(), use, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.algorithm, "algorithm", "om", "om (oral messages, n >= 3m+1) or sm (signed messages, n >= m+2)")
	fl.IntVarP(&f.generals, "generals", "n", 4, "number of generals n (the size of the cluster file)")
	fl.IntVarP(&f.traitors, "traitors", "m", 1, "number of faulty generals m to tolerate")
	fl.StringVar(&f.faulty, "faulty", "", "traitor ids, each optionally id:strategy (the same on every machine; a listed general lies in every relay)")
	fl.StringVar(&f.strategy, "strategy", "two-faced", "strategy of the traitors given without one")
	fl.DurationVar(&f.roundTimeout, "round-timeout", time.Second, "bound of one round (message delivery plus clock skew)")
	fl.StringVar(&f.cluster, "cluster", "", "cluster file: {\"generals\":[{\"id\":0,\"addr\":\"host:port\",\"public_key\":\"base64\"},...]}")
	fl.IntVar(&f.id, "id", -1, "this general's id in the cluster file")
	fl.StringVar(&f.keyPath, "key", "", "this general's key file (dlm generals keygen); refused when users other than its owner may read or change it")
	fl.BoolVar(&f.anyKeyMode, "insecure-key-mode", false, "use a --key file that users other than its owner may read or change (refused otherwise, as ssh refuses such a private key)")
	fl.StringVar(&f.start, "start", "", "start of epoch 0, RFC 3339, the same for every general")
	fl.DurationVar(&f.period, "period", 0, "time between epoch starts (default (m+4) x --round-timeout)")
	fl.IntVar(&f.epochs, "epochs", 0, "epochs to run; 0 runs until interrupted")
	fl.BoolVar(&f.anyAddr, "listen-any", false, "allow a cluster address without a host, which listens on all interfaces")
	fl.BoolVar(&f.candidate, "candidate", true, "stand for leader")
	fl.DurationVar(&f.clockOffset, "clock-offset", 0, "make this general's clock read this far off (to watch clock agreement)")
	fl.BoolVar(&f.claimDead, "claim-dead", false, "make this general lie: report that it heard from nobody (to watch failure detection refuse it)")
	if use == useClock {
		fl.BoolVar(&f.unsafe, "unsafe", false, "run even when n < 2m+1, where m traitors can make the agreed clock any reading")
	}
	for _, name := range []string{"cluster", "id", "key", "start"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

// epochLine is one JSON line of the epoch subcommands.
type epochLine struct {
	Use     epochUse     `json:"use"`
	Epoch   int          `json:"epoch"`
	Start   time.Time    `json:"start"`
	General byzantine.ID `json:"general"`
	// Proposal is what this general proposed; empty for an epoch it
	// skipped (Skipped), in which it proposed nothing.
	Proposal  byzantine.Order       `json:"proposal,omitempty"`
	Skipped   bool                  `json:"skipped,omitempty"`
	Leader    *byzantine.ID         `json:"leader,omitempty"`
	Failed    []agreed.Fault        `json:"failed"`
	Clock     *time.Time            `json:"clock,omitempty"`
	ClockNS   int64                 `json:"clock_ns,omitempty"`
	Reading   int64                 `json:"my_reading_ns,omitempty"`
	AdjustNS  int64                 `json:"adjust_ns,omitempty"`
	Readings  int                   `json:"readings,omitempty"`
	Vector    []byzantine.Order     `json:"vector"`
	Seen      []byzantine.PeerFault `json:"seen_faulty"`
	Heard     []byzantine.ID        `json:"heard"`
	OutOfTime []int                 `json:"out_of_time,omitempty"`
	TooMany   bool                  `json:"too_many_faults,omitempty"`
	Error     string                `json:"error,omitempty"`
	// OtherRuns are the peers refused in this epoch for running it with
	// other run flags or another command.
	OtherRuns []otherRun `json:"other_runs,omitempty"`
}

func runGeneralsEpochs(ctx context.Context, use epochUse, f epochFlags, stdout, stderr io.Writer) error {
	t0, err := time.Parse(time.RFC3339Nano, f.start)
	if err != nil {
		return usageErrorf("--start %q: want an RFC 3339 time: %v", f.start, err)
	}
	if now := time.Now(); t0.Sub(now) > MaxStartAhead {
		return usageErrorf("--start %s is %v away, more than %v: check the date", t0.Format(time.RFC3339Nano), t0.Sub(now).Round(time.Second), MaxStartAhead)
	}
	gf := generalsFlags{algorithm: f.algorithm, generals: f.generals, traitors: f.traitors, faulty: f.faulty, strategy: f.strategy,
		order: "attack", majority: "vote", seed: 1, seq: 1, roundTimeout: f.roundTimeout}
	cfg, err := generalsConfig(gf)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.generals > agreed.MaxGenerals {
		return usageErrorf("-n %d: a proposal encodes at most %d generals", f.generals, agreed.MaxGenerals)
	}
	if use == useClock && f.generals < 2*f.traitors+1 && !f.unsafe {
		// Only SM gets here (OM needs n >= 3m+1): with half the readings
		// or more from traitors, the median can be any traitor's reading
		// (a general adopted one 349 years off and exited 0).
		return usageErrorf("clock with n = %d and m = %d: when m traitors may give half the readings or more, the agreed median can be any reading they choose; clock agreement needs n >= 2m+1 = %d (run with --unsafe to adopt such a median anyway)", f.generals, f.traitors, 2*f.traitors+1)
	}
	if f.epochs < 0 {
		return usageErrorf("--epochs %d: want 0 (until interrupted) or more", f.epochs)
	}
	if err := checkClockOffset(time.Now(), f.clockOffset); err != nil {
		return withCode(exitUsage, err)
	}
	// A general wakes one round timeout before its epoch and listens on
	// its address; the previous epoch must be over at every general by
	// then (its last round ends m+2 round timeouts after its start), or a
	// peer still in it answers the dial with the wrong run and the epoch
	// goes on without it. Half a round is the slack.
	lead := f.roundTimeout
	least := lead + time.Duration(f.traitors+2)*f.roundTimeout + f.roundTimeout/2
	if f.period == 0 {
		f.period = lead + time.Duration(f.traitors+3)*f.roundTimeout
	}
	if f.period < least {
		return usageErrorf("--period %v: an epoch needs the wake-up (one --round-timeout, %v), m+2 rounds and half a round of slack, so at least %v", f.period, f.roundTimeout, least)
	}
	s := agreed.Schedule{Start: t0, Period: f.period, Lead: lead, Epochs: f.epochs}
	if now := time.Now(); now.After(t0) {
		k := agreed.JoinsAt(s, now)
		if f.epochs > 0 && k >= f.epochs {
			return usageErrorf("--start %s with --epochs %d: every epoch has begun by now (the last at %s); give a start in the future for a new team", t0.Format(time.RFC3339Nano), f.epochs, t0.Add(time.Duration(f.epochs-1)*f.period).Format(time.RFC3339Nano))
		}
		fmt.Fprintf(stderr, "dlm: --start is %v past: joining the team at epoch %d, which starts at %s\n", now.Sub(t0).Round(time.Millisecond), k, t0.Add(time.Duration(k)*f.period).Format(time.RFC3339Nano))
	}
	c, err := tcp.LoadCluster(f.cluster)
	if err != nil {
		return withCode(exitUsage, err)
	}
	priv, err := readGeneralKey(f.keyPath, f.anyKeyMode)
	if err != nil {
		return withCode(exitUsage, err)
	}
	addr, err := checkNodeIdentity(c, cfg, f.id, priv, f.anyAddr)
	if err != nil {
		return withCode(exitUsage, err)
	}
	id := byzantine.ID(f.id)
	mb := &agreed.Member{ID: id, N: f.generals, M: f.traitors, Candidate: f.candidate && use == useLeader}
	if use == useClock {
		mb.Clock = func() int64 { return time.Now().Add(f.clockOffset).UnixNano() }
	}
	ic := byzantine.InteractiveConfig{Config: cfg}
	// One listener for every epoch: the port is never free between two.
	el, err := tcp.ListenEpochs(addr)
	if err != nil {
		return err
	}
	defer el.Close()
	var others []otherRun // of the epoch last run: mb.Run reports each epoch after running it
	run := func(ctx context.Context, start time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, error) {
		if f.claimDead {
			if p, err := agreed.Parse(value, f.generals); err == nil && p.Heard != nil {
				p.Heard = make([]bool, f.generals)
				value = p.Encode()
			}
		}
		res, other, err := tcp.RunInteractiveEpochOn(ctx, el, c, id, priv, ic, string(use), start, value)
		others = otherRunsOf(other)
		return res, err
	}
	enc := json.NewEncoder(stdout)
	var bad []string
	err = mb.Run(ctx, s, run, func(rep agreed.Report) error {
		line := epochLine{Use: use, Epoch: rep.Epoch, Start: rep.Start, General: rep.General,
			Failed: []agreed.Fault{}, Seen: rep.Seen, Heard: rep.Heard, OutOfTime: rep.OutOfTime, TooMany: rep.TooManyFaults, Error: rep.Error, OtherRuns: others}
		if rep.Proposed {
			line.Proposal = rep.Proposal.Encode()
		} else {
			line.Skipped = true
		}
		if line.Seen == nil {
			line.Seen = []byzantine.PeerFault{}
		}
		if d := rep.Decision; d != nil {
			line.Vector, line.Failed = d.Vector, d.Failed
			line.Proposal = d.Vector[id] // as sent (--claim-dead changes it)
			if line.Failed == nil {
				line.Failed = []agreed.Fault{}
			}
			if use == useLeader {
				l := d.Leader
				line.Leader = &l
			}
			if use == useClock && d.HasClock {
				ct := time.Unix(0, d.Clock).UTC()
				line.Clock, line.ClockNS, line.Readings = &ct, d.Clock, d.Readings
				line.Reading = rep.Proposal.Clock
				line.AdjustNS = clockAdjust(d.Clock, rep.Proposal.Clock)
			}
		}
		switch {
		case rep.Error != "":
			bad = append(bad, fmt.Sprintf("epoch %d: %s", rep.Epoch, rep.Error))
		case len(rep.OutOfTime) > 0:
			bad = append(bad, fmt.Sprintf("epoch %d: out of time in rounds %v", rep.Epoch, rep.OutOfTime))
		case rep.TooManyFaults:
			bad = append(bad, fmt.Sprintf("epoch %d: too many faults: saw %d peers fail, more than m = %d%s", rep.Epoch, len(rep.Seen), f.traitors, otherRunsText(others)))
		}
		return enc.Encode(line)
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return withCode(exitCouldNotRun, err)
	}
	if len(bad) > 0 {
		return withCode(exitInconclusive, fmt.Errorf("%d epochs prove nothing: %s", len(bad), strings.Join(bad, "; ")))
	}
	return nil
}

// clockAdjust returns agreed - reading, the adjustment a general applies
// to its clock, saturated at the int64 range: where the agreed value has
// no bound (SM with n <= 2m), traitors can make the difference overflow,
// and a wrapped one points the other way.
func clockAdjust(agreed, reading int64) int64 {
	d := agreed - reading
	switch {
	case reading > 0 && d > agreed:
		return math.MinInt64
	case reading < 0 && d < agreed:
		return math.MaxInt64
	}
	return d
}

// checkClockOffset refuses a --clock-offset that would put this general's
// clock, read at now, outside what a reading (nanoseconds since 1970 in
// an int64: the years 1678 to 2262) can hold, with a year of margin for
// the epochs to come: such a reading would wrap around (292 years ahead
// would read as 1734).
func checkClockOffset(now time.Time, offset time.Duration) error {
	const margin = 365 * 24 * time.Hour
	lo, hi := time.Unix(0, math.MinInt64).Add(margin), time.Unix(0, math.MaxInt64).Add(-margin)
	if t := now.Add(offset); t.Before(lo) || t.After(hi) {
		return usageErrorf("--clock-offset %v: this general's clock would read %s, outside the years %d to %d that a clock reading (nanoseconds since 1970) can hold; want an offset that keeps it within them", offset, t.UTC().Format(time.RFC3339), lo.Year(), hi.Year())
	}
	return nil
}
