package rueidis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/internal/facts"
	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

// A node that is a Redis Cluster (a rueidis cluster client: NewClient of a
// URL with cluster=true). The batches stay as they are: one DoMulti per
// batch and master, each in queue order. What changes:
//
//   - the client hands it hash-tagged keys (Cluster, adapter.ClusterNode), so
//     that every script on one resource runs on one master;
//   - a set whose keys span slots is stepped once per slot and the answers
//     joined (redlock/internal/slots: all or nothing, no deadlock);
//   - releases are announced by SPUBLISH and heard by SSUBSCRIBE (sharded
//     pub/sub, Redis 7), on the master of the key's slot only;
//   - every request goes to the master that the cluster's servers agree
//     serves its slot (owners, doCluster: the claim with the highest
//     config epoch), over rueidis' client of that master, never as
//     rueidis' own slot map routes it: rueidis reads that map from one
//     server, which may be a master cut from the cluster that still
//     claims the slots its replica took (and refuses them, or, back with
//     its old map in Redis' writable delay, grants them); the node
//     follows MOVED and ASK itself (redirect);
//   - a request that its master refused with CLUSTERDOWN goes again to the
//     master the servers' map names once read again (reroute);
//   - after a request failed without its master's answer (a timeout, a
//     lost connection), the map is read again before the next batch, for
//     10 s (owners.route): a hung master neither refuses nor closes its
//     connections, so nothing else says the map is out of date.

// split is slots.SplitCalls through the node's queue.
func (n *Node) split(calls []adapter.Call) []adapter.Call {
	return slots.SplitCalls(calls, n.queue.StartAll)
}

// doSplit runs req, an operation on a set of a cluster node, through the
// queue as split makes it, and waits for its answer or ctx's end.
func (n *Node) doSplit(ctx context.Context, req adapter.Request) (bool, error) {
	return slots.Do(ctx, req, n.queue.StartAll)
}

// fencedSplit runs a fenced step on a set (AcquireAllFenced, RaiseFences)
// once per slot of keys, at once, and joins the answers; an acquisition
// refused on some slot is released on the others.
func (n *Node) fencedSplit(ctx context.Context, keys, fenceKeys []string, value string, acquire bool,
	step func(keys, fenceKeys []string) (bool, uint64, error)) (bool, uint64, error) {
	var undo func([]string)
	if acquire {
		undo = func(keys []string) {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slots.UndoTimeout)
			defer cancel()
			_, _ = n.do(uctx, adapter.Request{Op: adapter.OpReleaseAll, Keys: keys, Value: value})
		}
	}
	return slots.RunSplit(slots.Split(keys), keys, fenceKeys, step, undo)
}

// shardWatch is a cluster node's release subscription: one SSUBSCRIBE per
// watched key, on the master of the key's slot, each received by a
// goroutine of its own (rueidis' Receive) that subscribes again after its
// connection is lost.
type shardWatch struct {
	conn   func(context.Context) rueidis.Client // Node.conn
	notify func(key, value string)

	mu     sync.Mutex
	closed bool
	subs   map[string]keySub
	wg     sync.WaitGroup
}

// keySub is one watched key's subscription: cancel ends it, done is closed
// once its goroutine has unsubscribed and returned.
type keySub struct {
	cancel context.CancelFunc
	done   chan struct{}
	live   bool // false once Unwatch ended it
}

// Watch subscribes to the releases of key on the master of its slot, and
// returns once the master confirmed the subscription.
func (w *shardWatch) Watch(ctx context.Context, key string) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return redlock.ErrClosed
	}
	old, ok := w.subs[key]
	if ok && old.live {
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	if ok {
		// An Unwatch of key is still leaving the channel: its SUNSUBSCRIBE
		// must not reach the master after this SSUBSCRIBE.
		select {
		case <-old.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return redlock.ErrClosed
	}
	if s, ok := w.subs[key]; ok && (s.live || s.done != old.done) {
		w.mu.Unlock()
		return nil // another Watch of key got in first
	}
	rctx, cancel := context.WithCancel(context.Background())
	s := keySub{cancel: cancel, done: make(chan struct{}), live: true}
	w.subs[key] = s
	confirmed := make(chan struct{})
	failed := make(chan error, 1)
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.wg.Done()
		defer close(s.done)
		w.receive(rctx, key, confirmed, failed)
		w.mu.Lock()
		if cur, ok := w.subs[key]; ok && cur.done == s.done {
			delete(w.subs, key)
		}
		w.mu.Unlock()
	}()
	select {
	case <-confirmed:
		return nil
	case err := <-failed:
		w.drop(key)
		return err
	case <-ctx.Done():
		w.drop(key)
		return ctx.Err()
	}
}

