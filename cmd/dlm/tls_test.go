package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dlm/checker/torture"
	"dlm/redlock/redisproc"
	"dlm/redlock/redlocktest"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// newTestPKI writes a fresh CA and two certificates it signs into dir.
func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dlm test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) ([]byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der, kder
	}
	sc, sk := leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	cc, ck := leaf(3, "dlm client", x509.ExtKeyUsageClientAuth)
	return testPKI{
		ca:         write("ca.pem", "CERTIFICATE", caDER),
		serverCert: write("server.pem", "CERTIFICATE", sc), serverKey: write("server-key.pem", "EC PRIVATE KEY", sk),
		clientCert: write("client.pem", "CERTIFICATE", cc), clientKey: write("client-key.pem", "EC PRIVATE KEY", ck),
	}
}

// TestTLS runs dlm against a real redis-server that serves TLS and demands
// a client certificate (Redis's default tls-auth-clients yes): with the CA
// file and the client certificate it works, over either adapter and from
// SSL_CERT_FILE; without them the message says what to give.
func TestTLS(t *testing.T) {
	t.Parallel()
	redlocktest.Require(t)
	pki := newTestPKI(t, t.TempDir())
	tlsPort, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redlocktest.StartServer(t, redlocktest.WithArgs("--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", pki.serverCert, "--tls-key-file", pki.serverKey, "--tls-ca-cert-file", pki.ca, "--tls-auth-clients", "yes"))
	node := "rediss://127.0.0.1:" + strconv.Itoa(tlsPort)
	client := []string{"--tls-cert-file", pki.clientCert, "--tls-key-file", pki.clientKey}
	withParams := node + "?tls-ca-file=" + url.QueryEscape(pki.ca) + "&tls-cert-file=" + url.QueryEscape(pki.clientCert) + "&tls-key-file=" + url.QueryEscape(pki.clientKey)
	locks := 0
	lock := func(extra ...string) []string { // each on its own resource: the subtests run in parallel
		locks++
		return append(append([]string{"lock", "--nodes", node, "--node-timeout", "1s"}, extra...), "r"+strconv.Itoa(locks), "--", "true")
	}
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"mutual TLS", nil, lock(append(client, "--tls-ca-file", pki.ca)...), 0, ""},
		{"mutual TLS goredis", nil, lock(append(client, "--tls-ca-file", pki.ca, "--adapter", "goredis")...), 0, ""},
		{"CA from SSL_CERT_FILE", []string{"SSL_CERT_FILE=" + pki.ca}, lock(client...), 0, ""},
		{"no client certificate", nil, lock("--tls-ca-file", pki.ca), exitUnavailable, "client certificate"},
		{"unknown CA", nil, lock(client...), exitUnavailable, "--tls-ca-file"},
		{"status", nil, append([]string{"status", "--nodes", node, "--tls-ca-file", pki.ca}, client...), 0, " up "},
		{"status without client certificate", nil, []string{"status", "--nodes", node, "--tls-ca-file", pki.ca}, exitUnavailable, "client certificate"},
		{"files as URL parameters", nil, []string{"lock", "--nodes", withParams, "--node-timeout", "1s", "rp", "--", "true"}, 0, ""},
		{"URL parameters, goredis", nil, []string{"lock", "--nodes", withParams, "--adapter", "goredis", "--node-timeout", "1s", "rpg", "--", "true"}, 0, ""},
		{"status with URL parameters", nil, []string{"status", "--nodes", withParams}, 0, " up "},
		{"demo", nil, []string{"demo", "--no-tui", "--duration", "2s", "--workers", "2", "--nodes", node, "--tls-ca-file", pki.ca,
			"--tls-cert-file", pki.clientCert, "--tls-key-file", pki.clientKey}, 0, "1 of 1 nodes up"},
		{"CA file missing", nil, lock("--tls-ca-file", filepath.Join(t.TempDir(), "none.pem")), exitUsage, "--tls-ca-file"},
		{"key without certificate", nil, lock("--tls-key-file", pki.clientKey), exitUsage, "go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runDLM(t, 30*time.Second, tt.env, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", tt.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestAdapterTable: the command line's table of adapters is the checker's
// list, and the checker's default is one of them (go-redis, while rueidis
// fails the slow-node scenario; see torture.DefaultAdapter).
func TestAdapterTable(t *testing.T) {
	if got, want := adapterNames(), torture.Adapters(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("adapters %v, checker's %v", got, want)
	}
	if _, err := findAdapter(torture.DefaultConfig("split-votes").Adapter); err != nil {
		t.Errorf("checker's default adapter: %v", err)
	}
}
