package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// dlm lock and dlm elect count a node they refuse (a replica attached, a
// max ttl below --ttl, facts hidden from the user) as a failed node, as
// the library does and as their own warning says: one such node of five
// leaves a quorum, the command runs and the warning names the node. Three
// of five leave none: exit 64, one error naming each refused node and the
// fix. Real servers, the dlm binary. The rows run in parallel, each on a
// resource of its own, beside the package's other parallel tests: nothing
// here measures time, and the ttl and node timeout are ones a loaded
// machine keeps (a good node that missed a 1 s node timeout would leave
// the one-refused rows without a quorum).
func TestLockAndElectCountOutARefusedNode(t *testing.T) {
	t.Parallel()
	cl := redlocktest.Start(t, 5)
	plain := cl.URLs()[:2]
	withReplica, shortTTL, hiding := cl.Servers[2], cl.Servers[3], cl.Servers[4]
	redlocktest.StartServer(t, redlocktest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(withReplica.Port())))
	if err := shortTTL.Client().Set(t.Context(), adapter.MaxTTLKey, "2s", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := hiding.Client().Do(t.Context(), "ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	hidingURL := fmt.Sprintf("redis://app:app-pw@127.0.0.1:%d", hiding.Port())
	redlocktest.Eventually(t, 30*time.Second, func() bool {
		info, err := withReplica.Client().Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1")
	}, "the replica never connected")
	// Two good nodes of the first five stand in for the other two.
	good := append(plain, redlocktest.Start(t, 2).URLs()...)

	tests := []struct {
		name    string
		refused []string // URLs of the refused nodes
		say     []string // in the warning, or in the error
	}{
		{"a replica attached", []string{withReplica.URL()}, []string{withReplica.Addr(), "1 replica(s)"}},
		{"a max ttl below --ttl", []string{shortTTL.URL()}, []string{shortTTL.Addr(), "max ttl 2s"}},
		{"facts hidden from the user", []string{hidingURL}, []string{hiding.Addr(), "INFO", "--unchecked-nodes"}},
		{"three of five", []string{hidingURL, withReplica.URL(), shortTTL.URL()}, []string{withReplica.Addr(), shortTTL.Addr(), hiding.Addr()}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := "job" + strconv.Itoa(i)
			// The refused nodes first: dlm hides a password that follows
			// other URLs in --nodes by every comma-separated piece it
			// could be, ports included.
			nodes := strings.Join(append(append([]string(nil), tt.refused...), good[:5-len(tt.refused)]...), ",")
			wantCode := 0
			if len(tt.refused) > 2 {
				wantCode = exitUsage
			}
			for _, args := range [][]string{
				{"lock", "--nodes", nodes, "--ttl", "10s", "--node-timeout", "2s", job, "--", "true"},
				{"elect", "--nodes", nodes, "--ttl", "10s", "--node-timeout", "2s", job + "s", "--id", "a", "--", "true"},
			} {
				r := runDLM(t, time.Minute, nil, args...)
				if r.code != wantCode {
					t.Errorf("dlm %s over 5 nodes of which %d refused: exit %d, want %d\nstderr: %s", args[0], len(tt.refused), r.code, wantCode, r.stderr)
					continue
				}
				t.Logf("dlm %s: exit %d, stderr:\n%s", args[0], r.code, r.stderr)
				for _, want := range tt.say {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("dlm %s: stderr does not say %q:\n%s", args[0], want, r.stderr)
					}
				}
				if wantCode == 0 && !strings.Contains(r.stderr, "counted as a failed node") {
					t.Errorf("dlm %s: stderr does not warn that the node is counted as a failed node:\n%s", args[0], r.stderr)
				}
				if strings.Contains(r.stderr, "app-pw") {
					t.Errorf("dlm %s prints the password:\n%s", args[0], r.stderr)
				}
			}
		})
	}
}

// dlm lock --fencing and dlm elect over nodes whose user may not run
// what fencing needs: exit 64 at once, naming what is refused and what to
// grant, where before every attempt failed as if the lock were held
// elsewhere (exit 75 after the whole --wait). A user without INFO
// (accepted with --unchecked-nodes; the fencing scripts run INFO) is
// refused from the nodes' facts; a user without scripts, whose facts are
// all told, by the lock's first attempt. Real servers, the dlm binary.
func TestFencingOverNodesThatRefuseINFO(t *testing.T) {
	t.Parallel()
	cl := redlocktest.Start(t, 3)
	users := map[string][]any{
		"dangerless": {"~*", "&*", "+@all", "-@dangerous"},
		"scriptless": {"~*", "&*", "+@all", "-@scripting"},
	}
	urls := map[string][]string{}
	for _, s := range cl.Servers {
		for name, rules := range users {
			if err := s.Client().Do(t.Context(), append([]any{"ACL", "SETUSER", name, "on", ">app-pw"}, rules...)...).Err(); err != nil {
				t.Fatal(err)
			}
			urls[name] = append(urls[name], "redis://"+name+":app-pw@"+s.Addr())
		}
	}
	dangerless, scriptless := strings.Join(urls["dangerless"], ","), strings.Join(urls["scriptless"], ",")
	for _, tt := range []struct {
		args []string
		say  []string
	}{
		{[]string{"lock", "--unchecked-nodes", "--fencing", "--nodes", dangerless, "--wait", "20s", "job", "--", "true"}, []string{"refuses INFO", "fencing scripts", "+info"}},
		{[]string{"elect", "--unchecked-nodes", "--nodes", dangerless, "--wait", "20s", "jobs", "--id", "a", "--", "true"}, []string{"refuses INFO", "fencing scripts", "+info"}},
		{[]string{"lock", "--fencing", "--nodes", scriptless, "--wait", "20s", "job", "--", "true"}, []string{"NOPERM", "refuse the lock's request", "no retry", "EVALSHA"}},
	} {
		r := runDLM(t, time.Minute, nil, tt.args...)
		ok := r.code == exitUsage && !strings.Contains(r.stderr, "held elsewhere")
		for _, want := range tt.say {
			ok = ok && strings.Contains(r.stderr, want)
		}
		if !ok {
			t.Errorf("dlm %s: exit %d after %v, stderr:\n%s\nwant %d naming %q", tt.args[0], r.code, r.elapsed, r.stderr, exitUsage, tt.say)
		}
		if strings.Contains(r.stderr, "app-pw") {
			t.Errorf("dlm %s prints the password:\n%s", tt.args[0], r.stderr)
		}
	}
}
