package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A server that disables CONFIG (rename-command CONFIG "", as managed
// services do) answers "unknown command", not NOPERM: the client refuses
// it, as it cannot check eviction and persistence, and says that the
// server disables the command and that the way on is WithUncheckedNodes,
// not an ACL grant, which cannot work; WithUncheckedNodes then locks, with
// the same words as a warning. Real servers, both adapters.
func TestDisabledConfigNamedAsDisabled(t *testing.T) {
	var urls []string
	for range 3 {
		s := redlocktest.StartServer(t, redlocktest.WithArgs("--rename-command", "CONFIG", ""))
		urls = append(urls, s.URL())
	}
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		_, err := dialURLs(t, a, urls).TryLock(t.Context(), "r")
		if !errors.Is(err, redlock.ErrInvalid) {
			t.Fatalf("TryLock over nodes that disable CONFIG = %v, want ErrInvalid", err)
		}
		msg := err.Error()
		for _, want := range []string{"disables CONFIG GET", "unknown command", "no ACL rule grants", "WithUncheckedNodes", "--unchecked-nodes"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the refusal does not say %q:\n%s", want, msg)
			}
		}
		if strings.Contains(msg, "ACL SETUSER") {
			t.Errorf("the refusal names an ACL grant, which cannot enable a disabled command:\n%s", msg)
		}
		var w warnings
		l, err := dialURLs(t, a, urls, redlock.WithUncheckedNodes(), redlock.WithObserver(&w)).TryLock(t.Context(), "r")
		if err != nil {
			t.Fatalf("WithUncheckedNodes: TryLock = %v", err)
		}
		_ = l.Unlock(t.Context())
		if got := strings.Join(w.messages(), "\n"); !strings.Contains(got, "disables CONFIG GET") || strings.Contains(got, "ACL SETUSER") {
			t.Errorf("WithUncheckedNodes: warnings %q, want each to say CONFIG GET is disabled, without an ACL grant", w.messages())
		}
	})
}
