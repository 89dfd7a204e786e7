package redlocktest

import (
	"io"
	"slices"
	"testing"

	"dlm/redlock/adapter"
)

// FactsNodeDialer dials an adapter's node from a node URL, for
// RunFactsConformance.
type FactsNodeDialer func(url string) (adapter.FactsNode, error)

// RunFactsConformance checks, over real redis-server processes, that an
// adapter's node names in its facts what the server refused to tell the
// node's user, so that the client does not go on unchecked without a
// word, and tells an ACL's refusal apart from a command the server
// disables: "+@all -@admin" refuses CONFIG and CLIENT KILL (the reconnect
// fence's kill, probed by a CLIENT KILL ID 0 that closes nothing), "+@all
// -@dangerous" INFO too, a key pattern the GET of the advertised max ttl
// (adapter.Facts.Refused); a server started with CONFIG renamed away (a
// managed service's way) answers "unknown command", which no ACL rule
// grants (adapter.Facts.Disabled). Each is read by the handshake, then
// again on the live connection (Connect).
func RunFactsConformance(t *testing.T, dial FactsNodeDialer) {
	s := StartServer(t)
	noConfig := StartServer(t, WithArgs("--rename-command", "CONFIG", ""))
	tests := []struct {
		name     string
		server   *Server
		user     string
		rules    []any
		refused  []string
		disabled []string
	}{
		{"default user", s, "", nil, nil, nil},
		{"+@all -@admin", s, "adminless", []any{"~*", "&*", "+@all", "-@admin"}, []string{adapter.RefusedConfig, adapter.RefusedClient}, nil},
		{"+@all -@dangerous", s, "dangerless", []any{"~*", "&*", "+@all", "-@dangerous"}, []string{adapter.RefusedInfo, adapter.RefusedConfig, adapter.RefusedClient}, nil},
		{"a key pattern", s, "keyed", []any{"~dlm:lock:*", "&*", "+@all"}, []string{adapter.RefusedMaxTTL}, nil},
		{"CONFIG disabled", noConfig, "", nil, []string{adapter.RefusedConfig}, []string{adapter.RefusedConfig}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := "redis://" + tt.server.Addr()
			if tt.user != "" {
				if err := tt.server.Client().Do(t.Context(), append([]any{"ACL", "SETUSER", tt.user, "on", ">facts-pw"}, tt.rules...)...).Err(); err != nil {
					t.Fatal(err)
				}
				url = "redis://" + tt.user + ":facts-pw@" + tt.server.Addr()
			}
			n, err := dial(url)
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := n.(io.Closer); ok {
				defer c.Close()
			}
			if err := n.Connect(t.Context()); err != nil {
				t.Errorf("Connect = %v", err)
			}
			for _, round := range []string{"the handshake", "a reading again"} {
				servers, _ := n.Facts()
				if len(servers) != 1 {
					t.Fatalf("%s: facts of %d servers, want 1", round, len(servers))
				}
				// Copies: Facts' slices are not to be modified.
				for _, c := range []struct {
					what      string
					got, want []string
				}{{"Refused", servers[0].Refused, tt.refused}, {"Disabled", servers[0].Disabled, tt.disabled}} {
					got, want := slices.Sorted(slices.Values(c.got)), slices.Sorted(slices.Values(c.want))
					if !slices.Equal(got, want) {
						t.Errorf("%s: %s = %q, want %q", round, c.what, got, want)
					}
				}
				if err := n.Connect(t.Context()); err != nil {
					t.Errorf("Connect again = %v", err)
				}
			}
		})
	}
}
