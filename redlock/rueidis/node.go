package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/internal/facts"
	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

// ChannelPrefix starts the name of every release channel: the releases of
// lock key k are announced on ChannelPrefix+k (hand-off, R14).
const ChannelPrefix = scripts.ChannelPrefix

// Node is a redlock.Node over one rueidis client, which must talk to one
// independent master (R2). It gathers the requests of concurrent callers to
// the node into batches, one DoMulti each (R15, batch.go), which is what
// makes this adapter fast under concurrency. Node also implements
// adapter.AsyncNode, adapter.BatchNode, adapter.HandoffNode,
// adapter.TransferNode, adapter.FencingNode, adapter.MultiNode (multi.go)
// adapter.RWNode (rw.go: the methods of scripts.RWSteps) and
// adapter.SharedNode. It is safe for concurrent use.
type Node struct {
	client  rueidis.Client // nil when lazy is set
	lazy    *lazyCluster   // a cluster node built on demand (lazy.go)
	name    string
	owned   bool
	scripts batch.Scripts // of the batched requests (batch.go)

	acquireFenced, raiseFence *batch.Script // fencing.go
	rw                        *batch.Script // rw.go
	rwSteps                                 // the read-write locks (rw.go)

	multi                 multiScripts  // multi.go
	putRecord, readRecord *batch.Script // record.go

	queue  batch.Queue // every request's way to the node (batch.go)
	sender sender      // the queue's batch worker (batch.go)

	cluster bool       // a Redis Cluster client (cluster.go)
	owners  owners     // a cluster's slot map as its servers agree (cluster.go)
	view    slots.View // a cluster's masters, as Replicas last read them (replica.go)

	// known is what the servers told on connecting (fence.go); handshook
	// is set when the node's client reads them in its handshake (Dial,
	// DialNode), else Connect reads them by requests.
	known     *facts.Known
	handshook bool

	// users counts the redlock clients sharing the node (Share), less
	// the Close calls: Close closes the node when it falls to 0 or below.
	users atomic.Int64

	// setups are the connections its fences are making (fence.go); nil:
	// not tracked.
	setups *setups

	// calls are the requests running on goroutines of their own while
	// the node had no connection (settingup.go); ended makes the results
	// of those whose context ended first.
	calls inflight
	ended endedClients
}

var (
	_ redlock.Node         = (*Node)(nil)
	_ adapter.HandoffNode  = (*Node)(nil)
	_ adapter.TransferNode = (*Node)(nil)
	_ adapter.SharedNode   = (*Node)(nil)
	_ adapter.FencingNode  = (*Node)(nil) // fencing.go
	_ adapter.RecordNode   = (*Node)(nil) // record.go
)

// MaxBatch is the most requests a Node sends in one DoMulti; a longer queue
// leaves in several, one after the other. rueidis sends a DoMulti of
// ClientOption.BlockingPipeline commands or more (2000 by default) over a
// pooled connection of its own instead of the pipeline, where it could run
// before or after the requests around it; batches of at most MaxBatch stay
// on the node's one connection under any BlockingPipeline above MaxBatch.
const MaxBatch = 1000

// NewNode wraps client, named name in errors and reports (its address, say).
// The client should disable rueidis's retries (DisableRetry) so that a
// command whose reply was lost is not sent twice, use one connection
// (PipelineMultiplex -1, AlwaysPipelining) and leave BlockingPipeline at 0
// (2000), negative or above MaxBatch, so that every request goes over that
// connection and the node executes them in the order they were queued
// (adapter.AsyncNode); NewClient does all this. Close does not close a
// client passed here: its owner does.
func NewNode(client rueidis.Client, name string) *Node {
	return newNode(client, name, client.Mode() == rueidis.ClientModeCluster)
}

