package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// htmlElem is one element of a parsed report: its name, attributes and
// the id of the closest enclosing element that has one.
type htmlElem struct {
	name  string
	attrs map[string]string
	in    string // id of the enclosing table or section
}

// parseReport parses the page as XML (the report is well-formed) and
// returns its elements in document order.
func parseReport(t *testing.T, path string) []htmlElem {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	var out []htmlElem
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the report is not well-formed: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := htmlElem{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i] != "" {
					e.in = stack[i]
					break
				}
			}
			out = append(out, e)
			stack = append(stack, e.attrs["id"])
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// TestGeneralsReport: --report writes a self-contained page with the
// messages per round (traitors marked), every loyal lieutenant's decision
// and the verdict.
func TestGeneralsReport(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		messages  int
		traitor   string
		trees     map[string]int // lieutenant -> tree nodes (OM) or values (SM)
		ic1, ic2  string
		wantInOut string
		lies      int    // messages shown as lies
		refused   string // a refusal reason the page must explain, if any
	}{
		{"OM two-faced lieutenant", []string{"--faulty", "3"}, exitOK, 9, "3", map[string]int{"1": 3, "2": 3}, "true", "true", "IC1", 1, ""},
		{"SM two-faced commander", []string{"--algorithm", "sm", "-n", "3", "--faulty", "0"}, exitOK, 4, "0", map[string]int{"1": 2, "2": 2}, "true", "true", "IC1", 1, ""},
		{"OM unsafe B3", []string{"-n", "3", "--faulty", "2", "--strategy", "flip", "--unsafe"}, exitFailure, 4, "2", map[string]int{"1": 2}, "true", "false", "VIOLATED", 1, ""},
		{"SM forging lieutenant", []string{"--algorithm", "sm", "-n", "4", "--faulty", "2:forge"}, exitOK, 0, "2", nil, "true", "true", "IC1", 0, "forged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.html")
			code, stdout, stderr := runGeneralsCLI(t, append([]string{"--report", path}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantInOut) || strings.Contains(stdout, "round 0:") {
				t.Errorf("stdout should be the usual summary without a trace:\n%s", stdout)
			}
			raw, _ := os.ReadFile(path)
			for _, bad := range []string{"<script src", "http://", "https://", "<link", "fetch(", "XMLHttpRequest", "import("} {
				if strings.Contains(string(raw), bad) {
					t.Errorf("the page is not self-contained: it has %q", bad)
				}
			}
			elems := parseReport(t, path)
			delivered := 0
			traitorRow := false
			nodes := map[string]int{}
			var verdict map[string]string
			lies, inputs, help := 0, 0, false
			for _, e := range elems {
				if e.name == "tr" && e.attrs["data-lie"] == "true" {
					lies++
					if e.attrs["data-from"] != tt.traitor || !strings.Contains(e.attrs["class"], "lie") {
						t.Errorf("a lie not from the traitor %s, or not highlighted: %v", tt.traitor, e.attrs)
					}
					if e.attrs["data-sent"] == e.attrs["data-loyal"] {
						t.Errorf("a lie that sent what a loyal general would: %v", e.attrs)
					}
				}
				if e.name == "span" && e.attrs["class"] == "inputs" {
					inputs++
				}
				if e.attrs["id"] == "path-help" {
					help = true
				}
				switch {
				case e.name == "td" && e.attrs["data-count"] != "" && strings.HasPrefix(e.in, "round-"):
					c, _ := strconv.Atoi(e.attrs["data-count"])
					delivered += c
				case e.name == "tr" && e.attrs["data-from"] == tt.traitor && strings.Contains(e.attrs["class"], "traitor"):
					traitorRow = true
				case e.name == "li" && (strings.Contains(e.attrs["class"], "node") || e.attrs["class"] == "value") && strings.HasPrefix(e.in, "explain-"):
					nodes[strings.TrimPrefix(e.in, "explain-")]++
				case e.attrs["id"] == "verdict":
					verdict = e.attrs
				}
			}
			if lies < tt.lies || (tt.lies == 0 && tt.refused == "" && lies != 0) {
				t.Errorf("%d lies shown, want at least %d", lies, tt.lies)
			}
			if tt.refused != "" && !strings.Contains(string(raw), "refused ("+tt.refused+"): ") {
				t.Errorf("no message refused as %s with its reason", tt.refused)
			}
			if !help {
				t.Errorf("the page does not say how to read a path")
			}
			if strings.Contains(tt.name, "OM") && inputs == 0 {
				t.Errorf("the OM trees show no vote inputs")
			}
			if tt.messages > 0 && delivered != tt.messages {
				t.Errorf("messages in the round tables = %d, want %d", delivered, tt.messages)
			}
			if !traitorRow {
				t.Errorf("the traitor %s's rows are not marked", tt.traitor)
			}
			for id, want := range tt.trees {
				if nodes[id] != want {
					t.Errorf("lieutenant %s: %d tree nodes or values, want %d (all: %v)", id, nodes[id], want, nodes)
				}
			}
			if _, ok := nodes[tt.traitor]; ok {
				t.Errorf("the traitor %s's decision is explained", tt.traitor)
			}
			if verdict == nil || verdict["data-ic1"] != tt.ic1 || verdict["data-ic2"] != tt.ic2 {
				t.Errorf("verdict = %v, want ic1=%s ic2=%s", verdict, tt.ic1, tt.ic2)
			}
		})
	}
}

