package election_test

import (
	"errors"
	"testing"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

func TestNameOf(t *testing.T) {
	for _, tt := range []struct {
		resource, want string
		ok             bool
	}{
		{"election:db", "db", true},
		{"election:a b", "a b", true},
		{"election:", "", false},
		{"election:a\nb", "", false},
		{"db", "", false},
		{"Election:db", "", false},
	} {
		got, ok := election.NameOf(tt.resource)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("NameOf(%q) = %q, %v; want %q, %v", tt.resource, got, ok, tt.want, tt.ok)
		}
	}
}

func TestReadStatusRefusesBadInput(t *testing.T) {
	nodes, _ := redlocktest.NewMemNodes(3)
	c, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := election.ReadStatus(t.Context(), c, ""); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("ReadStatus of an empty name = %v, want ErrInvalid", err)
	}
	if _, err := election.ReadStatus(t.Context(), nil, "db"); !errors.Is(err, election.ErrInvalid) {
		t.Errorf("ReadStatus with a nil client = %v, want ErrInvalid", err)
	}
	st, err := election.ReadStatus(t.Context(), c, "db")
	if err != nil || st.OK || st.Leader != (election.Leader{}) || !st.Since.IsZero() {
		t.Errorf("ReadStatus of an election never held = %+v, %v; want no leader, term 0", st, err)
	}
}
