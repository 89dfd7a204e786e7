package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLockCmd builds "dlm lock". (Placeholder until its issue lands.)
func newLockCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "lock",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm lock is not built yet"))
		},
	}
}
