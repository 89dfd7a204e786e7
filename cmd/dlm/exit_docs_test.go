package main

import (
	"os"
	"strings"
	"testing"
)

// TestOperationsExitCodesMatchHelp: the exit-code table of
// docs/operations.md is the one dlm help prints, both rendered from
// exitCodeDocs (regression: the table lacked 71, 126 and 127, and
// neither said what 3 and 69 mean for dlm generals). With
// DLM_UPDATE_DOCS=1 the test writes the table into the page.
func TestOperationsExitCodesMatchHelp(t *testing.T) {
	const path = "../../docs/operations.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	const intro = "Exit codes, the same for every subcommand (`dlm help` lists them):\n\n"
	i := strings.Index(page, intro)
	if i < 0 {
		t.Fatalf("%s lost its line %q", path, strings.TrimSpace(intro))
	}
	i += len(intro)
	j := strings.Index(page[i:], "\n\n")
	if j < 0 {
		j = len(page) - i
	}
	got, want := page[i:i+j+1], exitCodesMarkdown()
	if got == want {
		return
	}
	if os.Getenv("DLM_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(page[:i]+want+page[i+j+1:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's exit codes differ from dlm help's (exitCodeDocs); rerun with DLM_UPDATE_DOCS=1 to write them:\ngot:\n%s\nwant:\n%s", path, got, want)
}
