package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// A node whose user may not run what a lock needs is a setting to fix,
// not contention: the lock fails at once (no retries for the whole wait)
// with ErrInvalid naming the refused permission, where before it was
// ErrNotAcquired ("held elsewhere"), retried until the context ended.
// Two users over real servers, both adapters:
//
//   - "+@all -@dangerous", accepted WithUncheckedNodes: the fencing
//     scripts read INFO (the node's replication id, for the restart
//     repair), which the user may not run; a fencing client refuses such
//     a node from its facts (CheckNodes, every lock), where a plain client
//     locks over it.
//   - "+@all -@scripting": the facts are all told, but every script is
//     refused (NOPERM), which only the lock's requests find.
func TestNodesThatDenyTheLockFailAtOnce(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	users := map[string][]any{
		"dangerless": {"~*", "&*", "+@all", "-@dangerous"},
		"scriptless": {"~*", "&*", "+@all", "-@scripting"},
	}
	for _, s := range cl.Servers {
		for name, rules := range users {
			if err := s.Client().Do(t.Context(), append([]any{"ACL", "SETUSER", name, "on", ">denied-pw"}, rules...)...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	urls := func(user string) []string {
		var out []string
		for _, s := range cl.Servers {
			out = append(out, fmt.Sprintf("redis://%s:denied-pw@%s", user, s.Addr()))
		}
		return out
	}
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		plain := dialURLs(t, a, urls("dangerless"), redlock.WithUncheckedNodes(), redlock.WithNodeTimeout(time.Second))
		l, err := plain.TryLock(t.Context(), "p:"+a.name)
		if err != nil {
			t.Fatalf("plain TryLock with WithUncheckedNodes: %v", err)
		}
		_ = l.Unlock(t.Context())

		tests := []struct {
			user string
			opts []redlock.Option
			say  []string
		}{
			{"dangerless", []redlock.Option{redlock.WithUncheckedNodes(), redlock.WithFencing()}, []string{"INFO", "fencing", "+info"}},
			{"scriptless", []redlock.Option{redlock.WithFencing()}, []string{"NOPERM", "refuse", "no retry", "EVALSHA"}},
		}
		for _, tt := range tests {
			c := dialURLs(t, a, urls(tt.user), append(tt.opts, redlock.WithNodeTimeout(time.Second))...)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			start := time.Now()
			_, err := c.Lock(ctx, "f:"+a.name)
			took := time.Since(start)
			cancel()
			var ae *redlock.AcquireError
			attempts := 0
			if errors.As(err, &ae) {
				attempts = ae.Attempts
			}
			if !errors.Is(err, redlock.ErrInvalid) || attempts > 1 {
				t.Errorf("user %s, %d option(s): Lock for 20s = %v after %v and %d attempt(s); want ErrInvalid at the first", tt.user, len(tt.opts), err, took, attempts)
				continue
			}
			for _, want := range tt.say {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("user %s: the error does not say %q: %v", tt.user, want, err)
				}
			}
			if strings.Contains(err.Error(), "denied-pw") {
				t.Errorf("the error prints the password: %v", err)
			}
		}
	})
}