// newNode is NewNode for a client known to be of a cluster or not (a lazy
// cluster node has none yet).
func newNode(client rueidis.Client, name string, cluster bool) *Node {
	n := &Node{
		client:  client,
		name:    name,
		known:   &facts.Known{},
		scripts: batch.NewScripts(),

		acquireFenced: batch.NewScript(scripts.AcquireFenced),
		raiseFence:    batch.NewScript(scripts.RaiseFence),
		rw:            batch.NewScript(scripts.RW),

		multi:      newMultiScripts(),
		putRecord:  batch.NewScript(scripts.PutRecord),
		readRecord: batch.NewScript(scripts.ReadRecord),
	}
	n.rwSteps = scripts.NewRWSteps(n.runRW, n.runRWFenced)
	n.sender.combine = !cluster
	if cluster {
		n.cluster, n.scripts = true, n.scripts.Sharded() // cluster.go
	}
	n.queue.Init("rueidis", MaxBatch, n.send)
	n.queue.Allow(opScript) // batch.go: scriptCall
	return n
}

// conn returns the client to send a request on: the node's, or a cluster
// node's once it is built (lazy.go), waiting for a build under way until
// ctx ends; while there is none, a client that fails every request with
// the reason. While the node has no established connection, its requests
// end with their context even while one is being made (settingup.go).
func (n *Node) conn(ctx context.Context) rueidis.Client {
	c := n.rawConn(ctx)
	if n.setups.connected() {
		return c
	}
	return settingUp{Client: c, n: n}
}

// rawConn is conn's client, as rueidis runs it.
func (n *Node) rawConn(ctx context.Context) rueidis.Client {
	if n.lazy != nil {
		return n.lazy.client(ctx)
	}
	return n.client
}

// String returns the node's name.
func (n *Node) String() string { return n.name }

// Client returns the underlying rueidis client. For a cluster node that
// Dial or DialNode made, it is the cluster client once one could be built,
// and until then a client that fails every request.
func (n *Node) Client() rueidis.Client { return n.rawConn(context.Background()) }

// Acquire runs SET key value NX PX ttl (R3), in the node's next batch.
func (n *Node) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpAcquire, Key: key, Value: value, TTL: ttl})
}

// Release deletes key if it holds value (R5), in the node's next batch.
func (n *Node) Release(ctx context.Context, key, value string) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpRelease, Key: key, Value: value})
}

// Extend resets key's expiry to ttl if it holds value (R17), in the node's
// next batch.
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpExtend, Key: key, Value: value, TTL: ttl})
}

// ReleaseAnnounce deletes key if it holds value (R5) and then publishes value
// on ChannelPrefix+key, in one script, in the node's next batch.
func (n *Node) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpReleaseAnnounce, Key: key, Value: value})
}

// Transfer sets key to value with an expiry of ttl if key holds from or is
// absent, in one script, in the node's next batch (adapter.TransferNode).
func (n *Node) Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, adapter.Request{Op: adapter.OpTransfer, Key: key, Value: value, TTL: ttl, From: from})
}

// Share counts one more redlock client using the node
// (adapter.SharedNode); redlock.New calls it.
func (n *Node) Share() { n.users.Add(1) }

var _ adapter.ClusterNode = (*Node)(nil)

// Cluster reports whether the node's client is a Redis Cluster client
// (adapter.ClusterNode; a cluster node's own requests are in cluster.go).
func (n *Node) Cluster() bool { return n.cluster }

var _ adapter.SetupNode = (*Node)(nil)

// AbortSetup gives up the connections the node is still making (in the
// fence's handshake, fence.go) and makes no new one, for a node that Dial
// or DialNode made (adapter.SetupNode); Client.Close calls it. While
// another client shares the node, it does nothing.
func (n *Node) AbortSetup() {
	if n.users.Load() > 1 {
		return
	}
	n.setups.abort()
}

// Close closes the client if this node created it (Dial); a client given to
// NewNode is left to its owner. A node given to several redlock clients (a
// fenced one for an election beside a plain one) is closed by the last of
// their Close calls: the Close of each client before it only gives that
// client's share back.
func (n *Node) Close() error {
	if n.users.Add(-1) > 0 {
		return nil // another client still uses the node
	}
	n.setups.abort()    // no connection outlives the node (fence.go: connect)
	n.setups.closeAll() // rueidis' Close would wait a round trip on each
	n.owners.stop()     // a cluster's background reads of its slot map (cluster.go)
	switch {
	case n.lazy != nil:
		n.lazy.Close()
	case n.owned:
		n.client.Close()
	}
	n.owners.wait()
	// The requests that outlived their context while a connection was
	// being made end with it: abort ended its set-up.
	n.calls.closeAndWait()
	n.ended.close()
	return nil
}

