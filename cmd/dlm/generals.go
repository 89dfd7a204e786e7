package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newGeneralsCmd builds "dlm generals". (Placeholder until its issue lands.)
func newGeneralsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "generals",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm generals is not built yet"))
		},
	}
}
