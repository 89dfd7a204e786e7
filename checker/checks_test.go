package checker

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the checkers' results")

// TestGoldenHistories runs each checker over the recorded histories in
// testdata: *-ok*.json must pass, *-bad.json must be violated,
// *-unknown.json undecided, and each result must read as its .golden file.
func TestGoldenHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden histories: %v", err)
	}
	checks := map[string]func(*History) Result{
		"mutex":        CheckMutex,
		"extend":       CheckMutex, // R17: no resurrection
		"rw":           CheckMutex, // read and write holds
		"fencing":      CheckFencing,
		"linearizable": func(h *History) Result { return CheckLinearizable(h, 5*time.Second) },
		"liveness":     func(h *History) Result { return CheckLiveness(h, time.Second, time.Second) },
		"election":     func(h *History) Result { return CheckElection(h, 2*time.Second, time.Second) },
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			check := checks[strings.SplitN(name, "-", 2)[0]]
			if check == nil {
				t.Fatalf("no checker for %s: name it mutex-, extend-, fencing-, linearizable-, liveness- or election-", f)
			}
			var want Verdict
			switch {
			case strings.Contains(name, "-ok"):
				want = OK
			case strings.HasSuffix(name, "-bad"):
				want = Violated
			case strings.HasSuffix(name, "-unknown"):
				want = Unknown
			default:
				t.Fatalf("%s: name must end in -ok, -bad or -unknown", f)
			}
			h, err := LoadHistory(f)
			if err != nil {
				t.Fatal(err)
			}
			got := check(h)
			if got.Verdict != want {
				t.Fatalf("verdict = %v, want %v (%s)", got.Verdict, want, got)
			}
			if want == Violated && (got.Violations == 0 || got.Counterexample == "") {
				t.Errorf("violated without a count or counterexample: %+v", got)
			}
			golden := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./checker -run Golden -update to create it)", err)
			}
			if g, w := got.String(), strings.TrimSpace(string(b)); g != w {
				t.Errorf("result:\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestDecodeHistoryRejectsMalformed(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"duplicate id", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","lock":"a","start":0,"end":1},{"id":1,"kind":"acquire","lock":"b","start":0,"end":1}],"faults":[]}`, "duplicate op id 1"},
		{"end before start", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","lock":"a","start":5,"end":1}],"faults":[]}`, "ends (1) before it starts (5)"},
		{"unknown kind", `{"nodes":5,"ops":[{"id":1,"kind":"grab","start":0,"end":1}],"faults":[]}`, `unknown kind "grab"`},
		{"orphan release", `{"nodes":5,"ops":[{"id":1,"kind":"release","lock":"x","start":0,"end":1}],"faults":[]}`, `lock "x", which no acquisition created`},
		{"unknown field", `{"nodes":5,"opz":[]}`, `unknown field "opz"`},
		{"unknown mode", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","lock":"a","start":0,"end":1,"mode":"share"}],"faults":[]}`, `mode "share"`},
		{"mode on a release", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","lock":"a","start":0,"end":1},{"id":2,"kind":"release","lock":"a","start":2,"end":3,"mode":"read"}],"faults":[]}`, "only acquisitions have a mode"},
		{"acquire without lock", `{"nodes":5,"ops":[{"id":1,"kind":"acquire","start":0,"end":1}],"faults":[]}`, "names no lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeHistory(strings.NewReader(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestMaxUnavailable(t *testing.T) {
	h, err := LoadHistory("testdata/liveness-bad.json")
	if err != nil {
		t.Fatal(err)
	}
	u, ok := MaxUnavailable(h)
	if !ok || u.Duration() != 5*time.Second || u.Resource != "r" {
		t.Fatalf("MaxUnavailable = %+v, %v; want 5s on r", u, ok)
	}
}

func TestSpans(t *testing.T) {
	got := subtract(union([]span{{0, 10}, {5, 20}, {30, 40}}), union([]span{{2, 4}, {15, 35}}))
	want := []span{{0, 2}, {4, 15}, {35, 40}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// CheckMutex over two overlapping grants of one resource, by mode: only
// two reads may overlap; an acquisition without a mode is a write.
func TestCheckMutexModes(t *testing.T) {
	tests := []struct {
		a, b Mode
		want Verdict
	}{
		{ModeRead, ModeRead, OK},
		{ModeRead, ModeWrite, Violated},
		{ModeWrite, ModeRead, Violated},
		{ModeRead, "", Violated},
		{"", ModeRead, Violated},
		{ModeWrite, ModeWrite, Violated},
		{"", "", Violated},
	}
	for _, tt := range tests {
		t.Run(string(tt.a)+"/"+string(tt.b), func(t *testing.T) {
			h := &History{Nodes: 5, Ops: []Op{
				{ID: 1, Client: "A", Resource: "r", Kind: Acquire, Lock: "A#1", Mode: tt.a, Start: 0, End: 1, OK: true, TTL: 100, Until: 90},
				{ID: 2, Client: "B", Resource: "r", Kind: Acquire, Lock: "B#1", Mode: tt.b, Start: 10, End: 11, OK: true, TTL: 100, Until: 100},
			}}
			if got := CheckMutex(h); got.Verdict != tt.want {
				t.Fatalf("verdict = %v, want %v (%s)", got.Verdict, tt.want, got)
			}
		})
	}
}

// TestElectionChecks: the bad election history breaks every property once
// (two leaders at once, a term that does not increase, a failover over
// the bound outside faults); the good one's failovers are measured.
func TestElectionChecks(t *testing.T) {
	bad, err := LoadHistory("testdata/election-bad.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := CheckElection(bad, 2*time.Second, time.Second); got.Violations != 3 {
		t.Errorf("violations of election-bad = %d, want 3: %s", got.Violations, got)
	}
	ok, err := LoadHistory("testdata/election-ok.json")
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for _, f := range Failovers(ok) {
		got = append(got, f.Duration())
	}
	want := []time.Duration{30 * time.Millisecond, 1700 * time.Millisecond}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("failovers of election-ok = %v, want %v", got, want)
	}
	if r := CheckElection(ok, time.Second, time.Second); r.Verdict != Violated {
		t.Errorf("election-ok with a bound of 1s = %s, want violated (its 1.7s failover is outside faults)", r)
	}
}
