package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newStatusCmd builds "dlm status". (Placeholder until its issue lands.)
func newStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm status is not built yet"))
		},
	}
}
