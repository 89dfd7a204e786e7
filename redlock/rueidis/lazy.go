package rueidis

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock"
	"dlm/redlock/internal/facts"
)

// A node that is a Redis Cluster connects lazily, as a single node does
// (NewClient): rueidis' cluster client must reach a seed to be built at
// all, so the node builds it in the background, from Dial on, and again
// after a failure when a request comes. Until one is built, every request
// fails with the last reason, as on a node that is down; once the cluster
// answers, the node works. A request waits for a build under way until
// its context ends, so a reachable cluster answers the first request.

// lazyCluster is a cluster node's client, built on demand.
type lazyCluster struct {
	build func() (rueidis.Client, error)
	// down answers every request with the last build's error: a client
	// of one node whose every dial fails with it. Its builder makes
	// commands without slots, which it never sends.
	down rueidis.Client

	ready atomic.Pointer[rueidis.Client]

	mu       sync.Mutex
	building chan struct{} // closed when the build under way ends
	err      error         // why the last build failed
	next     time.Time     // no new build before
	wait     time.Duration // between failed builds: redialMin to redialMax
	closed   bool
}

// newLazyCluster returns the lazy client of the cluster node u and starts
// its first build.
func newLazyCluster(u redlock.NodeURL, known *facts.Known, st *setups, opts []Option) *lazyCluster {
	l := &lazyCluster{build: func() (rueidis.Client, error) { return newClusterClient(u, known, st, opts) }, wait: redialMin}
	l.err = fmt.Errorf("rueidis: cluster node %s: not connected yet", u)
	o := rueidis.ClientOption{
		InitAddress:       []string{u.Addrs[0]},
		DisableCache:      true,
		DisableRetry:      true,
		ForceSingleClient: true,
		DialCtxFn: func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return nil, l.err
		},
	}
	l.down, _ = rueidis.NewClient(o) // its dial fails: a client all the same (ForceSingleClient)
	l.mu.Lock()
	l.start()
	l.mu.Unlock()
	return l
}

// start starts a build; l.mu is held.
func (l *lazyCluster) start() {
	done := make(chan struct{})
	l.building = done
	go func() {
		c, err := l.build()
		l.mu.Lock()
		defer l.mu.Unlock()
		defer close(done)
		l.building = nil
		switch {
		case c != nil && l.closed:
			c.Close()
		case c != nil:
			// A client whose first topology read failed is still built
			// (rueidis reads it again on use).
			l.ready.Store(&c)
		default:
			l.err = fmt.Errorf("rueidis: cluster unreachable: %w", err)
			l.next = time.Now().Add(l.wait)
			l.wait = min(2*l.wait, redialMax)
		}
	}()
}

// client returns the cluster client, or, while there is none, the client
// that fails every request with the reason; it starts a build when none
// is under way and the last failed long enough ago, and waits for a build
// under way until ctx ends.
func (l *lazyCluster) client(ctx context.Context) rueidis.Client {
	if c := l.ready.Load(); c != nil {
		return *c
	}
	l.mu.Lock()
	if !l.closed && l.building == nil && !time.Now().Before(l.next) {
		l.start()
	}
	building := l.building
	l.mu.Unlock()
	if building != nil {
		select {
		case <-building:
		case <-ctx.Done():
		}
	}
	if c := l.ready.Load(); c != nil {
		return *c
	}
	return l.down
}

// Close closes the clients, and the one a build under way makes when it
// ends.
func (l *lazyCluster) Close() {
	l.mu.Lock()
	l.closed = true
	building := l.building
	l.mu.Unlock()
	if building != nil {
		<-building // bounded by the dialer's timeout
	}
	if c := l.ready.Load(); c != nil {
		(*c).Close()
	}
	l.down.Close()
}
