package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeKey writes a general's key file as keygen does and returns its
// public key in cluster form.
func writeKey(t *testing.T, path string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(priv.Seed())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pub)
}

// freeAddr returns a loopback address nobody listens on, reserved for t
// (lowFreeAddr): a port listened on and closed again was handed out twice,
// to two generals of one cluster ("generals 2 and 3 have the same address
// \"127.0.0.1:42345\"", TestGeneralsNodeFlood in a quiet fresh-clone run).
func freeAddr(t *testing.T) string {
	t.Helper()
	return lowFreeAddr(t) // reserved until t ends: two calls never meet
}

// TestGeneralsNodeUsageErrors: a node that cannot take part as asked is a
// usage error (exit 64) and refuses before it listens (regressions: a key
// that does not match the cluster printed "decides attack" and exited 0;
// --id 9 and a cluster/-n mismatch exited 1 after listening on all
// interfaces).
func TestGeneralsNodeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	var pubs []string
	for i := range 4 {
		pubs = append(pubs, writeKey(t, filepath.Join(dir, fmt.Sprintf("g%d.key", i))))
	}
	other := filepath.Join(dir, "other.key")
	writeKey(t, other)
	writeCluster := func(name string, addrs []string) string {
		var c struct {
			Generals []map[string]any `json:"generals"`
		}
		for i, a := range addrs {
			c.Generals = append(c.Generals, map[string]any{"id": i, "addr": a, "public_key": pubs[i]})
		}
		b, _ := json.Marshal(c)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	addrs := []string{freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)}
	good := writeCluster("cluster.json", addrs)
	_, port1, _ := net.SplitHostPort(addrs[1])
	anyAddr := writeCluster("any.json", []string{addrs[0], ":" + port1, addrs[2], addrs[3]})
	// Every case is refused before round 0, so the start may be far: 100
	// ms ahead was in the past by the time a subtest ran on a machine at
	// load 9, and the refusal named the start instead of the case's fault.
	start := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339Nano)
	key1 := filepath.Join(dir, "g1.key")
	// The same key, readable by every user (as cp or an editor may leave
	// it).
	open1 := filepath.Join(dir, "g1-open.key")
	if b, err := os.ReadFile(key1); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(open1, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open1, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"key does not match the cluster", []string{"--cluster", good, "--id", "1", "--key", other}, "key"},
		{"id not in the cluster", []string{"--cluster", good, "--id", "9", "--key", key1}, "id 9"},
		{"cluster and -n disagree", []string{"--cluster", good, "--id", "1", "--key", key1, "-n", "5"}, "5"},
		{"all interfaces not asked", []string{"--cluster", anyAddr, "--id", "1", "--key", key1}, "all interfaces"},
		// Regression: a start in the past ran, refused every
		// peer's message as late and decided retreat with exit 0.
		{"start in the past", []string{"--cluster", good, "--id", "1", "--key", key1, "--start", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}, "in the past"},
		{"interactive value too long", []string{"--cluster", good, "--id", "1", "--key", key1, "--interactive", "--value", strings.Repeat("x", 300)}, "--value: 300 bytes: want 1 to 64"},
		// Regression: a node asked to explain another general printed no
		// explanation and said nothing.
		{"explain another general", []string{"--cluster", good, "--id", "1", "--key", key1, "--explain", "2"}, "a node explains only its own decisions: --explain 1"},
		{"value without interactive", []string{"--cluster", good, "--id", "1", "--key", key1, "--value", "east"}, "--value needs --interactive"},
		// Regression: a key file every user could read was used without
		// a word.
		{"key readable by others", []string{"--cluster", good, "--id", "1", "--key", open1}, "key file " + open1 + " has mode 0644: users other than its owner can read or change it, and whoever reads it can sign as this general; run \"chmod 600 " + open1 + "\""},
		// Accepted when asked: the next check is the one that refuses.
		{"key readable by others, accepted", []string{"--cluster", good, "--id", "9", "--key", open1, "--insecure-key-mode"}, "id 9"},
		{"start too far ahead", []string{"--cluster", good, "--id", "1", "--key", key1, "--start", time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339Nano)}, "check the date"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"node", "--start", start, "--round-timeout", "200ms"}, tt.args...)
			code, stdout, stderr := runGeneralsCLI(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
			}
			if strings.Contains(stdout, "decides") {
				t.Errorf("stdout reports a decision: %s", stdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

// TestGeneralsKeygenFile: keygen writes a private key readable by its owner
// only and refuses to overwrite one without --force (regression: it
// overwrote an existing key and left it 0644).
func TestGeneralsKeygenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "general.key")
	if err := os.WriteFile(path, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runGeneralsCLI(t, "keygen", "--out", path)
	if code != exitUsage {
		t.Errorf("keygen over an existing key: exit %d, want %d (stderr %s)", code, exitUsage, stderr)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious\n" {
		t.Errorf("the existing key was overwritten without --force")
	}
	code, stdout, stderr := runGeneralsCLI(t, "keygen", "--out", path, "--force")
	if code != exitOK {
		t.Fatalf("keygen --force: exit %d, stderr %s", code, stderr)
	}
	if strings.TrimSpace(stdout) == "" {
		t.Errorf("keygen printed no public key")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode %o, want 600", mode)
	}
	fresh := filepath.Join(dir, "fresh.key")
	if code, _, stderr := runGeneralsCLI(t, "keygen", "--out", fresh); code != exitOK {
		t.Fatalf("keygen: exit %d, stderr %s", code, stderr)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new key file: %v, mode %o; want 600", err, fi.Mode().Perm())
	}
}

// TestGeneralsCrashFlag: --crash stops a general at a round; it is
// reported crashed, the verdict covers the loyal survivors, and a crash
// counts among the m faulty generals.
func TestGeneralsCrashFlag(t *testing.T) {
	tests := []generalsCase{
		{"lieutenant crashes in round 1", []string{"--crash", "2@1"}, exitOK, "crashed: [2]", ""},
		{"commander crashes in round 0", []string{"--crash", "0@0"}, exitOK, "vacuously: the commander crashed", ""},
		{"SM lieutenant crashes", []string{"--algorithm", "sm", "--crash", "3@1"}, exitOK, "crashed at round 1", ""},
		{"crash and traitor exceed m", []string{"--crash", "2@1", "--faulty", "3"}, exitUsage, "", "tolerates m = 1"},
		{"crash round out of range", []string{"--crash", "2@5"}, exitUsage, "", "round 5"},
		{"crash not id@round", []string{"--crash", "2"}, exitUsage, "", "id@round"},
	}
	runGeneralsCases(t, tests)
}

// TestGeneralsExplain: --explain prints the OM tree with missing messages
// as the default, or SM's V with the first chains; --json carries it.
func TestGeneralsExplain(t *testing.T) {
	tests := []generalsCase{
		{"OM silent lieutenant", []string{"--faulty", "3", "--strategy", "silent", "--explain", "1"}, exitOK, "0:3 missing -> retreat (default)", ""},
		{"OM majority", []string{"--faulty", "3", "--explain", "2"}, exitOK, "majority(attack, attack, retreat) = attack", ""},
		{"SM first chains", []string{"--algorithm", "sm", "-n", "3", "--faulty", "0", "--explain", "1"}, exitOK, "retreat    first by retreat:0:2 in round 1", ""},
		{"JSON", []string{"--explain", "1", "--json"}, exitOK, `"explanations"`, ""},
		// Regression: --explain did not say how to read a path.
		{"what a path means", []string{"--faulty", "3", "--explain", "2"}, exitOK, "the commander (0) sent it to lieutenant 2, who relayed it to lieutenant 5", ""},
		{"every general", []string{"--faulty", "3", "--explain", "all"}, exitOK, "explain general 1: tree of values", ""},
		{"explain out of range", []string{"--explain", "9"}, exitUsage, "", "explain"},
		{"OM tree too large", []string{"-n", "16", "-m", "5", "--explain", "1"}, exitUsage, "", "decision tree"},
	}
	runGeneralsCases(t, tests)
}

// TestGeneralsExhaust: the exhaustive mode holds for the safe small cases,
// refuses sizes outside the bounds without --unsafe, finds the known
// violations with it, and never calls a stopped search a proof (a review found:
// "-n 5 -m 2" printed "IC1 and IC2 held for all of them" and exited 0).
func TestGeneralsExhaust(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
	}{
		{"OM n4 m1", []string{"--algorithm", "om", "-n", "4", "-m", "1"}, exitOK, "5 traitor sets covered by 3 searched, 47 runs"},
		{"SM n3 m1", []string{"--algorithm", "sm", "-n", "3", "-m", "1"}, exitOK, "IC1 and IC2 held in every run"},
		{"SM n4 m2", []string{"--algorithm", "sm", "-n", "4", "-m", "2"}, exitOK, "IC1 and IC2 held in every run"},
		{"OM n5 m2 refused", []string{"--algorithm", "om", "-n", "5", "-m", "2"}, exitUsage, ""},
		{"OM n3 m1 refused", []string{"--algorithm", "om", "-n", "3", "-m", "1"}, exitUsage, ""},
		{"OM n3 m1 unsafe counterexample", []string{"--algorithm", "om", "-n", "3", "-m", "1", "--unsafe"}, exitFailure, "counterexample"},
		{"OM n5 m2 traitors 1,2 unsafe", []string{"--algorithm", "om", "-n", "5", "-m", "2", "--faulty", "1,2", "--unsafe", "--max-runs", "8000"}, exitFailure, "VIOLATED: IC1 in 399 runs, IC2 in 8000 runs"},
		{"stopped early", []string{"--algorithm", "sm", "-n", "5", "-m", "2", "--max-runs", "50"}, exitInconclusive, "proves nothing"},
		{"JSON", []string{"--algorithm", "sm", "-n", "3", "--json"}, exitOK, `"complete": true`},
		{"interactive OM n4 m1", []string{"--interactive", "--values", "north,east,south,west"}, exitOK, "every instance of every interactive run of 4 generals with the private values 0=north 1=east 2=south 3=west"},
		{"interactive below the bound", []string{"--interactive", "-n", "3", "--values", "a,b,c", "--unsafe"}, exitFailure, "VIOLATED: IC1 in 0 runs, IC2 in 12 runs"},
		{"interactive counterexample placed", []string{"--interactive", "-n", "3", "--values", "a,b,c", "--unsafe"}, exitFailure, "counterexample (traitors [1], loyal order a) in an interactive run: instance 0 with traitors [1]"},
		{"interactive wrong number of values", []string{"--interactive", "--values", "a,b"}, exitUsage, ""},
		{"values without interactive", []string{"--values", "a,b,c,d"}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantGeneralsRun(t, append([]string{"exhaust"}, tt.args...), tt.wantCode, tt.wantStdout, "")
		})
	}
}