// receive holds key's subscription until rctx ends, subscribing again
// after a lost connection (with a pause that doubles up to redialMax). The
// first subscription's confirmation closes confirmed; its failure goes to
// failed.
func (w *shardWatch) receive(rctx context.Context, key string, confirmed chan struct{}, failed chan error) {
	ch := ChannelPrefix + key
	var once sync.Once
	hctx := rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "ssubscribe" {
			once.Do(func() { close(confirmed) })
		}
	})
	hctx = rueidis.WithOnReceiveReturnHook(hctx, func(err error, c rueidis.CommandClient) error {
		if rctx.Err() != nil { // Unwatch or Close: leave the channel on the master
			uctx, cancel := context.WithTimeout(context.Background(), redialTimeout)
			_ = c.Do(uctx, c.B().Sunsubscribe().Channel(ch).Build()).Error()
			cancel()
		}
		return err
	})
	first := true
	for delay := redialMin; ; delay = min(2*delay, redialMax) {
		c := w.conn(rctx)
		err := c.Receive(hctx, c.B().Ssubscribe().Channel(ch).Build(), func(m rueidis.PubSubMessage) {
			w.notify(key, m.Message)
		})
		if rctx.Err() != nil {
			return
		}
		if first {
			select {
			case <-confirmed:
			default:
				if err == nil { // an unsubscription ended it unconfirmed
					err = errors.New("ended before the master confirmed it")
				}
				failed <- fmt.Errorf("rueidis: SSUBSCRIBE %s: %w", ch, err)
				return
			}
			first = false
		}
		t := time.NewTimer(delay)
		select {
		case <-rctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// drop ends key's subscription; its goroutine removes it once it left the
// channel.
func (w *shardWatch) drop(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.subs[key]; ok && s.live {
		s.cancel()
		s.live = false
		w.subs[key] = s
	}
}

// Unwatch unsubscribes from the releases of key.
func (w *shardWatch) Unwatch(_ context.Context, key string) error {
	w.drop(key)
	return nil
}

// Close ends every subscription and waits for their goroutines.
func (w *shardWatch) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	for _, s := range w.subs {
		s.cancel()
	}
	w.mu.Unlock()
	w.wg.Wait()
	return nil
}

// slotMapRefresh is how often a cluster client of NewClusterClient reads
// the slot map again.
const slotMapRefresh = 2 * time.Second

// NewClusterClient returns a rueidis client for a parsed node URL that is
// a Redis Cluster (cluster=true): seeded with its addresses, the rest of
// the cluster discovered, configured for Redlock as NewClient is (no
// cache, no retries, one ordered connection per master, every command
// pipelined), and each new connection to a master closes there the
// connections given up to it before it carries a request (fence.go), so
// that no request left behind on one runs after the requests of the
// connection that replaced it; the slot map is read again every 2 s, so
// that the client learns the replicas a failover may promote (an option
// that sets ClusterOption.ShardsRefreshInterval chooses another period). rueidis builds a cluster client only once a seed answers:
// it fails when none does. Dial and DialNode do not call it at once: their
// cluster node builds its client in the background and fails its requests
// until the cluster answers, as a single node that is down does (lazy.go).
func NewClusterClient(u redlock.NodeURL, opts ...Option) (rueidis.Client, error) {
	return newClusterClient(u, nil, nil, opts)
}

// newClusterClient is NewClusterClient whose connections tell known what
// their masters told about themselves (nil: not kept).
func newClusterClient(u redlock.NodeURL, known *facts.Known, st *setups, opts []Option) (rueidis.Client, error) {
	if !u.Cluster {
		return nil, fmt.Errorf("rueidis: node %s is not a cluster (no cluster=true): %w", u, redlock.ErrInvalid)
	}
	o := clientOption(u)
	o.InitAddress = append([]string(nil), u.Addrs...)
	o.ForceSingleClient = false
	for _, opt := range opts {
		opt(&o)
	}
	o.BlockingPipeline = -1
	// The slot map is read again every few seconds, so that the client
	// learns the replicas that synced since (CLUSTER SLOTS lists a
	// replica once it is online): after its master died, a replica may
	// be the only process left to ask. rueidis also reads it again after
	// a failed or redirected request.
	if o.ClusterOption.ShardsRefreshInterval == 0 {
		o.ClusterOption.ShardsRefreshInterval = slotMapRefresh
	}
	// Every connection to a master fences the ones given up to it before
	// (fence.go), as NewClient's do.
	f := &clusterFence{user: u.Username, pass: u.Password, addrs: map[string]*connFence{}, known: known, setups: st}
	o.DialCtxFn = f.wrap(o.DialCtxFn)
	c, err := rueidis.NewClient(o)
	if err != nil {
		return nil, err
	}
	one := o
	one.ForceSingleClient = true
	one.ClusterOption = rueidis.ClusterOption{}
	return &clusterClient{Client: c, one: one, seeds: o.InitAddress, extra: map[string]rueidis.Client{}}, nil
}

// clusterClient is the rueidis cluster client of NewClusterClient, with
// clients of its own for the masters that rueidis' slot map lacks
// (reroute), made with the cluster client's options (the reconnect fence
// included).
type clusterClient struct {
	rueidis.Client
	one   rueidis.ClientOption // of a client of one server
	seeds []string             // the addresses it was seeded with

	mu     sync.Mutex
	extra  map[string]rueidis.Client
	closed bool
}

// node returns a client of the server at addr: rueidis' own when its slot
// map has it (and then the client of its own, if any, is closed), else
// one of c's own, made on first use.
func (c *clusterClient) node(addr string) (rueidis.Client, bool) {
	nc, ok := c.Nodes()[addr]
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		if own := c.extra[addr]; own != nil {
			delete(c.extra, addr)
			go own.Close()
		}
		return nc, true
	}
	if own := c.extra[addr]; own != nil || c.closed {
		return own, own != nil
	}
	o := c.one
	o.InitAddress = []string{addr}
	own, err := rueidis.NewClient(o)
	if err != nil {
		return nil, false
	}
	c.extra[addr] = own
	return own, true
}

