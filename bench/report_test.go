package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
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

// The table of where the CPU of a pair goes shows, per library and
// goroutine count, the commands per pair with their µs, the nodes' reads,
// system calls and bytes, and the client's system calls, from two readings
// of the counters; INFO's lines are parsed as redis-server 7 writes them.
func TestCostTable(t *testing.T) {
	r := sampleReport()
	r.Goroutines = []int{64}
	info := func(set, evalsha, reads int64) string {
		return fmt.Sprintf("# Server\r\nprocess_id:0\r\n# CPU\r\nused_cpu_sys:1.5\r\nused_cpu_user:2.5\r\n"+
			"# Stats\r\ntotal_reads_processed:%d\r\ntotal_writes_processed:%d\r\ntotal_net_input_bytes:%d\r\ntotal_net_output_bytes:%d\r\n"+
			"# Commandstats\r\ncmdstat_set:calls=%d,usec=%d,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"+
			"cmdstat_evalsha:calls=%d,usec=%d,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\ncmdstat_info:calls=%d,usec=1\r\n",
			reads, reads, 100*reads, 10*reads, set, set, evalsha, 3*evalsha, reads)
	}
	var before, after costSnap
	for _, c := range []struct {
		s    *costSnap
		info string
	}{{&before, info(10, 10, 5)}, {&after, info(110, 30, 25)}} {
		*c.s = costSnap{calls: map[string]int64{}, usec: map[string]int64{}}
		if err := c.s.addInfo(c.info); err != nil {
			t.Fatal(err)
		}
	}
	r.costOf("dlm (rueidis)", 64, 20, before, after)
	var b bytes.Buffer
	r.Markdown(&b)
	out := b.String()
	for _, want := range []string{
		"**Where the CPU of a pair goes**",
		"| dlm (rueidis) | 64 | 64000 | - / - | set 5.00 (1.00), evalsha 1.00 (3.00) | 1.00 / 1.00 |",
		"| 100 / 10 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "info ") {
		t.Errorf("the bench's own INFO counted as a command of the pair:\n%s", out)
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
