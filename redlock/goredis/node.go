package goredis

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/internal/batch"
	"dlm/redlock/scripts"
)

// ChannelPrefix starts the name of every release channel: the releases of
// lock key k are announced on ChannelPrefix+k (hand-off, R14); the same for
// every adapter.
const ChannelPrefix = scripts.ChannelPrefix

// Node is a redlock.Node over one go-redis client, which must talk to one
// independent master (R2). It gathers the requests of concurrent callers to
// the node into batches, one pipeline each (R15, batch.go). Node also
// implements redlock.AsyncNode, redlock.BatchNode, redlock.HandoffNode,
// redlock.TransferNode and redlock.FencingNode. It is safe for concurrent
// use.
type Node struct {
	client  redis.UniversalClient
	name    string
	owned   bool
	release *batch.Script
	extend  *batch.Script
	publish *batch.Script
	handOn  *batch.Script // Transfer

	acquireFenced *redis.Script // fencing.go
	raiseFence    *redis.Script

	queue  batch.Queue // every request's way to the node (batch.go)
	sender sender      // the queue's batch worker (batch.go)
}

var (
	_ redlock.Node        = (*Node)(nil)
	_ redlock.HandoffNode = (*Node)(nil)
)

// NewNode wraps client, named name in errors and reports (its address, say).
// Close does not close a client passed here: its owner does.
func NewNode(client redis.UniversalClient, name string) *Node {
	n := &Node{
		client:  client,
		name:    name,
		release: batch.NewScript(scripts.Release),
		extend:  batch.NewScript(scripts.Extend),
		publish: batch.NewScript(scripts.ReleasePublish),
		handOn:  batch.NewScript(scripts.Transfer),

		acquireFenced: redis.NewScript(scripts.AcquireFenced),
		raiseFence:    redis.NewScript(scripts.RaiseFence),
	}
	n.queue.Init("goredis", n.send)
	return n
}

// String returns the node's name.
func (n *Node) String() string { return n.name }

// Client returns the underlying go-redis client.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Acquire runs SET key value NX PX ttl (R3), in the node's next batch.
func (n *Node) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, redlock.Request{Op: redlock.OpAcquire, Key: key, Value: value, TTL: ttl})
}

// Release deletes key if it holds value (R5), in the node's next batch.
func (n *Node) Release(ctx context.Context, key, value string) (bool, error) {
	return n.do(ctx, redlock.Request{Op: redlock.OpRelease, Key: key, Value: value})
}

// Extend resets key's expiry to ttl if it holds value (R17), in the node's
// next batch.
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, redlock.Request{Op: redlock.OpExtend, Key: key, Value: value, TTL: ttl})
}

// ReleaseAnnounce deletes key if it holds value (R5) and then publishes value
// on ChannelPrefix+key, in one script, in the node's next batch.
func (n *Node) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	return n.do(ctx, redlock.Request{Op: redlock.OpReleaseAnnounce, Key: key, Value: value})
}

// Transfer sets key to value with an expiry of ttl if key holds from or is
// absent, in one script, in the node's next batch (redlock.TransferNode).
func (n *Node) Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, redlock.Request{Op: redlock.OpTransfer, Key: key, Value: value, TTL: ttl, From: from})
}

// Close closes the client if this node created it (Dial); a client given to
// NewNode is left to its owner.
func (n *Node) Close() error {
	if n.owned {
		return n.client.Close()
	}
	return nil
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
	n := NewNode(NewClient(u), u.String())
	n.owned = true
	return n
}