// Close closes the cluster client and c's own clients.
func (c *clusterClient) Close() {
	c.mu.Lock()
	c.closed = true
	extra := c.extra
	c.extra = nil
	c.mu.Unlock()
	for _, nc := range extra {
		nc.Close()
	}
	c.Client.Close()
}

// oneSlot refuses keys that span hash slots: one script on a cluster node
// runs on one master. The redlock client's keys of one resource share a
// hash tag (redlock.WithHashTags); keys given directly must too.
func oneSlot(keys []string) error {
	for _, k := range keys[min(1, len(keys)):] {
		if slots.Of(k) != slots.Of(keys[0]) {
			return fmt.Errorf("rueidis: keys %q and %q are in different hash slots of the cluster: the keys of one step must share a hash tag ({...}), as redlock.WithHashTags makes them: %w", keys[0], k, redlock.ErrInvalid)
		}
	}
	return nil
}

// scanCluster is Scan over a node that is a Redis Cluster: every master in
// turn (scripts.ClusterMasters), its place in the cursor.
func (n *Node) scanCluster(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	i, cur, err := scripts.ParseClusterCursor(cursor)
	if err != nil {
		return nil, "", fmt.Errorf("rueidis: %w", err)
	}
	c := n.conn(ctx)
	txt, err := clusterNodes(ctx, c)
	if err != nil {
		return nil, "", err
	}
	masters := scripts.ClusterMasters(txt)
	if i >= len(masters) {
		return nil, "", nil
	}
	mc, ok := knownMaster(c.Nodes(), masters[i])
	if !ok {
		return nil, "", fmt.Errorf("rueidis: cluster master %s is not known to the client yet", masters[i])
	}
	e, err := mc.Do(ctx, mc.B().Scan().Cursor(cur).Match(scripts.MatchPrefix(prefix)).Count(int64(max(count, 1))).Build()).AsScanEntry()
	if err != nil {
		return nil, "", err
	}
	return e.Elements, scripts.NextClusterCursor(i, e.Cursor, len(masters)), nil
}

