package main

import (
	"github.com/spf13/cobra"

	"dlm/redlock"
)

// newReleaseCmd builds "dlm release": release a lock by its handle.
func newReleaseCmd() *cobra.Command {
	var (
		nf  nodeFlags
		hio handleIO
	)
	cmd := &cobra.Command{
		Use:   "release [flags] [HANDLE | -]",
		Short: "Release the lock of a handle (from dlm acquire or dlm extend)",
		Long: `Release the lock written in a handle, from any process or machine: on
every node, delete the lock's key if it still holds the handle's value
(R5, R12). dlm release exits 0 when a quorum of nodes deleted it, 74 when
too many nodes no longer held it (it had expired, been released or taken
over, or the handle's value is wrong: nothing is deleted then), 69 when
too few nodes answered (the keys left expire with the ttl).

The handle is HANDLE, or standard input when HANDLE is -, or the file of
--handle-file, or $` + handleEnv + `.

` + handleSecretHelp + `

` + handleExitHelp,
		Example: `  dlm release --handle-file "$RUNNER_TEMP/deploy.lock"
  printf '%s' "$H" | dlm release -`,
		RunE: func(cmd *cobra.Command, args []string) error {
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
	return cmd
}
