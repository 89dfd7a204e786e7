package rueidis

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"dlm/redlock/redlocktest"
)

// A text reply (INFO, CLUSTER NODES) is a RESP3 verbatim string, which
// rueidis returns with its format in front ("txt:"); text cuts it, so
// that the first line of CLUSTER NODES starts with its node's id (the
// replicas of that node were named "of an unknown master" before).
func TestTextCutsTheVerbatimFormat(t *testing.T) {
	s := redlocktest.StartServer(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.Do(t.Context(), c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	got, err := text(c.Do(t.Context(), c.B().Info().Section("server").Build()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "# Server") {
		t.Errorf("text(INFO server) starts %q, want \"# Server\" (rueidis' own string starts %q)", got[:min(len(got), 12)], raw[:min(len(raw), 12)])
	}
	got, err = text(c.Do(t.Context(), c.B().Echo().Message("abc:def").Build()))
	if err != nil || got != "abc:def" {
		t.Errorf("text(ECHO abc:def) = %q, %v; want abc:def: a plain string keeps what looks like a format", got, err)
	}
}