// knownMaster returns the client of nodes for the master at addr. A
// master that never met another names itself without its host in CLUSTER
// NODES (":port", a cluster of one master): the known node with that port
// is the one.
func knownMaster(nodes map[string]rueidis.Client, addr string) (rueidis.Client, bool) {
	if mc, ok := nodes[addr]; ok || !strings.HasPrefix(addr, ":") {
		return mc, ok
	}
	for a, mc := range nodes {
		if strings.HasSuffix(a, addr) {
			return mc, true
		}
	}
	return nil, false
}

// owners is a cluster node's slot map as its servers agree on it
// (slots.Merge: each slot's claim with the highest config epoch), by
// which every request of the node is routed (doCluster): read before the
// node's first request, again in the background every slotMapRefresh
// while the node is used and after a redirection, at once when a master
// refused requests with CLUSTERDOWN (reroute) or a request failed
// without its master's answer (following), and kept in between.
type owners struct {
	mu       sync.Mutex
	shards   []slots.Shard
	read     time.Time
	timedOut time.Time // when a request last failed without its master's answer
	// clients are the clients of the masters of shards (nodeOf), found
	// once per map read and after a request failed without its master's
	// answer; nil until then.
	clients map[string]rueidis.Client
	// failed is why the last read had no answer, nil once one had.
	failed error

	bg      bool               // a background read is under way
	bgCtx   context.Context    // ends the background reads; made on the first
	bgStop  context.CancelFunc // ends bgCtx (close)
	closed  bool
	readers sync.WaitGroup
}

// followFor is how long after a request of a cluster node failed without
// its master's answer (a timeout, a lost connection) the node reads the
// map again before its next batch, once per failure (following).
const followFor = 10 * time.Second

// answerGrace is how long owners waits for the other servers' answers
// once one answered: a hung server (SIGSTOP) would hold a read up to its
// ownersAsk, and with it every request that waits for the map.
const answerGrace = 200 * time.Millisecond

// ownersFresh is how long a slot map that owners read is used again
// before a refusal or a failure reads it again.
const ownersFresh = 250 * time.Millisecond

// ownersAsk bounds the request to each server when owners reads the map.
const ownersAsk = time.Second

// errNoOwner fails a cluster node's request whose slot the servers' map
// gives no master, or whose master the node has no client of.
var errNoOwner = errors.New("rueidis: no master of the cluster is known to serve the slot")

// get returns the slot map, read again from every server when the last
// read is ownersFresh old.
func (o *owners) get(ctx context.Context, c rueidis.Client) []slots.Shard {
	o.mu.Lock()
	defer o.mu.Unlock()
	if time.Since(o.read) < ownersFresh {
		return o.shards
	}
	o.readLocked(ctx, c)
	return o.shards
}

// readLocked reads the slot map (fetch) and merges it over the last one.
// Under o.mu.
func (o *owners) readLocked(ctx context.Context, c rueidis.Client) {
	o.merge(fetch(ctx, c, o.serversLocked()))
}

// serversLocked returns the masters and replicas of the last map read:
// servers a read asks besides rueidis' own, for rueidis learns a replica
// only once CLUSTER SHARDS calls it online, and asks for its map only the
// servers it knows. A cluster of one master whose client was made before
// its replica synced knows but that master; once the master is stopped,
// its replica, promoted, is found only through the map the node read
// while the master was alive. Under o.mu.
func (o *owners) serversLocked() []string {
	var out []string
	for _, sh := range o.shards {
		out = append(out, sh.Master)
		out = append(out, sh.Replicas...)
	}
	return out
}

// merge merges views over the map (slots.Merge), unless none answered
// (err says why). Under o.mu.
func (o *owners) merge(views map[string]string, err error) {
	if len(views) == 0 {
		o.failed = err
		return
	}
	o.shards, o.read, o.clients, o.failed = slots.Merge(o.shards, views), time.Now(), nil, nil
}

