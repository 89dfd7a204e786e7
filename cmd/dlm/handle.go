package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"dlm/redlock"
)

// What dlm acquire, dlm extend and dlm release share: the flags that reach
// the nodes, where a handle is read from and written to, and how their
// errors map to exit codes.

// handleEnv is the environment variable that holds a handle when neither
// HANDLE nor --handle-file is given.
const handleEnv = "DLM_HANDLE"

// maxHandleBytes bounds what is read as a handle: a handle is well under
// a kilobyte; more is not one.
const maxHandleBytes = 16 << 10

// handleSecretHelp is the part of the help of the handle commands that
// says what a handle is worth and how to keep it out of sight.
const handleSecretHelp = `A handle is a secret capability, like a password: it holds the lock's
value, and whoever has it can extend and release the lock. The nodes
delete or extend a key only when it holds that value, so a forged
handle, or one whose value was changed, releases and extends nothing; a
stolen one is as good as the lock. dlm never prints the value otherwise.
Keep handles out of logs and out of the command line: arguments are
visible to every user of the machine (ps, /proc). Pass HANDLE as - to read
it from standard input, or use --handle-file (written with mode 0600), or
the environment variable ` + handleEnv + `.`

// handleExitHelp lists the exit codes of the handle commands.
const handleExitHelp = `Exit codes: 0 success; 64 bad usage or a damaged handle; 69 nodes
unreachable (no quorum answered); 73 the new handle could not be written
(dlm acquire releases its lock again; dlm extend keeps the extension, and
the old handle still names the lock); 74 the lock is no longer held (expired,
released, taken over, the handle's value is wrong, or the extension bound
was reached); 75 (acquire) held elsewhere within --wait.`

// handlePrefixHelp is --key-prefix's help in the handle commands.
const handlePrefixHelp = "prefix of the lock keys on the nodes (a handle written with another prefix is refused)"

// handleIO is where a handle command reads its handle and writes the new
// one: --handle-file and --json.
type handleIO struct {
	file string
	json bool
}

// addFile adds --handle-file with the help of the command.
func (hio *handleIO) addFile(cmd *cobra.Command, help string) {
	cmd.Flags().StringVar(&hio.file, "handle-file", "", help)
}

// addJSON adds --json.
func (hio *handleIO) addJSON(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&hio.json, "json", false, `print {"handle":...,"resource":...,"until":...,"ttl":...,"token":N} instead of the handle alone (no "handle" with --handle-file: it is in the file)`)
}

// read returns the handle given as HANDLE (the text, or - for standard
// input), else in --handle-file, else in $DLM_HANDLE. A missing, doubly
// given or damaged handle is bad usage; the message never quotes it.
func (hio *handleIO) read(cmd *cobra.Command, args []string) (redlock.Handle, error) {
	var text, from string
	switch {
	case len(args) > 1:
		return redlock.Handle{}, usageErrorf("want at most one HANDLE, got %d arguments", len(args))
	case len(args) == 1 && hio.file != "":
		return redlock.Handle{}, usageErrorf("give the handle once: as HANDLE or with --handle-file, not both")
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxHandleBytes+1))
		if err != nil {
			return redlock.Handle{}, fmt.Errorf("read the handle from standard input: %w", err)
		}
		text, from = string(b), "standard input"
	case len(args) == 1:
		text, from = args[0], "HANDLE"
	case hio.file != "":
		f, err := os.Open(hio.file)
		if err != nil {
			return redlock.Handle{}, usageErrorf("--handle-file: %v", err)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxHandleBytes+1))
		f.Close()
		if err != nil {
			return redlock.Handle{}, usageErrorf("--handle-file: %v", err)
		}
		text, from = string(b), "--handle-file "+hio.file
	default:
		var ok bool
		if text, ok = os.LookupEnv(handleEnv); !ok {
			return redlock.Handle{}, usageErrorf("no handle: give HANDLE (- reads standard input), --handle-file PATH, or set %s", handleEnv)
		}
		from = "$" + handleEnv
	}
	if len(text) > maxHandleBytes {
		return redlock.Handle{}, usageErrorf("%s: over %d bytes, not a handle", from, maxHandleBytes)
	}
	h, err := redlock.ParseHandle(text)
	if err != nil {
		return redlock.Handle{}, usageErrorf("%s: %v", from, err)
	}
	return h, nil
}

