package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"dlm/redlock"
)

// schemeHints looks, after a failed acquisition err, at each node of urls
// that failed or timed out for the likeliest cause a client cannot see:
// a URL whose scheme does not fit the port. A rediss:// URL on a plain
// port only times out (the server waits for a command's end of line in
// the TLS handshake's bytes and never answers), and a redis:// URL on a
// TLS port fails with a reset or an end of file (the server drops what is
// not TLS). So dlm asks the port itself, once, bounded by timeout: a
// rediss:// node whose port answers a plain PING does not speak TLS; a
// redis:// node whose port completes a TLS handshake (its certificate is
// not checked: nothing is sent over it) speaks TLS. The result maps each
// such node's name (as in err) to the line dlm adds; a node that answers
// neither way (down, paused, slow) gets none.
func schemeHints(ctx context.Context, err error, urls []string, timeout time.Duration) map[string]string {
	var ae *redlock.AcquireError
	if !errors.As(err, &ae) {
		return nil
	}
	suspect := map[string]bool{}
	for _, n := range ae.Nodes {
		if n.Outcome == redlock.Failed || n.Outcome == redlock.TimedOut {
			suspect[n.Node] = true
		}
	}
	var (
		mu    sync.Mutex
		hints = map[string]string{}
		wg    sync.WaitGroup
	)
	for _, raw := range urls {
		u, err := redlock.ParseNodeURL(raw)
		if err != nil || !suspect[u.String()] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if hint := schemeHint(ctx, u, timeout); hint != "" {
				mu.Lock()
				hints[u.String()] = hint
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return hints
}

// schemeHint is what schemeHints says of one node u that failed: "" when
// its port does not speak the other protocol than its URL's (or it is no
// TCP node of one server).
func schemeHint(ctx context.Context, u redlock.NodeURL, timeout time.Duration) string {
	if u.Network != "tcp" || u.Cluster {
		return ""
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case u.TLS && answersPlain(pctx, u.Addr):
		return "the server does not speak TLS on this port; use redis://" + u.Addr
	case !u.TLS && answersTLS(pctx, u.Addr):
		return "the server speaks TLS on this port; use rediss://" + u.Addr
	}
	return ""
}

// answersPlain reports whether the server at addr answers a plain PING
// in RESP within ctx: "+PONG", or an error such as "-NOAUTH".
func answersPlain(ctx context.Context, addr string) bool {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && len(line) > 2 && (line[0] == '+' || line[0] == '-')
}

// answersTLS reports whether the server at addr completes a TLS handshake
// within ctx, or answers it with a TLS alert (it wants a client
// certificate): either way it speaks TLS. Its certificate is not checked,
// as nothing is sent over the connection.
func answersTLS(ctx context.Context, addr string) bool {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // a probe of the protocol only: nothing is sent
	err = tc.HandshakeContext(ctx)
	var alert tls.AlertError
	return err == nil || errors.As(err, &alert) || remoteAlert(err) >= 0
}
