package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// ruleNumber matches a rule of docs/spec by its number (R2, R16.3, B9):
// help says what a rule means and where it is argued, not its number.
var ruleNumber = regexp.MustCompile(`\b[RB][0-9]+`)

// TestHelpCitesNoRuleNumbers renders the help of every command of the
// tree (its usage line, description, examples and flags) and fails on any
// rule number in it.
func TestHelpCitesNoRuleNumbers(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var buf bytes.Buffer
		c.SetOut(&buf)
		c.SetErr(&buf)
		if err := c.Help(); err != nil {
			t.Fatalf("%s: help: %v", c.CommandPath(), err)
		}
		for i, line := range strings.Split(buf.String(), "\n") {
			if m := ruleNumber.FindString(line); m != "" {
				t.Errorf("%s --help, line %d cites rule %s by its number: %q", c.CommandPath(), i+1, m, strings.TrimSpace(line))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestDoctorTagsCiteNoRuleNumbers prints one finding of every check dlm
// doctor knows and fails on a rule number in its output: a finding's tag
// says what the check is about.
func TestDoctorTagsCiteNoRuleNumbers(t *testing.T) {
	var buf bytes.Buffer
	var fs []finding
	for _, r := range []string{"R1.3", "R2", "R7", "R9", "R13", "R16", "R18"} {
		fs = append(fs, finding{Sev: sevOK, Rule: r, What: "checked"})
	}
	printFindings(&buf, fs)
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if m := ruleNumber.FindString(line); m != "" {
			t.Errorf("dlm doctor finding cites rule %s by its number: %q", m, line)
		}
	}
}
