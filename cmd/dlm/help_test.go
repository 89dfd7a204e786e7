package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// ruleNumber matches a rule of docs/spec by its number (R2, R16.3, B9,
// A3): help and errors say what a rule means and where it is argued, not
// its number.
var ruleNumber = regexp.MustCompile(`\b[RAB][0-9]+`)

// ruleID is a string that is a rule's number and nothing else: a key in
// code (a doctor finding's rule), never printed as it is.
var ruleID = regexp.MustCompile(`^[RAB][0-9]+(\.[0-9]+)?$`)

// TestStringsCiteNoRuleNumbers reads every string literal of dlm and of
// the agreement packages (what their errors, refusals, reports and
// outputs can print) and fails on one that cites a rule by its number.
// Comments may cite them, and a literal that is a rule's number alone is
// a key (see ruleID).
func TestStringsCiteNoRuleNumbers(t *testing.T) {
	for _, dir := range []string{".", "../../byzantine", "../../byzantine/tcp", "../../byzantine/agreed"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || ruleID.MatchString(s) {
					return true
				}
				if m := ruleNumber.FindString(s); m != "" {
					t.Errorf("%s: a string cites rule %s by its number (say what it means): %.120q", fset.Position(lit.Pos()), m, s)
				}
				return true
			})
		}
	}
}

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

// TestNodeSeqHelpHasNoDefault: dlm generals node derives the sequence
// number from --start when --seq is not given, so its help shows no
// default for it (it showed "(default 1)", which no node ever used).
func TestNodeSeqHelpHasNoDefault(t *testing.T) {
	code, out, stderr := runGeneralsCLI(t, "node", "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "--seq uint") {
			if strings.Contains(line, "(default") || !strings.Contains(line, "derived from --start") {
				t.Errorf("--seq help %q: want no default and the derivation from --start", strings.TrimSpace(line))
			}
			return
		}
	}
	t.Errorf("no --seq flag in dlm generals node --help:\n%s", out)
}
