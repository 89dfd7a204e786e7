package goredis

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
)

// WatchReleases opens the node's release subscription for one redlock
// client (adapter.HandoffNode): one go-redis PubSub, connected on the first
// Watch, on which every watched key is one SUBSCRIBE to its channel. go-redis
// reconnects a lost subscription and subscribes its channels again; an
// announcement lost meanwhile is covered by the waiters' timed retry (R10).
func (n *Node) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	return &watch{node: n, notify: notify}, nil
}

// watch is one node's multiplexed release subscription.
type watch struct {
	node   *Node
	notify func(key, value string)

	mu     sync.Mutex
	closed bool
	ps     *redis.PubSub
	read   sync.WaitGroup // the goroutine that delivers the messages
}

// pubsub returns the subscription, opening it and starting its reader on
// first use; called with w.mu held.
func (w *watch) pubsub(ctx context.Context) (*redis.PubSub, error) {
	if w.closed {
		return nil, redlock.ErrClosed
	}
	if w.ps == nil {
		w.ps = w.node.client.Subscribe(ctx)
		msgs := w.ps.Channel()
		w.read.Add(1)
		go func() {
			defer w.read.Done()
			for m := range msgs { // closed by PubSub.Close
				if key, ok := strings.CutPrefix(m.Channel, ChannelPrefix); ok {
					w.notify(key, m.Payload)
				}
			}
		}()
	}
	return w.ps, nil
}

// Watch subscribes to the releases of key.
func (w *watch) Watch(ctx context.Context, key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ps, err := w.pubsub(ctx)
	if err != nil {
		return err
	}
	return ps.Subscribe(ctx, ChannelPrefix+key)
}

// Unwatch unsubscribes from the releases of key.
func (w *watch) Unwatch(ctx context.Context, key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ps == nil || w.closed {
		return nil
	}
	return w.ps.Unsubscribe(ctx, ChannelPrefix+key)
}

// Close ends the subscription and waits for its reader.
func (w *watch) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	ps := w.ps
	w.mu.Unlock()
	var err error
	if ps != nil {
		err = ps.Close()
	}
	w.read.Wait()
	return err
}
