package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTortureCmd builds "dlm torture". (Placeholder until its issue lands.)
func newTortureCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "torture",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm torture is not built yet"))
		},
	}
}
