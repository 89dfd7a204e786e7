package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dlm/election"
	"dlm/redlock"
)

// Environment variables dlm elect sets for the command.
const (
	envElection   = "DLM_ELECTION"
	envLeaderID   = "DLM_LEADER_ID"
	envLeaderTerm = "DLM_LEADER_TERM"
)

// electionOver dials a fenced client with the node flags nf (ttl bounds
// the node timeout) and returns the election name over it, with opts, and
// the function that closes the client.
// With warn set (dlm elect), the nodes are checked first (checkNodes),
// and warn says what is unsafe.
func electionOver(ctx context.Context, nf *nodeFlags, name string, ttl time.Duration, warn func(string), opts ...election.Option) (*election.Election, func(), error) {
	client, closeClient, err := nf.client(ctx, ttl, redlock.WithFencing())
	if err != nil {
		return nil, nil, err
	}
	if warn != nil {
		if err := checkNodes(ctx, client, warn); err != nil {
			closeClient()
			return nil, nil, err
		}
	}
	e, err := election.New(client, name, opts...)
	if err != nil {
		closeClient()
		return nil, nil, withCode(exitUsage, err)
	}
	return e, closeClient, nil
}

// checkElectionName refuses a bad NAME argument as bad usage.
func checkElectionName(name string) error {
	if err := election.CheckName(name); err != nil {
		return withCode(exitUsage, err)
	}
	return nil
}

