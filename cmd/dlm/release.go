package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"dlm/redlock"
)

// newReleaseCmd builds "dlm release": release a lock by its handle.
func newReleaseCmd() *cobra.Command {
	var (
		nf    nodeFlags
		hio   handleIO
		force bool
	)
	cmd := &cobra.Command{
		Use:   "release [flags] [HANDLE | -] | --force RESOURCE...",
		Short: "Release the lock of a handle (from dlm acquire or dlm extend)",
		Long: `Release the lock written in a handle, from any process or machine: on
every node, delete the lock's key if it still holds the handle's value.
dlm release exits 0 when a quorum of nodes deleted it, 74 when
too many nodes no longer held it (it had expired, been released or taken
over, or the handle's value is wrong: nothing is deleted then), 69 when
too few nodes answered (the keys left expire with the ttl).

The handle is HANDLE, or standard input when HANDLE is -, or the file of
--handle-file, or $` + handleEnv + `.

` + handleSecretHelp + `

An operator can release a lock without its handle, whoever holds it: dlm
release --force RESOURCE... reads each resource's key on every node and
deletes it by compare-and-delete with the value it read (each reader's
entry of a read lock), so that a holder that acquired in between is not
deleted. The holder is not told: until its next extension it may still
believe it holds the lock, so use it for a holder known to be dead, or
with fencing tokens on what the lock guards. A RESOURCE that starts with
a double quote is read as the quoted form that dlm status prints for a
name with control characters or invalid UTF-8 (Go syntax: '"job\x1b"'
in the shell). Every forced release is
logged on standard error (resource, mode, owners, nodes; never a value)
and exits 0 when a quorum of nodes no longer holds the resource, 74 when
no node held it (a mistyped name: nothing was released). A healthy node
that answers slowly (a loaded machine) is waited for, each request up to
half the ttl less the drift (4.9s); a node that does not answer at all
costs that once, then 20 node timeouts (--node-timeout) a request, for a
ttl (10s). A quoted form
whose name dlm status prints without quotes ('"abc"') is refused as
ambiguous, and so is a --key-prefix that reaches dlm's fence counters,
leaders' records or owner notes.

` + handleExitHelp,
		Example: `  dlm release --handle-file "$RUNNER_TEMP/deploy.lock"
  printf '%s' "$H" | dlm release -
  dlm release --force deploy`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if force {
				return forceRelease(cmd, &nf, args)
			}
			if len(args) == 1 && args[0] != "-" && !strings.HasPrefix(strings.TrimSpace(args[0]), "dlm") {
				return usageErrorf("%q is not a handle: give the handle printed by dlm acquire (or - to read it), or --force RESOURCE to release a lock whoever holds it", args[0])
			}
			h, err := hio.read(cmd, args)
			if err != nil {
				return err
			}
			if err := nf.prefixFor(cmd, h); err != nil {
				return err
			}
			// A release does not set a ttl; the client's is only checked
			// against --node-timeout.
			client, closeClient, err := nf.client(cmd.Context(), max(h.TTL, redlock.DefaultTTL))
			if err != nil {
				return err
			}
			defer closeClient()
			if err := client.Release(cmd.Context(), h); err != nil {
				return withCode(handleCode(err), err)
			}
			return nil
		},
	}
	nf.add(cmd, handlePrefixHelp)
	hio.addFile(cmd, "read the handle from this file")
	cmd.Flags().BoolVar(&force, "force", false, "release the locks of the RESOURCE names given, whoever holds them (an operator's action, logged on standard error)")
	return cmd
}

// forceRelease is dlm release --force RESOURCE...: an operator's release,
// logged on standard error with the owners, never the values.
func forceRelease(cmd *cobra.Command, nf *nodeFlags, resources []string) error {
	switch {
	case len(resources) == 0:
		return usageErrorf("--force needs the RESOURCE names to release")
	case cmd.Flags().Changed("handle-file"):
		return usageErrorf("--force releases by RESOURCE name, not by handle: drop --handle-file")
	}
	resources, err := namedResources(resources)
	if err != nil {
		return err
	}
	if err := checkLockPrefix(nf.prefix); err != nil {
		return err
	}
	client, closeClient, err := nf.client(cmd.Context(), redlock.DefaultTTL)
	if err != nil {
		return err
	}
	defer closeClient()
	host, _ := os.Hostname()
	by := fmt.Sprintf("%s pid %d", host, os.Getpid())
	stderr := cmd.ErrOrStderr()
	failed := 0
	var free []string
	for _, r := range resources {
		rep, err := client.ForceRelease(cmd.Context(), r)
		if err != nil {
			return withCode(handleCode(err), fmt.Errorf("force release of %q: %w", r, err))
		}
		var owners []string
		if rep.Before.Mode == redlock.ModeWrite {
			owners = append(owners, ownerLabel(rep.Before.Owner))
		}
		for _, rd := range rep.Before.Readers {
			owners = append(owners, ownerLabel(rd.Owner))
		}
		deleted, errs := 0, 0
		for i, n := range rep.Released {
			if n > 0 {
				deleted++
			}
			if rep.Errs[i] != nil {
				errs++
			}
		}
		if deleted == 0 && errs == 0 && !rep.Before.Held() {
			free = append(free, strconv.Quote(r))
		}
		if len(owners) == 0 {
			owners = []string{"nobody (it was " + rep.Before.Mode.String() + " by the quorum's view)"}
		}
		fmt.Fprintf(stderr, "dlm: FORCE RELEASE of %q (%s, held by %s) by %s: deleted on %d of %d nodes, %d node error(s)\n",
			r, rep.Before.Mode, strings.Join(owners, ", "), by, deleted, len(rep.Released), errs)
		after, err := client.Inspect(cmd.Context(), r)
		answered := 0
		for _, v := range after.Nodes {
			if v.Err == nil {
				answered++
			}
		}
		// Free by a quorum of answers, not by the nodes that answered.
		if err != nil || after.Held() || answered < client.Quorum() {
			failed++
		}
	}
	if failed > 0 {
		return withCode(exitUnavailable, fmt.Errorf("%d of %d resource(s) may still be held: too few nodes answered", failed, len(resources)))
	}
	if len(free) > 0 {
		return withCode(exitLockLost, fmt.Errorf("%s was not held: nothing was released (is the name right? dlm status --all lists the locks)", strings.Join(free, ", ")))
	}
	return nil
}

// checkLockPrefix refuses a lock key prefix (--key-prefix) that reaches
// the keys dlm keeps beside the locks: a prefix that starts with one of
// their prefixes, or is the start of one (then a resource name supplies
// the rest), would let a forced release or a lock address a fence counter
// (the next token would go back), a leader's record or an owner note.
func checkLockPrefix(prefix string) error {
	for _, o := range []struct{ what, prefix string }{
		{"fence counters", redlock.DefaultFencePrefix},
		{"leaders' records", redlock.DefaultRecordPrefix},
		{"owner notes and extension counts", redlock.DefaultInfoPrefix},
	} {
		if strings.HasPrefix(prefix, o.prefix) || strings.HasPrefix(o.prefix, prefix) {
			return usageErrorf("--key-prefix %q reaches the keys of dlm's %s (prefix %q): a lock key prefix may neither start with theirs nor be the start of it; keep the default %q or choose one of your own, e.g. \"myapp:lock:\"",
				prefix, o.what, o.prefix, redlock.DefaultKeyPrefix)
		}
	}
	return nil
}

// ownerLabel quotes an owner label for a log line, or says it is unknown.
func ownerLabel(o string) string {
	if o == "" {
		return "an unknown owner"
	}
	return strconv.Quote(o)
}
