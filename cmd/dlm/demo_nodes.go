package main

import (
	"context"
	"fmt"
	"os/exec"
	"sync"

	"github.com/alicebob/miniredis/v2"

	"dlm/redlock/redisproc"
)

// demoNode is one node of the demo. Nodes the demo started can be killed
// (a crash: their keys are gone) and started again, empty.
type demoNode interface {
	// URL is the node's redis:// URL.
	URL() string
	// Kill crashes the node; Start brings it back on the same address,
	// with no keys (no persistence: the demo relies on R16.3).
	Kill()
	Start(ctx context.Context) error
	// Close stops the node for good.
	Close()
}

// demoBackend says which kind of nodes the demo runs on.
type demoBackend struct {
	// Nodes are the demo's nodes.
	Nodes []demoNode
	// Owned is false for nodes given with --nodes: no faults then.
	Owned bool
	// Desc is the first line the demo prints.
	Desc string
}

// startDemoNodes starts n nodes: redis-server processes when redis-server is
// on PATH, else in-process miniredis servers; with urls, it uses those.
func startDemoNodes(ctx context.Context, n int, urls []string) (*demoBackend, error) {
	if len(urls) > 0 {
		b := &demoBackend{Desc: fmt.Sprintf("dlm demo: running against the %d nodes given with --nodes; faults cannot be injected into nodes this demo does not own, so it runs without them", len(urls))}
		for _, u := range urls {
			b.Nodes = append(b.Nodes, externalNode(u))
		}
		return b, nil
	}
	b := &demoBackend{Owned: true}
	if path, err := exec.LookPath(redisproc.Binary); err == nil {
		b.Desc = fmt.Sprintf("dlm demo: %d nodes are real redis-server processes (%s) on loopback ports", n, path)
		for i := 0; i < n; i++ {
			p, err := redisproc.Start(ctx, redisproc.Config{})
			if err != nil {
				b.close()
				return nil, err
			}
			b.Nodes = append(b.Nodes, &procNode{p: p})
		}
		return b, nil
	}
	b.Desc = fmt.Sprintf("dlm demo: %d nodes are in-process Redis-protocol servers (miniredis), because redis-server is not on PATH; install redis-server to see real ones", n)
	for i := 0; i < n; i++ {
		m := &miniNode{}
		if err := m.Start(ctx); err != nil {
			b.close()
			return nil, err
		}
		b.Nodes = append(b.Nodes, m)
	}
	return b, nil
}

func (b *demoBackend) close() {
	for _, n := range b.Nodes {
		n.Close()
	}
}

// procNode is a redis-server process.
type procNode struct{ p *redisproc.Process }

func (n *procNode) URL() string { return n.p.URL() }
func (n *procNode) Kill()       { n.p.Kill() }
func (n *procNode) Close()      { n.p.Close() }
func (n *procNode) Start(ctx context.Context) error {
	return n.p.Restart(ctx, 0) // the delay (R16.3) is the demo's, visibly
}

// miniNode is an in-process miniredis server whose ttls run on the wall
// clock. A restart is a new, empty server on the same address.
type miniNode struct {
	mu   sync.Mutex
	m    *miniredis.Miniredis
	addr string
}

func (n *miniNode) URL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return "redis://" + n.addr
}

func (n *miniNode) Start(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true) // keys expire as real time passes, as on redis-server
	var err error
	if n.addr == "" {
		err = m.Start()
	} else {
		err = m.StartAddr(n.addr)
	}
	if err != nil {
		return fmt.Errorf("start miniredis: %w", err)
	}
	n.m, n.addr = m, m.Addr()
	return nil
}

func (n *miniNode) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m != nil {
		n.m.Close()
		n.m = nil
	}
}

func (n *miniNode) Close() { n.Kill() }

// externalNode is a node given with --nodes: never faulted.
type externalNode string

func (n externalNode) URL() string                 { return string(n) }
func (n externalNode) Kill()                       {}
func (n externalNode) Start(context.Context) error { return nil }
func (n externalNode) Close()                      {}
