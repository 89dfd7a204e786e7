package redlock

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// fenceNop is a nopNode with the fencing capability, for configuration tests.
type fenceNop struct{ nopNode }

func (fenceNop) AcquireFenced(context.Context, string, string, string, time.Duration) (bool, uint64, error) {
	return false, 0, nil
}

func (fenceNop) RaiseFence(context.Context, string, string, string, uint64, time.Duration) (bool, error) {
	return false, nil
}

func nodesOf(n int, fencing bool) []Node {
	out := make([]Node, n)
	for i := range out {
		name := string(rune('a' + i))
		if fencing {
			out[i] = fenceNop{nopNode{name}}
		} else {
			out[i] = nopNode{name}
		}
	}
	return out
}

func TestQuorumFor(t *testing.T) { // R8.3, B3
	tests := []struct {
		n, f    int
		fencing bool
		want    int
		err     string
	}{
		{n: 5, want: 3},
		{n: 4, want: 3},
		{n: 5, f: 1, want: 4},
		{n: 4, f: 1, want: 3},
		{n: 7, f: 2, want: 5},
		{n: 3, f: 1, err: "needs at least 3f+1 = 4 nodes, got 3"},
		{n: 6, f: 2, err: "needs at least 3f+1 = 7 nodes, got 6"},
		{n: 5, f: 1, fencing: true, want: 4},
		{n: 9, f: 2, fencing: true, want: 7},
		{n: 4, f: 1, fencing: true, err: "needs at least 4f+1 = 5 nodes, got 4"},
		{n: 5, f: -1, err: "must be 0 or more"},
	}
	for _, tt := range tests {
		o := defaultClientOptions()
		o.byzantine, o.fencing = tt.f, tt.fencing
		got, err := quorumFor(tt.n, o)
		if tt.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("quorumFor(n=%d, f=%d, fencing=%v) err = %v, want ErrInvalid saying %q", tt.n, tt.f, tt.fencing, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("quorumFor(n=%d, f=%d, fencing=%v) = %d, %v; want %d", tt.n, tt.f, tt.fencing, got, err, tt.want)
		}
		// Safety of the quorum: two quorums share at least f+1 nodes, so at
		// least one honest one; with fencing, 2f+1 (f+1 honest).
		share := 2*got - tt.n
		need := tt.f + 1
		if tt.fencing {
			need = 2*tt.f + 1
		}
		if share < need {
			t.Errorf("quorumFor(n=%d, f=%d) = %d: two quorums share %d nodes, need %d", tt.n, tt.f, got, share, need)
		}
		if got > tt.n-tt.f {
			t.Errorf("quorumFor(n=%d, f=%d) = %d: more than the %d honest nodes", tt.n, tt.f, got, tt.n-tt.f)
		}
	}
}

func TestNextToken(t *testing.T) { // R18
	tests := []struct {
		name   string
		fences []uint64
		f      int
		floor  uint64
		want   uint64
		err    bool
	}{
		{name: "fresh resource", fences: []uint64{0, 0, 0}, want: 1},
		{name: "max plus one", fences: []uint64{4, 7, 6}, want: 8},
		{name: "floor wins", fences: []uint64{4, 7, 6}, floor: 1_000_000, want: 1_000_000},
		{name: "counter beats floor", fences: []uint64{4, 7_000_000, 6}, floor: 1_000_000, want: 7_000_001},
		{name: "byzantine ignores one inflated value", fences: []uint64{math.MaxUint64 - 5, 7, 7, 6}, f: 1, want: 8},
		{name: "byzantine second largest", fences: []uint64{9, 3, 8, 2}, f: 1, want: 9},
		{name: "top of the token space", fences: []uint64{math.MaxUint64, 1, 1}, err: true},
		{name: "too few values", fences: []uint64{1}, f: 1, err: true},
	}
	for _, tt := range tests {
		got, err := nextToken(tt.fences, tt.f, tt.floor)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: nextToken(%v, f=%d, floor=%d) = %d, %v; want %d (error %v)", tt.name, tt.fences, tt.f, tt.floor, got, err, tt.want, tt.err)
		}
	}
}

func TestNewRefusesBadBeyondOptions(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		opts  []Option
		want  string
	}{
		{"fencing without the capability", nodesOf(5, false), []Option{WithFencing()}, `node "a" (position 0) does not implement adapter.FencingNode`},
		{"overlapping prefixes", nodesOf(5, true), []Option{WithFencing(), WithKeyPrefix("")}, "overlap"},
		{"fence prefix inside the lock prefix", nodesOf(5, true), []Option{WithFencing(), WithKeyPrefix("x:"), WithFencePrefix("x:f:")}, "overlap"},
		{"lock prefix is the fence prefix, without fencing", nodesOf(5, false), []Option{WithKeyPrefix(DefaultFencePrefix)}, `lock key prefix "dlm:fence:" and fence key prefix "dlm:fence:" overlap`},
		{"lock prefix starts the fence prefix, without fencing", nodesOf(5, false), []Option{WithKeyPrefix("dlm:")}, "overlap"},
		{"lock prefix inside the record prefix", nodesOf(5, false), []Option{WithKeyPrefix(DefaultRecordPrefix + "x:")}, `record key prefix "dlm:record:" overlap`},
		{"empty fence prefix", nodesOf(5, true), []Option{WithFencing(), WithFencePrefix("")}, "fence key prefix must not be empty"},
		{"negative retention", nodesOf(5, true), []Option{WithFencing(), WithFenceRetention(-time.Second)}, "fence retention must be"},
		{"retention under the ttl", nodesOf(5, true), []Option{WithFencing(), WithFenceRetention(time.Second)}, "fence retention 1s must exceed the ttl 10s"},
		{"byzantine N=3 f=1", nodesOf(3, false), []Option{WithByzantineNodes(1)}, "f=1 needs at least 3f+1 = 4 nodes, got 3"},
		{"byzantine fencing N=4 f=1", nodesOf(4, true), []Option{WithByzantineNodes(1), WithFencing()}, "4f+1 = 5 nodes, got 4"},
		{"zero max extensions", nodesOf(5, false), []Option{WithMaxExtensions(0)}, "max extensions must be at least 1"},
		{"zero hand-off limit", nodesOf(5, false), []Option{WithHandoffLimit(0)}, "hand-off limit must be at least 1"},
		{"extend interval beyond ttl", nodesOf(5, false), []Option{WithTTL(time.Second), WithExtendInterval(time.Second)}, "extend interval 1s must be less than the ttl 1s"},
		{"negative extend interval", nodesOf(5, false), []Option{WithExtendInterval(-time.Second)}, "extend interval must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.nodes, tt.opts...)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: err = %v, want ErrInvalid saying %q", err, tt.want)
			}
		})
	}
	c, err := New(nodesOf(5, true), WithFencing(), WithFenceRetention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TryLock(t.Context(), "r", WithTTL(time.Hour)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fence retention 1m0s must exceed the ttl 1h0m0s") {
		t.Errorf("TryLock with a ttl beyond the fence retention = %v, want ErrInvalid", err)
	}
}

func TestAttemptOutcomeNames(t *testing.T) {
	for o, want := range map[AttemptOutcome]string{AttemptAcquired: "acquired", AttemptContended: "contended", AttemptNoQuorum: "no_quorum", AttemptTooLate: "too_late", AttemptFenceFailed: "fence_failed", AttemptCanceled: "canceled"} {
		if got := o.String(); got != want {
			t.Errorf("AttemptOutcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}
