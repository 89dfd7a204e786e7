package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"dlm/redlock"
)

// exitCodeDoc is one of dlm's exit codes and what it means.
type exitCodeDoc struct{ code, meaning string }

// exitCodeDocs returns dlm's exit codes and what each means, for every
// subcommand: the one source of the "Exit codes" of dlm help and of the
// table in docs/operations.md (TestOperationsExitCodesMatchHelp).
func exitCodeDocs() []exitCodeDoc {
	return []exitCodeDoc{
		{"0", "success"},
		{"1", "a check failed (IC1/IC2 broken, a doctor finding that breaks safety, mutual exclusion broken in dlm demo, a checker verdict)"},
		{"3", "inconclusive: a check could not decide (dlm torture: empty history, a check that hit its time limit, values out of range; dlm status: a resource the nodes that did not answer could hold; dlm status --all: the key scan of some nodes failed, a quorum was scanned; dlm generals and its subcommands: a general ran out of time or saw more than m faulty generals, an epoch that proves nothing, a search stopped by its budget: INCOMPLETE)"},
		{"64", "bad usage (the reason is printed)"},
		{"69", "nodes unreachable: no quorum possible (dlm status --all: fewer than a quorum of nodes could be scanned); dlm generals: the run could not take place (a general could not start) or was interrupted"},
		{"71", "the kernel refuses dlm lock's guard a PID namespace (the command was not run; --pid-namespace=false runs it without one)"},
		{"73", "an output cannot be written (the handle of dlm acquire and dlm extend: --handle-file, or a standard output closed, /dev/null or whose reader is gone; the lock acquired is released again, an extension stays and the old handle still names the lock)"},
		{"74", "lock (or leadership, dlm elect) lost while the command ran; no longer held (dlm extend, dlm release)"},
		{"75", "lock not acquired (held elsewhere) within the wait"},
		{"126", "the command was found but cannot be executed (dlm lock, dlm elect)"},
		{"127", "the command was not found (dlm lock, dlm elect)"},
		{"other", "the command's own exit code (128+N when killed by signal N; dlm lock, dlm elect)"},
	}
}

// exitCodesText renders exitCodeDocs for dlm help, wrapped at 76 columns.
func exitCodesText() string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for _, e := range exitCodeDocs() {
		line := fmt.Sprintf("  %-3s", e.code)
		for _, w := range strings.Fields(e.meaning) {
			if len(line)+1+len(w) > 76 && len(line) > 6 {
				b.WriteString("\n" + line)
				line = "     "
			}
			line += " " + w
		}
		b.WriteString("\n" + line)
	}
	return b.String()
}

// exitCodesMarkdown renders exitCodeDocs as the table of
// docs/operations.md.
func exitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|-----:|---------|\n")
	for _, e := range exitCodeDocs() {
		fmt.Fprintf(&b, "| %s | %s |\n", e.code, e.meaning)
	}
	return b.String()
}

// run builds the root command, executes it with ctx and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	if !agreementOnly(root, args) {
		red := newRedactor(args)
		stdout, stderr = &redactWriter{w: stdout, r: red}, &redactWriter{w: stderr, r: red}
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	code := exitCode(err)
	if err != nil {
		var ee *exitError
		if !(asExit(err, &ee) && ee.err == nil) {
			fmt.Fprintf(stderr, "dlm: %s\n", errorLine(err))
		}
	}
	return code
}

// agreementOnly reports whether args run dlm generals or one of its
// subcommands, which take no node URL and print the orders and values they
// were given and decided as they are: the redaction of node URLs' passwords
// read an order such as deploy:v2@prod:443 as one, and printed two
// distinct decisions alike.
func agreementOnly(root *cobra.Command, args []string) bool {
	cmd, _, err := root.Find(args)
	for ; err == nil && cmd != nil; cmd = cmd.Parent() {
		if cmd.Name() == "generals" && cmd.Parent() == root {
			return true
		}
	}
	return false
}

