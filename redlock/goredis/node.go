package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/scripts"
)

// Node is a redlock.Node over one go-redis client, which must talk to one
// independent master (R2). It is safe for concurrent use.
type Node struct {
	client  redis.UniversalClient
	name    string
	owned   bool
	release *redis.Script
	extend  *redis.Script

	acquireFenced *redis.Script // fencing.go
	raiseFence    *redis.Script
	rw            *redis.Script // rw.go

	multi multiScripts // multi.go

	putRecord, readRecord *redis.Script // record.go
}

var _ redlock.Node = (*Node)(nil)

// NewNode wraps client, named name in errors and reports (its address, say).
// Close does not close a client passed here: its owner does.
func NewNode(client redis.UniversalClient, name string) *Node {
	return &Node{
		client:  client,
		name:    name,
		release: redis.NewScript(scripts.Release),
		extend:  redis.NewScript(scripts.Extend),

		acquireFenced: redis.NewScript(scripts.AcquireFenced),
		raiseFence:    redis.NewScript(scripts.RaiseFence),
		rw:            redis.NewScript(scripts.RW),

		multi: newMultiScripts(),

		putRecord:  redis.NewScript(scripts.PutRecord),
		readRecord: redis.NewScript(scripts.ReadRecord),
	}
}

// String returns the node's name.
func (n *Node) String() string { return n.name }

// Client returns the underlying go-redis client.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Acquire runs SET key value NX PX ttl (R3).
func (n *Node) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
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
	v, err := n.release.Run(ctx, n.client, []string{key}, value).Int64()
	return v == 1, err
}

// Extend resets key's expiry to ttl if it holds value (R17).
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	v, err := n.extend.Run(ctx, n.client, []string{key}, value, ttl.Milliseconds()).Int64()
	return v == 1, err
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
