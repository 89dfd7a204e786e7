package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// TestSchemeMismatch: a rediss:// URL on a plain port (the server never
// answers the TLS handshake) and a redis:// URL on a TLS port (the server
// drops the plain requests) name the likely cause and the URL that fits,
// over both adapters, for dlm lock and dlm acquire, and in dlm status; a
// port where nothing
// listens gets no such hint.
// Failed before: every mismatch row said only "127.0.0.1:PORT timed out"
// (or "failed (EOF)").
func TestSchemeMismatch(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	plain := redlocktest.Start(t, 1).Servers[0].Addr()
	pki := newTestPKI(t, t.TempDir())
	tlsPort, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redlocktest.StartServer(t, redlocktest.WithArgs("--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", pki.serverCert, "--tls-key-file", pki.serverKey, "--tls-ca-cert-file", pki.ca, "--tls-auth-clients", "no"))
	tlsAddr := "127.0.0.1:" + strconv.Itoa(tlsPort)
	// A port where nothing listens, held for the test: a port of the
	// ephemeral range may become any outgoing connection's source port
	// meanwhile, and then answer (a run saw "connection reset by peer"
	// there); one only found free below it was taken by another test's
	// redis-server, which then did not answer the TLS handshake.
	closed := redlocktest.RefusingAddr(t)
	const notTLS, isTLS = "does not speak TLS on this port", "speaks TLS on this port"
	for _, tc := range []struct {
		name, url, want, not string
	}{
		{"rediss on a plain port", "rediss://" + plain, notTLS + "; use redis://" + plain, ""},
		{"redis on a TLS port", "redis://" + tlsAddr, isTLS + "; use rediss://" + tlsAddr, ""},
		{"rediss, nothing listens", "rediss://" + closed, "", "TLS on this port"},
	} {
		t.Run(tc.name+"/status", func(t *testing.T) {
			t.Parallel()
			r := runDLM(t, 60*time.Second, nil, "status", "--nodes", tc.url)
			if !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("dlm status does not say %q\nstdout: %s\nstderr: %s", tc.want, r.stdout, r.stderr)
			}
			if tc.not != "" && strings.Contains(r.stdout+r.stderr, tc.not) {
				t.Errorf("dlm status blames TLS for a port where nothing listens: %s", r.stdout)
			}
			if strings.Contains(r.stdout+r.stderr, "client certificate") {
				t.Errorf("dlm status blames a client certificate: %s", r.stdout)
			}
		})
		for _, adapter := range []string{"rueidis", "goredis"} {
			for _, sub := range []string{"lock", "acquire"} {
				t.Run(tc.name+"/"+adapter+"/"+sub, func(t *testing.T) {
					t.Parallel()
					args := []string{sub, "--nodes", tc.url, "--adapter", adapter, "--node-timeout", "300ms", "r"}
					if sub == "lock" {
						args = append(args, "--", "true")
					}
					r := runDLM(t, 60*time.Second, nil, args...)
					if r.code != exitUnavailable {
						t.Errorf("exit %d, want %d; stderr: %s", r.code, exitUnavailable, r.stderr)
					}
					if !strings.Contains(r.stderr, tc.want) {
						t.Errorf("stderr %q does not say %q", r.stderr, tc.want)
					}
					if tc.not != "" && strings.Contains(r.stderr, tc.not) {
						t.Errorf("stderr %q blames TLS for a port where nothing listens", r.stderr)
					}
				})
			}
		}
	}
}
