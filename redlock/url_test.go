package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"dlm/redlock"
)

// No error of ParseNodeURL or ParseNodeURLs carries the password of the URL
// it refuses, and relative unix paths and empty hosts are refused with the
// expected form (issue 16).
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
