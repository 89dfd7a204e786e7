package goredis

import (
	"context"
	"crypto/tls"
	"errors"
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

// Node is a redlock.Node over one go-redis client, which must talk to one
// independent master (R2). Over a *redis.Client it gathers the requests of
// concurrent callers into batches, each one pipeline on a connection of its
// own (batch.go, conn.go), which is what makes it fast under concurrency
// and keeps a slow node's connection. It also implements
// adapter.AsyncNode, adapter.BatchNode, adapter.HandoffNode (handoff.go),
// adapter.TransferNode, adapter.FencingNode, adapter.RWNode (rw.go: the
// methods of scripts.RWSteps) and adapter.SharedNode. It is safe for
// concurrent use.
type Node struct {
	client  redis.UniversalClient
	order   keyOrder // Start without a pipe (ordered.go)
	name    string
	owned   bool
	release *redis.Script
	extend  *redis.Script
	publish *redis.Script // ReleaseAnnounce (handoff.go)

	acquireFenced *redis.Script // fencing.go
	raiseFence    *redis.Script
	rw            *redis.Script // rw.go
	rwSteps                     // the read-write locks (rw.go)
	transfer      *redis.Script

	multi multiScripts // multi.go

	putRecord, readRecord *redis.Script // record.go

	cluster *redis.ClusterClient // the client, when it is one (cluster.go)
	masters *masterPipes         // a cluster's own connections (cluster.go)
	view    slots.View           // a cluster's masters, as Replicas last read them (replica.go)

	// The batched way (batch.go, conn.go); pipe is nil when the client
	// cannot be pipelined on (NewNode).
	pipe    *pipe
	known   facts.Known // what the servers told on connecting (facts.go)
	queue   batch.Queue
	sender  sender
	scripts batch.Scripts // of the batched requests (batch.go)
	// loaded holds the SHA1 of each queued go-redis script (script.go)
	// that the node's server ran, and so has.
	loaded sync.Map

	// users counts the redlock clients sharing the node (Share), less
	// the Close calls: Close closes the node when it falls to 0 or below.
	users atomic.Int64
}

var (
	_ redlock.Node         = (*Node)(nil)
	_ adapter.AsyncNode    = (*Node)(nil)
	_ adapter.TransferNode = (*Node)(nil)
	_ adapter.SharedNode   = (*Node)(nil)
)

// NewNode wraps client, named name in errors and reports (its address, say).
// Close does not close a client passed here: its owner does. Close closes
// what the node made, and does not wait for a request of the client's own
// (a ClusterClient's reading of its slot map, which a hung master holds
// until its deadline).
//
// When client is a *redis.Client, Acquire, Release and Extend do not go
// through its connection pool: the Node dials one connection of its own
// with the client's settings (Options: its Dialer, and so its TLSConfig and
// DialTimeout; Username and Password or its CredentialsProvider; DB;
// ClientName), on first use and again after the connection fails, and
// pipelines every request on it (R15). A request whose deadline passes is
// answered as timed out and its reply read and dropped later; the
// connection is kept. Fenced acquisitions, read-write locks and records
// go the same way, in order with the rest. A *redis.ClusterClient is
// served the same way, over one connection of the node's own per master
// (cluster.go). Any other client (a Ring, a failover client), and a
// *redis.Client with an OnConnect hook or a StreamingCredentialsProvider,
// which only go-redis can run, is used as it is, one pooled request per
// call. Every *redis.Client, batched or not,
// hears release announcements through go-redis PubSubs (WatchReleases).
func NewNode(client redis.UniversalClient, name string) *Node {
	n := &Node{
		client:  client,
		name:    name,
		release: redis.NewScript(scripts.Release),
		extend:  redis.NewScript(scripts.Extend),
		publish: redis.NewScript(scripts.ReleasePublish),

		acquireFenced: redis.NewScript(scripts.AcquireFenced),
		raiseFence:    redis.NewScript(scripts.RaiseFence),
		rw:            redis.NewScript(scripts.RW),
		transfer:      redis.NewScript(scripts.Transfer),

		multi: newMultiScripts(),

		putRecord:  redis.NewScript(scripts.PutRecord),
		readRecord: redis.NewScript(scripts.ReadRecord),
	}
	n.rwSteps = scripts.NewRWSteps(n.runRW, n.runRWFenced)
	if cc, ok := client.(*redis.ClusterClient); ok {
		n.useCluster(cc) // cluster.go
	}
	if rc, ok := client.(*redis.Client); ok {
		if o := rc.Options(); o.OnConnect == nil && o.StreamingCredentialsProvider == nil && o.Dialer != nil {
			n.pipe = &pipe{opts: o, known: &n.known}
			n.scripts = batch.NewScripts()
			n.queue.Init("goredis", MaxBatch, n.send)
			n.queue.Allow(opEval, opEvalSha) // script.go
		}
	}
	return n
}

// String returns the node's name.
func (n *Node) String() string { return n.name }

// Client returns the underlying go-redis client.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Acquire runs SET key value NX PX ttl (R3).
func (n *Node) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpAcquire, Key: key, Value: value, TTL: ttl})
	}
	return n.goAcquire(ctx, key, value, ttl)
}

