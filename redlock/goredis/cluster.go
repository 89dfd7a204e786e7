package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/internal/facts"
	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

// A node that is a Redis Cluster: NewNode of a *redis.ClusterClient, or
// Dial and DialNode of a cluster=true URL. go-redis keeps the slot map
// (which master serves which hash slot); the node sends its requests
// itself. What changes:
//
//   - the client hands it hash-tagged keys (Cluster, adapter.ClusterNode), so
//     that every script on one resource runs on one master;
//   - every request of the node, batched or not (fenced acquisitions,
//     read-write locks, records: script.go), goes through its queue, and
//     each batch to the master of each request's slot over one connection
//     of the node's own per master (masterPipes: a pipe of conn.go each),
//     so that the requests to one master run there in the order they were
//     made, and a connection given up is closed on its master by the
//     next one before it carries a request (the reconnect fence); the
//     master of a slot is the one the cluster's servers agree on
//     (slotmap.go), not one server's word, as go-redis' map is. go-redis'
//     cluster pipelines are not used: after a failed read they send again,
//     up to MaxRedirects times, commands the master had already run, and
//     their answers (an executed SET NX answering nil, an executed release
//     answering 0) are wrong;
//   - a set whose keys span slots is stepped once per slot and the answers
//     joined (redlock/internal/slots: all or nothing, no deadlock);
//   - releases are announced by SPUBLISH and heard by SSUBSCRIBE (sharded
//     pub/sub, Redis 7) on the master of the key's slot only, one go-redis
//     PubSub per slot watched.
//
// A ClusterClient with an OnConnect hook or a StreamingCredentialsProvider,
// which only go-redis can run, keeps go-redis' cluster pipelines
// (goClusterTrip), without the order and the fence above.

var _ adapter.ClusterNode = (*Node)(nil)

// Cluster reports whether the node's client is a *redis.ClusterClient
// (adapter.ClusterNode).
func (n *Node) Cluster() bool { return n.cluster != nil }

// useCluster makes n a cluster node over cc: its announcing scripts
// publish on the key's shard, and its requests are batched, each batch
// sent to the masters over their own connections (clusterTrip).
func (n *Node) useCluster(cc *redis.ClusterClient) {
	n.cluster = cc
	n.publish = redis.NewScript(scripts.Sharded(scripts.ReleasePublish))
	n.multi.release = redis.NewScript(scripts.Sharded(scripts.ReleaseAll))
	n.scripts = batch.NewScripts().Sharded()
	n.queue.Init("goredis", MaxBatch, n.send)
	if o := cc.Options(); o.OnConnect == nil && o.StreamingCredentialsProvider == nil {
		n.masters = &masterPipes{cluster: cc, pipes: map[string]*pipe{}, known: &n.known, owners: &slotMap{cluster: cc}}
		n.queue.Allow(opEval, opEvalSha) // script.go
	}
}

// masterPipes are a cluster node's own connections, one pipe (conn.go)
// per master address, dialled with the settings go-redis' client of that
// master has (its Options: Dialer, TLS, credentials).
type masterPipes struct {
	cluster *redis.ClusterClient
	known   *facts.Known // each master's facts (facts.go)
	owners  *slotMap     // the map the servers agree on (slotmap.go)
	// read is when the node last asked go-redis to read the slot map
	// again, and read the servers' (UnixNano); 0 before the node's first
	// batch, which reads them: the node's connections that read the
	// servers' map are then made before a failure needs them, and so
	// do not delay following a failover.
	read atomic.Int64

	mu     sync.Mutex
	pipes  map[string]*pipe
	asks   map[*redis.Client]struct{} // clients of one request (asker)
	closed bool
}

// of returns the pipe to the master of key's slot as the servers agree
// (slotMap: the claim with the highest config epoch), reading their map
// first when the node never read it. The node routes by no other map:
// go-redis' map, and the one the first server that answered the node's
// Replicas wrote, are one server's word, and a master failed over that
// came back with its old slot map (cut from its cluster, in Redis'
// writable delay before it finds itself in a minority) claims there the
// slots its replica took and grants their locks (two holders). A slot
// the map gives no master fails its request (errNoOwner), and the map is
// read again (clusterTrip).
func (m *masterPipes) of(ctx context.Context, key string) (*pipe, error) {
	addr, err := m.owners.ownerOf(ctx, key)
	if err != nil {
		return nil, err
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: slot %d", errNoOwner, slots.Of(key))
	}
	return m.at(addr)
}

