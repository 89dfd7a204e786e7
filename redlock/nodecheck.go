package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// NodeCheck is what Client.CheckNodes found: each node's facts, in node
// order, and the warnings it gave (one line each).
type NodeCheck struct {
	// Facts are the nodes' facts (the zero Facts where a node cannot tell
	// them or did not answer).
	Facts []adapter.Facts
	// Errs are the nodes' errors, in node order (nil where none).
	Errs []error
	// Warnings are the settings that the nodes do not support safely but
	// that CheckNodes lets pass, one line each.
	Warnings []string
}

// nodeFacts is what CheckNodes keeps for the acquisitions: the smallest
// max ttl a node advertised (nanoseconds, 0: none), and the node that
// advertised it.
type nodeFacts struct {
	maxTTL atomic.Int64
	mu     sync.Mutex
	node   string
}

// CheckNodes reads what every node tells about itself (adapter.FactsNode)
// and checks the client's settings against it, before the client relies
// on the nodes. It returns an error wrapping ErrInvalid, naming the nodes
// and the fix, when:
//
//   - two nodes are one server (the same run id: two URLs for one
//     redis-server), which would count one server twice toward the quorum;
//   - the client's ttl (WithTTL) is over the max ttl that a node advertises
//     (a node started by `dlm node --max-ttl`): after a crash without
//     persistence, such a node restarts once its max ttl has passed, while
//     a longer lock it forgot may still be valid.
//
// It warns (NodeCheck.Warnings), without refusing, when the client fences
// (WithFencing: fencing tokens, elections) over a node that does not sync
// every write to disk (appendonly yes, appendfsync always; `dlm node
// --fencing` sets it), where a crash can lose the fence counter and a
// token go back; and when the number of nodes is even, which tolerates no
// more failures than one node fewer.
//
// Once CheckNodes has read a max ttl, every acquisition whose ttl is over
// the smallest one is refused with ErrInvalid, without a request. Nodes
// that do not answer, or cannot tell (a Redis Cluster, a node that is no
// adapter.FactsNode, an ACL without INFO or CONFIG) are not checked. The
// reads cost three requests per node (and the connection's dial, on a
// client's first use of a node), all of a node's bounded by four node
// timeouts and at least 250 ms (a node that does not answer within it is
// not checked), the nodes read at once; call CheckNodes once after New.
func (c *Client) CheckNodes(ctx context.Context) (NodeCheck, error) {
	rep := NodeCheck{Facts: make([]adapter.Facts, len(c.nodes)), Errs: make([]error, len(c.nodes))}
	type answer struct {
		i   int
		f   adapter.Facts
		err error
	}
	// Each node is read by a goroutine of its own that never blocks on
	// the way out (a buffered channel): a node whose adapter does not
	// return by the deadline (a dial that outlasts its context) is left
	// behind, unchecked, and its goroutine ends when the adapter returns.
	answers := make(chan answer, len(c.nodes))
	wait := c.checkWait()
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pending := 0
	asked := make([]bool, len(c.nodes))
	for i, n := range c.nodes {
		fn, ok := n.(adapter.FactsNode)
		if !ok {
			continue
		}
		pending++
		asked[i] = true
		go func() {
			f, err := fn.Facts(cctx)
			answers <- answer{i, f, err}
		}()
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for ; pending > 0; pending-- {
		select {
		case a := <-answers:
			rep.Facts[a.i], rep.Errs[a.i] = a.f, a.err
			asked[a.i] = false
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		break
	}
	for i, left := range asked {
		if left {
			rep.Errs[i] = fmt.Errorf("%s: no answer within %v: not checked", c.names[i], wait)
		}
	}
	var errs []error
	seen := map[string]int{}
	minTTL, minNode := time.Duration(0), ""
	ttl := c.opts.lock.ttl
	for i, f := range rep.Facts {
		if f.RunID != "" {
			if j, dup := seen[f.RunID]; dup {
				errs = append(errs, invalidf("nodes %s and %s are one server (run id %s): it would count twice toward the quorum; give each node its own redis-server", c.names[j], c.names[i], f.RunID))
			} else {
				seen[f.RunID] = i
			}
		}
		if f.MaxTTL > 0 {
			if minTTL == 0 || f.MaxTTL < minTTL {
				minTTL, minNode = f.MaxTTL, c.names[i]
			}
			if ttl > f.MaxTTL {
				errs = append(errs, overMaxTTL(ttl, f.MaxTTL, c.names[i]))
			}
		}
		if c.opts.fencing && f.PersistenceKnown && !f.Durable() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("node %s does not sync every write to disk (appendonly %s, appendfsync %s): a crash can lose its fence counter and a token or term go back; run it with `dlm node --fencing` (appendfsync always)",
				c.names[i], yesNo(f.AppendOnly), fsyncName(f)))
		}
	}
	if len(c.nodes)%2 == 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d nodes: an even number tolerates no more node failures (%d) than %d nodes; use an odd number", len(c.nodes), len(c.nodes)-c.quorum, len(c.nodes)-1))
	}
	if minTTL > 0 {
		c.facts.mu.Lock()
		if cur := time.Duration(c.facts.maxTTL.Load()); cur == 0 || minTTL < cur {
			c.facts.node = minNode
			c.facts.maxTTL.Store(int64(minTTL))
		}
		c.facts.mu.Unlock()
	}
	return rep, errors.Join(errs...)
}

// checkWait bounds the reads of one node's facts: generous for a slow
// healthy node (a slow node is not an error), short for a frozen one.
func (c *Client) checkWait() time.Duration {
	return max(4*c.opts.nodeTimeout, 250*time.Millisecond)
}

// checkAdvertised refuses a lock ttl over the smallest max ttl a node
// advertised to CheckNodes: one atomic load, no request.
func (c *Client) checkAdvertised(ttl time.Duration) error {
	maxTTL := time.Duration(c.facts.maxTTL.Load())
	if maxTTL == 0 || ttl <= maxTTL {
		return nil
	}
	c.facts.mu.Lock()
	node := c.facts.node
	c.facts.mu.Unlock()
	return overMaxTTL(ttl, maxTTL, node)
}

// overMaxTTL is the error of a ttl over a node's advertised max ttl.
func overMaxTTL(ttl, maxTTL time.Duration, node string) error {
	return invalidf("ttl %v is over the max ttl %v that node %s advertises: after a crash without persistence the node restarts once %v has passed, while a lock it forgot may still be valid; use a ttl of at most %v, or restart the node with `dlm node --max-ttl %v` or more",
		ttl, maxTTL, node, maxTTL, maxTTL, ttl)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func fsyncName(f adapter.Facts) string {
	if f.FsyncAlways {
		return "always"
	}
	return "not always"
}