// errorLine is the text of a command's error as dlm prints it: one line
// (the errors that errors.Join put on lines of their own joined by "; "),
// and a package's prefix ("redlock: ", "election: ") said once, where a
// wrapped error repeated it. A setting the library refuses (its
// ErrInvalid, "redlock: invalid argument: ") is said after "dlm: " alone,
// as dlm's own refusals are.
func errorLine(err error) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ; ")), " ")
	s = strings.ReplaceAll(s, " ; ", "; ")
	s = strings.TrimPrefix(s, redlock.ErrInvalid.Error()+": ")
	for _, p := range []string{"redlock: ", "election: ", "byzantine: ", "checker: "} {
		if first := strings.Index(s, p); first >= 0 {
			rest := s[first+len(p):]
			s = s[:first+len(p)] + strings.ReplaceAll(rest, p, "")
		}
	}
	return s
}

// version is dlm's version: the module's, or the commit it was built
// from, as the Go toolchain recorded it.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+modified"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		v = "devel " + rev[:min(12, len(rev))] + dirty
	}
	if v == "" {
		v = "(devel)"
	}
	return v + " " + bi.GoVersion
}

func asExit(err error, target **exitError) bool {
	e, ok := err.(*exitError)
	if ok {
		*target = e
	}
	return ok
}

// noArgs is the Args check of the subcommands that take no arguments: a
// stray one is bad usage (64), said in dlm's words.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q (flags start with --)", cmd.CommandPath(), args)
	}
	return nil
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "dlm",
		Short: "Distributed locks (Redlock) and Byzantine agreement",
		Long: `dlm is a toolkit for distributed mutual exclusion and agreement:
a Redlock client over independent Redis masters, the OM(m) and SM(m)
Byzantine agreement algorithms, and a safety checker that injects real faults.

Nodes are given with --nodes URL,URL,... or the DLM_NODES environment
variable: redis://[user:password@]host:port[/db], rediss://... (TLS, with
--tls-ca-file and --tls-cert-file/--tls-key-file for a private CA and a
client certificate) or unix:///absolute/path/to/socket. Passwords are never
printed; dlm lock does not pass DLM_NODES to its command.

` + exitCodesText() + "\n\n" + limitsHelp,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable, so that cobra hands an unknown subcommand to Args below
		// instead of returning its own untyped error.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q; `dlm help` lists the commands", args[0], cmd.CommandPath())
			}
			return nil
		},
	}
	root.SetVersionTemplate("dlm {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return withCode(exitUsage, err)
	})
	root.AddCommand(
		newLockCmd(),
		newStatusCmd(),
		newDoctorCmd(),
		newNodeCmd(),
		newDemoCmd(),
		newGeneralsCmd(),
		newTortureCmd(),
		newLockGuardCmd(),
		newBenchCmd(),
		newElectCmd(), newLeaderCmd(),
		newAcquireCmd(), newExtendCmd(), newReleaseCmd(),
	)
	typeUsageErrors(root)
	return root
}

// typeUsageErrors makes every error cobra finds in the arguments and flags
// of cmd and its subcommands a usage error (exit 64) by type, so that no
// message text is ever matched: flag errors go through the root's
// FlagErrorFunc; argument checks (cobra's own validators included) and
// required or grouped flags are checked in each command's Args, wrapped.
func typeUsageErrors(cmd *cobra.Command) {
	check := cmd.Args
	if check == nil {
		check = cobra.ArbitraryArgs
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		err := check(c, args)
		if err == nil {
			err = c.ValidateRequiredFlags()
		}
		if err == nil {
			err = c.ValidateFlagGroups()
		}
		var ee *exitError
		if err != nil && !errors.As(err, &ee) {
			return withCode(exitUsage, err)
		}
		return err
	}
	for _, sub := range cmd.Commands() {
		typeUsageErrors(sub)
	}
}
