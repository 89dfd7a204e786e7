package main

import (
	"strings"
	"testing"

	"dlm/byzantine"
)

// TestReportVerdictInconclusive: the HTML report's verdict says what the
// command says of a run over TCP that was out of time, or had more than m
// faulty generals (regression: it read "IC1 and IC2 hold" while the
// command exited 3).
func TestReportVerdictInconclusive(t *testing.T) {
	cfg := byzantine.DefaultConfig() // OM(1), four generals
	loyal := func(id byzantine.ID, d byzantine.Order) byzantine.GeneralResult {
		return byzantine.GeneralResult{ID: id, Loyal: true, Decision: d}
	}
	tests := []struct {
		name string
		edit func([]byzantine.GeneralResult)
		want string
	}{
		{"out of time", func(g []byzantine.GeneralResult) { g[2].Overran = []int{1} }, "ran out of time"},
		{"more than m faults", func(g []byzantine.GeneralResult) {
			g[1].Faults = []byzantine.PeerFault{{ID: 2, Kind: byzantine.PeerLate, Round: 1}, {ID: 3, Kind: byzantine.PeerAbsent, Round: 0}}
		}, "too many faults"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gens := []byzantine.GeneralResult{loyal(0, byzantine.Attack), loyal(1, byzantine.Attack), loyal(2, byzantine.Attack), loyal(3, byzantine.Attack)}
			tt.edit(gens)
			p := buildReport("tcp", byzantine.Assemble(cfg, gens))
			if !strings.Contains(p.Verdict, tt.want) {
				t.Errorf("verdict %q, want it to say %q", p.Verdict, tt.want)
			}
		})
	}
}
