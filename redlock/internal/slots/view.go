package slots

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// View is a cluster node's last view of its cluster: the masters and the
// master of each slot, as the first server that answered the last reading
// (CLUSTER NODES) told them. It is what a client reads a cluster node's
// facts master by master with (adapter.MastersNode). Safe for concurrent
// use; the zero value knows nothing.
type View struct {
	p atomic.Pointer[view]
}

type view struct {
	shards  []Shard
	masters []string
}

// Set makes the CLUSTER NODES text txt, written by the server at addr,
// the view.
func (v *View) Set(addr, txt string) {
	shards := Owners(map[string]string{addr: txt})
	var masters []string
	for _, s := range shards {
		if !slices.Contains(masters, s.Master) {
			masters = append(masters, s.Master)
		}
	}
	slices.Sort(masters)
	v.p.Store(&view{shards: shards, masters: masters})
}

// Masters returns the masters that serve slots, sorted; none before Set.
// The slice must not be modified.
func (v *View) Masters() []string {
	if p := v.p.Load(); p != nil {
		return p.masters
	}
	return nil
}

// MasterOf returns the master that serves key's slot, "" when the view
// names none.
func (v *View) MasterOf(key string) string {
	if p := v.p.Load(); p != nil {
		return Owner(p.shards, Of(key))
	}
	return ""
}

// FirstAnswer asks each of servers at once (ask: CLUSTER NODES of one
// server, by address) and returns the first answer without an error,
// with its server's address, once it comes: one server that does not
// answer (a hung process) holds it up no longer than the others take.
// When none answers, it returns the first error, or ctx's. The requests
// still out are left to end by ctx's deadline, not cancelled: a request
// cancelled while its connection is being made fails that connection,
// and the next requests on it (a lock's) with it.
func FirstAnswer(ctx context.Context, servers []string, ask func(ctx context.Context, addr string) (string, error)) (string, string, error) {
	if len(servers) == 0 {
		return "", "", errors.New("no server of the cluster is known yet")
	}
	actx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		actx, cancel = context.WithDeadline(actx, d)
	}
	type answer struct {
		addr, txt string
		err       error
	}
	answers := make(chan answer, len(servers))
	var wg sync.WaitGroup
	for _, a := range servers {
		wg.Go(func() {
			txt, err := ask(actx, a)
			answers <- answer{a, txt, err}
		})
	}
	go func() {
		wg.Wait()
		cancel()
	}()
	var first error
	for range servers {
		var a answer
		select {
		case a = <-answers:
		case <-ctx.Done():
			return "", "", context.Cause(ctx)
		}
		if a.err == nil {
			return a.addr, a.txt, nil
		}
		if first == nil {
			first = a.err
		}
	}
	return "", "", first
}
