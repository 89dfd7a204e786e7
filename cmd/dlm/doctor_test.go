package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/checker/torture"
	"dlm/redlock/redlocktest"
)

// healthy is a probe of a node that passes every check.
func healthy(name string) probe {
	return probe{Node: name, Role: "master", RunID: "id-" + name, ClockOK: true,
		Config: map[string]string{"maxmemory-policy": "noeviction", "maxmemory": "0", "appendonly": "yes", "appendfsync": "always", "save": ""}}
}

// TestDiagnose checks the pure verdicts of doctor on hand-made probes.
func TestDiagnose(t *testing.T) {
	five := func(change func([]probe)) []probe {
		ps := []probe{healthy("a"), healthy("b"), healthy("c"), healthy("d"), healthy("e")}
		if change != nil {
			change(ps)
		}
		return ps
	}
	tests := []struct {
		name string
		ps   []probe
		sev  severity // worst severity expected
		rule string   // rule of a finding with that severity
		node string
	}{
		{"healthy", five(nil), sevOK, "", ""},
		{"replica", five(func(ps []probe) { ps[1].Role, ps[1].Master = "slave", "10.0.0.1:6379" }), sevFail, "R2", "b"},
		{"has replicas", five(func(ps []probe) { ps[2].Replicas = 2 }), sevFail, "R2", "c"},
		{"same server twice", five(func(ps []probe) { ps[3].RunID = ps[0].RunID }), sevFail, "R2", "d"},
		{"allkeys-lru", five(func(ps []probe) { ps[4].Config["maxmemory-policy"] = "allkeys-lru" }), sevFail, "R13", "e"},
		{"volatile-ttl", five(func(ps []probe) { ps[4].Config["maxmemory-policy"] = "volatile-ttl" }), sevWarn, "R13", "e"},
		// A held lock with 60 s left was evicted by volatile-ttl under
		// maxmemory: a FAIL, not a warning (was sevWarn, exit 0).
		{"volatile-ttl with maxmemory", five(func(ps []probe) {
			ps[4].Config["maxmemory-policy"], ps[4].Config["maxmemory"] = "volatile-ttl", "104857600"
		}), sevFail, "R13", "e"},
		{"volatile-lru with maxmemory", five(func(ps []probe) {
			ps[3].Config["maxmemory-policy"], ps[3].Config["maxmemory"] = "volatile-lru", "1gb"
		}), sevFail, "R13", "d"},
		{"no AOF", five(func(ps []probe) { ps[0].Config["appendonly"] = "no" }), sevWarn, "R16", "a"},
		{"AOF everysec", five(func(ps []probe) { ps[0].Config["appendfsync"] = "everysec" }), sevWarn, "R16", "a"},
		{"clock off", five(func(ps []probe) { ps[2].ClockOffset = 2 * time.Second }), sevWarn, "R9", "c"},
		{"unreachable", five(func(ps []probe) { ps[0] = probe{Node: "a", Err: errors.New("refused")} }), sevWarn, "R1.3", "a"},
		{"even count", five(func(ps []probe) {})[:4], sevWarn, "R7", ""},
		{"one node", five(nil)[:1], sevWarn, "R7", ""},
		{"CONFIG refused", five(func(ps []probe) { ps[1].ConfigErr = errors.New("unknown command") }), sevWarn, "R13", "b"},
		// The clients refuse a node that hides what they check.
		{"ACL refuses INFO", five(func(ps []probe) { ps[1].RunID, ps[1].Refused = "", []string{"INFO", "CLIENT KILL"} }), sevFail, "checks", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := quorumOf(len(tt.ps), 0)
			if err != nil {
				t.Fatal(err)
			}
			fs := diagnose(tt.ps, q, 250*time.Millisecond)
			worst := sevOK
			for _, f := range fs {
				worst = max(worst, f.Sev)
			}
			if worst != tt.sev {
				t.Fatalf("worst severity = %v, want %v; findings: %+v", worst, tt.sev, fs)
			}
			if tt.sev == sevOK {
				return
			}
			for _, f := range fs {
				if f.Sev == tt.sev && f.Rule == tt.rule && f.Node == tt.node && f.Fix != "" {
					return
				}
			}
			t.Errorf("no %v finding of rule %s on node %q with a fix; findings: %+v", tt.sev, tt.rule, tt.node, fs)
		})
	}
}

// dlm doctor over a least-privilege ACL user ("+@all -@dangerous": INFO,
// CONFIG and CLIENT KILL refused) names what it refuses, that the clients
// then refuse the node, and the ACL rules to grant; it exits 1. Before, it
// warned of CONFIG alone and said "ok", while one server given twice went
// unseen.
func TestDoctorNamesWhatTheACLHides(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	if err := s.Client().Do(t.Context(), "ACL", "SETUSER", "app", "on", ">acl-secret-pw", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", "redis://app:acl-secret-pw@"+s.Addr())
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr: %s", r.code, exitFailure, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"FAIL  " + s.Addr(),
		"[node checks] refuses INFO, CONFIG GET, CLIENT KILL to this user",
		"they refuse the node",
		"fix: grant the clients' user what they read: ACL SETUSER <user> +info +config|get +client|id +client|kill",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "acl-secret-pw") {
		t.Errorf("doctor printed the password:\n%s%s", r.stdout, r.stderr)
	}
}