// WatchReleases opens the node's release subscription for one redlock
// client (adapter.HandoffNode): a dedicated connection, opened on the first
// Watch, on which every watched key is one SUBSCRIBE to its channel.
func (n *Node) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	if n.cluster {
		return &shardWatch{conn: n.conn, notify: notify, subs: map[string]keySub{}}, nil // cluster.go
	}
	return &watch{node: n, notify: notify, keys: map[string]struct{}{}, stop: make(chan struct{}), listen: n.listener()}, nil
}

// watch is one node's multiplexed release subscription.
type watch struct {
	node   *Node
	notify func(key, value string)

	mu     sync.Mutex
	closed bool
	dc     rueidis.DedicatedClient
	cancel func()
	lost   <-chan error // closed when the connection's hooks stop
	keys   map[string]struct{}
	stop   chan struct{} // closed by Close: ends redial
	listen *batch.Listener
}

// listener returns a keeper of the node's listening marker
// (batch.Listener).
func (n *Node) listener() *batch.Listener {
	return batch.NewListener(func(ctx context.Context) error {
		c := n.conn(ctx)
		return c.Do(ctx, c.B().Set().Key(scripts.ListenKey).Value("1").PxMilliseconds(batch.ListenTTL.Milliseconds()).Build()).Error()
	})
}

// The waits of redial between its attempts to open a lost subscription
// again, doubling from redialMin to redialMax, each attempt bounded by
// redialTimeout.
const (
	redialMin     = 50 * time.Millisecond
	redialMax     = time.Second
	redialTimeout = time.Second
)

// conn returns the subscription connection, (re)opening it and
// re-subscribing the watched keys when it was lost; called with w.mu held.
func (w *watch) conn(ctx context.Context) (rueidis.DedicatedClient, error) {
	if w.closed {
		return nil, redlock.ErrClosed
	}
	if w.dc != nil {
		select {
		case <-w.lost:
			w.cancel()
			w.dc = nil
		default:
			return w.dc, nil
		}
	}
	dc, cancel := w.node.client.Dedicate()
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(m rueidis.PubSubMessage) {
		if key, ok := strings.CutPrefix(m.Channel, ChannelPrefix); ok {
			w.notify(key, m.Message)
		}
	}})
	if len(w.keys) > 0 {
		_ = w.listen.Mark(ctx) // the node may have restarted without it
		chans := make([]string, 0, len(w.keys))
		for k := range w.keys {
			chans = append(chans, ChannelPrefix+k)
		}
		if err := dc.Do(ctx, dc.B().Subscribe().Channel(chans...).Build()).Error(); err != nil {
			cancel()
			return nil, err
		}
	}
	w.dc, w.cancel, w.lost = dc, cancel, lost
	go w.redial(lost)
	return dc, nil
}

// redial opens the subscription again once its connection is lost (the
// node restarted, say), subscribing again to every watched key, as
// go-redis does for its PubSubs. Without it the keys watched then heard
// nothing from this node until the next Watch or Unwatch, which a key that
// always has waiters never makes: its waiters were left to their timed
// retry (R10) for good. It returns once the subscription is open again,
// when another call opened it, when no key is watched (the next Watch
// opens it), or when Close ends the watch.
func (w *watch) redial(lost <-chan error) {
	select {
	case <-lost:
	case <-w.stop:
		return
	}
	for delay := redialMin; ; delay = min(2*delay, redialMax) {
		t := time.NewTimer(delay)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
		}
		w.mu.Lock()
		if w.closed || w.lost != lost || len(w.keys) == 0 {
			w.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), redialTimeout)
		_, err := w.conn(ctx)
		cancel()
		w.mu.Unlock()
		if err == nil {
			return
		}
	}
}

