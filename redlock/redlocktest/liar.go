package redlocktest

import (
	"testing"

	"dlm/redlock/redisproc"
)

// LieRule decides, for one command given as its arguments (the command name
// first, as sent), whether a Liar lies, and if so the complete RESP reply it
// sends instead of forwarding the command.
type LieRule = redisproc.LieRule

// Liar is a lying Redis node in front of a real redis-server (see
// redisproc.Liar).
type Liar = redisproc.Liar

// LieOnSet answers +OK to every SET without performing it: the lie of a
// node that claims to have locked a key it did not lock.
func LieOnSet(args []string) (string, bool) { return redisproc.LieOnSet(args) }

// StartLiar starts a Liar in front of s with the given rules (LieOnSet when
// none are given). It is closed when the test ends.
func StartLiar(t testing.TB, s *Server, rules ...LieRule) *Liar {
	t.Helper()
	l, err := redisproc.StartLiar(s.Addr(), rules...)
	if err != nil {
		t.Fatalf("redlocktest: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}