// newElectCmd builds "dlm elect": run a command only while leader.
func newElectCmd() *cobra.Command {
	var (
		ef     nodeFlags
		id     string
		ttl    time.Duration
		wait   time.Duration
		grace  time.Duration
		maxExt int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "elect [flags] NAME --id ID -- COMMAND [ARGS...]",
		Short: "Campaign for the election NAME as ID and run a command only while ID leads",
		Long: `Campaign for the leader election NAME as the candidate ID (blocking until
elected, or until --wait passes), then run COMMAND while ID is the leader.

The leadership is a fenced Redlock lock kept by extension every ttl/3
for as long as dlm runs and a quorum of nodes answers: the same term, with
no gap and no bound on the extensions. If dlm cannot extend (it hangs or is
stopped, or the nodes are cut off), the leadership ends within --ttl and
another candidate is elected. The term is a fencing token, strictly
greater than every earlier leader's (extension and fencing are argued in
docs/spec/redlock.md). The command gets DLM_ELECTION,
DLM_LEADER_ID and DLM_LEADER_TERM in its environment: pass the term with
every write that only the leader may make, so that a store can refuse a
deposed leader. The command does NOT get DLM_NODES.

The command runs under the same guard as dlm lock (see dlm lock --help):
its process group never outlives the leadership. If the leadership is lost
while the command runs, the group gets SIGTERM, then SIGKILL after --grace,
and dlm exits 74. When the command exits, dlm resigns, so that another
candidate is elected at once; a resignation that finds the leadership no
longer held (lost after the last extension), or gone from a node that
had granted it while too few nodes confirm the resignation, exits 74 as
well. If dlm dies without resigning, the next leader is elected within
about --ttl.

ID is public (dlm leader prints it); it must be printable, 1 to 256 bytes.

While it waits, dlm elect says who leads and since when, on its standard
error when that is a terminal; with --json it writes JSON lines there
instead, whether a terminal or not: {"event":"leader","name":NAME,
"leader":ID or null,"term":N,"since":TIME or null} at each change of
leader while waiting, {"event":"elected",...,"leader":ID,...} when elected,
{"event":"ended",...,"reason":TEXT} when the leadership ends (TEXT
"resigned", or starting with "lost"), and {"event":"warning","name":NAME,
"message":TEXT} for what is unsafe about the nodes (see below).

Before it campaigns, dlm elect checks the nodes: a --ttl over the max ttl a
node advertises (dlm node --max-ttl) or one server given twice is refused
(64); a node that does not sync every write to disk (dlm node --fencing
does) gets a warning, since a crash there can make a term go back.

Exit codes: 64 bad usage; 69 nodes unreachable (no quorum possible);
74 leadership lost while the command ran; 75 not elected within --wait (or
interrupted); otherwise the command's own exit code.`,
		Example: `  dlm elect --nodes redis://n1:6379,redis://n2:6379,redis://n3:6379 scheduler --id "$(hostname)" -- ./scheduler
  DLM_NODES=... dlm elect --ttl 5s --wait 1m cron --id worker-7 -- sh -c 'run-jobs --term "$DLM_LEADER_TERM"'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				return usageErrorf("missing `--` before the command: dlm elect [flags] NAME --id ID -- COMMAND [ARGS...]")
			}
			if dash != 1 {
				return usageErrorf("want exactly one election NAME before `--`, got %d (%q)", dash, args[:dash])
			}
			name, argv := args[0], args[dash:]
			if err := checkElectionName(name); err != nil {
				return err
			}
			if err := election.CheckID(id); err != nil {
				return withCode(exitUsage, fmt.Errorf("--id: %w", err))
			}
			switch {
			case len(argv) == 0:
				return usageErrorf("no command after `--`: dlm elect [flags] NAME --id ID -- COMMAND [ARGS...]")
			case wait < 0:
				return usageErrorf("--wait must be 0 (campaign until interrupted) or positive, got %v", wait)
			}
			if err := checkHoldFlags(ttl, grace, maxExt, ef.nodeTO); err != nil {
				return err
			}
			// Signals from now on end the campaign (through the root
			// context) and, once elected, go to the command.
			sigs := make(chan os.Signal, 8)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			defer signal.Stop(sigs)
			ctx := cmd.Context()
			ann := announcer{w: cmd.ErrOrStderr(), json: asJSON, tty: isTerminal(cmd.ErrOrStderr()), name: name}
			e, closeClient, err := electionOver(ctx, &ef, name, ttl, ann.warning, election.WithPollInterval(electPoll(ttl)))
			if err != nil {
				return err
			}
			defer closeClient()
			r := lockRun{argv: argv, grace: grace, stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), name: "elect"}
			lead, err := ann.campaign(ctx, e, id, wait)
			if err != nil {
				return err
			}
			what := fmt.Sprintf("leadership of election %q", name)
			if ctx.Err() != nil {
				// A SIGINT or SIGTERM came as the campaign won: the
				// command is not started.
				_ = r.release(ctx, nil, what, lead.Resign)
				return withCode(exitNotAcquired, fmt.Errorf("interrupted while campaigning for %q (%w): the command was not run", name, context.Cause(ctx)))
			}
			env := []string{envElection + "=" + name, envLeaderID + "=" + id, envLeaderTerm + "=" + strconv.FormatUint(lead.Term(), 10)}
			res := r.guarded(sigs, holding{what: what, env: env, done: lead.Done(), err: lead.Err,
				until: lead.Until, margin: guardMargin(ttl)})
			// Resigning tells whether the leadership was still held when
			// the command ended (74 when not), which the ended event says.
			res = r.release(ctx, res, what, lead.Resign)
			ann.ended(lead, res)
			return res
		},
	}
	ef.add(cmd, "prefix of the lock keys on the nodes")
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "the candidate's identity, public (required; printable, at most 256 bytes)")
	f.DurationVar(&ttl, "ttl", redlock.DefaultTTL, "the leadership lock's ttl: a leader stops leading at most this long after its last successful extension; extended every ttl/3; the next leader is elected within about a ttl after a leader dies")
	f.DurationVar(&wait, "wait", 0, "how long to campaign before giving up (0: until interrupted)")
	f.DurationVar(&grace, "grace", 5*time.Second, "after the leadership is lost, time between SIGTERM and SIGKILL to the command")
	f.IntVar(&maxExt, "max-extensions", redlock.DefaultMaxExtensions, "no effect: a leadership renews for as long as dlm and a quorum of nodes are alive")
	_ = f.MarkDeprecated("max-extensions", "a leadership renews for as long as dlm and a quorum of nodes are alive, without a bound; the flag has no effect")
	f.BoolVar(&asJSON, "json", false, `write the election's events as JSON lines on standard error ({"event":"leader"|"elected"|"ended",...})`)
	return cmd
}

// campaign campaigns until elected, the wait passes or ctx ends; a failure
// gets dlm lock's exit codes and reason.
func campaign(ctx context.Context, e *election.Election, id string, wait time.Duration) (*election.Leadership, error) {
	cctx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	lead, err := e.Campaign(cctx, id)
	if err == nil {
		return lead, nil
	}
	if ctx.Err() != nil {
		return nil, withCode(exitNotAcquired, fmt.Errorf("interrupted while campaigning for %q (%w): the command was not run", e.Name(), context.Cause(ctx)))
	}
	if errors.Is(err, redlock.ErrInvalid) || errors.Is(err, election.ErrInvalid) {
		return nil, withCode(exitUsage, err)
	}
	attempts := 1
	var ae *redlock.AcquireError
	if errors.As(err, &ae) {
		attempts = max(ae.Attempts, 1)
	}
	return nil, withCode(acquireCode(err), fmt.Errorf("%q not elected: %w", id, acquireReason(err, wait, attempts)))
}

// leaderJSON is the output of dlm leader --json.
type leaderJSON struct {
	Name   string  `json:"name"`
	Leader *string `json:"leader"`
	Term   uint64  `json:"term"`
	Since  *string `json:"since"` // RFC 3339, UTC, to the millisecond; null when unknown
}

// newLeaderCmd builds "dlm leader": who leads an election.
func newLeaderCmd() *cobra.Command {
	var (
		ef      nodeFlags
		asJSON  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "leader [flags] NAME",
		Short: "Print the current leader of the election NAME and its term",
		Long: `Read the leader of the election NAME (see dlm elect) from every node and
print its identity and term. A leader is reported only when a quorum of
nodes agree on it; between leaders, or while a candidate is still being
elected, there is none, and the term printed is the last one granted.

With --json: {"name":NAME,"leader":ID or null,"term":N,"since":TIME or
null}, TIME when the leader was elected (RFC 3339, UTC; null without a
leader, or for a leader elected by a dlm that did not publish it).

Exit codes: 0 the leader (or its absence) was read; 64 bad usage; 69 too
few nodes answered to tell.`,
		Example: `  DLM_NODES=... dlm leader scheduler --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("want exactly one election NAME, got %d (%q)", len(args), args)
			}
			return checkElectionName(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive, got %v", timeout)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			e, closeClient, err := electionOver(ctx, &ef, name, redlock.DefaultTTL, nil)
			if err != nil {
				return err
			}
			defer closeClient()
			st, err := e.Status(ctx)
			switch {
			case errors.Is(err, election.ErrNoQuorum):
				return withCode(exitUnavailable, err)
			case err != nil:
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(leaderOut(name, st))
			}
			_, err = fmt.Fprintln(out, describeLeader(name, st, time.Now()))
			return err
		},
	}
	ef.add(cmd, "prefix of the lock keys on the nodes")
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, `print {"name":NAME,"leader":ID or null,"term":N,"since":TIME or null}`)
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to try to reach the nodes")
	return cmd
}

// electPoll is how often a waiting dlm elect reads who leads: often enough
// to tell a change within the failover time (about a ttl), seldom enough
// to cost the nodes little over a long wait.
func electPoll(ttl time.Duration) time.Duration {
	return min(max(ttl/3, 100*time.Millisecond), time.Second)
}

// leaderOut is the JSON of an election's status (dlm leader --json).
func leaderOut(name string, st election.Status) leaderJSON {
	j := leaderJSON{Name: name, Term: st.Leader.Term}
	if st.OK {
		id := st.Leader.ID
		j.Leader = &id
		if !st.Since.IsZero() {
			since := st.Since.UTC().Format(time.RFC3339Nano)
			j.Since = &since
		}
	}
	return j
}

// describeLeader says who leads the election and since when, in one line
// (dlm leader, and a waiting dlm elect on a terminal).
func describeLeader(name string, st election.Status, now time.Time) string {
	switch {
	case !st.OK:
		return fmt.Sprintf("election %q: no leader (last term %d)", name, st.Leader.Term)
	case st.Since.IsZero():
		return fmt.Sprintf("election %q: leader %q, term %d", name, st.Leader.ID, st.Leader.Term)
	}
	return fmt.Sprintf("election %q: leader %q, term %d, since %s (%s ago)", name, st.Leader.ID, st.Leader.Term,
		st.Since.UTC().Format(time.RFC3339), now.Sub(st.Since).Round(time.Second))
}

// electEvent is one JSON line of dlm elect --json.
type electEvent struct {
	Event string `json:"event"` // leader, elected, ended
	leaderJSON
	Reason string `json:"reason,omitempty"` // ended: why
	Error  string `json:"error,omitempty"`  // leader: a term that went down (election.ErrTermDecreased)
}

// announcer tells what a dlm elect sees of its election: on a terminal in
// words, with --json as JSON lines, else nothing.
type announcer struct {
	w         io.Writer
	json, tty bool
	name      string
}

func (a announcer) on() bool { return a.json || a.tty }

// event writes one event.
func (a announcer) event(ev string, st election.Status, reason string, err error) {
	switch {
	case !a.on():
		return
	case a.json:
		e := electEvent{Event: ev, leaderJSON: leaderOut(a.name, st), Reason: reason}
		if err != nil {
			e.Error = err.Error()
		}
		_ = json.NewEncoder(a.w).Encode(e)
		return
	}
	line := describeLeader(a.name, st, time.Now())
	switch {
	case ev == "elected":
		line = "dlm elect: elected: " + line
	case ev == "ended":
		line = "dlm elect: leadership ended (" + reason + "): " + line
	default:
		line = "dlm elect: waiting: " + line
	}
	if err != nil {
		line += ": " + err.Error()
	}
	_, _ = fmt.Fprintln(a.w, line)
}

// warning says what is unsafe about the nodes, once: a JSON line
// {"event":"warning","name":NAME,"message":TEXT} with --json, else a line
// of text (whether a terminal or not: it is a warning, not a progress
// report).
func (a announcer) warning(msg string) {
	if a.json {
		_ = json.NewEncoder(a.w).Encode(struct {
			Event   string `json:"event"`
			Name    string `json:"name"`
			Message string `json:"message"`
		}{"warning", a.name, msg})
		return
	}
	_, _ = fmt.Fprintln(a.w, "dlm elect: warning: "+msg)
}

// campaign is campaign, telling meanwhile who leads (Observe) when on.
func (a announcer) campaign(ctx context.Context, e *election.Election, id string, wait time.Duration) (*election.Leadership, error) {
	if !a.on() {
		return campaign(ctx, e, id, wait)
	}
	octx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for c := range e.Observe(octx) {
			a.event("leader", election.Status{Leader: c.Leader, OK: c.Leader.ID != "", Since: c.Since}, "", c.Err)
		}
	}()
	lead, err := campaign(ctx, e, id, wait)
	stop()
	<-watched
	if err == nil {
		a.event("elected", election.Status{Leader: election.Leader{ID: lead.ID(), Term: lead.Term()}, OK: true, Since: lead.Since()}, "", nil)
	}
	return lead, err
}

// ended tells that the leadership ended, and why: "lost: " and the
// library's reason; or lost when dlm's result res is 74 (the guard ended
// the command at the end of the validity, or the resignation found the
// leadership no longer held: the library may not have known, and the
// resignation would read as one); else resigned.
func (a announcer) ended(lead *election.Leadership, res error) {
	if !a.on() {
		return
	}
	reason := "resigned"
	switch err := lead.Err(); {
	case err != nil && !errors.Is(err, redlock.ErrUnlocked):
		reason = "lost: " + oneLine(err)
	case exitCode(res) == exitLockLost:
		reason = "lost: the nodes no longer held it when the command ended, or its validity ended without an extension"
	}
	a.event("ended", election.Status{Leader: election.Leader{ID: lead.ID(), Term: lead.Term()}, OK: true, Since: lead.Since()}, reason, nil)
}
