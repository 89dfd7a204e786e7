package redisproc

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Gate is a TCP proxy on a free loopback port in front of one address that
// can hold back the connections coming from chosen source addresses (the
// local address a peer connected from): what a partition does to those
// peers, while every other peer still gets through. A held connection is
// open but carries nothing either way (its bytes are read and dropped),
// as across a partition that TCP outlives; a new connection from a held
// source is accepted and held the same way. Its methods are safe for
// concurrent use.
//
// Redis Cluster processes started with ClusterConfig.Partitionable
// connect to each other from addresses of their own (bind-source-addr)
// through a Gate in front of each one's bus and data ports, so that one
// process can be cut from the others while clients, connecting from
// 127.0.0.1, still reach it (Cluster.Isolate).
type Gate struct {
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	upstream string
	held     map[string]bool
	conns    map[*gateConn]struct{}
	closed   bool
}

// gateConn is one proxied connection: the peer's side, the upstream side
// (nil while a held connection has none) and whether it is held.
type gateConn struct {
	src  string
	down net.Conn
	held atomic.Bool

	mu     sync.Mutex
	up     net.Conn
	closed bool
}

// close closes both sides; it is idempotent.
func (c *gateConn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	up := c.up
	c.mu.Unlock()
	_ = c.down.Close()
	if up != nil {
		_ = up.Close()
	}
}

// setUp records the upstream side, or closes it when c is closed already.
func (c *gateConn) setUp(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = up.Close()
		return false
	}
	c.up = up
	return true
}

// StartGate starts a Gate on a free loopback port that forwards to
// upstream (host:port); upstream may be empty and set later with
// SetUpstream, before a peer connects (a connection with no upstream is
// closed). Close stops it.
func StartGate(upstream string) (*Gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisproc: gate: %w", err)
	}
	g := &Gate{ln: ln, upstream: upstream, held: map[string]bool{}, conns: map[*gateConn]struct{}{}}
	g.wg.Add(1)
	go g.accept()
	return g, nil
}

// Addr returns the address the Gate listens on (127.0.0.1:port).
func (g *Gate) Addr() string { return g.ln.Addr().String() }

// Port returns the port the Gate listens on.
func (g *Gate) Port() int { return g.ln.Addr().(*net.TCPAddr).Port }

// SetUpstream sets the address new connections are forwarded to.
func (g *Gate) SetUpstream(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.upstream = addr
}

// Hold holds back the connections from the source addresses srcs (IPs,
// such as "127.0.1.2"), those open now and those to come, until Release.
func (g *Gate) Hold(srcs ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range srcs {
		g.held[s] = true
	}
	for c := range g.conns {
		if g.held[c.src] {
			c.held.Store(true)
		}
	}
}

// Release lets the connections from srcs through again. The connections
// held until now are closed, not resumed: what they carried during the
// hold is gone, so both ends must see the break and connect again.
func (g *Gate) Release(srcs ...string) {
	g.mu.Lock()
	var drop []*gateConn
	for _, s := range srcs {
		delete(g.held, s)
	}
	for c := range g.conns {
		if c.held.Load() && !g.held[c.src] {
			drop = append(drop, c)
			delete(g.conns, c)
		}
	}
	g.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// Close stops the Gate and closes every connection through it.
func (g *Gate) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	conns := g.conns
	g.conns = map[*gateConn]struct{}{}
	g.mu.Unlock()
	_ = g.ln.Close()
	for c := range conns {
		c.close()
	}
	g.wg.Wait()
}

func (g *Gate) accept() {
	defer g.wg.Done()
	for {
		down, err := g.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		src, _, _ := net.SplitHostPort(down.RemoteAddr().String())
		c := &gateConn{src: src, down: down}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			_ = down.Close()
			return
		}
		held, upstream := g.held[src], g.upstream
		c.held.Store(held)
		g.conns[c] = struct{}{}
		g.mu.Unlock()
		g.wg.Add(1)
		go g.serve(c, upstream, held)
	}
}

// serve forwards c both ways until either side closes; a held connection
// without an upstream only drops what the peer sends.
func (g *Gate) serve(c *gateConn, upstream string, held bool) {
	defer g.wg.Done()
	defer g.forget(c)
	defer c.close()
	if held || upstream == "" {
		if upstream == "" {
			return
		}
		drain(c.down)
		return
	}
	up, err := net.DialTimeout("tcp", upstream, 2*time.Second)
	if err != nil {
		return
	}
	if !c.setUp(up) {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(c.down, up, &c.held)
		c.close()
	}()
	pipe(up, c.down, &c.held)
	c.close()
	<-done
}

// forget removes c from the open connections.
func (g *Gate) forget(c *gateConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, c)
}

// pipe copies src to dst until either fails, dropping what it reads while
// held is set.
func pipe(dst, src net.Conn, held *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !held.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drain reads and drops everything from c until it closes.
func drain(c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}
