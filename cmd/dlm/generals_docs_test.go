package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAgreementDocExamples runs every in-memory "$ dlm generals ..."
// example of docs/agreement.md and checks its output against the page:
// every line shown must be printed, in order ("..." stands for lines left
// out), and "$ echo $?" must show the exit status (regression: the worked
// SM example still showed a refusal as forged that is now refused as
// flood, and 15 verifications for 14).
func TestAgreementDocExamples(t *testing.T) {
	page, err := os.ReadFile("../../docs/agreement.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```\n(.*?)```").FindAllStringSubmatch(string(page), -1)
	ran := 0
	for _, b := range blocks {
		lines := strings.Split(strings.TrimRight(b[1], "\n"), "\n")
		for i := 0; i < len(lines); i++ {
			cmd, ok := strings.CutPrefix(lines[i], "$ dlm generals")
			if !ok || strings.Contains(cmd, "--transport tcp") || strings.Contains(cmd, "\\") {
				continue
			}
			var want []string
			code := -1
			j := i + 1
			for ; j < len(lines) && !strings.HasPrefix(lines[j], "$ dlm "); j++ {
				if lines[j] == "$ echo $?" && j+1 < len(lines) {
					code, _ = strconv.Atoi(lines[j+1])
					j++
					continue
				}
				want = append(want, lines[j])
			}
			args := strings.Fields(cmd)
			got, stdout, stderr := runGeneralsCLI(t, args...)
			out := strings.Split(strings.TrimRight(stdout+stderr, "\n"), "\n")
			ran++
			k := 0
			for _, w := range want {
				if w == "..." {
					continue
				}
				for k < len(out) && strings.TrimRight(out[k], " ") != strings.TrimRight(w, " ") {
					k++
				}
				if k == len(out) {
					t.Errorf("dlm generals%s: the page shows %q, which the output lacks (or has out of order):\n%s%s", cmd, w, stdout, stderr)
					break
				}
				k++
			}
			if code >= 0 && got != code {
				t.Errorf("dlm generals%s: exit %d, the page says %d", cmd, got, code)
			}
			i = j - 1
		}
	}
	if ran < 5 {
		t.Errorf("ran %d examples of the page, want at least 5", ran)
	}
}
