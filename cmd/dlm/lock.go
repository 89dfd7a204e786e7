package main

import (
	"bufio"
	"context"
	"encoding/binary"
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"dlm/redlock"
)

// Environment variables dlm lock sets for the child.
const (
	envLockResource = "DLM_LOCK_RESOURCE"
	envLockValue    = "DLM_LOCK_VALUE"
	envLockToken    = "DLM_LOCK_TOKEN"
)

// releaseTimeout bounds the release of the lock after the child exits.
const releaseTimeout = 5 * time.Second

// newLockCmd builds "dlm lock": the distributed flock(1).
func newLockCmd() *cobra.Command {
	var (
		nodes  []string
		ttl    time.Duration
		wait   time.Duration
		grace  time.Duration
		nodeTO time.Duration
		maxExt int
		fence  bool
		read   bool // --read: a read lock (RLock)
		write  bool // --write: a write lock (WLock)
		prefix string
		tlsf   tlsFiles
		adapt  string
		pidns  bool
		owner  string // --owner (handle.go)
		own    int    // --dlm-exit-code: the exit of every failure of dlm's own (0: dlm's codes)
		tags   bool   // --hash-tags
	)
	var unchecked bool  // --unchecked-nodes
	var promotable bool // --promotable-replicas
	cmd := &cobra.Command{
		Use:   "lock [flags] RESOURCE [RESOURCE...] -- COMMAND [ARGS...]",
		Short: "Run a command while holding a distributed lock on RESOURCE",
		Long: `Acquire a Redlock lock on RESOURCE, run COMMAND, release the lock.

With several resources, they are locked as one lock, all or nothing, in one
round (each node sets every resource's key in one atomic step, only if none
is held): two commands whose sets overlap never both run, and never
deadlock whatever order they name the resources in. DLM_LOCK_RESOURCE then
holds the names, sorted, one per line (a name has no control character, so
the list is unambiguous whatever the names hold, commas included): read it
with while IFS= read -r r; do ...; done <<< "$DLM_LOCK_RESOURCE". With one
resource it is the name itself.

The lock is extended every ttl/3 while the command runs, at most
--max-extensions times. The command gets DLM_LOCK_RESOURCE, DLM_LOCK_VALUE
(the lock's random value) and, with --fencing, DLM_LOCK_TOKEN (a fencing
token) in its environment. It does NOT get DLM_NODES, which may hold
passwords; the rest of dlm's environment is passed on.

The command runs under a small guard process, in the guard's own process
group (the terminal's foreground group when dlm is in the foreground, so
Ctrl-C reaches it once) and, on Linux when the kernel allows it, in a PID
namespace of its own, with a /proc of that namespace, where ps and pgrep
see the command's processes by the pids it knows ($$, $!) and no others
(as root; for other users inside an unprivileged user namespace that maps
only their own uid and gid, where setuid programs such as sudo cannot gain
privilege). SIGINT, SIGTERM, SIGHUP and
SIGQUIT sent to dlm are forwarded to the whole group. The command and
everything it started never outlive the lock: the guard knows the end of
the lock's validity (dlm sends it each new one after an extension) and
kills them all with SIGKILL a tenth of the ttl (at least 500ms, at most
a fifth of the ttl) before it, should dlm be stopped or too slow to extend
(and, should the guard be stopped too, as pkill -STOP dlm does, a kernel
timer kills them three quarters of that margin before the end of the
validity); when the command exits, what it left running is killed
before the lock is released; if dlm dies, even by
SIGKILL, the guard kills them at once; if the guard dies, with dlm or
alone, the kernel ends the PID namespace and everything in it. On Linux,
where the kernel refuses the guard every namespace (a container's seccomp
profile, user namespaces disabled), dlm says so and exits 71 without
running the command, unless --pid-namespace=false tells it to run without
one. Without a namespace (--pid-namespace=false, or not Linux) a process
that leaves the group (setsid) escapes when the guard is killed, and the
command's children run on when dlm and the guard are killed together
(docs/operations.md, "Signals").

Ctrl-Z stops the command and dlm with it, and the shell gets its
prompt back, as under flock(1); fg continues them. The lock is not
extended while dlm is stopped: a job not continued within the lock's
validity has its command killed at its end, and dlm, once continued,
exits 74.

Before it acquires, dlm lock checks the nodes: a --ttl over the max ttl
that a node advertises (dlm node --max-ttl; a node restarted after a
crash without persistence has forgotten its locks once that has passed)
and one server given twice are refused (64); --fencing on a node that does
not sync every write to disk (dlm node --fencing does) and an even number
of nodes get a one-line warning each.

With --read, the lock is a read lock: any number of dlm lock --read
commands on RESOURCE run at once, and none while a --write or a plain dlm
lock holds it. With --write, it excludes readers, writers and plain locks
alike, and a waiting writer keeps new readers out (writers are not starved
by readers). Both take one RESOURCE; --write takes --fencing too.

If the lock is lost while the command runs (a quorum of nodes no longer
holds it), the group gets SIGTERM, then SIGKILL after --grace or at the end
of the validity, whichever comes first, and dlm exits 74; when the
validity runs out (the extension bound, or extensions that keep failing)
the guard kills the command at its end, and dlm exits 74. A loss that no
extension saw before the command ended (the nodes flushed or restarted
without persistence, an eviction, dlm release --force) is found by the
release after it: dlm says so and exits 74 too, since another holder may
have run meanwhile. So does a release that finds the lock gone from a node
that had granted it while too few nodes confirm the release (one hangs):
the lock may have been lost, and dlm cannot show otherwise. A loss on
nodes that do not answer the release at all is not seen: dlm says the
release is incomplete and exits with the command's code (the validity
its extensions confirmed outlasted the command).

Exit codes: 64 bad usage; 69 nodes unreachable (no quorum possible);
71 the kernel refuses the guard a PID namespace (see above); 74 lock lost
while the command ran; 75 lock held elsewhere (not acquired within
--wait); 126 the command cannot be executed; 127 it was not found;
otherwise the command's own exit code (128+N when it was killed by signal
N).

A command may exit with one of these codes itself: its own codes are
passed through unchanged, so an exit of 74 alone does not say whether the
lock was lost or the command chose 74. Two things tell them apart. Every
exit that dlm decides itself prints a line on stderr that starts with
"dlm" and says why; an exit of the command adds nothing of dlm's. And
--dlm-exit-code N (like flock(1)'s -E) makes every such exit of dlm's N
instead (1 to 255; pick one the command never uses): the command was not
run (bad usage, nodes unreachable, lock held elsewhere, a PID namespace
refused, the command not found or not executable, a signal before it
started), or the lock was lost while it ran. The command's own codes
stay its own, 0 included.`,
		Example: `  dlm lock --nodes redis://n1:6379,redis://n2:6379,redis://n3:6379 backup -- ./backup.sh
  DLM_NODES=... dlm lock --wait 1m --ttl 30s nightly-report -- make report
  DLM_NODES=... dlm lock --wait 5m db-primary db-replica -- ./migrate.sh
  DLM_NODES=... dlm lock --read --wait 1m catalog -- ./export.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				return usageErrorf("missing `--` before the command: dlm lock [flags] RESOURCE [RESOURCE...] -- COMMAND [ARGS...]")
			}
			resources, argv := args[:dash], args[dash:]
			if len(resources) == 0 {
				return usageErrorf("no RESOURCE before `--`: name the resource (or resources) to lock")
			}
			if err := checkResources(resources); err != nil {
				return err
			}
			switch {
			case len(argv) == 0:
				return usageErrorf("no command after `--`: dlm lock [flags] RESOURCE [RESOURCE...] -- COMMAND [ARGS...]")
			case wait < 0:
				return usageErrorf("--wait must be 0 (one try) or positive, got %v", wait)
			}
			if err := checkHoldFlags(ttl, grace, maxExt, nodeTO); err != nil {
				return err
			}
			switch {
			case read && write:
				return usageErrorf("give --read or --write, not both")
			case (read || write) && len(resources) > 1:
				return usageErrorf("--read and --write lock one RESOURCE, got %d", len(resources))
			case read && fence:
				return usageErrorf("--read cannot be combined with --fencing: a read lock carries no fencing token (--write does)")
			}
			urls, err := resolveNodes(nodes)
			if err != nil {
				return err
			}
			opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithKeyPrefix(prefix), redlock.WithNodeTimeout(nodeTO),
				redlock.WithAutoExtend(), redlock.WithMaxExtensions(maxExt)}
			if fence {
				opts = append(opts, redlock.WithFencing())
			}
			if unchecked {
				opts = append(opts, redlock.WithUncheckedNodes())
			}
			if promotable {
				opts = append(opts, redlock.WithPromotableReplicas())
			}
			opts = append(append(opts, ownerOptions(cmd, owner)...), hashTagsOptions(tags)...)
			if err := refuseAliases(cmd.Context(), urls, tlsf, nodeTO); err != nil {
				return err
			}
			client, closeClient, err := dial(adapt, urls, tlsf, closeGrace(nodeTO), opts...)
			if err != nil {
				return err
			}
			defer closeClient()
			lr := lockRun{
				client: client, resources: resources, resource: strings.Join(slices.Sorted(slices.Values(resources)), ","),
				argv: argv, wait: wait, try: oneTry(nodeTO, ttl), grace: grace, read: read, write: write,
				stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), name: "lock",
				noPIDNS: !pidns, urls: urls, nodeTO: nodeTO,
				check: func(ctx context.Context) error {
					return checkNodes(ctx, client, func(w string) { fmt.Fprintf(cmd.ErrOrStderr(), "dlm lock: warning: %s\n", w) })
				},
			}
			return lr.run(cmd.Context())
		},
	}
	// Every failure of dlm's own, bad flags and arguments included, exits
	// with --dlm-exit-code when it is given (and was read before the bad
	// flag).
	runE := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("dlm-exit-code") && (own < 1 || own > 255) {
			return usageErrorf("--dlm-exit-code must be 1 to 255 (an exit of 0 would read as success), got %d", own)
		}
		return ownExit(runE(cmd, args), own)
	}
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return ownExit(withCode(exitUsage, err), own)
	})
	addNodesFlag(cmd, &nodes)
	f := cmd.Flags()
	f.DurationVar(&ttl, "ttl", redlock.DefaultTTL, "lock validity time; the lock is extended every ttl/3 while the command runs")
	f.DurationVar(&wait, "wait", 0, "how long to keep trying to acquire (0: one try)")
	f.DurationVar(&grace, "grace", 5*time.Second, "after the lock is lost, time between SIGTERM and SIGKILL to the command")
	f.IntVar(&maxExt, "max-extensions", redlock.DefaultMaxExtensions, "bound on the lock's extensions: the command is stopped as on a lost lock after about max-extensions x ttl/3")
	f.BoolVar(&read, "read", false, "take a read lock: shared with other --read locks on RESOURCE, exclusive of --write and plain locks")
	f.BoolVar(&write, "write", false, "take a write lock: exclusive, and a waiting writer keeps new readers out")
	addOwnerFlag(cmd, &owner)
	f.IntVarP(&own, "dlm-exit-code", "E", 0, "exit with this code (1-255) instead of dlm's own whenever dlm, not the command, ends the run with a failure (the command not run, the lock lost); the command's own exit codes are passed through unchanged")
	f.BoolVar(&fence, "fencing", false, "give the command a fencing token in DLM_LOCK_TOKEN, strictly greater than every earlier grant's; the nodes must keep their fence keys (persistence)")
	f.DurationVar(&nodeTO, "node-timeout", redlock.DefaultNodeTimeout, "time each node has to answer a request (small compared to the ttl)")
	f.StringVar(&prefix, "key-prefix", redlock.DefaultKeyPrefix, "prefix of the lock keys on the nodes")
	f.StringVar(&adapt, "adapter", defaultAdapter, "Redis client adapter: "+strings.Join(adapterNames(), " or "))
	addHashTagsFlag(cmd, &tags)
	f.BoolVar(&pidns, "pid-namespace", true, "on Linux, run the command in a PID namespace of its own when the kernel allows it (as root, or for any user in an unprivileged user namespace mapping only the user's own uid and gid, where setuid programs such as sudo do not work), so that nothing it starts survives dlm and its guard killed together, with a /proc of that namespace (ps inside sees the command's processes); false keeps the system's pids and /proc (for pidfiles read outside, ps of other processes) and user, with the guard as subreaper")
	addTLSFlags(cmd, &tlsf)
	addUncheckedFlag(cmd, &unchecked)
	addPromotableFlag(cmd, &promotable)
	return cmd
}

// ownExit is dlm lock's result err with --dlm-exit-code code (0: not
// given): an exit that dlm decided itself, with its reason already
// printed or still to print, exits code instead; the command's own exit
// code, and success, stay as they are.
func ownExit(err error, code int) error {
	if code < 1 || code > 255 || err == nil {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.command {
		return err
	}
	if asExit(err, &ee) {
		return withCode(code, ee.err)
	}
	return withCode(code, err)
}

// checkNodes checks the nodes before dlm relies on them
// (redlock.Client.CheckNodes), by the rule of the locks themselves: one
// server given twice, or refused nodes (a ttl over a node's advertised
// max ttl, replicas, hidden facts) that leave no quorum, is bad usage
// (64); a refused node that leaves a quorum is counted as a failed node
// and warned of, as is what is only unsafe for fencing, or an even
// number of nodes, once, on one line each.
func checkNodes(ctx context.Context, client *redlock.Client, warn func(string)) error {
	rep, err := client.CheckNodes(ctx)
	for _, w := range rep.Warnings {
		warn(w)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	return nil
}

// checkHoldFlags checks the flags of a command that runs a child while it
// holds a lock or a leadership (dlm lock, dlm elect).
func checkHoldFlags(ttl, grace time.Duration, maxExt int, nodeTO time.Duration) error {
	switch {
	case ttl <= 0:
		return usageErrorf("--ttl must be positive, got %v", ttl)
	case ttl > maxLockTTL:
		return overDuration("--ttl", ttl, maxLockTTL)
	case grace < 0:
		return usageErrorf("--grace must be 0 or positive, got %v", grace)
	case maxExt < 1:
		return usageErrorf("--max-extensions must be at least 1 (extension is always bounded), got %d", maxExt)
	}
	return checkNodeTimeout(nodeTO, ttl)
}

// acquireCode maps a failed acquisition to its exit code: 69 when no quorum
// was possible, 75 when the lock is held elsewhere, 64 for bad settings.
func acquireCode(err error) int {
	switch {
	case errors.Is(err, redlock.ErrInvalid):
		return exitUsage
	case unreachable(err):
		return exitUnavailable
	}
	return exitNotAcquired
}

// unreachable reports whether a failed acquisition failed because too many
// nodes errored or timed out for any quorum (R1.3), as opposed to the lock
// being held elsewhere. Nodes that had not answered when the attempt was
// decided count as neither: the attempt stops as soon as a quorum is out of
// reach, often before every node replied. An attempt that the wait ended
// undecided, with no node saying the lock is held, is unreachable too
// (unanswered), and so is a lock granted and given back because its nodes
// answer too slowly for it to be kept (AcquireError.RoundTrip).
func unreachable(err error) bool {
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) || len(ae.Nodes) == 0 {
		return errors.Is(err, redlock.ErrNoQuorum)
	}
	down := ae.Count(redlock.Failed) + ae.Count(redlock.TimedOut)
	return down > len(ae.Nodes)-ae.Quorum || unanswered(ae) || ae.RoundTrip > 0
}

// unanswered reports whether the wait ended ae's attempt before a quorum
// answered, with no node saying the lock is held: a node the attempt
// waited for (a new client waits for a node it has no history of as for a
// slow one) had not answered.
func unanswered(ae *redlock.AcquireError) bool {
	return ae.Validity == 0 && ae.Count(redlock.Held) == 0 && ae.Count(redlock.NoReply) > 0
}

// acquireReason turns a failed acquisition into the one-line reason dlm
// prints: why (no quorum, held elsewhere), within what wait, and each node
// that refused or failed.
func acquireReason(err error, wait time.Duration, attempts int) error {
	return acquireReasonHinted(err, wait, attempts, nil)
}

// acquireReasonHinted is acquireReason with hints, what dlm found out
// about some of the nodes that failed or timed out (schemeHints), by node
// name, said beside them instead of a guess from the error alone.
func acquireReasonHinted(err error, wait time.Duration, attempts int, hints map[string]string) error {
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) || errors.Is(err, redlock.ErrInvalid) {
		return err // a setting to fix (the nodes deny the user a command): the library's words
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lock %q not acquired", ae.Resource)
	if wait > 0 {
		fmt.Fprintf(&b, " within --wait %v (%d attempts)", wait, attempts)
	}
	down := ae.Count(redlock.Failed) + ae.Count(redlock.TimedOut)
	switch {
	case ae.RoundTrip > 0:
		fmt.Fprintf(&b, ": granted, then given back: its first extension took %v, too slow for the lock to be kept", ae.RoundTrip.Round(time.Millisecond))
	case down > len(ae.Nodes)-ae.Quorum:
		fmt.Fprintf(&b, ": no quorum possible, %d of %d nodes failed or timed out, a quorum needs %d", down, len(ae.Nodes), ae.Quorum)
	case ae.Validity != 0:
		fmt.Fprintf(&b, ": quorum reached too late (validity %v); nodes are slow", ae.Validity)
	case ae.Count(redlock.NoReply) == len(ae.Nodes):
		b.WriteString(": no node answered in time")
	case unanswered(ae):
		fmt.Fprintf(&b, ": no quorum in time, %d of %d nodes granted it, %d needed, none said it is held", ae.Count(redlock.Acquired), len(ae.Nodes), ae.Quorum)
	default:
		fmt.Fprintf(&b, ": held elsewhere, %d of %d nodes granted it, %d needed", ae.Count(redlock.Acquired), len(ae.Nodes), ae.Quorum)
	}
	if nr := ae.Count(redlock.NoReply); nr > 0 {
		fmt.Fprintf(&b, " (%d not waited for)", nr)
	}
	sep := "; "
	for _, n := range ae.Nodes {
		if n.Outcome == redlock.Acquired || n.Outcome == redlock.NoReply {
			continue
		}
		b.WriteString(sep)
		sep = ", "
		b.WriteString(n.Node + " " + n.Outcome.String())
		hint, hinted := hints[n.Node]
		switch {
		case n.Err != nil && n.Outcome == redlock.Failed && hinted:
			fmt.Fprintf(&b, " (%v; %s)", n.Err, hint)
		case n.Err != nil && n.Outcome == redlock.Failed:
			fmt.Fprintf(&b, " (%v)", withTLSHint(n.Err))
		case hinted:
			fmt.Fprintf(&b, " (%s)", hint)
		}
	}
	switch {
	case ae.RoundTrip > 0 && ae.TTL > 0:
		fmt.Fprintf(&b, "; the nodes answered in %v, over %v, the slowest round trip over which a lock of --ttl %v is kept with a third of the ttl left at each extension: nodes that answer this late need a longer --ttl (more than %.1fx their round trip)",
			ae.RoundTrip.Round(time.Millisecond), ae.Patience.Round(time.Millisecond), ae.TTL, float64(ae.TTL)/float64(ae.Patience))
	case ae.Patience > 0 && ae.TTL > 0:
		fmt.Fprintf(&b, "; nodes timed out after %v, the longest a lock of --ttl %v waits for a slow node and can still be kept: nodes that answer later need a longer --ttl (more than %.1fx their round trip)",
			ae.Patience.Round(time.Millisecond), ae.TTL, float64(ae.TTL)/float64(ae.Patience))
	}
	return &reasonError{msg: b.String(), err: err}
}

// reasonError replaces the text of err with a reason written for the
// command line, keeping err for errors.Is.
type reasonError struct {
	msg string
	err error
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.err }

// lockRun is one dlm lock invocation.
type lockRun struct {
	client    *redlock.Client
	resources []string // one, or a set locked as one (LockAll)
	resource  string   // the resources, sorted, joined by "," (messages)
	argv      []string
	wait      time.Duration
	try       time.Duration // the bound of one try (--wait 0): oneTry
	grace     time.Duration
	read      bool // --read: RLock
	write     bool // --write: WLock
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	name      string        // the subcommand, for messages: "lock" or "elect"
	noPIDNS   bool          // --pid-namespace=false: no PID namespace for the guard
	urls      []string      // the node URLs, for the hints of a failed acquisition (schemeHints)
	nodeTO    time.Duration // --node-timeout
	// check, when set, checks the nodes (checkNodes) while the lock is
	// being acquired; the command runs only if it passes.
	check func(ctx context.Context) error
}

func (r *lockRun) errf(format string, args ...any) {
	fmt.Fprintf(r.stderr, "dlm "+r.name+": "+format+"\n", args...)
}

// run acquires, runs the child, keeps the lock and releases it.
func (r *lockRun) run(ctx context.Context) error {
	// Signals that arrive from now on are the child's (forwarded by
	// guarded); the root context, which the same signals cancel, only
	// bounds the acquisition.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	// The nodes are checked while the lock is acquired, so that a node
	// that does not answer costs the check's wait once, not on top of the
	// acquisition's; the command runs only if both succeed.
	checked := make(chan error, 1)
	if r.check != nil {
		go func() { checked <- r.check(ctx) }()
	} else {
		checked <- nil
	}
	l, err := r.acquire(ctx)
	cerr := <-checked
	if err != nil {
		return err
	}
	if cerr != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		_ = l.Unlock(uctx) // acquired while the check ran: given up at once
		return cerr
	}
	what := fmt.Sprintf("lock on %q", r.resource)
	if ctx.Err() != nil {
		// A SIGINT or SIGTERM came while the lock was granted (or before
		// sigs watched): the command is not started.
		_ = r.release(ctx, nil, what, l.Unlock)
		return withCode(exitNotAcquired, fmt.Errorf("interrupted while acquiring lock %q (%w): the command was not run", r.resource, context.Cause(ctx)))
	}
	env := []string{envLockResource + "=" + resourceEnv(r.resources), envLockValue + "=" + l.Value()}
	if tok := l.Token(); tok != 0 {
		env = append(env, envLockToken+"="+strconv.FormatUint(tok, 10))
	}
	// The client extends the lock every ttl/3 (WithAutoExtend) and
	// closes Done when it is lost.
	res := r.guarded(sigs, holding{what: what, env: env, done: l.Done(), err: l.Err,
		until: l.Until, margin: guardMargin(l.TTL())})
	return r.release(ctx, res, what, l.Unlock)
}

// release gives up what the command ran under (release: Unlock of the
// lock, Resign of the leadership) once the command has ended, and returns
// dlm's result: res, the command's, unless the release found that it was
// no longer held, or could not show that it was held to the end. A loss
// that happened after dlm's last extension and before the command ended
// is seen only here (a quorum of nodes flushed, restarted without
// persistence, evicted it, or an operator forced its release): another
// holder may have run beside the command, so dlm exits 74 and says so. So
// it does when a node that granted the lock no longer held it and too few
// confirmed the release (redlock.ErrMaybeLost): the others may have lost
// it too. Nothing cancels the release: it runs detached from ctx,
// within releaseTimeout.
func (r *lockRun) release(ctx context.Context, res error, what string, release func(context.Context) error) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := release(uctx)
	switch {
	case err == nil:
		return res
	case errors.Is(err, redlock.ErrNotHeld):
		if ee := (*exitError)(nil); asExit(res, &ee) && !ee.command && ee.code == exitLockLost {
			return res // said once, where it was found
		}
		r.errf("%s lost before the command ended: at the release, too many nodes no longer held it (expired, flushed, evicted, or released by force); another holder may have run meanwhile", what)
		return withCode(exitLockLost, nil)
	case errors.Is(err, redlock.ErrMaybeLost):
		if ee := (*exitError)(nil); asExit(res, &ee) && !ee.command && ee.code == exitLockLost {
			return res
		}
		r.errf("%s may have been lost before the command ended: at the release, a node that had granted it held it no longer, and too few nodes confirmed the release to show it was held to the end; another holder may have run meanwhile: %v", what, oneLine(err))
		return withCode(exitLockLost, nil)
	}
	r.errf("release of the %s incomplete (the keys expire by themselves within the ttl): %v", what, oneLine(err))
	return res
}

// oneLine is err's text on one line: the errors that errors.Join put on
// lines of their own are separated by "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// resourceEnv is the value of DLM_LOCK_RESOURCE: the names, sorted, one
// per line. checkResources refuses control characters in a name, so no
// name holds a newline and the list reads back unambiguously (a comma,
// which a name may hold, would not do).
func resourceEnv(resources []string) string {
	return strings.Join(slices.Sorted(slices.Values(resources)), "\n")
}

// endReasonWait bounds how long past the end of a lock's validity dlm
// waits for the client to say why the lock ended, after the guard killed
// the command at its deadline.
const endReasonWait = 2 * time.Second

// guardMargin is how long before the end of a lock's validity the guard
// kills a command that dlm did not extend in time: a tenth of the ttl,
// and at least minGuardMargin (at most a fifth of the ttl), so that the
// kill lands before the keys can expire on a busy machine. It costs a
// kept lock nothing: the library's extensions land with at least
// redlock.AutoExtendLead (a third of the ttl) left while the nodes answer
// within about a third of the ttl, and the margin is at most three fifths
// of that lead, so that the new end reaches the guard (dlm looks every
// tenth of the validity or so) before the old deadline.
func guardMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, min(redlock.AutoExtendLead(ttl)*3/5, minGuardMargin))
}

// renewEvery is how often dlm looks for a new end of the validity to send
// the guard, when the guard's first deadline is left away: a tenth of it.
func renewEvery(left time.Duration) time.Duration {
	return max(time.Millisecond, left/10)
}

// minGuardMargin is the least margin of the guard's kill. The kill goes
// through the guard's wake-up, SIGKILL of the group and the processes'
// exits, and for the kernel timer's kill (three quarters of the margin
// before the end) two process exits more, the sentinel's and then the
// guard's, before the namespace dies. 250 ms took up to 170 ms on a loaded
// 2-core machine, and a command's processes still outlived the lock at
// load 20-30 (TestLockCommandNeverOutlivesTheLock, "SIGSTOP of dlm,
// subreaper", ttl 3 s: the next holder got the lock while the command ran).
const minGuardMargin = 500 * time.Millisecond

// holding is what a guarded command runs under: a lock (dlm lock) or a
// leadership (dlm elect). Done closes when it is lost, and err says why.
type holding struct {
	what string   // "lock on \"x\"", for messages
	env  []string // the command's extra environment
	done <-chan struct{}
	err  func() error
	// until, when set, returns the end of the validity (it moves on each
	// extension); the guard kills the command margin before it unless dlm
	// sent a later one. Without it, the guard has no deadline.
	until  func() time.Time
	margin time.Duration
}

// guarded runs the command under the guard (lock_guard.go) while h is
// held: it forwards sigs to the command's process group; when h is lost
// it sends SIGTERM to the group, SIGKILL after the grace, and returns exit
// 74; when the command exits it kills what the command left running, and
// returns the command's exit code. The caller gives h up after it returns.
//
// The guard gets the deadline before the command starts and each new one
// soon after an extension (dlm looks every tenth of the remaining validity
// at first, every ttl/10 or so after), and kills the command at it: a dlm
// that is stopped or too slow cannot leave the command running past the
// lock (lock_guard.go).
func (r *lockRun) guarded(sigs <-chan os.Signal, h holding) error {
	// until is the end of the validity (zero: none); the guard's own
	// deadline is h.margin before it.
	until := func() time.Time {
		if h.until == nil {
			return time.Time{}
		}
		return h.until()
	}
	deadline := func() time.Time {
		if h.until == nil {
			return time.Time{}
		}
		return h.until().Add(-h.margin)
	}
	sent := deadline()
	child, err := r.start(h.env, deadlineFrame(until(), h.margin))
	if err != nil {
		return err
	}
	var renew <-chan time.Time
	if !sent.IsZero() {
		t := time.NewTicker(renewEvery(time.Until(sent)))
		defer t.Stop()
		renew = t.C
	}
	pgid := child.guard.Process.Pid // the guard leads the group
	group := func(s syscall.Signal) { _ = syscall.Kill(-pgid, s) }

	// Job control: Ctrl-Z stops the command (the terminal's foreground
	// group is the command's); dlm then stops its own group, so that the
	// shell sees the job stopped, and when continued (fg, bg) continues
	// the command (stopJob).
	var conts chan os.Signal
	if child.tty >= 0 {
		conts = make(chan os.Signal, 1)
		signal.Notify(conts, syscall.SIGCONT)
		defer signal.Stop(conts)
	}
	stoppedJob := false // dlm stopped its job at least once

	lostc := h.done
	var (
		lostErr error
		kill    <-chan time.Time
		readyc  = child.ready
		early   []syscall.Signal // signals that came before the command was in the group
	)
	for {
		select {
		case sig := <-child.stops:
			if r.stopJob(child.tty, pgid, sig, h.what, deadline(), group) {
				stoppedJob = true
			}
		case <-conts:
			// Continued: the command's group gets the terminal back if
			// the shell gave it to dlm's (fg; not bg), and SIGCONT.
			if foregroundTTY(r.stdin) == child.tty {
				giveTerminal(child.tty, pgid)
			}
			group(syscall.SIGCONT)
		case s := <-sigs:
			if readyc != nil {
				early = append(early, s.(syscall.Signal))
				continue
			}
			group(s.(syscall.Signal))
		case <-readyc:
			readyc = nil
			for _, s := range early {
				group(s)
			}
			early = nil
		case <-renew:
			if u := until(); !u.Add(-h.margin).Equal(sent) {
				sent = u.Add(-h.margin)
				child.send(deadlineFrame(u, h.margin))
			}
		case <-lostc:
			lostc = nil
			if stoppedJob && !sent.IsZero() && !time.Now().Before(deadline()) {
				// dlm was stopped with its job past the deadline, where
				// the guard kills the command: said at its end, below.
				group(syscall.SIGKILL)
				continue
			}
			lostErr = h.err()
			// SIGKILL after the grace, or at the guard's deadline if that
			// comes first: a guard that is stopped or starved must not
			// let the grace outlast the validity.
			wait := r.grace
			if d := deadline(); !d.IsZero() {
				wait = min(wait, max(0, time.Until(d)))
			}
			r.errf("%s lost while the command ran: %s; sending SIGTERM to the command's process group (SIGKILL in %v)", h.what, oneLine(lostErr), wait.Round(time.Millisecond))
			group(syscall.SIGTERM)
			kill = time.After(wait)
		case <-kill:
			group(syscall.SIGKILL)
		case werr := <-child.exited:
			// Whatever the command left running dies before the lock is
			// released: nothing may run unprotected.
			group(syscall.SIGKILL)
			child.done()
			if lostErr != nil {
				return withCode(exitLockLost, nil) // the reason was printed above, once
			}
			if !sent.IsZero() && !time.Now().Before(deadline()) {
				// The guard killed the command at the deadline: dlm was
				// stopped or starved, or the lock is running out (its
				// extension bound, failed extensions). The client says
				// which at the end of the validity.
				// The client ends the lock at the end of its validity; its
				// timer may fire late on a busy machine: wait a while.
				reason := "dlm could not extend it in time"
				select {
				case <-h.done:
					reason = oneLine(h.err())
				case <-time.After(time.Until(h.until()) + max(h.margin, endReasonWait)):
				}
				if stoppedJob {
					reason = "the job was stopped, and not continued in time"
				}
				r.errf("%s ends (%s): the command was killed at the end of its validity", h.what, reason)
				return withCode(exitLockLost, nil)
			}
			return child.exit(werr)
		}
	}
}

// stopJob is dlm's part of job control when the command was stopped by
// sig and dlm had handed it the terminal tty (else it does nothing). A
// stop by Ctrl-Z, or by a read or write of the terminal from the
// background, stops the whole job, as it does under flock(1), where the
// command is in the shell's job: dlm takes the terminal back, says for
// how long the lock still holds, and stops its own group with sig, so
// that the shell gets its prompt back; fg or bg continue it (guarded).
// The lock is not extended while dlm is stopped: the guard, which does
// not stop, kills the command at its deadline (guarded), and the
// sentinel kills the guard there should it be stopped too; a job
// continued in time runs on. Where no shell can continue dlm (its parent
// is not a job-controlling shell of its session, and the kernel ignores
// such stops in a group like dlm's), the command is continued at once,
// as the kernel does not stop a command in a group without job control.
// A SIGSTOP of the command alone stops only the command, as under
// flock(1). It reports whether dlm stopped.
func (r *lockRun) stopJob(tty, pgid int, sig syscall.Signal, what string, deadline time.Time, group func(syscall.Signal)) bool {
	if tty < 0 || (sig != syscall.SIGTSTP && sig != syscall.SIGTTIN && sig != syscall.SIGTTOU) {
		return false
	}
	if !groupStopped(pgid) {
		return false // continued since (fg, bg): a report that came late
	}
	if !jobControl() {
		group(syscall.SIGCONT)
		return false
	}
	if pg, err := unix.IoctlGetInt(tty, unix.TIOCGPGRP); err == nil && pg == pgid {
		takeTerminalBack(tty) // not when the job runs in the background (bg): the shell has it
	}
	if !deadline.IsZero() {
		r.errf("stopped: the %s is not extended while the job is stopped; continue it (fg) within %v, or the command is killed at the end of its validity",
			what, max(0, time.Until(deadline)).Round(100*time.Millisecond))
	}
	_ = syscall.Kill(0, sig)
	return true
}

// family is the first process dlm lock started for the command (the
// guard, or the guard's sentinel), with the command under it.
type family struct {
	guard  *exec.Cmd
	exited chan error
	// pipes are dlm's ends of the deadline pipes: the guard's, and the
	// sentinel's when there is one.
	pipes []*os.File
	// ready is closed once the command is in the guard's group (or the
	// guard is gone): the signals dlm forwards to the group wait for it.
	ready <-chan struct{}
	// stops has the signal that stopped the command, each time it stops
	// (Ctrl-Z).
	stops <-chan syscall.Signal
	// started is set once the guard reported the command started
	// (reportReady), before ready closes.
	started atomic.Bool
	// tty is the terminal dlm handed to the command's group, or -1.
	tty int
	// done releases what the family held in dlm: its pipes, the terminal
	// and the OS thread.
	done func()
}

// exit is dlm's result once the guard exited with werr: the command's own
// exit code, passed through, when the guard had started it; else the
// guard's, which is dlm's own (the command was not run: not found, not
// executable, a signal before it started; the guard said why). The
// guard's report that it started the command is read before its exit is
// judged (ready closes on it, or when the report pipe ends).
func (f *family) exit(werr error) error {
	select {
	case <-f.ready:
	case <-time.After(reportWait):
	}
	res := childExit(werr)
	var ee *exitError
	if f.started.Load() && asExit(res, &ee) {
		ee.command = true
	}
	return res
}

// reportWait bounds how long dlm waits, once the guard has exited, for
// the end of its report pipe (every writer is gone by then: at once).
const reportWait = 5 * time.Second

// send sends a deadline frame to the guard and its sentinel (a dead one
// ends the family anyway).
func (f *family) send(frame []byte) {
	for _, p := range f.pipes {
		_, _ = p.Write(frame)
	}
}

// start starts the guard (dlm lock-guard) as the leader of a new process
// group, which runs the command; see lock_guard.go for why. The child's
// environment is dlm's without DLM_NODES (it may hold passwords), plus
// extra (the lock's or the leadership's variables). The guard gets the
// first deadline frame before it starts the command. On Linux the guard
// is the first process of a new PID namespace when the kernel allows it
// (root or CAP_SYS_ADMIN; any user through an unprivileged user namespace
// where the kernel allows those), started by its sentinel outside the
// namespace (lock_sentinel.go), which then leads the group; else a child
// subreaper in its group.
func (r *lockRun) start(extra []string, frame []byte) (*family, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the dlm executable to start the command under: %w", err)
	}
	sentinel := !r.noPIDNS && len(guardIsolations()) > 0
	// Every pipe dlm opens here: the guard's deadlines, the sentinel's,
	// and the reports of both to dlm. The guard says on the last when the
	// command is in its group (a signal dlm forwarded before then would
	// miss the command, and the first process of a PID namespace drops
	// the signals its runtime does not handle yet), and when it stops.
	var theirs, ours []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	npipes := 2
	if sentinel {
		npipes = 3
	}
	for range npipes {
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll(theirs)
			closeAll(ours)
			return nil, err
		}
		theirs, ours = append(theirs, pr), append(ours, pw)
	}
	// theirs: the guard's deadline pipe, the report pipe, the sentinel's
	// deadline pipe (read ends); ours: the write ends of the first and
	// last, and the report pipe's write end, which is theirs.
	ours[1], theirs[1] = theirs[1], ours[1]
	reports := ours[1]
	pipes := []*os.File{ours[0]}
	files := []*os.File{theirs[0], theirs[1]} // descriptors 3 (guardFD) and 4 (guardReadyFD)
	args := guardArgs(isolateNone, r.argv)
	pdeath := syscall.SIGTERM // the guard checks getppid before acting on it
	if sentinel {
		pipes = append(pipes, ours[2])
		files = []*os.File{theirs[2], theirs[1], theirs[0]} // 3, 4 and guardInnerFD
		args = append([]string{guardCmdName, guardSentinelFlag}, args[1:]...)
		pdeath = syscall.SIGKILL
	}
	if sentinel {
		adoptOrphans()
	}
	fg := foregroundTTY(r.stdin)
	guard := exec.Command(self, args...)
	guard.Stdin, guard.Stdout, guard.Stderr = r.stdin, rawWriter(r.stdout), rawWriter(r.stderr)
	guard.ExtraFiles = files
	guard.SysProcAttr = groupAttr(fg, pdeath)
	guard.Env = childEnv(os.Environ(), extra...)
	// The guard's (or sentinel's) parent-death signal fires when the
	// thread that forked it ends: keep this goroutine on that thread while
	// it lives.
	runtime.LockOSThread()
	err = guard.Start()
	closeAll(theirs)
	if err != nil {
		runtime.UnlockOSThread()
		closeAll(pipes)
		reports.Close()
		return nil, withCode(exitNotFound, fmt.Errorf("start the guard of %q: %w", r.argv[0], err))
	}
	for _, p := range pipes {
		_, _ = p.Write(frame) // fits the pipe's buffer
	}
	events := make(chan []byte, 8)
	go readReports(reports, events)
	inner := 0 // the guard's pid, under a sentinel
	if sentinel {
		// The kernel says which namespaces it allows (EPERM, EINVAL,
		// ENOSPC when it does not, or none are left), and the sentinel
		// reports the first that it started. Where it allows none, dlm
		// does not fall back in silence: without a namespace, the
		// command's children outlive dlm and its guard killed together
		// (pkill -9 dlm), so it refuses unless told to run without.
		ev, ok := <-events
		switch {
		case ok && ev[0] == reportRefused:
			_ = guard.Wait()
			runtime.UnlockOSThread()
			closeAll(pipes)
			return nil, withCode(exitOSErr, fmt.Errorf("the kernel refuses the guard a PID namespace here (%v): without one, what the command starts would outlive dlm and its guard killed together; the command was not run. Run with --pid-namespace=false to accept that", syscall.Errno(ev[1])))
		case ok && ev[0] == reportIsolated:
			inner = int(binary.BigEndian.Uint32(ev[1:]))
		}
	}
	ready, stops := make(chan struct{}), make(chan syscall.Signal, 8)
	f := &family{guard: guard, exited: make(chan error, 1), pipes: pipes, ready: ready, stops: stops, tty: fg}
	go func() {
		isReady := false
		for ev := range events {
			switch {
			case ev[0] == reportReady && !isReady:
				isReady = true
				f.started.Store(true)
				close(ready)
			case ev[0] == reportStopped:
				select {
				case stops <- syscall.Signal(ev[1]):
				default:
				}
			}
		}
		if !isReady {
			close(ready)
		}
	}()
	f.done = func() {
		closeAll(pipes)
		if fg >= 0 {
			takeTerminalBack(fg)
		}
		runtime.UnlockOSThread()
	}
	go func() {
		err := guard.Wait()
		if inner > 0 {
			// A sentinel that was killed leaves its guard to dlm, which
			// adopted it (adoptOrphans): nothing of the command may run
			// once dlm releases the lock, and the guard ends only once
			// its namespace is empty.
			waitAdopted(inner)
		}
		f.exited <- err
	}()
	return f, nil
}

// readReports reads the reports of the guard and its sentinel from pipe
// into c, each a byte and what follows it (a byte for reportStopped and
// reportRefused, four for reportIsolated), until the pipe ends (every
// writer is gone); then it closes c and the pipe.
func readReports(pipe *os.File, c chan<- []byte) {
	defer close(c)
	defer pipe.Close()
	r := bufio.NewReader(pipe)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		ev := []byte{b, 0}
		switch b {
		case reportStopped, reportRefused:
			ev = ev[:2]
		case reportIsolated:
			ev = make([]byte, 5)
			ev[0] = b
		default:
			ev = ev[:1]
		}
		if _, err := io.ReadFull(r, ev[1:]); err != nil {
			return
		}
		c <- ev
	}
}

// childEnv is env without DLM_NODES, plus extra.
func childEnv(env []string, extra ...string) []string {
	out := make([]string, 0, len(env)+len(extra))
	for _, e := range env {
		if !strings.HasPrefix(e, nodesEnv+"=") {
			out = append(out, e)
		}
	}
	return append(out, extra...)
}

// acquire tries once (TryLock), or, with --wait, lets the library's Lock
// keep trying with its random delays (R10, from the client's own seeded
// source) until the deadline. The reason given on failure is that of the
// last complete attempt.
func (r *lockRun) acquire(ctx context.Context) (*redlock.Lock, error) {
	var (
		l   *redlock.Lock
		err error
	)
	if r.wait == 0 {
		tctx, cancel := context.WithTimeout(ctx, r.try)
		l, err = r.lock(tctx, true)
		cancel()
	} else {
		wctx, cancel := context.WithTimeout(ctx, r.wait)
		l, err = r.lock(wctx, false)
		cancel()
	}
	if err == nil {
		return l, nil
	}
	if ctx.Err() != nil {
		return nil, withCode(exitNotAcquired, fmt.Errorf("interrupted while acquiring lock %q (%w): the command was not run", r.resource, context.Cause(ctx)))
	}
	attempts := 1
	var ae *redlock.AcquireError
	if errors.As(err, &ae) {
		attempts = max(ae.Attempts, 1)
	}
	hints := schemeHints(ctx, err, r.urls, max(r.nodeTO, probeTimeout))
	return nil, withCode(acquireCode(err), acquireReasonHinted(err, r.wait, attempts, hints))
}

// probeTimeout is the least time schemeHints gives a node that failed to
// answer the other protocol than its URL's.
const probeTimeout = time.Second

// lock makes one attempt (try) or retries until ctx ends: a read or write
// lock on the one resource with --read or --write, else the resources as
// one lock.
func (r *lockRun) lock(ctx context.Context, try bool) (*redlock.Lock, error) {
	switch {
	case r.read && try:
		return r.client.TryRLock(ctx, r.resources[0])
	case r.read:
		return r.client.RLock(ctx, r.resources[0])
	case r.write && try:
		return r.client.TryWLock(ctx, r.resources[0])
	case r.write:
		return r.client.WLock(ctx, r.resources[0])
	case try:
		return r.client.TryLockAll(ctx, r.resources)
	}
	return r.client.LockAll(ctx, r.resources)
}

// childExit maps the child's wait error to dlm's result: nil for success,
// else its exit code (128+N when killed by signal N).
func childExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return withCode(128+int(ws.Signal()), nil)
		}
		return withCode(ee.ExitCode(), nil)
	}
	return err
}
