package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) { // R8.3
	tests := []struct {
		n, yes, no int
		want       decision
	}{
		{5, 0, 0, undecided},
		{5, 2, 2, undecided},
		{5, 3, 0, reached},
		{5, 3, 2, reached},
		{5, 2, 3, impossible},
		{5, 0, 3, impossible},
		{3, 2, 0, reached},
		{3, 1, 1, undecided},
		{3, 0, 2, impossible},
		{1, 1, 0, reached},
		{1, 0, 1, impossible},
		{4, 2, 2, impossible}, // even N: quorum 3
		{4, 3, 1, reached},
	}
	for _, tt := range tests {
		if got := decide(tt.n, majority(tt.n), tt.yes, tt.no); got != tt.want {
			t.Errorf("decide(n=%d, yes=%d, no=%d) = %v, want %v", tt.n, tt.yes, tt.no, got, tt.want)
		}
	}
}

func TestMajority(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		if got := majority(n); got != want {
			t.Errorf("majority(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestDriftAndValidity(t *testing.T) { // R9
	if got, want := drift(10*time.Second, 0.01), 102*time.Millisecond; got != want {
		t.Errorf("drift(10s, 0.01) = %v, want %v", got, want)
	}
	if got, want := validity(10*time.Second, 5*time.Millisecond, 102*time.Millisecond), 9893*time.Millisecond; got != want {
		t.Errorf("validity = %v, want %v", got, want)
	}
	if v := validity(100*time.Millisecond, 99*time.Millisecond, 3*time.Millisecond); v > 0 {
		t.Errorf("validity after a slow quorum = %v, want <= 0", v)
	}
}

type nopNode struct{ name string }

func (nopNode) Acquire(_ context.Context, _, _ string, _ time.Duration) (bool, error) {
	return false, nil
}
func (nopNode) Release(_ context.Context, _, _ string) (bool, error) { return false, nil }
func (nopNode) Extend(_ context.Context, _, _ string, _ time.Duration) (bool, error) {
	return false, nil
}
func (n nopNode) String() string { return n.name }

func TestNewRefusesBadConfiguration(t *testing.T) {
	five := []Node{nopNode{"a"}, nopNode{"b"}, nopNode{"c"}, nopNode{"d"}, nopNode{"e"}}
	tests := []struct {
		name  string
		nodes []Node
		opts  []Option
		want  string
	}{
		{"no nodes", nil, nil, "no nodes"},
		{"nil node", []Node{nopNode{"a"}, nil}, nil, "node 1 is nil"},
		{"duplicate node", []Node{nopNode{"a"}, nopNode{"a"}}, nil, "duplicate node"},
		{"zero ttl", five, []Option{WithTTL(0)}, "ttl must be positive"},
		{"negative ttl", five, []Option{WithTTL(-time.Second)}, "ttl must be positive"},
		{"ttl under drift", five, []Option{WithTTL(2 * time.Millisecond), WithNodeTimeout(time.Millisecond)}, "must exceed the clock drift"},
		{"node timeout >= ttl", five, []Option{WithTTL(time.Second), WithNodeTimeout(time.Second)}, "node timeout 1s must be well under the ttl 1s"},
		{"zero node timeout", five, []Option{WithNodeTimeout(0)}, "node timeout must be positive"},
		{"negative tries", five, []Option{WithTries(-1)}, "tries must be"},
		{"retry range", five, []Option{WithRetryDelay(time.Second, time.Millisecond)}, "retry delay range"},
		{"drift factor", five, []Option{WithDriftFactor(1.5)}, "drift factor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.nodes, tt.opts...)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("New: err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: err = %q, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestLockRefusesBadArguments(t *testing.T) {
	c, err := New([]Node{nopNode{"a"}, nopNode{"b"}, nopNode{"c"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TryLock(t.Context(), ""); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "empty resource") {
		t.Errorf("TryLock(\"\") = %v, want ErrInvalid naming the empty resource", err)
	}
	if _, err := c.Lock(t.Context(), "r", WithTTL(10*time.Millisecond)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "node timeout") {
		t.Errorf("Lock with ttl under the node timeout = %v, want ErrInvalid", err)
	}
}

func TestParseNodeURL(t *testing.T) {
	tests := []struct {
		raw     string
		network string
		addr    string
		user    string
		pass    string
		db      int
		tls     bool
		err     string
	}{
		{raw: "redis://127.0.0.1:6380", network: "tcp", addr: "127.0.0.1:6380"},
		{raw: "redis://localhost", network: "tcp", addr: "localhost:6379"},
		{raw: "redis://u:p@h:1/3", network: "tcp", addr: "h:1", user: "u", pass: "p", db: 3},
		{raw: "redis://secret@h:1", network: "tcp", addr: "h:1", pass: "secret"},
		{raw: "rediss://h:6390", network: "tcp", addr: "h:6390", tls: true},
		{raw: "redis://[::1]:7000", network: "tcp", addr: "[::1]:7000"},
		{raw: "unix:///tmp/redis.sock", network: "unix", addr: "/tmp/redis.sock"},
		{raw: "unix:///tmp/redis.sock?db=2", network: "unix", addr: "/tmp/redis.sock", db: 2},
		{raw: "http://h:1", err: `unknown scheme "http"`},
		{raw: "h:6379", err: "unknown scheme"},
		{raw: "127.0.0.1:6379", err: "expected redis://"},
		{raw: "redis://", err: "has no host"},
		{raw: "redis://h:0", err: "port"},
		{raw: "redis://h:99999", err: "port"},
		{raw: "redis://h:1/x", err: "database"},
		{raw: "unix://", err: "no socket path"},
		{raw: "", err: "no scheme"},
		// A parameter dlm does not know, or one given twice, would be
		// ignored in silence (attack review: cluster=true&cluster=false
		// read as a cluster, junk=1 ignored).
		{raw: "redis://h:1?junk=1", err: `unknown parameter "junk"`},
		{raw: "redis://h:1?clsuter=true", err: `unknown parameter "clsuter"`},
		{raw: "redis://h:1?cluster=true&cluster=false", err: `parameter "cluster" given 2 times`},
		{raw: "redis://h:1?db=1&db=2", err: `parameter "db" given 2 times`},
		{raw: "rediss://h:1?tls-ca-file=ca.pem", network: "tcp", addr: "h:1", tls: true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseNodeURL(tt.raw)
			if tt.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseNodeURL(%q) err = %v, want ErrInvalid saying %q", tt.raw, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNodeURL(%q): %v", tt.raw, err)
			}
			if got.Network != tt.network || got.Addr != tt.addr || got.Username != tt.user || got.Password != tt.pass || got.DB != tt.db || got.TLS != tt.tls {
				t.Fatalf("ParseNodeURL(%q) = %+v", tt.raw, got)
			}
		})
	}
	if _, err := ParseNodeURLs([]string{"redis://h:1", "redis://h:1/2"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "duplicate node") {
		t.Errorf("ParseNodeURLs with a duplicate = %v, want ErrInvalid", err)
	}
	if _, err := ParseNodeURLs(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseNodeURLs(nil) = %v, want ErrInvalid", err)
	}
}

func TestValuesAreUniqueAndLong(t *testing.T) { // R4
	s, err := newValueSource()
	if err != nil {
		t.Fatal(err)
	}
	other, err := newValueSource()
	if err != nil {
		t.Fatal(err)
	}
	if s.tag == other.tag || len(s.tag) != tagLen {
		t.Fatalf("client tags %q and %q, want two different tags of %d characters", s.tag, other.tag, tagLen)
	}
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		v, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		// The client's tag (6 bytes), then 20 random bytes, base64url
		// without padding.
		if len(v) != 35 || tagOf(v) != s.tag {
			t.Fatalf("value %q has length %d and tag %q, want 35 and %q", v, len(v), tagOf(v), s.tag)
		}
		if seen[v] {
			t.Fatalf("value %q repeated", v)
		}
		seen[v] = true
	}
}

func TestAcquireErrorTellsNoQuorumFromHeldElsewhere(t *testing.T) {
	node := func(o Outcome) NodeResult { return NodeResult{Node: "n", Outcome: o} }
	tests := []struct {
		name     string
		outcomes []Outcome
		noQuorum bool
	}{
		{"all held", []Outcome{Held, Held, Held, Held, Held}, false},
		// Decided early: 2 held and 1 down leave 2 not waited for. The lock
		// is held elsewhere; the nodes are reachable.
		{"decided early", []Outcome{Held, Held, Failed, NoReply, NoReply}, false},
		{"split votes", []Outcome{Acquired, Acquired, Held, Held, Held}, false},
		{"majority down", []Outcome{Failed, Failed, TimedOut, Acquired, NoReply}, true},
		{"minority down, held", []Outcome{Failed, TimedOut, Held, Held, Held}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &AcquireError{Resource: "r", Quorum: 3}
			for _, o := range tt.outcomes {
				e.Nodes = append(e.Nodes, node(o))
			}
			if got := errors.Is(e, ErrNoQuorum); got != tt.noQuorum {
				t.Fatalf("errors.Is(%v, ErrNoQuorum) = %v, want %v", e, got, tt.noQuorum)
			}
			if !errors.Is(e, ErrNotAcquired) {
				t.Fatal("AcquireError does not satisfy ErrNotAcquired")
			}
		})
	}
}
