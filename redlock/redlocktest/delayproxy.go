package redlocktest

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DelayProxy listens on a loopback port and forwards every connection to
// addr, handing each piece of the server's replies to the client the delay
// after it came (in order, delay read as each piece comes); the client's
// requests go through at once: a healthy server on a loaded machine, or
// behind a slow link, that applies each request at once and answers late.
// It returns the proxy's address; the test's end closes it.
func DelayProxy(t testing.TB, addr string, delay *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				_ = client.Close()
				continue
			}
			track(client)
			track(server)
			type piece struct {
				at time.Time // when it is due
				b  []byte
			}
			pieces := make(chan piece, 1024)
			wg.Add(3)
			go func() { // requests: at once
				defer wg.Done()
				_, _ = io.Copy(server, client)
				_ = server.Close()
			}()
			go func() { // replies: read as they come
				defer wg.Done()
				defer close(pieces)
				for {
					b := make([]byte, 32<<10)
					n, err := server.Read(b)
					if n > 0 {
						pieces <- piece{time.Now().Add(time.Duration(delay.Load())), b[:n]}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { // replies: handed on d later
				defer wg.Done()
				defer client.Close()
				for p := range pieces {
					time.Sleep(time.Until(p.at))
					if _, err := client.Write(p.b); err != nil && !errors.Is(err, net.ErrClosed) {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
