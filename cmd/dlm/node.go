package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newNodeCmd builds "dlm node". (Placeholder until its issue lands.)
func newNodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "node",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm node is not built yet"))
		},
	}
}