// findBrowser returns a headless-capable Chromium, or skips the test
// loudly. DLM_REQUIRE_BROWSER=1 (or CI, unless DLM_REQUIRE_BROWSER=0)
// makes a missing browser a failure; scripts/test.sh installs chromium
// when it runs as root and sets DLM_REQUIRE_BROWSER accordingly.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	req := os.Getenv("DLM_REQUIRE_BROWSER")
	if req == "1" || (req == "" && os.Getenv("CI") != "") {
		t.Fatal("no chromium found and DLM_REQUIRE_BROWSER/CI requires it: apt-get install -y chromium")
	}
	t.Skip("SKIPPED: no chromium found, the report page was not checked in a browser (apt-get install -y chromium; DLM_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// TestGeneralsReportBrowser loads the report in headless Chromium: its
// script runs to the end without an error (it writes a marker only then),
// the step-through shows one round and hides the others, and the
// traitor's lie is on the page, highlighted.
func TestGeneralsReportBrowser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := findBrowser(t)
	tests := []struct {
		name    string
		args    []string
		traitor string
	}{
		{"OM(1) two-faced lieutenant", []string{"--faulty", "3"}, "3"},
		{"SM(1) two-faced commander", []string{"--algorithm", "sm", "-n", "3", "--faulty", "0"}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			page := filepath.Join(dir, "run.html")
			if code, stdout, stderr := runGeneralsCLI(t, append([]string{"--report", page}, tt.args...)...); code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
				"--user-data-dir="+filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
				"--dump-dom", "file://"+page)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
			}
			dom := stdout.String()
			if strings.Contains(stderr.String(), "Uncaught") {
				t.Errorf("script error in the browser:\n%s", stderr.String())
			}
			if !strings.Contains(dom, `id="script-status" data-ready="yes"`) {
				t.Fatalf("the page's script did not finish (no marker); DOM:\n%s", dom)
			}
			shown := regexp.MustCompile(`<section class="step" id="step-\d+" data-round="\d+">`).FindAllString(dom, -1)
			hidden := regexp.MustCompile(`<section class="step" id="step-\d+" data-round="\d+" hidden="">`).FindAllString(dom, -1)
			if len(shown) != 1 || len(hidden) == 0 {
				t.Errorf("step-through: %d rounds shown and %d hidden, want 1 shown and the others hidden", len(shown), len(hidden))
			}
			lie := regexp.MustCompile(`<tr class="msg lie[^"]*" data-from="` + tt.traitor + `"`)
			if !lie.MatchString(dom) {
				t.Errorf("the traitor %s's lie is not shown highlighted", tt.traitor)
			}
		})
	}
}
