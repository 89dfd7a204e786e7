package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/scripts"
)

// ChannelPrefix starts the name of every release channel: the releases of
// lock key k are announced on ChannelPrefix+k (hand-off, R14); the same for
// every adapter.
const ChannelPrefix = scripts.ChannelPrefix

// Node is a redlock.Node over one go-redis client, which must talk to one
// independent master (R2). It gathers the requests of concurrent callers to
// the node into batches and streams them over one connection, without
// waiting for the replies of a batch before sending the next (batch.go). Node
// also implements adapter.AsyncNode, adapter.BatchNode,
// adapter.HandoffNode, adapter.TransferNode and adapter.FencingNode. It is
// safe for concurrent use.
type Node struct {
	client  redis.UniversalClient
	name    string
	owned   bool
	release *script
	extend  *script
	publish *script
	handOn  *script // Transfer

	acquireFenced *redis.Script // fencing.go
	raiseFence    *redis.Script

	queue  batch.Queue // every request's way to the node (batch.go)
	stream stream      // the queue's way to the connection (batch.go)
}

var (
	_ redlock.Node         = (*Node)(nil)
	_ adapter.HandoffNode  = (*Node)(nil)
	_ adapter.TransferNode = (*Node)(nil)
)

// NewNode wraps client, named name in errors and reports (its address, say).
// The client should be a *redis.Client: the node then sends every batched
// request through its ordered full-duplex autopipeline (one connection, a
// writer and a reader; see batch.go): NewNode makes the client's
// AsyncAutoPipeline with that configuration, and one the client already
// made (go-redis keeps the first) must be ordered and full-duplex. Any other
// client is sent one batch at a time as a pipeline, which a deadline that
// passes closes. NewClient builds a client as the node wants it. Close does
// not close a client passed here: its owner does.
func NewNode(client redis.UniversalClient, name string) *Node {
	n := &Node{
		client:  client,
		name:    name,
		release: newScript(scripts.Release),
		extend:  newScript(scripts.Extend),
		publish: newScript(scripts.ReleasePublish),
		handOn:  newScript(scripts.Transfer),

		acquireFenced: redis.NewScript(scripts.AcquireFenced),
		raiseFence:    redis.NewScript(scripts.RaiseFence),
	}
	n.stream.open(client)
	n.queue.Init("goredis", MaxBatch, n.send)
	return n
}

// String returns the node's name.
func (n *Node) String() string { return n.name }

// Client returns the underlying go-redis client.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Acquire runs SET key value NX PX ttl (R3), in the node's next batch.
func (n *Node) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.queue.Do(ctx, adapter.Request{Op: adapter.OpAcquire, Key: key, Value: value, TTL: ttl})
}

// Release deletes key if it holds value (R5), in the node's next batch.
func (n *Node) Release(ctx context.Context, key, value string) (bool, error) {
	return n.queue.Do(ctx, adapter.Request{Op: adapter.OpRelease, Key: key, Value: value})
}

// Extend resets key's expiry to ttl if it holds value (R17), in the node's
// next batch.
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.queue.Do(ctx, adapter.Request{Op: adapter.OpExtend, Key: key, Value: value, TTL: ttl})
}

// ReleaseAnnounce deletes key if it holds value (R5) and then publishes value
// on ChannelPrefix+key, in one script, in the node's next batch.
func (n *Node) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	return n.queue.Do(ctx, adapter.Request{Op: adapter.OpReleaseAnnounce, Key: key, Value: value})
}

// Transfer sets key to value with an expiry of ttl if key holds from or is
// absent, in one script, in the node's next batch (adapter.TransferNode).
func (n *Node) Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	return n.queue.Do(ctx, adapter.Request{Op: adapter.OpTransfer, Key: key, Value: value, TTL: ttl, From: from})
}

// Queued returns how many requests wait in the node's queue, not yet taken
// into a batch: a gauge of the node's backlog.
func (n *Node) Queued() int { return n.queue.Len() }

// Close closes the client if this node created it (Dial); a client given to
// NewNode is left to its owner.
func (n *Node) Close() error {
	if n.owned {
		return n.client.Close()
	}
	return nil
}

// connTimeout bounds each read and write on a node's connections. It is
// not the node timeout (R8.2): the redlock client's deadlines end the wait
// for an answer, while the request stays on the connection and its reply,
// when it comes, is read and dropped; the connection is kept. Only a node
// silent this long loses its connection (a dead peer behind a cut link).
const connTimeout = 30 * time.Second

// NewClient returns a go-redis client for one parsed node URL, configured for
// Redlock: no command retries; reads and writes bounded by 30 s on the
// connection rather than by the request's deadline, so that a request that
// times out never closes the connection under the requests behind it (the
// redlock client's own deadlines bound its waits; ContextTimeoutEnabled
// still bounds the commands that do not go through the node's stream); a
// failed dial reported to the caller as the request's error, not printed
// on stderr by go-redis's process-wide logger (dialer.go). The batched
// requests go through its AsyncAutoPipeline, ordered and full-duplex
// (NewNode).
func NewClient(u redlock.NodeURL) *redis.Client {
	d := &dialer{d: net.Dialer{Timeout: time.Second, KeepAlive: 15 * time.Second}, network: u.Network}
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
		ReadTimeout:           connTimeout,
		WriteTimeout:          connTimeout,
		DisableIdentity:       true,
		Protocol:              2,
		Dialer:                d.dial,
		AutoPipelineOptions:   streamOptions(),
	}
	if u.TLS {
		d.tls = &tls.Config{ServerName: u.Host, MinVersion: tls.VersionTLS12}
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
	n := NewNode(NewClient(u), u.String())
	n.owned = true
	n.stream.warm()
	return n
}

// answerSet reads a SET NX reply: OK, or nil when the key is held.
func answerSet(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	}
	return false, err
}
