package main

import (
	"github.com/spf13/cobra"

	"dlm/redlock"
)

// addHashTagsFlag adds --hash-tags, which keeps the key layout of versions
// before the per-node layout (redlock.WithHashTags).
func addHashTagsFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, "hash-tags", false, "give the keys on every node hash tags, plain servers included, as dlm did before the per-node key layout for a node list with a Redis Cluster node (the keys on a cluster node always carry them): every client of the same resources must agree, so give it to all of them while a client of such a version runs on a mixed list")
}

// hashTagsOptions returns redlock.WithHashTags when on.
func hashTagsOptions(on bool) []redlock.Option {
	if !on {
		return nil
	}
	return []redlock.Option{redlock.WithHashTags()}
}
