package main

import (
	"strings"
	"testing"

	"dlm/redlock"
)

// TestDescribeLockShowsNamesSafely: dlm status --all prints the resource
// names it finds on the nodes, which anyone who can write a key there
// chose (the library takes any name; dlm lock refuses control
// characters). A name with a newline, a terminal escape or bytes that are
// not UTF-8 is shown quoted, so that it can neither forge a line of the
// report ("x: free (no node holds it)") nor drive the terminal.
//
// Found by review: before the fix, a key "dlm:lock:evil\x1b[31mRED\nfake:
// free (no node holds it)" printed the escape as is and a second line
// starting "fake: free".
func TestDescribeLockShowsNamesSafely(t *testing.T) {
	for _, name := range []string{
		"evil\x1b[31mRED\nfake: free (no node holds it)",
		"cr\rover",
		"bin\xff\xfe",
		"bell\a",
		"nl\n",
		"bidi\u202eoverride",
		"tab\tname",
	} {
		for _, mode := range []redlock.LockMode{redlock.ModeWrite, redlock.ModeRead, redlock.ModeFree} {
			got := describeLock(redlock.LockInfo{Resource: name, Mode: mode}, 2)
			first, _, _ := strings.Cut(got, "\n")
			if strings.ContainsAny(got, "\x1b\r\a\t\u202e") || !strings.HasPrefix(got, `"`) || strings.Count(got, "\n") != 1 || strings.Contains(got, "\xff") {
				t.Errorf("mode %v, name %q: printed %q (first line %q); want the name quoted on one line, without control bytes", mode, name, got, first)
			}
		}
	}
	for name, want := range map[string]string{"deploy": "deploy", "{tag}": "{tag}", "ünï€😀": "ünï€😀", "a b": "a b", `"quoted"`: `"\"quoted\""`} {
		got := describeLock(redlock.LockInfo{Resource: name, Mode: redlock.ModeFree}, 2)
		if !strings.HasPrefix(got, want+": free") {
			t.Errorf("name %q: printed %q, want it as %s", name, got, want)
		}
	}
}
