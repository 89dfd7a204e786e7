package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Through the command line: a handle edited by its
// holder reaches no further than the command's own settings. Before the
// fix, dlm extend of a handle whose ttl was edited to 2000000h extended the
// key to a 228-year expiry (past the 24h bound of --ttl), and a handle
// whose key prefix was edited to "" extended and then released an
// ordinary application key whose value was known.
func TestForgedHandleIsBounded(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	env := []string{nodesEnv + "=" + strings.Join(c.URLs(), ",")}
	dlm := func(stdin string, args ...string) result {
		return runDLMIn(t, stdin, env, append(args, "--node-timeout", "1s")...)
	}
	forge := func(h redlock.Handle) string {
		b, err := h.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pttl := func(key string) time.Duration {
		var most time.Duration
		for _, s := range c.Servers {
			d, err := s.Client().PTTL(context.Background(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			most = max(most, d)
		}
		return most
	}

	r := dlm("", "acquire", "--ttl", "20s", "deploy")
	if r.code != 0 {
		t.Fatalf("acquire: exit %d; stderr: %s", r.code, r.stderr)
	}
	h := mustParse(t, r.stdout)
	h.TTL = 2000000 * time.Hour
	if r := dlm(forge(h), "extend", "-"); r.code != exitUsage {
		t.Errorf("extend of a handle with ttl 2000000h: exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
	}
	if d := pttl(redlock.DefaultKeyPrefix + "deploy"); d > 20*time.Second {
		t.Errorf("the lock key lives %v after extend of the forged handle; its ttl is 20s", d)
	}

	// An application key whose value is known (it is long enough to pass
	// for a lock value), and a handle edited to reach it.
	const appKey, appValue = "app:config", "known-application-value"
	for _, s := range c.Servers {
		if err := s.Client().Set(context.Background(), appKey, appValue, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	app := redlock.Handle{Resource: appKey, Value: appValue, TTL: time.Hour, Until: time.Now().Add(time.Hour), KeyPrefix: ""}
	if r := dlm(forge(app), "extend", "-"); r.code != exitUsage {
		t.Errorf("extend of a handle with an empty key prefix: exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
	}
	if d := pttl(appKey); d > time.Minute {
		t.Errorf("the application key lives %v after extend of the forged handle; it was set for 1m", d)
	}
	if r := dlm(forge(app), "release", "-"); r.code != exitUsage {
		t.Errorf("release of a handle with an empty key prefix: exit %d, want %d; stderr: %s", r.code, exitUsage, r.stderr)
	}
	for i, v := range c.MustValues(appKey) {
		if v != appValue {
			t.Errorf("node %d: the application key was deleted by release of the forged handle", i)
		}
	}
}
