package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dlm/redlock"
)

// newAcquireCmd builds "dlm acquire": lock now, release in another process.
func newAcquireCmd() *cobra.Command {
	var (
		nf       nodeFlags
		hio      handleIO
		ttl      time.Duration
		wait     time.Duration
		fence    bool
		owner    string
		valueEnv string
	)
	cmd := &cobra.Command{
		Use:   "acquire [flags] RESOURCE...",
		Short: "Acquire a lock on RESOURCE and print its handle, for dlm extend and dlm release",
		Long: `Acquire a Redlock lock on RESOURCE, print its handle and exit, holding it:
a CI pipeline can lock a deployment in one step and release it in a later
one, from another process or machine, with dlm release.

Nothing extends the lock after dlm acquire exits: it lives its --ttl from
the acquisition, unless dlm extend extends it, and dlm release ends it.
Choose a ttl that covers the work, with room to spare.

Several resources are locked as one, all or nothing (as dlm lock a b c),
under one handle.

The handle goes to standard output, one line of text (--json: an object
with the resource, the end of the validity and the fencing token too), or
into --handle-file. With --fencing the lock carries a fencing token.
The lock's value is 20 random bytes, or with --value-env the content
of an environment variable of yours (16 to 256 printable bytes, a secret
unique to this acquisition). An acquisition whose value a holder already
uses (a job id that a re-run repeats) is refused as held elsewhere and
leaves that holder's lock alone.

` + handleSecretHelp + `

` + handleExitHelp,
		Example: `  H=$(dlm acquire --nodes redis://n1:6379,redis://n2:6379,redis://n3:6379 --ttl 30m deploy)
  dlm acquire --ttl 1h --wait 5m --handle-file "$RUNNER_TEMP/deploy.lock" deploy
  dlm release --handle-file "$RUNNER_TEMP/deploy.lock"     # in a later step`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("no RESOURCE: dlm acquire [flags] RESOURCE...")
			}
			if err := checkResources(args); err != nil {
				return err
			}
			switch {
			case ttl <= 0:
				return usageErrorf("--ttl must be positive, got %v", ttl)
			case ttl > maxLockTTL:
				return overDuration("--ttl", ttl, maxLockTTL)
			case wait < 0:
				return usageErrorf("--wait must be 0 (one try) or positive, got %v", wait)
			}
			if err := handleFits(args); err != nil {
				return err
			}
			if err := hio.checkOut(cmd); err != nil {
				return err
			}
			// A reader gone from standard output makes the handle's
			// write fail with EPIPE, which releases the lock below,
			// instead of killing dlm with the lock held for its ttl.
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			var lopts []redlock.LockOption
			if cmd.Flags().Changed("value-env") {
				if cmd.Flags().Changed("owner") {
					// Owners are found by the client tag that starts a
					// drawn value; a value of the caller's carries none.
					return usageErrorf("--owner has no effect with --value-env: a lock is attributed to its owner by the client tag of a value dlm draws, and a --value-env value carries none; drop one of the two")
				}
				v, ok := os.LookupEnv(valueEnv)
				if !ok {
					return usageErrorf("--value-env: the environment variable %q is not set", valueEnv)
				}
				lopts = append(lopts, redlock.WithValue(v))
			}
			var opts []redlock.Option
			if fence {
				opts = append(opts, redlock.WithFencing())
			}
			opts = append(opts, ownerOptions(cmd, owner)...)
			client, closeClient, err := nf.client(cmd.Context(), ttl, opts...)
			if err != nil {
				return err
			}
			defer closeClient()
			urls, _ := resolveNodes(nf.nodes) // nf.client resolved them already
			hints := func(err error) map[string]string {
				return schemeHints(cmd.Context(), err, urls, max(nf.nodeTO, probeTimeout))
			}
			l, err := acquireOnce(cmd.Context(), client, args, wait, oneTry(nf.nodeTO, ttl), hints, lopts...)
			if err != nil {
				return err
			}
			if err := hio.write(cmd, l, true); err != nil {
				// Nobody will get the handle: give the lock back.
				uctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), releaseTimeout)
				defer cancel()
				_ = l.Unlock(uctx)
				return withCode(exitCantCreate, fmt.Errorf("lock %q released again: its handle could not be written: %w", l.Resource(), err))
			}
			return nil
		},
	}
	nf.add(cmd, handlePrefixHelp)
	hio.addFile(cmd, "write the handle into this file (replaced, mode 0600) instead of standard output")
	hio.addJSON(cmd)
	f := cmd.Flags()
	f.DurationVar(&ttl, "ttl", redlock.DefaultTTL, "lock validity time: the lock lives this long unless dlm extend or dlm release")
	f.DurationVar(&wait, "wait", 0, "how long to keep trying to acquire (0: one try)")
	addOwnerFlag(cmd, &owner)
	f.BoolVar(&fence, "fencing", false, "give the lock a fencing token, in the handle and in --json; the nodes must keep their fence keys (persistence)")
	f.StringVar(&valueEnv, "value-env", "", "take the lock's value from this environment variable (a secret of 16 to 256 printable bytes, unique to this acquisition) instead of 20 random bytes")
	return cmd
}

// acquireOnce acquires resources as one lock (LockAll: one resource is
// Lock) with one try or, with wait, keeps trying until the deadline (the
// library's random delays, R10); a failure is given its exit code and the
// reason of its last complete attempt. One try is bounded by try
// (oneTry). hints says what dlm found out about the nodes that failed
// (schemeHints).
func acquireOnce(ctx context.Context, c *redlock.Client, resources []string, wait, try time.Duration, hints func(error) map[string]string, opts ...redlock.LockOption) (*redlock.Lock, error) {
	var l *redlock.Lock
	var err error
	if wait == 0 {
		tctx, cancel := context.WithTimeout(ctx, try)
		l, err = c.TryLockAll(tctx, resources, opts...)
		cancel()
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		l, err = c.LockAll(wctx, resources, opts...)
		cancel()
	}
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, redlock.ErrInvalid):
		return nil, withCode(exitUsage, err)
	case ctx.Err() != nil:
		return nil, withCode(exitNotAcquired, fmt.Errorf("interrupted while acquiring lock %q (%w)", strings.Join(resources, ","), context.Cause(ctx)))
	}
	attempts := 1
	var ae *redlock.AcquireError
	if errors.As(err, &ae) {
		attempts = max(ae.Attempts, 1)
	}
	return nil, withCode(acquireCode(err), acquireReasonHinted(err, wait, attempts, hints(err)))
}

// handleFits refuses, before anything is locked, resources whose handle
// could outgrow what dlm extend and dlm release read (maxHandleBytes): the
// handle of the longest value, token, ttl, end of validity and count of
// extensions that the lock can ever have is written out and measured.
// Resources that LockAll refuses (a name listed twice) are left to it.
func handleFits(resources []string) error {
	names := slices.Clone(resources)
	slices.Sort(names)
	worst := redlock.Handle{
		Resource:   strings.Join(names, ","),
		Resources:  names,
		Value:      strings.Repeat("x", redlock.MaxValueLen),
		Until:      time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		TTL:        time.Duration(math.MaxInt64),
		Token:      math.MaxUint64,
		Extensions: math.MaxInt,
	}
	text, err := worst.MarshalText()
	if err != nil || len(text) <= maxHandleBytes {
		return nil
	}
	total := 0
	for _, r := range resources {
		total += len(r)
	}
	return usageErrorf("the %d resource names take %d bytes: their handle could be %d bytes, over the %d that dlm extend and dlm release read; lock fewer or shorter names", len(resources), total, len(text), maxHandleBytes)
}
