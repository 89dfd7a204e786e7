package redlock_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"dlm/redlock"
)

// A node that is a Redis Cluster: one seed and addr parameters; bad forms
// are refused naming what is wrong, and two URLs that share a master are
// one node twice.
func TestParseClusterNodeURL(t *testing.T) {
	u, err := redlock.ParseNodeURL("redis://u:pw@10.0.0.1:7000?cluster=true&addr=10.0.0.2:7000&addr=[::1]:7001")
	if err != nil {
		t.Fatal(err)
	}
	if !u.Cluster || !slices.Equal(u.Addrs, []string{"10.0.0.1:7000", "10.0.0.2:7000", "[::1]:7001"}) || u.Password != "pw" {
		t.Errorf("parsed %+v: want a cluster with three seeds and the password", u)
	}
	if u.String() != "cluster:10.0.0.1:7000" {
		t.Errorf("String() = %q, want cluster:10.0.0.1:7000", u.String())
	}
	if p, err := redlock.ParseNodeURL("redis://10.0.0.1:7000"); err != nil || p.Cluster || p.Addrs != nil {
		t.Errorf("a plain URL parsed as %+v, %v", p, err)
	}
	for _, tt := range []struct {
		name string
		urls []string
		want string
	}{
		{"addr without cluster", []string{"redis://10.0.0.1:7000?addr=10.0.0.2:7000"}, "add cluster=true"},
		{"bad cluster value", []string{"redis://10.0.0.1:7000?cluster=yes"}, `cluster="yes"`},
		{"bad addr", []string{"redis://10.0.0.1:7000?cluster=true&addr=10.0.0.2"}, `addr="10.0.0.2"`},
		{"bad addr port", []string{"redis://10.0.0.1:7000?cluster=true&addr=h:0"}, `addr="h:0"`},
		{"unix cluster", []string{"unix:///tmp/s?cluster=true"}, "not a unix socket"},
		{"db on a cluster", []string{"redis://10.0.0.1:7000/2?cluster=true"}, "only database 0"},
		{"shared master", []string{"redis://10.0.0.1:7000?cluster=true&addr=10.0.0.2:7000", "redis://10.0.0.2:7000"}, "duplicate node"},
		{"same cluster twice", []string{"redis://10.0.0.1:7000?cluster=true", "redis://10.0.0.1:7000?cluster=true"}, "duplicate node"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := redlock.ParseNodeURLs(tt.urls)
			if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseNodeURLs(%q) = %v, want ErrInvalid mentioning %q", tt.urls, err, tt.want)
			}
		})
	}
}
