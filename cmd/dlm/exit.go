package main

import (
	"errors"
	"fmt"
)

// Exit codes of the dlm command, documented in `dlm help`. They follow
// sysexits.h where one fits.
const (
	exitOK           = 0  // success
	exitFailure      = 1  // a check failed (IC1/IC2 broken, doctor finding, checker verdict)
	exitUsage        = 64 // bad usage: a flag, argument or URL is wrong
	exitUnavailable  = 69 // nodes unreachable: no quorum possible
	exitOSErr        = 71 // the system refuses what dlm needs (dlm lock: a PID namespace for the guard)
	exitCantCreate   = 73 // an output file cannot be written (dlm acquire, extend: --handle-file)
	exitLockLost     = 74 // the lock was lost while the command ran
	exitNotAcquired  = 75 // lock not acquired (held elsewhere) within the wait
	exitInconclusive = 3  // a check could not decide (checker: empty history, time limit, values out of range)
)

// exitError carries an exit code up to main through cobra's RunE.
type exitError struct {
	code int
	err  error
	// command is set on the exit code of the command dlm ran (dlm lock,
	// dlm elect), passed through, as opposed to one dlm decided itself:
	// dlm lock's --dlm-exit-code never replaces it.
	command bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that dlm exits with code. A nil err with a non-zero
// code exits silently with that code (the command already printed why).
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usageErrorf is a bad-usage error (exit 64) with a formatted reason.
func usageErrorf(format string, args ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, args...))
}

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}
