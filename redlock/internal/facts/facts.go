// Package facts keeps what the servers of a node told about themselves
// when the node connected to them (adapter.FactsNode), for the adapters
// (redlock/goredis, redlock/rueidis) and the in-memory node: the Facts of
// each server by address, replaced by every new connection's handshake,
// and a version that counts the replacements, read without a lock.
package facts

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"dlm/redlock/adapter"
)

// Known is the facts of a node's servers. The zero value is ready; it is
// safe for concurrent use.
type Known struct {
	mu   sync.Mutex
	by   map[string]adapter.Facts
	snap atomic.Pointer[snapshot]
}

// snapshot is one version of the facts: never modified once published.
type snapshot struct {
	servers []adapter.Facts
	version uint64
}

// Set records f, what a new connection to the server at f.Addr read, in
// place of what an earlier connection to it read.
func (k *Known) Set(f adapter.Facts) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.set(f)
}

// set is Set under k.mu.
func (k *Known) set(f adapter.Facts) {
	if k.by == nil {
		k.by = map[string]adapter.Facts{}
	}
	k.by[f.Addr] = f
	servers := make([]adapter.Facts, 0, len(k.by))
	for _, s := range k.by {
		servers = append(servers, s)
	}
	slices.SortFunc(servers, func(a, b adapter.Facts) int { return strings.Compare(a.Addr, b.Addr) })
	var version uint64 = 1
	if old := k.snap.Load(); old != nil {
		version = old.version + 1
	}
	k.snap.Store(&snapshot{servers: servers, version: version})
}

// Reread records f, what a live connection to the server at f.Addr read
// again (adapter.RereadCommands), over what the connection's handshake
// read: the max ttl, and whether the max ttl's GET and the fence's CLIENT
// commands were refused, which only a handshake reads, are kept.
func (k *Known) Reread(f adapter.Facts) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.by[f.Addr]; ok {
		f.MaxTTL = old.MaxTTL
		for _, r := range []string{adapter.RefusedMaxTTL, adapter.RefusedClient} {
			if old.Refuses(r) {
				f.Refuse(r)
			}
			if old.Disables(r) && !f.Disables(r) {
				f.Disabled = append(f.Disabled, r)
			}
		}
	}
	k.set(f)
}

// Get returns the servers' facts, sorted by address, and their version (0
// before the first Set), as adapter.FactsNode.Facts does.
func (k *Known) Get() ([]adapter.Facts, uint64) {
	s := k.snap.Load()
	if s == nil {
		return nil, 0
	}
	return s.servers, s.version
}