// Watch subscribes to the releases of key.
func (w *watch) Watch(ctx context.Context, key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	dc, err := w.conn(ctx)
	if err != nil {
		return err
	}
	w.keys[key] = struct{}{}
	_ = w.listen.Watch(ctx, key) // best effort: announcements are hints
	return dc.Do(ctx, dc.B().Subscribe().Channel(ChannelPrefix+key).Build()).Error()
}

// Unwatch unsubscribes from the releases of key.
func (w *watch) Unwatch(ctx context.Context, key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keys, key)
	w.listen.Unwatch(key)
	if w.dc == nil || w.closed {
		return nil
	}
	return w.dc.Do(ctx, w.dc.B().Unsubscribe().Channel(ChannelPrefix+key).Build()).Error()
}

// Close ends the subscription and gives its connection back, without
// waiting for its server.
func (w *watch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	close(w.stop)
	w.listen.Close()
	if w.dc != nil {
		dc, cancel := w.dc, w.cancel
		w.dc = nil
		// Given back to rueidis' pool, the connection is unsubscribed
		// and its answer waited for without a deadline: minutes on a
		// server that stopped answering. So the give-back runs on its
		// own; the node's Close ends it by closing the connection, which
		// the node made (fence.go: closeAll), and waits for it. Over a
		// caller's client, whose connections the node does not close,
		// it is left to end with its server's answer. Once the node's
		// Close waits, it has closed the connection, so the give-back
		// ends at once here.
		giveBack := func() {
			dc.SetPubSubHooks(rueidis.PubSubHooks{})
			cancel()
		}
		switch {
		case w.node.setups == nil:
			go giveBack()
		case w.node.calls.add():
			go func() {
				defer w.node.calls.done()
				giveBack()
			}()
		default:
			giveBack()
		}
	}
	return nil
}

// Option tunes the rueidis client that NewClient and Dial build.
type Option func(*rueidis.ClientOption)

// WithMaxFlushDelay lets the connection wait up to d after a write to
// gather more commands into the next one. Default 0: the node's batches
// (batch.go) already gather the requests of concurrent lock operations into
// one write each, and a delay only adds latency to them (measured with
// BenchmarkLockUnlock); it can still help a client that issues many fenced
// acquisitions, which are not batched.
func WithMaxFlushDelay(d time.Duration) Option {
	return func(o *rueidis.ClientOption) { o.MaxFlushDelay = d }
}

// NewClient returns a rueidis client for one parsed node URL, configured for
// Redlock: every command pipelined (R15) over one connection, however many
// a DoMulti holds (BlockingPipeline -1, set after opts), so that the
// node executes them in the order they were sent and a request that times
// out never closes the connection under the requests behind it; no
// client-side cache, no command retries, context deadlines honoured. It
// does not connect: the client dials on its first request, so a node that
// is down or hangs now fails that request (and later ones, until it is
// back), never the building of the client.
func NewClient(u redlock.NodeURL, opts ...Option) (rueidis.Client, error) {
	return newClient(u, nil, nil, opts)
}

// newClient is NewClient whose connections tell known what their servers
// told about themselves (nil: not kept).
func newClient(u redlock.NodeURL, known *facts.Known, st *setups, opts []Option) (rueidis.Client, error) {
	if u.Cluster {
		return newClusterClient(u, known, st, opts) // cluster.go
	}
	o := clientOption(u)
	for _, opt := range opts {
		opt(&o)
	}
	// Never a pooled connection for a long DoMulti, whatever opts said:
	// the node's batches (at most MaxBatch) all go through the pipeline.
	o.BlockingPipeline = -1
	// Every connection fences the ones given up before it (fence.go).
	fence := &connFence{user: u.Username, pass: u.Password, known: known, setups: st}
	o.DialCtxFn = fence.wrap(o.DialCtxFn)
	fence.lazy.Store(true)
	c, err := rueidis.NewClient(o) // ForceSingleClient: a client even when its dial fails
	fence.lazy.Store(false)
	if errors.Is(err, errDialDeferred) {
		err = nil
	}
	return c, err
}