func (n *Node) goAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	err := n.client.SetArgs(ctx, key, value, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	}
	return false, err
}

// Release deletes key if it holds value (R5).
func (n *Node) Release(ctx context.Context, key, value string) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpRelease, Key: key, Value: value})
	}
	return n.goRelease(ctx, key, value)
}

func (n *Node) goRelease(ctx context.Context, key, value string) (bool, error) {
	v, err := n.release.Run(ctx, n.client, []string{key}, value).Int64()
	return v == 1, err
}

// Extend resets key's expiry to ttl if it holds value (R17).
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpExtend, Key: key, Value: value, TTL: ttl})
	}
	return n.goExtend(ctx, key, value, ttl)
}

func (n *Node) goExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	v, err := n.extend.Run(ctx, n.client, []string{key}, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// Transfer sets key to value with an expiry of ttl if key holds from or is
// absent, in one script (adapter.TransferNode: the local hand-over).
func (n *Node) Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpTransfer, Key: key, Value: value, TTL: ttl, From: from})
	}
	return n.goTransfer(ctx, key, from, value, ttl)
}

func (n *Node) goTransfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	v, err := n.transfer.Run(ctx, n.client, []string{key}, from, value, ttl.Milliseconds()).Int64()
	return v == 1, err
}

// Share counts one more redlock client using the node
// (adapter.SharedNode); redlock.New calls it.
func (n *Node) Share() { n.users.Add(1) }

var _ adapter.SetupNode = (*Node)(nil)

// AbortSetup gives up the connections the node is still making, to its
// server or to a cluster's masters (adapter.SetupNode): the requests
// waiting for them fail, and no new one is made; Client.Close calls it.
// While another client shares the node, it does nothing.
func (n *Node) AbortSetup() {
	if n.users.Load() > 1 {
		return
	}
	if n.pipe != nil {
		n.pipe.abortSetup()
	}
	if n.masters != nil {
		n.masters.abortSetup()
	}
}

// Close closes the node's own connections (NewNode), and the client if this
// node created it (Dial); a client given to NewNode is left to its owner.
// A node given to several redlock clients (a fenced one for an election
// beside a plain one) is closed by the last of their Close calls: the
// Close of each client before it only gives that client's share back.
func (n *Node) Close() error {
	if n.users.Add(-1) > 0 {
		return nil // another client still uses the node
	}
	if n.pipe != nil {
		n.pipe.close()
	}
	if n.masters != nil {
		n.masters.close() // cluster.go
	}
	var err error
	if n.owned {
		err = n.client.Close()
	}
	if n.masters != nil {
		n.masters.wait()
	}
	return err
}

// NewClient returns a go-redis client for one parsed node URL, configured for
// Redlock: no command retries, context deadlines honoured.
func NewClient(u redlock.NodeURL) *redis.Client {
	o := &redis.Options{
		Network:               u.Network,
		Addr:                  u.Addr,
		Username:              u.Username,
		Password:              u.Password,
		DB:                    u.DB,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		DisableIdentity:       true,
		Protocol:              2,
	}
	if u.TLS {
		o.TLSConfig = &tls.Config{ServerName: u.Host, MinVersion: tls.VersionTLS12}
	}
	return redis.NewClient(o)
}

// Dial returns a redlock client over one independent master per URL (see
// redlock.ParseNodeURL for the forms). It validates the URLs but does not
// need the nodes up: connections are made on first use, and the client works
// as long as a quorum answers (R1.3). Close closes the connections.
func Dial(urls []string, opts ...redlock.Option) (*redlock.Client, error) {
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return nil, err
	}
	nodes := make([]redlock.Node, len(parsed))
	for i, u := range parsed {
		nodes[i] = dialNode(u)
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		for _, n := range nodes {
			_ = n.(*Node).Close()
		}
		return nil, err
	}
	return c, nil
}

// DialNode returns one node over a client of its own for url (see
// redlock.ParseNodeURL); Close closes that client. A URL it cannot use is
// an error wrapping redlock.ErrInvalid that names it.
func DialNode(url string) (*Node, error) {
	u, err := redlock.ParseNodeURL(url)
	if err != nil {
		return nil, err
	}
	return dialNode(u), nil
}

func dialNode(u redlock.NodeURL) *Node {
	var client redis.UniversalClient
	if u.Cluster {
		client, _ = NewClusterClient(u) // cluster.go; u is a cluster
	} else {
		client = NewClient(u)
	}
	n := NewNode(client, u.String())
	n.owned = true
	return n
}
