package adapter

import (
	"context"
	"strings"
	"time"
)

// MaxTTLKey is the key under which a node started by `dlm node` advertises
// its --max-ttl, as a Go duration ("15s"): the longest lock ttl it is safe
// for (a restart after a crash without persistence waits that long, so
// that every lock the node forgot has expired first).
const MaxTTLKey = "dlm:node:max-ttl"

// Facts is what a node tells about itself: which server it is, the
// longest lock ttl it advertises, and whether it writes every change to
// disk before it answers. The zero value knows nothing.
type Facts struct {
	// RunID is the server's run id (INFO server), "" when unknown: two
	// nodes with one run id are one server.
	RunID string
	// MaxTTL is the max ttl the node advertises under MaxTTLKey, 0 when
	// it advertises none.
	MaxTTL time.Duration
	// PersistenceKnown is set when AppendOnly and FsyncAlways were read.
	PersistenceKnown bool
	// AppendOnly is the node's appendonly setting.
	AppendOnly bool
	// FsyncAlways is set when the node syncs its append-only file on
	// every write (appendfsync always).
	FsyncAlways bool
}

// Durable reports whether the node keeps every acknowledged write across
// a crash (appendonly yes, appendfsync always), as fence counters and
// leaders' terms need.
func (f Facts) Durable() bool { return f.PersistenceKnown && f.AppendOnly && f.FsyncAlways }

// FactsNode is implemented by nodes that can tell their Facts. Facts
// answers nothing for a node whose facts cannot be told (a Redis Cluster:
// each master has its own): the zero Facts and no error.
type FactsNode interface {
	Node
	Facts(ctx context.Context) (Facts, error)
}

// ParseFacts builds Facts from a node's INFO server reply, the value of
// MaxTTLKey ("" when absent) and its CONFIG GET of appendonly and
// appendfsync (ok false when CONFIG was refused, as an ACL may). A value
// under MaxTTLKey that is not a positive duration is ignored.
func ParseFacts(infoServer, maxTTL string, appendOnly, appendFsync string, ok bool) Facts {
	var f Facts
	for _, line := range strings.Split(infoServer, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); found {
			f.RunID = v
		}
	}
	if d, err := time.ParseDuration(strings.TrimSpace(maxTTL)); err == nil && d > 0 {
		f.MaxTTL = d
	}
	if ok {
		f.PersistenceKnown = true
		f.AppendOnly = appendOnly == "yes"
		f.FsyncAlways = appendFsync == "always"
	}
	return f
}
