package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"sync"

	"github.com/redis/rueidis"
)

// A request ends when its context ends (the adapter contract), also while
// the node's connection is being made. rueidis makes a connection on the
// request that finds none, bounded by that request's context (fence.go:
// wrap), and every request that comes meanwhile joins that set-up and
// waits for it, whatever its own context: a request with a short deadline
// that came after one with a long one (the client's Connect, say) waited
// for the long one's set-up, up to connTimeout against a server that
// accepts connections and never answers (a stopped process), and the core
// waits for every request it sent. So while the node has no established
// connection (setups.connected), each request runs on a goroutine of its
// own and its caller returns at its context's end, with its context's
// error; the request returns when the set-up ends (its own bound, or
// Close: abort ends it). A node with a connection sends its requests as
// before, with no goroutine: a request on an established connection ends
// with its context in rueidis.

// settingUp is the node's client while it has no established connection.
type settingUp struct {
	rueidis.Client
	n *Node
}

// Do runs cmd on a goroutine and returns its result, or its context's
// error once ctx ends first. A set-up that another request made, and that
// ended with that request's context, fails cmd too (rueidis shares one
// set-up between the requests that wait for it), although cmd was never
// sent and its own context has not ended: cmd then waits for the next
// set-up (setupEndedElsewhere), unless the node gave up making
// connections (Close, AbortSetup: whose end of the set-up is that error).
func (s settingUp) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if ctx.Done() == nil {
		return s.Client.Do(ctx, cmd) // a context that never ends
	}
	if !s.n.calls.add() {
		return s.Client.Do(ctx, cmd) // the node is closing: fails at once
	}
	for {
		r := s.do(ctx, cmd)
		if !setupEndedElsewhere(ctx, r.Error()) || !s.n.setups.hold(&s.n.calls) {
			return r
		}
	}
}

// do is one try of Do, counted in s.n.calls by its caller.
func (s settingUp) do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	res := make(chan rueidis.RedisResult, 1)
	go func() {
		defer s.n.calls.done()
		res <- s.Client.Do(ctx, cmd)
	}()
	select {
	case r := <-res:
		return r
	case <-ctx.Done():
		return s.n.ended.result(ctx)
	}
}

// DoMulti runs multi on a goroutine and returns its results, or its
// context's error for each once ctx ends first; as Do, it waits for the
// next set-up when the one it waited for ended with another request's
// context.
func (s settingUp) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if ctx.Done() == nil || len(multi) == 0 {
		return s.Client.DoMulti(ctx, multi...)
	}
	if !s.n.calls.add() {
		return s.Client.DoMulti(ctx, multi...) // the node is closing: fails at once
	}
	for {
		rs := s.doMulti(ctx, multi)
		ended := !slices.ContainsFunc(rs, func(r rueidis.RedisResult) bool { return !setupEndedElsewhere(ctx, r.Error()) })
		if !ended || !s.n.setups.hold(&s.n.calls) {
			return rs
		}
	}
}

// doMulti is one try of DoMulti, counted in s.n.calls by its caller.
func (s settingUp) doMulti(ctx context.Context, multi []rueidis.Completed) []rueidis.RedisResult {
	res := make(chan []rueidis.RedisResult, 1)
	go func() {
		defer s.n.calls.done()
		res <- s.Client.DoMulti(ctx, multi...)
	}()
	select {
	case r := <-res:
		return r
	case <-ctx.Done():
		r := s.n.ended.result(ctx)
		out := make([]rueidis.RedisResult, len(multi))
		for i := range out {
			out[i] = r
		}
		return out
	}
}

// setupEndedElsewhere reports whether err, a request's error while ctx, its
// context, is still live, is another context's end: that of the request
// that made the connection's set-up (rueidis bounds a dial and its
// handshake by the context of the request that started them, and fails
// every request waiting for them with its error). Such a request was not
// sent: nothing is sent before the set-up ends. A connection's own
// timeouts are os.ErrDeadlineExceeded, not a context's error, and a
// request sent on an established connection fails only with its own
// context. Each new try waits for a new set-up, which a request that
// finds none starts within its own context (often this one's).
func setupEndedElsewhere(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	// The context's own error values, as rueidis passes them on: not a
	// wrapped one, such as a cluster client's build that timed out
	// ("cluster unreachable: ..."), which a new try would meet again at
	// once.
	return err == context.DeadlineExceeded || err == context.Canceled
}

// endedClients make the result of a request whose context ended before
// the node's connection was made: rueidis has no way to build a result
// with an error but a request that fails, so each is a client whose every
// dial fails with one context error (each error its own client: a failed
// dial's error is shared by the requests that join it). Built on first
// use, closed by Close.
type endedClients struct {
	mu                 sync.Mutex
	closed             bool
	deadline, canceled rueidis.Client
}

// result returns a failed result carrying ctx's error (ctx has ended).
func (e *endedClients) result(ctx context.Context) rueidis.RedisResult {
	err, c := error(context.Canceled), &e.canceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err, c = context.DeadlineExceeded, &e.deadline
	}
	e.mu.Lock()
	client := *c
	if client == nil {
		client = failingClient(err)
		if e.closed {
			defer client.Close() // the node closed: not kept
		} else {
			*c = client
		}
	}
	e.mu.Unlock()
	return client.Do(context.Background(), client.B().Ping().Build())
}

// failingClient returns a client whose every request fails with err (its
// every dial does).
func failingClient(err error) rueidis.Client {
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{"ended:0"},
		DisableCache:      true,
		DisableRetry:      true,
		ForceSingleClient: true, // a client even though its dial fails
		DialCtxFn: func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
			return nil, err
		},
	})
	return c
}

// close closes the clients.
func (e *endedClients) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, c := range []rueidis.Client{e.deadline, e.canceled} {
		if c != nil {
			c.Close()
		}
	}
}

// inflight counts the node's goroutines that may outlive their caller (a
// request of settingUp, the give-back of a release subscription), for the
// node's Close to wait for. Once Close waits, none is counted any more:
// the caller runs the work itself instead, which ends at once on a closed
// node. A count that rose from zero beside the wait would be a misuse of
// sync.WaitGroup, and that goroutine could outlive Close.
type inflight struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// add counts one goroutine about to start, and reports false, counting
// nothing, once the node's Close waits.
func (f *inflight) add() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.wg.Add(1)
	return true
}

// done ends a goroutine that add counted.
func (f *inflight) done() { f.wg.Done() }

// closeAndWait refuses new goroutines and waits for those counted.
func (f *inflight) closeAndWait() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.wg.Wait()
}