// errNoOwner fails a cluster node's request whose slot the servers' map
// gives no master.
var errNoOwner = errors.New("goredis: no master of the cluster is known to serve the slot")

// pipeOf returns the pipe to the master of go-redis' client options o.
func (m *masterPipes) pipeOf(o *redis.Options) (*pipe, error) {
	addr := m.canon(o.Addr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	p := m.pipes[addr]
	if p == nil {
		p = &pipe{opts: o, known: m.known}
		m.pipes[addr] = p
	}
	return p, nil
}

// canon returns the address by which the node knows the server at addr:
// addr, or, when it names no host (a lone master's own line of CLUSTER
// SLOTS and CLUSTER NODES, which go-redis keeps as it is), the port on
// the host of the cluster client's first seed, as the servers' slot map
// names it (slots.Owners). One master then has one pipe, whichever map
// named it: with two, the requests to one master would not run in the
// order they were made (a release held back on one pipe ran after the
// next acquisition on the other).
func (m *masterPipes) canon(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	if seeds := m.cluster.Options().Addrs; len(seeds) > 0 {
		if h, _, err := net.SplitHostPort(seeds[0]); err == nil && h != "" {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}

// connect makes the connection to every master that go-redis' slot map
// names (reading the map first when it has none), at once, or reads again
// the facts of those connected (refresh), bounded by ctx (Connect,
// facts.go).
func (m *masterPipes) connect(ctx context.Context) error {
	return m.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		p, err := m.pipeOf(c.Options())
		if err == nil {
			err = p.refresh(ctx) // conn.go
		}
		return err
	})
}

// at returns the pipe to the master at addr (named by the servers, or by
// a redirection), made on first use with the settings go-redis gives its
// client of a server of the cluster (masterOptions).
func (m *masterPipes) at(addr string) (*pipe, error) {
	addr = m.canon(addr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	p := m.pipes[addr]
	if p == nil {
		p = &pipe{opts: masterOptions(m.cluster.Options(), addr), known: m.known}
		m.pipes[addr] = p
	}
	return p, nil
}

// masterOptions are the settings of a connection to the server at addr
// of a cluster of options o, as go-redis' cluster client gives its client
// of that server those a pipe uses (conn.go: the dialer, TLS, the
// credentials and the client name), made here so that a pipe needs no
// slot map of go-redis' (masterPipes.of).
func masterOptions(o *redis.ClusterOptions, addr string) *redis.Options {
	r := &redis.Options{
		Network:                    "tcp",
		Addr:                       addr,
		ClientName:                 o.ClientName,
		Dialer:                     o.Dialer,
		Username:                   o.Username,
		Password:                   o.Password,
		CredentialsProvider:        o.CredentialsProvider,
		CredentialsProviderContext: o.CredentialsProviderContext,
		DialTimeout:                o.DialTimeout,
		TLSConfig:                  o.TLSConfig,
		Protocol:                   2,
		MaxRetries:                 -1,
		DisableIdentity:            true,
		ContextTimeoutEnabled:      true,
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = 5 * time.Second // go-redis' default
	}
	if r.Dialer == nil {
		r.Dialer = redis.NewDialer(r)
	}
	return r
}

// reload asks go-redis to read the slot map again, in the background
// (go-redis reads it at most every 200 ms), now or, unless now, when the
// last ask is slotMapRefresh old: a ClusterClient given to NewNode reads
// it every minute on its own, too seldom to learn in time the replicas
// that a failover may promote.
func (m *masterPipes) reload(now bool) {
	t := time.Now().UnixNano()
	last := m.read.Load()
	if !now && t-last < int64(slotMapRefresh) || !m.read.CompareAndSwap(last, t) {
		return
	}
	m.cluster.ReloadState(context.Background())
	m.owners.readAsync()
}

// abortSetup ends the making of every master's connection (pipe's).
func (m *masterPipes) abortSetup() {
	m.mu.Lock()
	all := make([]*pipe, 0, len(m.pipes))
	for _, p := range m.pipes {
		all = append(all, p)
	}
	m.mu.Unlock()
	for _, p := range all {
		p.abortSetup()
	}
}

// close closes every pipe, and starts no other read of the servers'
// slot map.
func (m *masterPipes) close() {
	m.mu.Lock()
	m.closed = true
	all, asks := m.pipes, m.asks
	m.pipes, m.asks = nil, nil
	m.mu.Unlock()
	for _, p := range all {
		p.close()
	}
	for c := range asks {
		_ = c.Close()
	}
	m.owners.stop()
}

// asker returns a go-redis client of the server at addr for one request,
// and the function that closes it after; close closes those still
// asking, so that a request to a frozen server (which ends only at its
// deadline: go-redis' reads do not watch their context) leaves no
// goroutine behind the node.
func (m *masterPipes) asker(addr string) (*redis.Client, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, errClosed
	}
	c := redis.NewClient(masterOptions(m.cluster.Options(), addr))
	if m.asks == nil {
		m.asks = map[*redis.Client]struct{}{}
	}
	m.asks[c] = struct{}{}
	return c, func() {
		m.mu.Lock()
		delete(m.asks, c)
		m.mu.Unlock()
		_ = c.Close()
	}, nil
}

// wait waits for a read of the servers' slot map under way (slotMap),
// whose requests close (slotMap.stop) ended.
func (m *masterPipes) wait() { m.owners.wg.Wait() }

// batched reports whether n's requests go through its queue: over the
// node's own connection (pipe) or, for a cluster, its masters'.
func (n *Node) batched() bool { return n.pipe != nil || n.cluster != nil }

// do queues req and waits for its answer, or for ctx's end; a cluster
// node's operation on a set that spans slots is split first.
func (n *Node) do(ctx context.Context, req adapter.Request) (bool, error) {
	if n.cluster != nil && req.Op.IsMulti() {
		return slots.Do(ctx, req, n.queue.StartAll)
	}
	return n.queue.Do(ctx, req)
}

// answered marks the reply of a request that clusterTrip already answered.
const answered = 0

// routeKey is the key whose slot says which master runs req.
func routeKey(req adapter.Request) string {
	if req.Key == "" && len(req.Keys) > 0 {
		return req.Keys[0]
	}
	return req.Key
}

// clusterTrip sends the requests of one batch of a cluster node, each to
// the master of its key's slot, over that master's own connection
// (masterPipes), the requests of each master in queue order as one
// pipeline, all masters at once, and returns their replies in order;
// eval(i) tells whether request i goes by EVAL (else EVALSHA when the node
// is known to have its script). A request that failed without its
// master's answer (no master known for its slot, a master down, its
// deadline) is answered here with its error, and its reply marked
// answered: the requests to the other masters still get theirs.
func (n *Node) clusterTrip(ctx context.Context, items []batch.Item, eval func(i int) bool) ([]reply, error) {
	if n.masters == nil {
		return n.goClusterTrip(ctx, items, eval)
	}
	type group struct {
		p   *pipe
		idx []int
	}
	res := make([]reply, len(items))
	var groups []*group
	byPipe := map[*pipe]*group{}
	stale := false // no master known for a slot
	for i, it := range items {
		p, err := n.masters.of(ctx, routeKey(it.Req))
		if err != nil {
			stale = true
			res[i] = reply{kind: answered}
			it.To.Receive(it.Tag, false, err)
			continue
		}
		g := byPipe[p]
		if g == nil {
			g = &group{p: p}
			byPipe[p] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	var wg sync.WaitGroup
	var moved atomic.Bool
	for _, g := range groups {
		wg.Go(func() {
			idx, err := reachedMaster(ctx, g.p, items, res, g.idx)
			var r []reply
			if err == nil && len(idx) > 0 {
				var buf []byte
				n.sender.building.Lock()
				for _, i := range idx {
					buf = n.itemCommand(buf, items[i], eval(i))
				}
				n.sender.building.Unlock()
				r, err = pipeTrip(ctx, g.p, buf, len(idx))
			}
			if err != nil {
				moved.Store(true) // the master may be gone
			}
			for j, i := range idx {
				if err != nil {
					res[i] = reply{kind: answered}
					items[i].To.Receive(items[i].Tag, false, err)
					continue
				}
				res[i] = r[j]
				if r[j].kind == '-' && movedOn(r[j].str) {
					moved.Store(true)
				}
			}
		})
	}
	wg.Wait()
	// A stale slot map and a slot on the move take two hops: MOVED to
	// the owner, then ASK to the importing master.
	for range maxRedirects {
		if !n.redirect(ctx, items, res, eval) {
			break
		}
	}
	// After a failover or a slot migration at once, else every
	// slotMapRefresh.
	n.masters.reload(stale || moved.Load())
	return res, nil
}

// reachedMaster waits until p, a master's pipe, has a live connection,
// unless it has one, and returns the items of idx (indexes into items)
// whose context is still live then (idx itself when all are); it answers
// the others with their context's error, marking their replies in res
// answered. A cluster batch is built for each master only then, after
// every wait of the batch (the slot map's reading too): a request whose
// context ended meanwhile is never written (adapter.Node; Node.reached is
// the same for a node of one server). An error is the wait's: idx is then
// returned whole, for the caller to answer.
func reachedMaster(ctx context.Context, p *pipe, items []batch.Item, res []reply, idx []int) ([]int, error) {
	if w, err := p.live(); w == nil && err == nil {
		if _, err := p.conn(ctx); err != nil {
			return idx, err
		}
	}
	if !slices.ContainsFunc(idx, func(i int) bool { return items[i].Ctx.Err() != nil }) {
		return idx, nil // the usual case: nothing to leave out
	}
	var live []int
	for _, i := range idx {
		if err := items[i].Ctx.Err(); err != nil {
			res[i] = reply{kind: answered}
			items[i].To.Receive(items[i].Tag, false, err)
			continue
		}
		live = append(live, i)
	}
	return live, nil
}

// itemCommand appends the item's command to buf: its script's for a script
// call, else its request's (command), by EVAL when eval is set.
func (n *Node) itemCommand(buf []byte, it batch.Item, eval bool) []byte {
	if sc, ok := it.To.(*scriptCall); ok && it.Req.Op >= opEval {
		return sc.command(buf) // script.go
	}
	return n.command(buf, it.Req, eval)
}

// maxRedirects bounds the redirections a request of a cluster node
// follows.
const maxRedirects = 3

// redirect sends once more, to the master named, each request of items
// whose master answered that it does not serve the request's slot and
// ran nothing: MOVED (the slot moved), or ASK (the slot is moving, and
// the key is not on that master: the request goes to the importing
// master after ASKING). The requests to one master go in their order in
// the batch, as one pipeline; their replies replace the redirections in
// res. A request whose second master failed is answered with its error,
// and its reply marked answered. It reports whether it sent any.
func (n *Node) redirect(ctx context.Context, items []batch.Item, res []reply, eval func(i int) bool) bool {
	type group struct {
		p   *pipe
		idx []int
		ask map[int]bool
	}
	var groups []*group
	byAddr := map[string]*group{}
	for i, r := range res {
		if r.kind != '-' {
			continue
		}
		verb, rest, _ := strings.Cut(r.str, " ")
		_, addr, _ := strings.Cut(rest, " ")
		if verb != "MOVED" && verb != "ASK" || addr == "" {
			continue
		}
		g := byAddr[addr]
		if g == nil {
			p, err := n.masters.at(addr)
			if err != nil {
				continue // answered with the redirection
			}
			g = &group{p: p}
			byAddr[addr] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		if verb == "ASK" {
			if g.ask == nil {
				g.ask = map[int]bool{}
			}
			g.ask[i] = true
		}
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() {
			idx, err := reachedMaster(ctx, g.p, items, res, g.idx)
			var r []reply
			if err == nil && len(idx) > 0 {
				var buf []byte
				size := 0
				n.sender.building.Lock()
				for _, i := range idx {
					if g.ask[i] {
						buf = appendCommand(buf, "ASKING")
						size++
					}
					buf = n.itemCommand(buf, items[i], eval(i))
					size++
				}
				n.sender.building.Unlock()
				r, err = pipeTrip(ctx, g.p, buf, size)
			}
			k := 0
			for _, i := range idx {
				if g.ask[i] {
					k++ // ASKING's OK
				}
				if err != nil {
					res[i] = reply{kind: answered}
					items[i].To.Receive(items[i].Tag, false, err)
					continue
				}
				res[i] = r[k]
				k++
			}
		})
	}
	wg.Wait()
	return len(groups) > 0
}

// movedOn reports whether a master's error reply says that the slot map
// the request was routed by is out of date: the slot moved (MOVED, ASK),
// or the master does not serve it now (CLUSTERDOWN, TRYAGAIN, a master
// turned replica: READONLY).
func movedOn(msg string) bool {
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN", "TRYAGAIN", "READONLY"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// goClusterTrip is clusterTrip through go-redis' cluster pipelines, for a
// client whose connections only go-redis can make (useCluster). When ctx
// ended first, the batch fails with ctx's error.
func (n *Node) goClusterTrip(ctx context.Context, items []batch.Item, eval func(i int) bool) ([]reply, error) {
	cmds := make([]*redis.Cmd, len(items))
	p := n.cluster.Pipeline()
	for i, it := range items {
		cmds[i] = p.Do(ctx, n.clusterArgs(it.Req, eval(i))...)
	}
	_, _ = p.Exec(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := make([]reply, len(items))
	for i, c := range cmds {
		v, err := c.Result()
		var rerr redis.Error
		switch {
		case errors.Is(err, redis.Nil):
			res[i] = reply{kind: '$', null: true}
		case errors.As(err, &rerr):
			res[i] = reply{kind: '-', str: rerr.Error()}
		case err != nil:
			res[i] = reply{kind: answered}
			items[i].To.Receive(items[i].Tag, false, err)
		default:
			switch v := v.(type) {
			case int64:
				res[i] = reply{kind: ':', num: v}
			case string:
				res[i] = reply{kind: '+', str: v}
			default:
				res[i] = reply{kind: '*'}
			}
		}
	}
	return res, nil
}

// clusterArgs is the command of req, as command writes it for the node's
// own connection.
func (n *Node) clusterArgs(req adapter.Request, eval bool) []any {
	ms := strconv.FormatInt(req.TTL.Milliseconds(), 10)
	if req.Op == adapter.OpAcquire {
		return []any{"set", req.Key, req.Value, "nx", "px", ms}
	}
	s := n.scriptOf(req.Op)
	verb, body := "evalsha", s.SHA
	if eval || !s.Cached.Load() {
		verb, body = "eval", s.Src
	}
	keys := []string{req.Key}
	var args []string
	switch req.Op {
	case adapter.OpExtend:
		args = []string{req.Value, ms}
	case adapter.OpTransfer:
		args = []string{req.From, req.Value, ms}
	case adapter.OpReleaseAnnounce:
		args = []string{req.Value, ChannelPrefix}
	case adapter.OpAcquireAll, adapter.OpExtendAll:
		keys, args = req.Keys, []string{req.Value, ms}
	case adapter.OpReleaseAll:
		keys, args = req.Keys, []string{req.Value, ""}
	case adapter.OpReleaseAllAnnounce:
		keys, args = req.Keys, []string{req.Value, ChannelPrefix}
	default:
		args = []string{req.Value}
	}
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, verb, body, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	for _, a := range args {
		out = append(out, a)
	}
	return out
}

// split runs a set operation of a cluster node whose keys span slots once
// per slot (step) and joins the answers; an acquisition refused on some
// slot is released on the others. ok is false when the keys are in one
// slot: the caller then runs its one script.
func (n *Node) split(ctx context.Context, keys, fenceKeys []string, value string, acquire bool,
	step func(keys, fenceKeys []string) (bool, uint64, error)) (done, ok bool, fence uint64, err error) {
	if n.cluster == nil {
		return false, false, 0, nil
	}
	groups := slots.Split(keys)
	if len(groups) < 2 {
		return false, false, 0, nil
	}
	var undo func([]string)
	if acquire {
		undo = func(keys []string) {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slots.UndoTimeout)
			defer cancel()
			_, _ = n.multi.release.Run(uctx, n.scripter(), keys, value, "").Result()
		}
	}
	ok, fence, err = slots.RunSplit(groups, keys, fenceKeys, step, undo)
	return true, ok, fence, err
}

// noFence adapts a set step without a fence to split.
func noFence(f func(keys []string) (bool, error)) func(keys, _ []string) (bool, uint64, error) {
	return func(keys, _ []string) (bool, uint64, error) {
		ok, err := f(keys)
		return ok, 0, err
	}
}

// slotMapRefresh is how often a cluster client of NewClusterClient reads
// the slot map again while it is used.
const slotMapRefresh = 2 * time.Second

// NewClusterClient returns a go-redis cluster client for a parsed node URL
// that is a Redis Cluster (cluster=true), seeded with its addresses,
// configured for Redlock as NewClient is: no command retries (nor
// redirections followed again after a failure), context deadlines
// honoured; and its slot map read again every 2 s while it is used, so
// that it learns the replicas that a failover may promote.
func NewClusterClient(u redlock.NodeURL) (*redis.ClusterClient, error) {
	if !u.Cluster {
		return nil, fmt.Errorf("goredis: node %s is not a cluster (no cluster=true): %w", u, redlock.ErrInvalid)
	}
	o := &redis.ClusterOptions{
		Addrs:                 append([]string(nil), u.Addrs...),
		Username:              u.Username,
		Password:              u.Password,
		MaxRetries:            -1,
		MaxRedirects:          3,
		ContextTimeoutEnabled: true,
		// The slot map is read again every few seconds when in use, so
		// that the node learns the replicas that synced since (CLUSTER
		// SLOTS lists a replica once it is online): after its master
		// died, a replica may be the only process left to ask. The node
		// also reads it again after a failed request (clusterTrip).
		ClusterStateReloadInterval: slotMapRefresh,
		DialTimeout:                time.Second,
		DialerRetries:              1, // a master that is down fails its requests at once
		DisableIdentity:            true,
		Protocol:                   2,
	}
	if u.TLS {
		o.TLSConfig = &tls.Config{ServerName: u.Host, MinVersion: tls.VersionTLS12}
	}
	return redis.NewClusterClient(o), nil
}

// shardWatch is a cluster node's release subscription: one go-redis
// PubSub per hash slot with watched keys, each SSUBSCRIBEd on the master
// of its slot (go-redis finds it, and finds it again after a failover) to
// the release channels of its keys, with the health check and redial of
// a plain node's watch.
//
// A master that gives a slot away (a migration, a failover that made it a
// replica) ends its clients' subscriptions to the slot's channels with a
// sunsubscribe no Unwatch asked for; the slot's PubSub, whose connection
// stays with that master, is then replaced (resubscribe): a new PubSub,
// made once go-redis read the slot map again, subscribes to the slot's
// watched keys on the slot's new master.
type shardWatch struct {
	cluster *redis.ClusterClient
	notify  func(key, value string)

	mu     sync.Mutex
	closed bool
	slots  map[int]*slotWatch
	stop   chan struct{} // closed by Close: the resubscriptions end
	wg     sync.WaitGroup
}

// newShardWatch returns the release subscription of a cluster node.
func newShardWatch(cc *redis.ClusterClient, notify func(key, value string)) *shardWatch {
	return &shardWatch{cluster: cc, notify: notify, slots: map[int]*slotWatch{}, stop: make(chan struct{})}
}

// slotWatch is the PubSub of one slot and the keys it watches (with how
// many Watch calls each).
type slotWatch struct {
	w    *watch
	keys map[string]int
}

// newSlot returns a slot's watch, with the keys of keys; s.mu is held.
func (s *shardWatch) newSlot(slot int, keys map[string]int) *slotWatch {
	sw := &slotWatch{keys: maps.Clone(keys)}
	if sw.keys == nil {
		sw.keys = map[string]int{}
	}
	sw.w = &watch{cluster: s.cluster, notify: s.notify, dropped: func(string) { s.dropped(slot, sw) }}
	return sw
}

// Watch subscribes to the releases of key on the master of its slot, and
// returns once the master confirmed it.
func (s *shardWatch) Watch(ctx context.Context, key string) error {
	slot := slots.Of(ChannelPrefix + key)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return redlock.ErrClosed
	}
	sw := s.slots[slot]
	if sw == nil {
		sw = s.newSlot(slot, nil)
		s.slots[slot] = sw
	}
	sw.keys[key]++
	s.mu.Unlock()
	err := sw.w.Watch(ctx, key)
	if err != nil {
		s.release(slot, sw, key)
	}
	return err
}

// release drops one Watch of key from sw, closing its PubSub with the
// last.
func (s *shardWatch) release(slot int, sw *slotWatch, key string) {
	s.mu.Lock()
	if sw.keys[key]--; sw.keys[key] <= 0 {
		delete(sw.keys, key)
	}
	last := len(sw.keys) == 0 && s.slots[slot] == sw
	if last {
		delete(s.slots, slot)
	}
	s.mu.Unlock()
	if last {
		_ = sw.w.Close()
	}
}

// Unwatch unsubscribes from the releases of key.
func (s *shardWatch) Unwatch(ctx context.Context, key string) error {
	slot := slots.Of(ChannelPrefix + key)
	s.mu.Lock()
	sw := s.slots[slot]
	s.mu.Unlock()
	if sw == nil {
		return nil
	}
	err := sw.w.Unwatch(ctx, key)
	s.release(slot, sw, key)
	return err
}

// dropped is called by sw's receiving goroutine when the master ended a
// subscription of sw that no Unwatch asked to end: sw is replaced, once
// (resubscribe).
func (s *shardWatch) dropped(slot int, sw *slotWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.slots[slot] != sw {
		return // replaced already, or being closed
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.resubscribe(slot, sw)
	}()
}

// resubscribe replaces old, the watch of slot whose master ended its
// subscriptions, by a new PubSub subscribed to old's keys on the slot's
// master as go-redis' slot map has it once read again; until that
// succeeds it tries again, after a pause that doubles up to
// watchBackoffMax, each time with a slot map read again and a new PubSub
// (a PubSub's connection stays with the master it was dialled to). A
// Watch of the slot meanwhile subscribes on the newest PubSub itself.
func (s *shardWatch) resubscribe(slot int, old *slotWatch) {
	var pause time.Duration
	for {
		// ForEachMaster reads the slot map again before it returns.
		rctx, cancel := context.WithTimeout(context.Background(), watchPingTimeout)
		_ = s.cluster.ForEachMaster(rctx, func(context.Context, *redis.Client) error { return nil })
		cancel()
		s.mu.Lock()
		if s.closed || s.slots[slot] != old {
			s.mu.Unlock()
			_ = old.w.Close()
			return
		}
		sw := s.newSlot(slot, old.keys)
		s.slots[slot] = sw
		keys := slices.Collect(maps.Keys(sw.keys))
		s.mu.Unlock()
		_ = old.w.Close()
		ok := true
		for _, key := range keys {
			wctx, cancel := context.WithTimeout(context.Background(), watchPingTimeout)
			err := sw.w.Watch(wctx, key)
			cancel()
			if err != nil {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		old = sw
		pause = min(max(2*pause, watchBackoffMin), watchBackoffMax)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
		}
	}
}

// Close ends every slot's subscription, and the resubscriptions under way.
func (s *shardWatch) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	all := s.slots
	s.slots = nil
	s.mu.Unlock()
	for _, sw := range all {
		_ = sw.w.Close()
	}
	s.wg.Wait()
	return nil
}

// scanCluster is Scan over a node that is a Redis Cluster: every master in
// turn (scripts.ClusterMasters), its place in the cursor.
func (n *Node) scanCluster(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	i, cur, err := scripts.ParseClusterCursor(cursor)
	if err != nil {
		return nil, "", fmt.Errorf("goredis: %w", err)
	}
	_, txt, err := n.anyClusterNodes(ctx) // replica.go
	if err != nil {
		return nil, "", err
	}
	masters := scripts.ClusterMasters(txt)
	if i >= len(masters) {
		return nil, "", nil
	}
	var (
		mu sync.Mutex
		mc *redis.Client
	)
	_ = n.cluster.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		if c.Options().Addr == masters[i] {
			mu.Lock()
			mc = c
			mu.Unlock()
		}
		return nil
	})
	if mc == nil {
		return nil, "", fmt.Errorf("goredis: cluster master %s is not known to the client yet", masters[i])
	}
	keys, next, err := mc.Scan(ctx, cur, scripts.MatchPrefix(prefix), int64(max(count, 1))).Result()
	if err != nil {
		return nil, "", err
	}
	return keys, scripts.NextClusterCursor(i, next, len(masters)), nil
}
