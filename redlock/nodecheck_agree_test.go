package redlock_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// CheckNodes says what the locks do: it returns an error exactly when
// every lock of the client's ttl is refused before any request (two nodes
// that are one server, or refused nodes that leave no quorum), on one line
// naming each refused node; a refused node that leaves a quorum is a
// warning that it is counted as a failed node, as the lock then counts it.
// Over in-memory nodes, each refusal alone and mixed.
func TestCheckNodesAgreesWithTheLocks(t *testing.T) {
	replica := adapter.Facts{Replicas: 1}
	short := adapter.Facts{MaxTTL: 2 * time.Second}
	hidden := adapter.Facts{Refused: []string{adapter.RefusedInfo}}
	evicts := adapter.Facts{MaxMemory: 1 << 20, MaxMemoryPolicy: "allkeys-lru"}
	ok := adapter.Facts{}
	tests := []struct {
		name    string
		facts   []adapter.Facts
		opts    []redlock.Option
		refused []int // the nodes refused (from 1)
	}{
		{"none refused", []adapter.Facts{ok, ok, ok, ok, ok}, nil, nil},
		{"a replica attached", []adapter.Facts{ok, ok, ok, ok, replica}, nil, []int{5}},
		{"a max ttl below the ttl", []adapter.Facts{ok, ok, ok, ok, short}, nil, []int{5}},
		{"facts hidden", []adapter.Facts{ok, ok, ok, ok, hidden}, nil, []int{5}},
		{"facts hidden, accepted", []adapter.Facts{ok, ok, hidden, hidden, hidden}, []redlock.Option{redlock.WithUncheckedNodes()}, nil},
		{"evicts", []adapter.Facts{evicts, ok, ok, ok, ok}, nil, []int{1}},
		{"two of five", []adapter.Facts{ok, ok, ok, short, replica}, nil, []int{4, 5}},
		{"three of five", []adapter.Facts{ok, ok, hidden, short, replica}, nil, []int{3, 4, 5}},
		{"three of five, a replica accepted", []adapter.Facts{ok, ok, hidden, short, replica}, []redlock.Option{redlock.WithPromotableReplicas()}, []int{3, 4}},
		{"every node", []adapter.Facts{short, short, replica, evicts, hidden}, nil, []int{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(len(tt.facts))
			for i, f := range tt.facts {
				f.RunID = fmt.Sprint("run", i)
				mems[i].SetFacts(f)
			}
			c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithTTL(5 * time.Second)}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rep, checkErr := c.CheckNodes(t.Context())
			l, lockErr := c.TryLock(t.Context(), "x")
			if lockErr == nil {
				_ = l.Unlock(t.Context())
			}
			refused := errors.Is(lockErr, redlock.ErrInvalid)
			if (checkErr != nil) != refused {
				t.Fatalf("CheckNodes = %v, but TryLock = %v: they disagree", checkErr, lockErr)
			}
			if !refused && lockErr != nil {
				t.Fatalf("TryLock = %v, want granted or ErrInvalid", lockErr)
			}
			if refused {
				if !errors.Is(checkErr, redlock.ErrInvalid) || strings.Contains(checkErr.Error(), "\n") || strings.Count(checkErr.Error(), "invalid argument") != 1 {
					t.Errorf("CheckNodes = %q, want one ErrInvalid on one line", checkErr)
				}
				if checkErr.Error() != lockErr.Error() {
					t.Errorf("CheckNodes says %q, the lock %q: want one message", checkErr, lockErr)
				}
			}
			if refused != (len(tt.refused) > 2) {
				t.Errorf("%d of 5 nodes refused: TryLock = %v", len(tt.refused), lockErr)
			}
			for i, m := range mems {
				counted := strings.Contains(strings.Join(rep.Warnings, "\n"), "node "+m.String()+" is counted as a failed node")
				named := checkErr != nil && strings.Contains(checkErr.Error(), m.String())
				isRefused := slices.Contains(tt.refused, i+1)
				switch {
				case isRefused && refused && !named:
					t.Errorf("node %s, refused, is not named in %q", m, checkErr)
				case isRefused && !refused && !counted:
					t.Errorf("node %s, refused, is not warned of as counted as a failed node: %q", m, rep.Warnings)
				case !isRefused && (counted || named):
					t.Errorf("node %s, not refused, is counted out: %q, %v", m, rep.Warnings, checkErr)
				case refused && counted:
					t.Errorf("node %s is warned of as counted out while the lock is refused: %q", m, rep.Warnings)
				}
			}
		})
	}
}