// fetch reads CLUSTER NODES of every server that c knows (its seeds,
// rueidis' nodes and known, the servers of the node's last map), then of every server their answers name that was not
// asked yet (slots.Servers), so that a stale seed (a master failed over
// that came back with its old slot map) does not decide alone. Each
// round asks its servers at once, each bounded by ownersAsk, until all
// answered or answerGrace after the first answer; the servers still
// asking are then cancelled (rueidis returns at once) and left out. err
// is the last server's error, for a read that had no answer.
func fetch(ctx context.Context, c rueidis.Client, known []string) (views map[string]string, err error) {
	node := nodeOf(c)
	nodes := c.Nodes()
	addrs := known
	if cc := clusterOf(c); cc != nil {
		addrs = append(append([]string(nil), cc.seeds...), known...)
	}
	for _, addr := range addrs {
		if _, ok := nodes[addr]; !ok && addr != "" {
			if nc, ok := node(addr); ok {
				nodes[addr] = nc
			}
		}
	}
	views = map[string]string{}
	err = askAll(ctx, nodes, views)
	more := map[string]rueidis.Client{}
	for _, addr := range slots.Servers(views) {
		if _, ok := nodes[addr]; !ok {
			if nc, ok := node(addr); ok {
				more[addr] = nc
			}
		}
	}
	if e := askAll(ctx, more, views); e != nil {
		err = e
	}
	if err == nil && len(views) == 0 {
		err = errors.New("rueidis: no server of the cluster is known")
	}
	return views, err
}

