package goredis_test

import (
	"slices"
	"testing"

	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// The facts a node reads name what the server refused to the node's user,
// so that the client does not go on unchecked without a word: "+@all
// -@admin" refuses CONFIG and CLIENT KILL (the reconnect fence's kill,
// probed by a CLIENT KILL ID 0 that closes nothing), "+@all -@dangerous"
// INFO too, a key pattern the GET of the advertised max ttl. Before, a
// refused INFO left no facts at all and the rest went unnamed.
func TestFactsNameWhatTheUserMayNotRun(t *testing.T) {
	s := redlocktest.StartServer(t)
	tests := []struct {
		user  string
		rules []any
		want  []string
	}{
		{"", nil, nil},
		{"adminless", []any{"~*", "&*", "+@all", "-@admin"}, []string{adapter.RefusedConfig, adapter.RefusedClient}},
		{"dangerless", []any{"~*", "&*", "+@all", "-@dangerous"}, []string{adapter.RefusedInfo, adapter.RefusedConfig, adapter.RefusedClient}},
		{"keyed", []any{"~dlm:lock:*", "&*", "+@all"}, []string{adapter.RefusedMaxTTL}},
	}
	for _, tt := range tests {
		url := "redis://" + s.Addr()
		if tt.user != "" {
			if err := s.Client().Do(t.Context(), append([]any{"ACL", "SETUSER", tt.user, "on", ">facts-pw"}, tt.rules...)...).Err(); err != nil {
				t.Fatal(err)
			}
			url = "redis://" + tt.user + ":facts-pw@" + s.Addr()
		}
		n, err := goredis.DialNode(url)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Connect(t.Context()); err != nil {
			t.Errorf("user %q: Connect = %v", tt.user, err)
		}
		for round := range 2 { // the handshake, then a reading again on the live connection
			servers, _ := n.Facts()
			if len(servers) != 1 {
				t.Fatalf("user %q, round %d: facts of %d servers, want 1", tt.user, round, len(servers))
			}
			got := slices.Sorted(slices.Values(servers[0].Refused)) // a copy: Facts' slices are not to be modified
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("user %q, round %d: Refused = %q, want %q", tt.user, round, got, want)
			}
			if err := n.Connect(t.Context()); err != nil {
				t.Errorf("user %q: Connect again = %v", tt.user, err)
			}
		}
		_ = n.Close()
	}
}
