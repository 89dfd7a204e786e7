package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd builds "dlm demo". (Placeholder until its issue lands.)
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm demo is not built yet"))
		},
	}
}