// handleJSON is the output of --json.
type handleJSON struct {
	Handle   string `json:"handle,omitempty"` // not with --handle-file
	Resource string `json:"resource"`
	Until    string `json:"until"`
	TTL      string `json:"ttl"`
	Token    uint64 `json:"token"`
}

// write puts the handle of l where the command's flags say: into
// --handle-file (replaced whole, mode 0600) when toFile is set and the
// flag given, else on stdout as one line; with --json, stdout gets a JSON
// object instead, with the handle in it unless it went to the file.
//
// The handle goes to stdout past the redaction of passwords (redact.go),
// byte for byte: it holds no node URL, and a password of a few letters
// that happened to occur in its base64 would otherwise be replaced and
// the handle damaged, leaving a lock that nobody can release.
func (hio *handleIO) write(cmd *cobra.Command, l *redlock.Lock, toFile bool) error {
	stdout := rawWriter(cmd.OutOrStdout())
	h := l.Handle()
	text, err := h.MarshalText()
	if err != nil {
		return err
	}
	line := append(text, '\n')
	inFile := toFile && hio.file != ""
	if inFile {
		if err := writeSecret(hio.file, line); err != nil {
			return err
		}
	}
	if hio.json {
		out := handleJSON{Resource: h.Resource, Until: h.Until.Format(time.RFC3339Nano), TTL: h.TTL.String(), Token: h.Token}
		if !inFile {
			out.Handle = string(text)
		}
		js, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(js, '\n'))
		return err
	}
	if inFile {
		return nil
	}
	_, err = stdout.Write(line)
	return err
}

// checkOut refuses, before anything is acquired, a handle that would go
// to a standard output that reaches nobody: /dev/null, which is also what
// a closed standard output is to a Go program (the runtime opens it in
// its place). The lock would be held for its ttl with no handle to
// release or extend it.
func (hio *handleIO) checkOut(cmd *cobra.Command) error {
	if hio.file != "" {
		return nil
	}
	f, ok := rawWriter(cmd.OutOrStdout()).(*os.File)
	if !ok {
		return nil
	}
	out, err := f.Stat()
	if err != nil {
		return withCode(exitCantCreate, fmt.Errorf("standard output: %w: the handle could not be written", err))
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(out, null) {
		return withCode(exitCantCreate, errors.New("standard output is "+os.DevNull+" (or was closed): the handle would be lost and the lock held for its ttl; write it with --handle-file, or redirect standard output to where it is read"))
	}
	return nil
}

// writeSecret replaces the file path with b, readable by its owner only,
// in one step (a temporary file in the same directory, renamed): a reader
// never sees half a handle. A failure exits 73 (the file cannot be
// created), not 1, which is kept for failed checks.
func writeSecret(path string, b []byte) error {
	fail := func(err error) error { return withCode(exitCantCreate, fmt.Errorf("--handle-file: %w", err)) }
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dlm-handle-*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; left by an error
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fail(err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}

// handleCode maps the error of a resume or a release to its exit code.
func handleCode(err error) int {
	switch {
	case errors.Is(err, redlock.ErrInvalid):
		return exitUsage
	case errors.Is(err, redlock.ErrNotHeld), errors.Is(err, redlock.ErrMaxExtensions):
		return exitLockLost
	}
	return exitUnavailable
}

// prefixFor checks the handle's key prefix against the command's own,
// --key-prefix (default the library's): a handle is data its holder can
// edit, and a prefix taken from it would let a handle reach any key on
// the nodes whose value is known, an application's included. A handle written with another prefix is refused: give that
// prefix with --key-prefix.
func (nf *nodeFlags) prefixFor(_ *cobra.Command, h redlock.Handle) error {
	if nf.prefix != h.KeyPrefix {
		return usageErrorf("the handle's lock was acquired with key prefix %q, and this command uses %q: give --key-prefix %q if that is where your locks are", h.KeyPrefix, nf.prefix, h.KeyPrefix)
	}
	return nil
}

// addOwnerFlag adds --owner, the owner label of the command's locks.
func addOwnerFlag(cmd *cobra.Command, owner *string) {
	cmd.Flags().StringVar(owner, "owner", "", `owner label of the lock, shown by dlm status (default "HOST pid PID" of this dlm); public, not a secret`)
}

// ownerOptions returns WithOwner when --owner was given.
func ownerOptions(cmd *cobra.Command, owner string) []redlock.Option {
	if !cmd.Flags().Changed("owner") {
		return nil
	}
	return []redlock.Option{redlock.WithOwner(owner)}
}
