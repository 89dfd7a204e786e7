package main

import (
	"crypto/tls"
	"errors"
	"strings"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/rueidis"
)

// defaultAdapter is the node adapter of every subcommand that dials a lock
// client (lock, bench, demo, torture), unless --adapter says otherwise: the
// checker tests what users run.
const defaultAdapter = "rueidis"

// adapterDef is one Redis client adapter the command line can use.
type adapterDef struct {
	// Name is the value of --adapter (and of torture.Config.Adapter).
	Name string
	// About says what distinguishes it.
	About string
	// dial builds a lock client over urls; cfgs[i] (nil: the adapter's
	// defaults) applies to urls[i] when it is rediss://. The function
	// returned closes what dial opened beyond the client (call it after the
	// client's Close).
	dial func(urls []string, cfgs []*tls.Config, opts ...redlock.Option) (*redlock.Client, func(), error)
}

// adapterTable is the one table of adapters: add a new adapter here (and
// to torture.Adapters) and every subcommand offers it.
func adapterTable() []adapterDef {
	return []adapterDef{
		{Name: "rueidis", About: "batched per node, hand-off to waiters (default)", dial: dialRueidis},
		{Name: "goredis", About: "go-redis v9, batched per node on its own connection, hand-off to waiters", dial: dialGoredis},
	}
}

// adapterNames lists the adapters, for flag help and messages.
func adapterNames() []string {
	var out []string
	for _, a := range adapterTable() {
		out = append(out, a.Name)
	}
	return out
}

// findAdapter returns the adapter named name; an unknown name is bad usage.
func findAdapter(name string) (adapterDef, error) {
	for _, a := range adapterTable() {
		if a.Name == name {
			return a, nil
		}
	}
	return adapterDef{}, usageErrorf("--adapter: unknown adapter %q; expected %s", name, strings.Join(adapterNames(), " or "))
}

func dialRueidis(urls []string, cfgs []*tls.Config, opts ...redlock.Option) (*redlock.Client, func(), error) {
	nodes := make([]redlock.Node, 0, len(urls))
	closeAll := func() {
		for _, n := range nodes {
			_ = n.(*rueidis.Node).Close()
		}
	}
	for i, raw := range urls {
		n, err := rueidis.DialNode(raw, rueidisTLS(cfgs[i]))
		if err != nil {
			closeAll()
			return nil, func() {}, err
		}
		nodes = append(nodes, n)
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		closeAll()
		return nil, func() {}, err
	}
	return c, func() {}, nil
}

func dialGoredis(urls []string, cfgs []*tls.Config, opts ...redlock.Option) (*redlock.Client, func(), error) {
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return nil, func() {}, err
	}
	nodes := make([]redlock.Node, len(parsed))
	var closers []func() error
	closeAll := func() {
		for _, f := range closers {
			_ = f()
		}
	}
	for i, u := range parsed {
		if u.Cluster {
			cc, err := goredis.NewClusterClient(u)
			if err != nil {
				closeAll()
				return nil, func() {}, err
			}
			if o := cc.Options(); cfgs[i] != nil && o.TLSConfig != nil {
				o.TLSConfig = forServer(cfgs[i], o.TLSConfig.ServerName)
			}
			closers = append(closers, cc.Close)
			nodes[i] = goredis.NewNode(cc, u.String()) // does not own cc: closeAll does
			continue
		}
		rc := goredisTLS(goredis.NewClient(u), cfgs[i])
		closers = append(closers, rc.Close)
		nodes[i] = goredis.NewNode(rc, u.String()) // does not own rc: closeAll does
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		closeAll()
		return nil, func() {}, err
	}
	return c, closeAll, nil
}

// dial builds the lock client of a subcommand over urls with the named
// adapter and the TLS files. Invalid options are bad usage (exit 64). The
// function returned closes the client and everything dial opened; with a
// positive grace it waits at most that long (see closeWithin).
func dial(adapter string, urls []string, t tlsFiles, grace time.Duration, opts ...redlock.Option) (*redlock.Client, func(), error) {
	a, err := findAdapter(adapter)
	if err != nil {
		return nil, nil, err
	}
	cfgs, err := t.forURLs(urls)
	if err != nil {
		return nil, nil, err
	}
	c, closeRest, err := a.dial(urls, cfgs, opts...)
	if errors.Is(err, redlock.ErrInvalid) {
		return nil, nil, withCode(exitUsage, err)
	}
	if err != nil {
		return nil, nil, err
	}
	return c, func() { closeWithin(grace, func() { _ = c.Close(); closeRest() }) }, nil
}

// closeGrace is how long a command that the operator bounds (--wait, one
// try) gives the releases still owed when it is done, to the nodes that
// have not answered them yet: a node that answers does so within its node
// timeout of their sending, which was before the command ended; a node
// that hangs (a stopped process, a stalled disk) would hold the exit up to
// the library's release bounds (a second or two per stage). What such a
// node still holds expires by its ttl: it never counted towards a quorum,
// or the lock was released on a quorum.
func closeGrace(nodeTimeout time.Duration) time.Duration {
	return max(500*time.Millisecond, 4*nodeTimeout)
}

// oneTry bounds an acquisition of one try (--wait 0): the attempt's own
// bound and closeGrace for the releases of a failed attempt, which the
// library then stops waiting for. A dlm process is a new client: its
// attempt waits for a node it has no history of, when the quorum needs
// it, as for a slow node, up to a grant's patience (half the ttl less the
// drift), since a healthy node that answers late is not an error; a node
// that is not slow is waited for at most twenty node timeouts, and no
// more than a tenth of the ttl.
func oneTry(nodeTimeout, ttl time.Duration) time.Duration {
	limit := max(min(20*nodeTimeout, ttl/10), nodeTimeout)
	patience := ttl/2 - time.Duration(float64(ttl)*redlock.DefaultDriftFactor) - 2*time.Millisecond
	return max(limit, patience) + closeGrace(nodeTimeout)
}

// closeWithin runs closeAll and waits for it at most grace (0: until it
// returns). When grace passes first, closeAll goes on in the background:
// dlm is about to exit, and what it still waits for is requests to nodes
// that did not answer in time; they end with the process.
func closeWithin(grace time.Duration, closeAll func()) {
	if grace <= 0 {
		closeAll()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		closeAll()
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
