package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newBenchCmd builds "dlm bench". (Placeholder until its issue lands.)
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm bench is not built yet"))
		},
	}
}
