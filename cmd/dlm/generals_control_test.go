package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// An order or value may be any bytes, and over TCP it comes from another
// general: the text output shows one holding control characters quoted,
// so that a traitor's value cannot erase or forge a loyal general's lines
// (a value "x]\r\x1b[2Kgeneral 0 (loyal) decides FORGED" rewrote general
// 0's own vector line on its terminal). JSON carries the bytes as they
// are, escaped by JSON.
func TestGeneralsTextShowsControlBytesQuoted(t *testing.T) {
	evil := "x]\r\x1b[2Kgeneral 0 (loyal) decides FORGED"
	tests := []struct {
		name string
		args []string
	}{
		{"interactive value", []string{"--interactive", "--values", "v0,v1,v2," + evil}},
		{"interactive value with a line break", []string{"--interactive", "--values", "v0,v1,v2,x\ngeneral 0 decides FORGED"}},
		{"order", []string{"--order", "att\nack\x1b[2K"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGeneralsCLI(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, out := range []string{stdout, stderr} {
				if i := strings.IndexAny(out, "\r\x1b"); i >= 0 {
					t.Fatalf("the output carries control byte %q from an order or value:\n%q", out[i], out)
				}
			}
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "general 0 decides FORGED") || strings.HasPrefix(line, "ack") {
					t.Fatalf("a line of the output begins with a value's own text: %q\n%s", line, stdout)
				}
			}
		})
	}
	code, stdout, stderr := runGeneralsCLI(t, "--interactive", "--values", "v0,v1,v2,"+evil, "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var out struct {
		Vectors map[string][]string `json:"vectors"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v in %s", err, stdout)
	}
	for id, v := range out.Vectors {
		if len(v) != 4 || v[3] != evil {
			t.Errorf("--json: general %s's vector %q, want entry 3 %s as given", id, v, strconv.Quote(evil))
		}
	}
}
