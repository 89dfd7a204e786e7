package redlock_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// slowFirstProxy starts a loopback proxy to upstream whose first
// connection carries nothing for hold, then is forwarded (a connection
// made on a loaded machine); the later ones are forwarded at once. It
// returns the proxy's address; the test's end closes it.
func slowFirstProxy(t *testing.T, upstream string, hold time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			track(down)
			wg.Add(1)
			go func(first bool) {
				defer wg.Done()
				if first {
					select {
					case <-time.After(hold):
					case <-stop:
						return
					}
				}
				up, err := net.Dial("tcp", upstream)
				if err != nil {
					down.Close()
					return
				}
				track(up)
				wg.Add(1)
				go func() { defer wg.Done(); _, _ = io.Copy(up, down); up.Close() }()
				_, _ = io.Copy(down, up)
				down.Close()
			}(first)
		}
	}()
	return ln.Addr().String()
}

// On real nodes, both adapters: a fresh client whose first connection to
// every node is made only after the client's wait for the nodes' facts
// (four node timeouts) still has its first lock checked against the max
// ttl the nodes advertise, as the connection its attempt used read the
// facts first: over it, ErrInvalid and no key left; within it, granted
// (the slow connections are no error).
// Failed before: "first lock with ttl 30s on nodes advertising 10s whose
// first connections were slow: granted".
func TestFirstLockCheckedWhenNodesConnectLateRedis(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		advertise(t, cl.Servers, 10*time.Second)
		const nodeTO, hold = 100 * time.Millisecond, time.Second // checkWait: 400ms
		for _, tt := range []struct {
			ttl     time.Duration
			refused bool
		}{{30 * time.Second, true}, {5 * time.Second, false}} {
			var urls []string
			for _, s := range cl.Servers {
				urls = append(urls, "redis://"+slowFirstProxy(t, s.Addr(), hold))
			}
			c := dialURLs(t, a, urls, redlock.WithNodeTimeout(nodeTO), redlock.WithTTL(tt.ttl))
			l, err := c.Lock(t.Context(), "x")
			switch {
			case tt.refused && !errors.Is(err, redlock.ErrInvalid):
				t.Fatalf("first lock with ttl %v on nodes advertising 10s whose first connections were slow: %v, %v; want ErrInvalid", tt.ttl, l, err)
			case tt.refused:
				redlocktest.Eventually(t, 10*time.Second, func() bool {
					got := cl.MustValues("dlm:lock:x")
					return got[0]+got[1]+got[2] == ""
				}, "the refused lock's key stays on the nodes")
			case err != nil:
				t.Fatalf("first lock with ttl %v within the max ttl, slow first connections: %v", tt.ttl, err)
			default:
				if err := l.Unlock(t.Context()); err != nil {
					t.Errorf("Unlock: %v", err)
				}
			}
		}
	})
}
