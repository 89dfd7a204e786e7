package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// dlm generals prints the values and orders it was given and decided as
// they are: nothing in them is a node URL's password. Before, the output's
// redaction read deploy:v1@prod:443 as user:password@host:port, and the
// vectors printed "deploy:xxxxx@prod:443" for two distinct values.
func TestGeneralsValuesPrintedAsGiven(t *testing.T) {
	values := []string{"deploy:v1@prod:443", "deploy:v2@prod:443", "b", "c"}
	code, stdout, stderr := runGeneralsCLI(t, "--interactive", "--values", strings.Join(values, ","), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Vectors map[string][]string `json:"vectors"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	if len(out.Vectors) == 0 {
		t.Fatalf("no vectors in %s", stdout)
	}
	for id, v := range out.Vectors {
		if !slices.Equal(v, values) {
			t.Errorf("general %s decided %q, want %q", id, v, values)
		}
	}
	code, stdout, stderr = runGeneralsCLI(t, "--order", "deploy:v2@prod:443")
	if code != 0 || !strings.Contains(stdout, "deploy:v2@prod:443") || strings.Contains(stdout+stderr, "xxxxx") {
		t.Errorf("--order deploy:v2@prod:443: exit %d, output %s%s", code, stdout, stderr)
	}
}
