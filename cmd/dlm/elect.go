package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// electionOver dials a fenced client with the node flags nf and opts (ttl
// bounds the node timeout) and returns the election name over it, and the
// function that closes the client.
func electionOver(ctx context.Context, nf *nodeFlags, name string, ttl time.Duration, opts ...redlock.Option) (*election.Election, func(), error) {
	client, closeClient, err := nf.client(ctx, ttl, append([]redlock.Option{redlock.WithFencing()}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	e, err := election.New(client, name)
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
	)
	cmd := &cobra.Command{
		Use:   "elect [flags] NAME --id ID -- COMMAND [ARGS...]",
		Short: "Campaign for the election NAME as ID and run a command only while ID leads",
		Long: `Campaign for the leader election NAME as the candidate ID (blocking until
elected, or until --wait passes), then run COMMAND while ID is the leader.

The leadership is a fenced Redlock lock kept by extension every ttl/3 (R17),
at most --max-extensions times; its term is a fencing token (R18), strictly
greater than every earlier leader's. The command gets DLM_ELECTION,
DLM_LEADER_ID and DLM_LEADER_TERM in its environment: pass the term with
every write that only the leader may make, so that a store can refuse a
deposed leader. The command does NOT get DLM_NODES.

The command runs under the same guard as dlm lock (see dlm lock --help):
its process group never outlives the leadership. If the leadership is lost
while the command runs, the group gets SIGTERM, then SIGKILL after --grace,
and dlm exits 74. When the command exits, dlm resigns, so that another
candidate is elected at once. If dlm dies without resigning, the next leader
is elected within about --ttl.

ID is public (dlm leader prints it); it must be printable, 1 to 256 bytes.

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
			e, closeClient, err := electionOver(ctx, &ef, name, ttl, redlock.WithMaxExtensions(maxExt))
			if err != nil {
				return err
			}
			defer closeClient()
			r := lockRun{argv: argv, grace: grace, stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), name: "elect"}
			lead, err := campaign(ctx, e, id, wait)
			if err != nil {
				return err
			}
			defer func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
				defer cancel()
				if rerr := lead.Resign(rctx); rerr != nil && !errors.Is(rerr, redlock.ErrNotHeld) {
					r.errf("resignation from %q incomplete (the keys expire by themselves within the ttl): %v", name, rerr)
				}
			}()
			env := []string{envElection + "=" + name, envLeaderID + "=" + id, envLeaderTerm + "=" + strconv.FormatUint(lead.Term(), 10)}
			return r.guarded(sigs, holding{what: fmt.Sprintf("leadership of election %q", name), env: env, done: lead.Done(), err: lead.Err})
		},
	}
	ef.add(cmd, "prefix of the lock keys on the nodes")
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "the candidate's identity, public (required; printable, at most 256 bytes)")
	f.DurationVar(&ttl, "ttl", redlock.DefaultTTL, "leadership validity (R6): extended every ttl/3; the next leader is elected within about a ttl after a leader dies")
	f.DurationVar(&wait, "wait", 0, "how long to campaign before giving up (0: until interrupted)")
	f.DurationVar(&grace, "grace", 5*time.Second, "after the leadership is lost, time between SIGTERM and SIGKILL to the command")
	f.IntVar(&maxExt, "max-extensions", redlock.DefaultMaxExtensions, "bound on the leadership's extensions (R17): the term ends, as on a loss, after about max-extensions x ttl/3")
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

With --json: {"name":NAME,"leader":ID or null,"term":N}.

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
			e, closeClient, err := electionOver(ctx, &ef, name, redlock.DefaultTTL)
			if err != nil {
				return err
			}
			defer closeClient()
			ld, ok, err := e.Leader(ctx)
			switch {
			case errors.Is(err, election.ErrNoQuorum):
				return withCode(exitUnavailable, err)
			case err != nil:
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				j := leaderJSON{Name: name, Term: ld.Term}
				if ok {
					j.Leader = &ld.ID
				}
				return json.NewEncoder(out).Encode(j)
			}
			if ok {
				_, err = fmt.Fprintf(out, "election %q: leader %q, term %d\n", name, ld.ID, ld.Term)
			} else {
				_, err = fmt.Fprintf(out, "election %q: no leader (last term %d)\n", name, ld.Term)
			}
			return err
		},
	}
	ef.add(cmd, "prefix of the lock keys on the nodes")
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, `print {"name":NAME,"leader":ID or null,"term":N}`)
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to try to reach the nodes")
	return cmd
}
