package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dlm/redlock"
)

// newExtendCmd builds "dlm extend": extend a lock by its handle.
func newExtendCmd() *cobra.Command {
	var (
		nf     nodeFlags
		hio    handleIO
		ttl    time.Duration
		maxExt int
	)
	cmd := &cobra.Command{
		Use:   "extend [flags] [HANDLE | -]",
		Short: "Extend the lock of a handle (from dlm acquire) and print its new handle",
		Long: `Extend the lock written in a handle (dlm acquire, dlm extend) by its ttl,
or by --ttl, from now, and print the new handle (or replace --handle-file
with it). The lock is extended on every node that still holds its value,
and only if a quorum confirmed: a lock that expired, was released
or was taken over stays gone (exit 74). The handle's end of validity is
not trusted (it comes from the clock of the machine that wrote it): the
nodes decide.

Extensions are bounded: the nodes count them beside the lock (the
handle's count is not trusted), and past --max-extensions, or the least
bound any earlier dlm extend of the lock gave, dlm extend refuses (exit
74); the lock then lives out its validity. The handle's ttl (or --ttl)
must be within 24h and within the max ttl every node advertises (dlm
node --max-ttl: a longer lock outlives what a node that crashed without
persistence remembers; exit 64), and its key prefix must be --key-prefix's: a handle edited
by its holder reaches nothing the command would not.

The handle is HANDLE, or standard input when HANDLE is -, or the file of
--handle-file, or $` + handleEnv + `.

` + handleSecretHelp + `

` + handleExitHelp,
		Example: `  dlm extend --handle-file "$RUNNER_TEMP/deploy.lock" --ttl 30m
  echo "$H" | dlm extend - > new-handle`,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := hio.read(cmd, args)
			if err != nil {
				return err
			}
			switch {
			case ttl < 0:
				return usageErrorf("--ttl must be positive (0: the handle's ttl), got %v", ttl)
			case ttl > maxLockTTL:
				return overDuration("--ttl", ttl, maxLockTTL)
			case maxExt < 1:
				return usageErrorf("--max-extensions must be at least 1 (extension is always bounded), got %d", maxExt)
			}
			if ttl == 0 {
				ttl = h.TTL
			}
			if err := nf.prefixFor(cmd, h); err != nil {
				return err
			}
			client, closeClient, err := nf.client(cmd.Context(), ttl)
			if err != nil {
				return err
			}
			defer closeClient()
			// A reader gone from standard output makes the new handle's
			// write fail with EPIPE, said below, instead of killing dlm
			// with nothing said.
			sigpipe := make(chan os.Signal, 1)
			signal.Notify(sigpipe, syscall.SIGPIPE)
			defer signal.Stop(sigpipe)
			l, err := client.Resume(cmd.Context(), h, redlock.WithTTL(ttl), redlock.WithMaxExtensions(maxExt))
			if err != nil {
				return withCode(handleCode(err), err)
			}
			if err := hio.write(cmd, l, true); err != nil {
				// The lock stays extended: its holder may be at work with
				// the old handle, which names the same lock (the nodes,
				// not the handle, know its validity and its extensions).
				return withCode(exitCantCreate, fmt.Errorf("lock %q extended by %v, but its new handle could not be written (%w); the old handle still names the lock, and dlm extend and dlm release take it", l.Resource(), ttl, err))
			}
			return nil
		},
	}
	nf.add(cmd, handlePrefixHelp)
	hio.addFile(cmd, "read the handle from this file, and replace it with the new handle (mode 0600)")
	hio.addJSON(cmd)
	f := cmd.Flags()
	f.DurationVar(&ttl, "ttl", 0, "extend the lock by this long from now (0: the handle's ttl)")
	f.IntVar(&maxExt, "max-extensions", redlock.DefaultMaxExtensions, "bound on the lock's extensions, counted on the nodes; an earlier, lower bound stays")
	return cmd
}