// askAll asks every server of nodes for its CLUSTER NODES, as fetch says,
// and puts the answers in views; it returns the last error of a server.
func askAll(ctx context.Context, nodes map[string]rueidis.Client, views map[string]string) error {
	if len(nodes) == 0 {
		return nil
	}
	type view struct {
		addr, txt string
		err       error
	}
	got := make(chan *view, len(nodes))
	actx, cancel := context.WithTimeout(ctx, ownersAsk)
	var wg sync.WaitGroup
	for addr, nc := range nodes {
		wg.Go(func() {
			txt, err := clusterNodes(actx, nc)
			got <- &view{addr, txt, err}
		})
	}
	var (
		grace <-chan time.Time
		last  error
	)
wait:
	for range nodes {
		select {
		case v := <-got:
			if v.err != nil {
				last = fmt.Errorf("rueidis: CLUSTER NODES on %s: %w", v.addr, v.err)
				continue
			}
			views[v.addr] = v.txt
			if grace == nil {
				t := time.NewTimer(answerGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			break wait
		case <-actx.Done():
			last = actx.Err()
			break wait
		}
	}
	cancel()
	wg.Wait()
	return last
}

// readAsyncLocked starts a read of the map in the background, unless one
// is under way or the node is closed. Under o.mu.
func (o *owners) readAsyncLocked(c rueidis.Client) {
	if o.bg || o.closed {
		return
	}
	if o.bgCtx == nil {
		o.bgCtx, o.bgStop = context.WithCancel(context.Background())
	}
	o.bg = true
	ctx, known := o.bgCtx, o.serversLocked()
	o.readers.Go(func() {
		views, err := fetch(ctx, c, known)
		o.mu.Lock()
		defer o.mu.Unlock()
		o.bg = false
		if ctx.Err() == nil {
			o.merge(views, err)
		}
	})
}

// readAsync is readAsyncLocked, taking o.mu.
func (o *owners) readAsync(c rueidis.Client) {
	o.mu.Lock()
	o.readAsyncLocked(c)
	o.mu.Unlock()
}

// stop ends the background reads and starts no other; wait waits for
// them.
func (o *owners) stop() {
	o.mu.Lock()
	o.closed = true
	if o.bgStop != nil {
		o.bgStop()
	}
	o.mu.Unlock()
}

// wait waits for the background reads that stop ended.
func (o *owners) wait() { o.readers.Wait() }

// timeout notes that a request failed without its master's answer.
func (o *owners) timeout() {
	o.mu.Lock()
	o.timedOut, o.clients = time.Now(), nil
	o.mu.Unlock()
}

// route returns the map to route a batch by, and the clients of its
// masters: read first when never read (or none answered yet), or when
// a request failed without its master's answer after the last read,
// less than followFor ago (and that read is ownersFresh old): a master
// that hangs (SIGSTOP) neither refuses nor closes its connections, and
// the requests of its slots must follow its replica's promotion on
// their timeouts; read again in the background when the last read is
// slotMapRefresh old. Reading the map costs one CLUSTER NODES per
// server, off the batch's path but for these two cases. failed is why
// the map is empty: its first reads had no answer.
func (o *owners) route(ctx context.Context, c rueidis.Client) (shards []slots.Shard, clients map[string]rueidis.Client, failed error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	switch {
	case o.read.IsZero(),
		o.read.Before(o.timedOut) && now.Sub(o.timedOut) <= followFor && now.Sub(o.read) >= ownersFresh:
		o.readLocked(ctx, c)
	case now.Sub(o.read) >= slotMapRefresh:
		o.readAsyncLocked(c)
	}
	if o.clients == nil {
		node := nodeOf(c)
		o.clients = map[string]rueidis.Client{}
		for _, sh := range o.shards {
			if _, ok := o.clients[sh.Master]; ok {
				continue
			}
			if nc, ok := node(sh.Master); ok {
				o.clients[sh.Master] = nc
			}
		}
	}
	if len(o.shards) == 0 {
		failed = o.failed
	}
	return o.shards, o.clients, failed
}

// clusterOf returns the node's clusterClient under c, nil when c is a
// caller's client.
func clusterOf(c rueidis.Client) *clusterClient {
	if s, ok := c.(settingUp); ok {
		c = s.Client
	}
	cc, _ := c.(*clusterClient)
	return cc
}

// nodeOf returns how to get a client of the server at an address under
// c: the clusterClient's node (rueidis' client of that server, else one
// of its own), or, over a caller's client, rueidis' only (knownMaster).
func nodeOf(c rueidis.Client) func(addr string) (rueidis.Client, bool) {
	if cc := clusterOf(c); cc != nil {
		return cc.node
	}
	return func(addr string) (rueidis.Client, bool) { return knownMaster(c.Nodes(), addr) }
}

// doCluster is DoMulti of cmds, the commands of live in order, over a
// cluster node's client c, each command sent to the master that the
// cluster's servers agree serves its item's slot (owners.route: the
// claim with the highest config epoch), never as rueidis' own slot map
// routes it: rueidis reads that map from one server, and a master failed
// over that came back with its old map (cut from its cluster, in Redis'
// writable delay before it finds itself in a minority) claims there the
// slots its replica took, and grants their locks (two holders). A
// redirection from that master is followed (redirect). A command that
// failed without its master's answer starts the following.
func (n *Node) doCluster(ctx context.Context, c rueidis.Client, live []batch.Item, cmds []rueidis.Completed) []rueidis.RedisResult {
	shards, clients, failed := n.owners.route(ctx, c)
	if failed != nil {
		// No map yet: every command fails as the read did (a timeout, a
		// refused connection), and the next batch reads again.
		res := make([]rueidis.RedisResult, len(cmds))
		for i := range res {
			res[i] = rueidis.NewErrorResult(failed)
		}
		return res
	}
	res := n.doByOwner(ctx, shards, clients, live, cmds)
	for range maxRedirects {
		if !n.redirect(ctx, c, live, res) {
			break
		}
	}
	for i := range res {
		if res[i].NonRedisError() != nil {
			n.owners.timeout()
			break
		}
	}
	return res
}

// doByOwner sends each command of cmds to the master that shards give
// its item's slot, over clients' client of that master, the commands of
// each master as one DoMulti in order, all masters at once; a command
// whose slot has no master in shards, or whose master has no client,
// fails with errNoOwner. It returns the results in order.
func (n *Node) doByOwner(ctx context.Context, shards []slots.Shard, clients map[string]rueidis.Client, live []batch.Item, cmds []rueidis.Completed) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, len(cmds))
	// One master for the whole batch (a lone request, or a cluster of
	// one master): no grouping.
	nc := clients[slots.Owner(shards, slots.Of(itemKey(live[0])))]
	one := nc != nil
	for i := 1; one && i < len(live); i++ {
		one = clients[slots.Owner(shards, slots.Of(itemKey(live[i])))] == nc
	}
	if one {
		idx, send := n.reachedMaster(ctx, nc, live, nil, res)
		switch {
		case !send:
		case idx == nil && len(cmds) == 1:
			res[0] = nc.Do(ctx, cmds[0])
		case idx == nil:
			copy(res, nc.DoMulti(ctx, cmds...))
		default:
			n.doSome(ctx, nc, cmds, idx, res)
		}
		return res
	}
	type group struct {
		c   rueidis.Client
		idx []int
	}
	var groups []*group
	byAddr := map[string]*group{}
	for i := range live {
		addr := slots.Owner(shards, slots.Of(itemKey(live[i])))
		nc := clients[addr]
		if nc == nil {
			res[i] = rueidis.NewErrorResult(fmt.Errorf("%w: slot %d", errNoOwner, slots.Of(itemKey(live[i]))))
			continue
		}
		g := byAddr[addr]
		if g == nil {
			g = &group{c: nc}
			byAddr[addr] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() {
			if idx, send := n.reachedMaster(ctx, g.c, live, g.idx, res); send {
				n.doSome(ctx, g.c, cmds, idx, res)
			}
		})
	}
	wg.Wait()
	return res
}

