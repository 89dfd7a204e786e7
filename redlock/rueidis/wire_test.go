package rueidis_test

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	rd "github.com/redis/rueidis"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
	"dlm/redlock/redlocktest/faultconn"
	"dlm/redlock/rueidis"
)

// A fenced acquisition (attempt 2) made after a release of the same value
// was started (attempt 1, as WithValue retries) runs on the node after
// that release. Before the fix the fenced acquisition went to rueidis
// directly while the release still waited in the node's queue behind a
// batch the node had not answered: it reached the node first, set the key
// and answered true, and the release then deleted it.
func TestFencedAcquisitionStaysBehindRelease(t *testing.T) {
	s := redlocktest.StartServer(t)
	c, d := holdClient(t, s)
	n := rueidis.NewNode(c, s.Addr())
	ctx := t.Context()
	const key, fenceKey, value = "fenced", "dlm:fence:fenced", "attempt-value"
	// The node has the script (no NOSCRIPT round trip below).
	if ok, _, err := n.AcquireFenced(ctx, "first", "dlm:fence:first", "v", time.Minute); !ok || err != nil {
		t.Fatalf("AcquireFenced(first) = %v, %v; want true", ok, err)
	}
	hc := d.Conns()[0]
	hc.Hold()
	answers := newCollect(2)
	// A batch the node does not answer yet keeps the queue's worker busy.
	n.Start(ctx, adapter.Request{Op: adapter.OpAcquire, Key: "blocker", Value: "v", TTL: time.Minute}, answers, 0)
	waitUntil(t, func() bool { return hc.HeldWrites() >= 1 })
	n.Start(ctx, adapter.Request{Op: adapter.OpRelease, Key: key, Value: value}, answers, 1) // attempt 1's release
	type result struct {
		ok  bool
		err error
	}
	acq := make(chan result, 1)
	go func() {
		ok, _, err := n.AcquireFenced(ctx, key, fenceKey, value, time.Minute) // attempt 2
		acq <- result{ok, err}
	}()
	// Queued behind the release, or on the wire before it.
	waitUntil(t, func() bool { return n.Queued() >= 2 || hc.HeldWrites() >= 2 })
	if err := hc.Release(); err != nil {
		t.Fatal(err)
	}
	got := <-acq
	answers.wait(t)
	if !got.ok || got.err != nil {
		t.Fatalf("AcquireFenced = %v, %v; want true", got.ok, got.err)
	}
	held, _, err := s.Inspector().Value(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if held != value {
		t.Errorf("the node holds %q under %s after an acquisition answered true; want %q (attempt 1's release ran after it)", held, key, value)
	}
}

// holdClient returns NewClient's client for s, every connection of which
// is a faultconn.HoldConn, and its dialer.
func holdClient(t *testing.T, s *redlocktest.Server) (rd.Client, *faultconn.HoldDialer) {
	t.Helper()
	u, err := redlock.ParseNodeURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	d := &faultconn.HoldDialer{}
	c, err := rueidis.NewClient(u, func(o *rd.ClientOption) {
		o.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return d.Dial(ctx, "tcp", addr)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, d
}

// A request left behind on a connection rueidis gave up never runs on
// the node after the requests of the connection that replaced it.
// Attempt 1's release of a value was on its way on connection 1 (held
// back) when a write failed and rueidis gave connection 1 up; attempt 2
// acquired the same value (WithValue) over connection 2. Before the fix
// the node read the late release after that and deleted the key attempt 2
// counted; now connection 2 closes connection 1 on the node (CLIENT KILL
// ID, fence.go) before rueidis sends anything on it.
func TestReplacedConnectionCannotRunLate(t *testing.T) {
	s := redlocktest.StartServer(t)
	c, d := holdClient(t, s)
	n := rueidis.NewNode(c, s.Addr())
	if ok, err := n.Acquire(t.Context(), "first", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire(first) = %v, %v; want true", ok, err)
	}
	faultconn.LateRelease(t, n, d, s.Client())
}

// waitUntil polls cond until it holds, failing t after 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// NewClient's fenced dial authenticates with the URL's credentials before
// it asks CLIENT ID; a wrong password is an error that does not quote it,
// and a user whose ACL refuses CLIENT gets a working node without the
// fence.
func TestFencedDialCredentials(t *testing.T) {
	const pass = "s3cret-pass"
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	if err := s.Client().Do(ctx, "ACL", "SETUSER", "limited", "on", ">"+pass, "~*", "&*", "+@all", "-client").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().Do(ctx, "ACL", "SETUSER", "full", "on", ">"+pass, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, user, pass string
		wantErr          bool
	}{
		{"full user", "full", pass, false},
		{"no CLIENT", "limited", pass, false},
		{"wrong password", "full", "wrong-" + pass, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := rueidis.DialNode("redis://" + tt.user + ":" + tt.pass + "@" + s.Addr())
			if n == nil {
				if !tt.wantErr {
					t.Fatal(err)
				}
				return
			}
			t.Cleanup(func() { _ = n.Close() })
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			ok, err := n.Acquire(actx, "cred:"+tt.name, "v", time.Minute)
			if tt.wantErr {
				if err == nil || strings.Contains(err.Error(), pass) {
					t.Fatalf("Acquire = %v, %v; want an error that does not quote the password", ok, err)
				}
				return
			}
			if !ok || err != nil {
				t.Fatalf("Acquire = %v, %v; want true", ok, err)
			}
		})
	}
}