// dlm lock over the same user is refused (exit 64), naming what the node
// refuses, the grant and --unchecked-nodes; with --unchecked-nodes it runs
// the command. Before, it ran unchecked without a word.
func TestLockRefusesNodesThatHideFacts(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	if err := s.Client().Do(t.Context(), "ACL", "SETUSER", "app", "on", ">acl-secret-pw", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	url := "redis://app:acl-secret-pw@" + s.Addr()
	r := runDLM(t, 30*time.Second, nil, "lock", "--nodes", url, "r", "--", "true")
	if r.code != exitUsage || !strings.Contains(r.stderr, "refuses INFO") || !strings.Contains(r.stderr, "+info") || !strings.Contains(r.stderr, "--unchecked-nodes") {
		t.Errorf("dlm lock over a user without INFO: exit %d, stderr %q; want %d naming INFO, +info and --unchecked-nodes", r.code, r.stderr, exitUsage)
	}
	r = runDLM(t, 30*time.Second, nil, "lock", "--unchecked-nodes", "--nodes", url, "r", "--", "true")
	if r.code != 0 {
		t.Errorf("dlm lock --unchecked-nodes: exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "acl-secret-pw") {
		t.Errorf("dlm lock printed the password: %s%s", r.stdout, r.stderr)
	}
}

// TestDoctor runs dlm doctor against real redis-servers: a master with a
// replica (both flagged, R2) and an allkeys-lru node (R13); it exits 1.
func TestDoctor(t *testing.T) {
	t.Parallel()
	master := redlocktest.StartServer(t)
	replica := redlocktest.StartServer(t, redlocktest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	lru := redlocktest.StartServer(t, redlocktest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	redlocktest.Eventually(t, 20*time.Second, func() bool {
		info, err := master.Client().Info(t.Context(), "replication").Result()
		return err == nil && parseInfo(info)["connected_slaves"] == "1"
	}, "the replica never connected to its master")
	nodes := strings.Join([]string{master.URL(), replica.URL(), lru.URL()}, ",")
	r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", nodes)
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr: %s", r.code, exitFailure, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"FAIL  " + master.Addr() + "  [independent masters] has 1 replica",
		"FAIL  " + replica.Addr() + "  [independent masters] is a replica of 127.0.0.1:" + strconv.Itoa(master.Port()),
		"FAIL  " + lru.Addr() + "  [no eviction] maxmemory-policy allkeys-lru",
		"fix: ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}

	// Three healthy masters with AOF always: nothing fails, exit 0.
	c := redlocktest.Start(t, 3, redlocktest.WithPersistence())
	r = runDLM(t, 30*time.Second, nil, "doctor", "--nodes", strings.Join(c.URLs(), ","))
	if r.code != 0 || strings.Contains(r.stdout, "FAIL") || strings.Contains(r.stdout, "WARN") {
		t.Errorf("healthy nodes: exit %d, want 0 with no FAIL or WARN; stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestDoctorClock: a node whose clock runs 10s ahead (libfaketime) is
// flagged (R9), the others are not.
func TestDoctorClock(t *testing.T) {
	t.Parallel()
	lib, err := torture.FaketimeLibrary()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("DLM_REQUIRE_REDIS") != "" {
			t.Fatalf("%v (CI or DLM_REQUIRE_REDIS is set, so this is a failure)", err)
		}
		t.Skipf("SKIPPED, %v", err)
	}
	c := redlocktest.Start(t, 2)
	// libc after libfaketime: Debian's jemalloc-linked redis-server does
	// not start under libfaketime alone (libfaketime issue #130).
	ahead := redlocktest.StartServer(t, redlocktest.WithEnv("LD_PRELOAD="+lib+" libc.so.6", "FAKETIME=+10s"))
	r := runDLM(t, 30*time.Second, nil, "doctor", "--nodes", strings.Join(append(c.URLs(), ahead.URL()), ","))
	// The offset is measured over the network (TIME, corrected for the
	// round trip), so it reads 10s give or take half a round trip: a few
	// milliseconds on a quiet machine, more on a loaded one; anything near
	// 10s, and far from the others' 0, is the offset.
	prefix := "WARN  " + ahead.Addr() + "  [clock agreement] clock is "
	_, rest, found := strings.Cut(r.stdout, prefix)
	word, _, _ := strings.Cut(rest, " ")
	off, perr := time.ParseDuration(word)
	if !found || perr != nil || off < 8*time.Second || off > 12*time.Second {
		t.Errorf("doctor output lacks %q followed by about 10s (got %q, %v):\n%s", prefix, word, perr, r.stdout)
	}
	for _, s := range c.Servers {
		if strings.Contains(r.stdout, s.Addr()+"  [clock agreement]") {
			t.Errorf("doctor flags the clock of %s, which is right:\n%s", s.Addr(), r.stdout)
		}
	}
}