// reachedMaster waits until the node has an established connection,
// unless it has one, by a PING over nc, a master's client, and returns
// the indexes of idx (nil: every item of live) whose item's context is
// still live then, or idx itself when all are, and whether there is any
// to send. It answers the others in res: with their context's error, or
// with the wait's error when the wait failed. A cluster node's batch is
// sent to each master only then, after every wait of the batch (the slot
// map's reading too): a request whose context ended meanwhile is never
// written (adapter.Node; reached, batch.go, is the same for a node of
// one server).
func (n *Node) reachedMaster(ctx context.Context, nc rueidis.Client, live []batch.Item, idx []int, res []rueidis.RedisResult) ([]int, bool) {
	each := func(yield func(int) bool) {
		if idx == nil {
			for i := range live {
				if !yield(i) {
					return
				}
			}
			return
		}
		for _, i := range idx {
			if !yield(i) {
				return
			}
		}
	}
	if !n.setups.connected() {
		if err := n.awaitConnection(ctx, settingUp{Client: nc, n: n}); err != nil {
			for i := range each {
				res[i] = rueidis.NewErrorResult(err)
			}
			return nil, false
		}
	}
	ended := false
	for i := range each {
		ended = ended || live[i].Ctx.Err() != nil
	}
	if !ended {
		return idx, true
	}
	var kept []int
	for i := range each {
		if err := live[i].Ctx.Err(); err != nil {
			res[i] = rueidis.NewErrorResult(err)
			continue
		}
		kept = append(kept, i)
	}
	return kept, len(kept) > 0
}

// doSome sends the commands of cmds at idx over nc, as one DoMulti in
// order, and puts their results in res at idx.
func (n *Node) doSome(ctx context.Context, nc rueidis.Client, cmds []rueidis.Completed, idx []int, res []rueidis.RedisResult) {
	part := make([]rueidis.Completed, len(idx))
	for j, i := range idx {
		part[j] = cmds[i]
	}
	for j, r := range nc.DoMulti(ctx, part...) {
		res[idx[j]] = r
	}
}

// maxRedirects bounds the redirections a request of a cluster node
// follows.
const maxRedirects = 3

