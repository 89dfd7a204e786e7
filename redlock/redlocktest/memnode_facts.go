package redlocktest

import (
	"context"

	"dlm/redlock/adapter"
)

// SetFacts makes the node tell f about itself (adapter.FactsNode), as a
// new connection to a restarted server would read it: its run id, the max
// ttl it advertises, its persistence. f.Addr is set to the node's name.
// A MemNode tells nothing until SetFacts.
func (n *MemNode) SetFacts(f adapter.Facts) {
	f.Addr = n.name
	n.known.Set(f)
}

// Connect answers ErrNodeDown while the node is down, else nothing: a
// MemNode has no connection to make (adapter.FactsNode).
func (n *MemNode) Connect(context.Context) error {
	n.mu.Lock()
	down := n.isDown()
	n.mu.Unlock()
	if down {
		return ErrNodeDown
	}
	return nil
}

// Facts returns what SetFacts set, without a request (adapter.FactsNode).
func (n *MemNode) Facts() ([]adapter.Facts, uint64) { return n.known.Get() }
