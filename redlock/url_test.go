package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"dlm/redlock"
)

// No error of ParseNodeURL or ParseNodeURLs carries the password of the URL
// it refuses, and relative unix paths and empty hosts are refused with the
// expected form.
func TestParseNodeURLNeverPrintsThePassword(t *testing.T) {
	const pw = "s3cr3tPW"
	tests := []struct {
		name string
		urls []string
		want string
	}{
		{"bad port", []string{"redis://user:" + pw + "@127.0.0.1:99999"}, "port"},
		{"bad db", []string{"redis://:" + pw + "@127.0.0.1:7000/x"}, "database"},
		{"unknown scheme", []string{"http://user:" + pw + "@127.0.0.1:7000"}, "unknown scheme"},
		{"unparsable", []string{"redis://user:" + pw + "@127.0.0.1:7000/%zz"}, "node URL"},
		{"password only", []string{"redis://" + pw + "@127.0.0.1:99999"}, "port"},
		{"duplicate", []string{"redis://u:" + pw + "@127.0.0.1:7000", "redis://u:" + pw + "@127.0.0.1:7000"}, "duplicate node"},
		{"empty host", []string{"redis://u:" + pw + "@:7601"}, "has no host"},
		{"relative unix path", []string{"unix://relative/sock"}, "must be absolute"},
		// shapes a review found: no scheme, one slash, and a password holding an
		// unencoded "/", "?" or "#".
		{"no scheme", []string{"user:" + pw + "@127.0.0.1:7000"}, "node URL"},
		{"one slash", []string{"redis:/user:" + pw + "@127.0.0.1:7000"}, "node URL"},
		{"slash in password", []string{"redis://user:" + pw + "/x@127.0.0.1:7000"}, "node URL"},
		{"question mark in password", []string{"redis://user:" + pw + "?x@127.0.0.1:7000"}, "node URL"},
		{"hash in password", []string{"redis://user:" + pw + "#x@127.0.0.1:7000"}, "node URL"},
		{"slash in password only", []string{"redis://" + pw + "/x@127.0.0.1:7000"}, "node URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := redlock.ParseNodeURLs(tt.urls)
			if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseNodeURLs(%q) = %v, want ErrInvalid mentioning %q", tt.urls, err, tt.want)
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("the error prints the password: %v", err)
			}
		})
	}
}

// TestRedactURL: RedactURL hides the password however the URL is written,
// and leaves the user, the host and URLs without one as they are.
func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want, pw string }{
		{"redis://u:pw@h:1/0", "redis://u:xxxxx@h:1/0", "pw"},
		{"rediss://pw@h:1", "rediss://xxxxx@h:1", "pw"},
		{"u:pw@h:6379", "u:xxxxx@h:6379", "pw"},
		{"redis:/u:pw@h", "redis:/u:xxxxx@h", "pw"},
		{"redis:u:pw@h", "redis:u:xxxxx@h", "pw"},
		{"redis://u:p/w?x#y@h:1", "redis://u:xxxxx@h:1", "p/w?x#y"},
		{"redis://u:p@w@h:1", "redis://u:xxxxx@h:1", "p@w"},
		{"redis://h:1", "redis://h:1", ""},
		{"unix:///tmp/sock", "unix:///tmp/sock", ""},
		{"redis://[user:password@]host:port", "redis://[user:password@]host:port", ""},
		// A password put in the query is hidden; a node URL's own
		// parameters show.
		{"redis://h:1?password=S3CR", "redis://h:1?password=xxxxx", ""},
		{"redis://:pw@h:1/0?db=0&requirepass=S3CR#f", "redis://:xxxxx@h:1/0?db=0&requirepass=xxxxx#f", "pw"},
		{"redis://h:1?cluster=true&addr=h:2&addr=h:3", "redis://h:1?cluster=true&addr=h:2&addr=h:3", ""},
	}
	for _, tt := range tests {
		if got := redlock.RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		pw, ok := redlock.URLPassword(tt.in)
		if pw != tt.pw || ok != (tt.pw != "") {
			t.Errorf("URLPassword(%q) = %q, %v, want %q, %v", tt.in, pw, ok, tt.pw, tt.pw != "")
		}
	}
}

// A password misplaced in a node URL's query is never quoted by the
// errors of ParseNodeURL. Before, every such error quoted the URL with its
// query: `node URL "redis://127.0.0.1:1?password=S3CR": unknown parameter
// "password"`.
func TestParseNodeURLHidesQueryValues(t *testing.T) {
	for _, raw := range []string{
		"redis://127.0.0.1:1?password=S3CR",
		"redis://:pw@127.0.0.1:1/0?password=S3CR",
		"redis://127.0.0.1:1?db=0&requirepass=S3CR",
		"redis://127.0.0.1:1?auth=S3CR&auth=S3CR",
		"redis://127.0.0.1:1?cluster=maybe&password=S3CR",
	} {
		_, err := redlock.ParseNodeURL(raw)
		if err == nil {
			t.Fatalf("ParseNodeURL(%q) = nil error", raw)
		}
		if strings.Contains(err.Error(), "S3CR") || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("ParseNodeURL error shows a password: %v", err)
		}
	}
}
