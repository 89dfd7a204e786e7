package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

// sampleReport is a report over made-up medians.
func sampleReport() *Report {
	r := &Report{
		Machine: "test machine", Command: "go run .", Reps: 3, Duration: time.Second,
		Goroutines: []int{1, 64, 256},
		Libs:       []string{"dlm (rueidis)", "go-redsync"},
		ContLibs:   []string{"dlm (rueidis)", "go-redsync"},
		FrozenLibs: []string{"dlm (rueidis)"},
		Workers:    32, Hold: time.Millisecond,
		S: samples{},
	}
	for _, g := range r.Goroutines {
		r.S.add(float64(1000*g), "tp", "dlm (rueidis)", g)
		r.S.add(float64(100*g), "tp", "go-redsync", g)
	}
	r.S.add(0.0005, "seq-p50", "dlm (rueidis)")
	r.S.add(0.001, "seq-p50", "go-redsync")
	r.S.add(0.0003, "healthy", "dlm (rueidis)")
	r.S.add(0.0006, "frozen", "dlm (rueidis)")
	r.S.add(900, "cont", "dlm (rueidis)")
	r.S.add(450, "cont", "go-redsync")
	r.S.add(1.2, "fair", "dlm (rueidis)")
	r.S.add(0.00118, "mp-hold", "dlm (rueidis)")
	r.S.add(0.8, "mp-share-hold", "dlm (rueidis)")
	r.S.add(0.075, "mp-share-local", "dlm (rueidis)")
	r.S.add(0.125, "mp-share-cross", "dlm (rueidis)")
	return r
}

func TestMarkdownRatiosAndTargets(t *testing.T) {
	var b bytes.Buffer
	sampleReport().Markdown(&b)
	out := b.String()
	for _, want := range []string{
		"| 64 | 64000, 10.0x | 6400 |",
		"throughput, 64 goroutines, distinct keys: dlm (rueidis) / go-redsync | 10.00 | >= 5 | met |",
		"sequential pair p50: dlm (rueidis) / go-redsync | 0.50 | <= 0.8 | met |",
		"one node frozen / healthy: dlm (rueidis) | 2.00 | <= 1.5 | **missed** |",
		"critical sections/s: dlm (rueidis) / go-redsync | 2.00 | >= 1.5 | met |",
		"busiest / least busy worker: dlm (rueidis) | 1.20 | <= 2 | met |",
		"1ms hold (time.Sleep), critical sections/s",
		"| dlm (rueidis) | 1.180 ms | 80.0% | 7.5% | 12.5% |",
		"| go-redsync | - | - | - | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	var b bytes.Buffer
	sampleReport().SVG(&b)
	d := xml.NewDecoder(&b)
	lines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 2 {
		t.Errorf("SVG has %d lines, want one per library (2)", lines)
	}
}

// A contention run held by a blocking nanosleep says so in both places.
func TestMarkdownNamesTheHoldMode(t *testing.T) {
	r := sampleReport()
	r.HoldMode = "block"
	var b bytes.Buffer
	r.Markdown(&b)
	for _, want := range []string{"1ms hold by blocking nanosleep", "1ms hold (blocking nanosleep), critical sections/s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestParseFlagsRefusesBadInput(t *testing.T) {
	tests := [][]string{
		{"-goroutines", "1,x"},
		{"-goroutines", "0"},
		{"-reps", "0"},
		{"-only", "tp,nope"},
		{"-workers", "0"},
		{"-hold-mode", "spin"},
		{"-busy", "-1"},
		{"-procs", "1"},
		{"-proc-workers", "0"},
		{"-only", "mp,x"},
	}
	for _, args := range tests {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted bad input", args)
		}
	}
	c, err := parseFlags([]string{"-goroutines", "2,8", "-only", "tp"}, io.Discard)
	if err != nil || len(c.goroutines) != 2 || !c.only["tp"] || c.only["cont"] {
		t.Errorf("parseFlags = %+v, %v", c, err)
	}
}

// redisCPU adds the user and system CPU of an INFO cpu reply, and refuses a
// reply without them.
func TestRedisCPU(t *testing.T) {
	got, err := redisCPU("# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\nused_cpu_sys_children:9.0\r\n")
	if err != nil || got != 1750*time.Millisecond {
		t.Fatalf("redisCPU = %v, %v; want 1.75s", got, err)
	}
	if _, err := redisCPU("# CPU\r\n"); err == nil {
		t.Fatal("redisCPU of a reply without the fields: no error")
	}
}

// The cost table shows client / redis µs per pair.
func TestCost(t *testing.T) {
	r := sampleReport()
	r.S.add(12e-6, "cpu-client", "dlm (rueidis)", 64)
	r.S.add(3.5e-6, "cpu-redis", "dlm (rueidis)", 64)
	var b bytes.Buffer
	r.Markdown(&b)
	if want := "| 64 | 12.0 / 3.5 |"; !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
}

// The load label follows -busy and the other processes' CPU, before and
// during the run.
func TestLoadLabel(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		busy              int
		others, othersRun float64
		want              string
	}{
		{0, 0, 0.1, "quiet machine"},
		{0, 0.3, 0, "LOADED by other work"},
		{0, 0, 1.5, "LOADED by other work"},
		{2, 0.1, 0.1, "LOADED (-busy 2)"},
		{2, 0, 0.9, "LOADED (-busy 2, and other work)"},
		{0, nan, nan, "load unknown"},
		{0, 0.1, nan, "quiet machine"},
	}
	for _, tt := range tests {
		r := sampleReport()
		r.Busy, r.Others, r.OthersRun = tt.busy, tt.others, tt.othersRun
		if got := r.loadLabel(); got != tt.want {
			t.Errorf("loadLabel(busy %d, others %v, during %v) = %q, want %q", tt.busy, tt.others, tt.othersRun, got, tt.want)
		}
		var b bytes.Buffer
		r.Markdown(&b)
		if !strings.Contains(b.String(), "Load: **"+tt.want+"**") {
			t.Errorf("report lacks the label %q", tt.want)
		}
	}
}

// A workload that stopped at a failure is listed, with its error.
func TestMarkdownListsFailures(t *testing.T) {
	r := sampleReport()
	r.failure(0, "dlm (go-redis)", "sequential", errors.New("no quorum"))
	var b bytes.Buffer
	r.Markdown(&b)
	if want := "- repetition 1, dlm (go-redis), sequential: no quorum"; !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q", want)
	}
}