// connTimeout bounds a connection's every read and write
// (ConnWriteTimeout: rueidis closes a connection that the node leaves
// unanswered so long) and so its set-up too (Dialer.Timeout, which bounds
// the connection's handshakes, the fence's and rueidis' own, when the
// request that dials has a later deadline or none). A set-up bound below
// it would cut a healthy node that answers later (a loaded machine, a slow
// link): a dial is bounded by the deadline of the request that makes it,
// the patience a client gives a slow node, and a node whose set-up never
// completes is never learnt to be slow. A node that is down refuses the
// dial at once; a frozen one costs each request that dials it its own
// deadline, and Close ends a set-up under way (fence.go).
const connTimeout = 10 * time.Second

// clientOption is the rueidis configuration of NewClient for u, before
// the caller's options.
func clientOption(u redlock.NodeURL) rueidis.ClientOption {
	o := rueidis.ClientOption{
		InitAddress:       []string{u.Addr},
		Username:          u.Username,
		Password:          u.Password,
		SelectDB:          u.DB,
		DisableCache:      true,
		DisableRetry:      true,
		ForceSingleClient: true,
		Dialer:            net.Dialer{Timeout: connTimeout, KeepAlive: time.Minute},
		ConnWriteTimeout:  connTimeout,
		PipelineMultiplex: -1, // one ordered connection per node
		// Always through the pipeline: a lone command with a deadline
		// would otherwise be written synchronously, and its timeout would
		// close the connection and fail the commands queued behind it,
		// such as the releases that undo a failed attempt (R8.5).
		AlwaysPipelining: true,
	}
	if u.TLS {
		o.TLSConfig = &tls.Config{ServerName: u.Host, MinVersion: tls.VersionTLS12}
	}
	if u.Network == "unix" {
		o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
			return d.DialContext(ctx, "unix", addr)
		}
	}
	return o
}

// Dial returns a redlock client over one independent master per URL (see
// redlock.ParseNodeURL for the forms), each node a pipelining rueidis client
// (NewClient). It validates the URLs but does not need the nodes up: a node
// that cannot be reached now is dialled again on use, and the client works
// as long as a quorum answers (R1.3). Close closes the connections.
func Dial(urls []string, opts ...redlock.Option) (*redlock.Client, error) {
	return DialTuned(urls, nil, opts...)
}

// DialTuned is Dial with options for the rueidis clients of the nodes
// (WithMaxFlushDelay).
func DialTuned(urls []string, nodeOpts []Option, opts ...redlock.Option) (*redlock.Client, error) {
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return nil, err
	}
	nodes := make([]redlock.Node, 0, len(parsed))
	closeAll := func() {
		for _, n := range nodes {
			_ = n.(*Node).Close()
		}
	}
	for _, u := range parsed {
		n, err := dialNode(u, nodeOpts)
		if err != nil {
			closeAll()
			return nil, err
		}
		nodes = append(nodes, n)
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return c, nil
}

// DialNode returns one node (NewClient, NewNode) for a node URL (see
// redlock.ParseNodeURL), named by its address; its Close closes the
// client. Use it to build a client over nodes that you wrap or mix; Dial
// does this for every URL. A node that cannot be reached now is dialled
// again on use.
func DialNode(url string, opts ...Option) (*Node, error) {
	u, err := redlock.ParseNodeURL(url)
	if err != nil {
		return nil, err
	}
	return dialNode(u, opts)
}

func dialNode(u redlock.NodeURL, opts []Option) (*Node, error) {
	if u.Cluster {
		// Built in the background: a cluster that is down now is a node
		// that fails its requests until it is back (lazy.go).
		n := newNode(nil, u.String(), true)
		n.setups = &setups{}
		n.lazy = newLazyCluster(u, n.known, n.setups, opts)
		n.handshook = true
		return n, nil
	}
	known, st := &facts.Known{}, &setups{}
	c, err := newClient(u, known, st, opts)
	if c == nil {
		return nil, err
	}
	// With ForceSingleClient a client comes back even when the node is
	// down now; it connects on use.
	n := NewNode(c, u.String())
	n.owned = true
	n.known, n.handshook, n.setups = known, true, st
	return n, nil
}