// redirect sends once more each request of live whose master answered
// that it does not serve the request's slot and ran nothing: MOVED (the
// slot moved), or ASK (the slot is moving, and the key is not on that
// master: the request goes to the importing master after ASKING), to
// the master the answer names, and puts its answer in res; and it reads
// the map again in the background. A redirection comes from the master
// the servers' map names, which gave the slot away: only a claim with a
// higher config epoch than its own, or a migration under way, makes it
// redirect. It reports whether it sent any.
func (n *Node) redirect(ctx context.Context, c rueidis.Client, live []batch.Item, res []rueidis.RedisResult) bool {
	type group struct {
		idx []int
		ask map[int]bool // by index into live
	}
	var groups map[string]*group
	for i := range res {
		rerr, ok := rueidis.IsRedisErr(res[i].Error())
		if !ok {
			continue
		}
		addr, moved := rerr.IsMoved()
		askAddr, ask := rerr.IsAsk()
		if !moved && !ask {
			continue
		}
		if ask {
			addr = askAddr
		}
		if groups == nil {
			groups = map[string]*group{}
		}
		g := groups[addr]
		if g == nil {
			g = &group{}
			groups[addr] = g
		}
		g.idx = append(g.idx, i)
		if ask {
			if g.ask == nil {
				g.ask = map[int]bool{}
			}
			g.ask[i] = true
		}
	}
	if len(groups) == 0 {
		return false
	}
	n.owners.readAsync(c)
	node := nodeOf(c)
	var wg sync.WaitGroup
	var building sync.Mutex // the commands' formatters serve one batch at a time
	for addr, g := range groups {
		nc, ok := node(addr)
		if !ok {
			continue // answered with the redirection
		}
		wg.Go(func() {
			idx, send := n.reachedMaster(ctx, nc, live, g.idx, res)
			if !send {
				return
			}
			// Built now: rueidis recycles a command once it answered it.
			var cmds []rueidis.Completed
			building.Lock()
			for _, i := range idx {
				if g.ask[i] {
					cmds = append(cmds, c.B().Asking().Build())
				}
				cmds = append(cmds, n.itemCommand(c, live[i]))
			}
			building.Unlock()
			r := nc.DoMulti(ctx, cmds...)
			k := 0
			for _, i := range idx {
				if g.ask[i] {
					k++ // ASKING's OK
				}
				res[i] = r[k]
				k++
			}
		})
	}
	wg.Wait()
	return true
}

// itemCommand is the command of it sent again after a redirection, by
// EVAL: its script's for a script call, else its request's.
func (n *Node) itemCommand(c rueidis.Client, it batch.Item) rueidis.Completed {
	if sc := callOf(it); sc != nil {
		return sc.command(c, true)
	}
	return n.command(it.Req, true)
}

// itemKey is the key whose slot says which master runs it.
func itemKey(it batch.Item) string {
	if sc := callOf(it); sc != nil && len(sc.keys) > 0 {
		return sc.keys[0]
	}
	if it.Req.Key == "" && len(it.Req.Keys) > 0 {
		return it.Req.Keys[0]
	}
	return it.Req.Key
}

// reroute sends again each request of live whose master refused it with
// CLUSTERDOWN (it ran nothing), to the master that serves its slot as the
// cluster's servers agree (owners), over rueidis' connection to that
// master, and puts its answer in res. rueidis reads its slot map from one
// server, picked at random: a master cut from its cluster while clients
// still reach it claims its slots after its replica took them over, and
// refuses them, in a minority; a map read there sent the slots' requests
// to it until the next read (24 and 46 of the acquisitions made every
// 50 ms in the 12 s after a failover failed so, in two runs). A request
// whose slot the agreed map gives to no master keeps its CLUSTERDOWN.
func (n *Node) reroute(ctx context.Context, c rueidis.Client, live []batch.Item, res []rueidis.RedisResult) {
	var down []int
	for i := range res {
		if rerr, ok := rueidis.IsRedisErr(res[i].Error()); ok && rerr.IsClusterDown() {
			down = append(down, i)
		}
	}
	if len(down) == 0 {
		return
	}
	shards := n.owners.get(ctx, c)
	node := nodeOf(c)
	nodes := map[string]rueidis.Client{}
	groups := map[string][]int{}
	for _, i := range down {
		addr := slots.Owner(shards, slots.Of(itemKey(live[i])))
		if _, ok := nodes[addr]; !ok && addr != "" {
			if nc, ok := node(addr); ok {
				nodes[addr] = nc
			}
		}
		if _, ok := nodes[addr]; ok {
			groups[addr] = append(groups[addr], i)
		}
	}
	var wg sync.WaitGroup
	var building sync.Mutex // the commands' formatters serve one batch at a time
	for addr, idx := range groups {
		wg.Go(func() {
			idx, send := n.reachedMaster(ctx, nodes[addr], live, idx, res)
			if !send {
				return
			}
			// Built now: rueidis recycles a command once it answered it.
			cmds := make([]rueidis.Completed, len(idx))
			building.Lock()
			for j, i := range idx {
				cmds[j] = n.itemCommand(c, live[i])
			}
			building.Unlock()
			r := nodes[addr].DoMulti(ctx, cmds...)
			for j, i := range idx {
				res[i] = r[j]
			}
		})
	}
	wg.Wait()
}
