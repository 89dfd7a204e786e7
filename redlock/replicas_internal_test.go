package redlock

import (
	"errors"
	"strings"
	"testing"

	"dlm/redlock/adapter"
)

// The refusal of a node's promotable replicas names each with its master,
// says so when the cluster lists none, and says what to set on each.
func TestPromotableErrorNamesWhatIsKnown(t *testing.T) {
	tests := []struct {
		name      string
		reps      []adapter.Replica
		want, not []string
	}{
		{"none promotable", []adapter.Replica{{Addr: "h:2", Master: "h:1"}}, nil, nil},
		{"one", []adapter.Replica{{Addr: "h:2", Master: "h:1", Promotable: true}, {Addr: "h:4", Master: "h:3"}},
			[]string{"replica h:2 of master h:1 may promote itself", "on it, run CONFIG SET cluster-replica-no-failover yes", "WithPromotableReplicas"},
			[]string{"h:4", "unknown"}},
		{"master not listed", []adapter.Replica{{Addr: "h:2", Promotable: true}, {Addr: "h:4", Master: "h:3", Promotable: true}},
			[]string{"replica h:2 (of a master the cluster does not list yet)", "replica h:4 of master h:3", "on each of them"},
			[]string{"unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := promotableError(`cluster:h:1`, tt.reps)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("promotableError = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrPromotableReplica) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("promotableError = %v, want ErrPromotableReplica and ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("promotableError = %q, want it to say %q", err, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("promotableError = %q, want no %q", err, n)
				}
			}
		})
	}
}
