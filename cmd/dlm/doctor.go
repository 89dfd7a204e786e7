package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDoctorCmd builds "dlm doctor". (Placeholder until its issue lands.)
func newDoctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "(not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return withCode(exitUsage, errors.New("dlm doctor is not built yet"))
		},
	}
}
