package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/scripts"
)

// The hand-off (R10, R14; adapter.HandoffNode). A release that announces
// itself runs release_publish.lua of redlock/scripts, which deletes the key
// and PUBLISHes the released value on ChannelPrefix+key in one atomic step:
// in the node's batches like every other release (batch.go), or through the
// client for a Node that does not batch. A redlock client's waiters hear the
// releases through one go-redis PubSub per node, on a connection of its own,
// on which every watched key is one SUBSCRIBE. The channel names and the
// script are redlock/rueidis' too, so clients over either adapter hear each
// other's releases on the same nodes.

// ChannelPrefix starts the name of every release channel: the releases of
// lock key k are announced on ChannelPrefix+k (hand-off, R14), as
// redlock/rueidis announces them.
const ChannelPrefix = scripts.ChannelPrefix

// The subscription's health check: after watchIdle without a message, the
// receiver sends a PING and waits watchPingTimeout for any reply; a
// connection that stays silent is then closed by go-redis, which dials again
// and subscribes to every watched channel (a node that vanished without
// closing the connection would otherwise keep the subscription deaf until
// TCP gives up, which takes minutes).
const (
	watchIdle        = 10 * time.Second
	watchPingTimeout = 5 * time.Second
	// watchBackoffMax bounds the pause between two attempts to reach a
	// node that is down; the pause starts at watchBackoffMin and doubles.
	watchBackoffMin = 20 * time.Millisecond
	watchBackoffMax = time.Second
)

var _ adapter.HandoffNode = (*Node)(nil)

// ReleaseAnnounce deletes key if it holds value (R5) and then publishes value
// on ChannelPrefix+key, in one script (R14): in the node's next batch, or
// through the client for a Node that does not batch (see NewNode).
func (n *Node) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	if n.batched() {
		return n.do(ctx, adapter.Request{Op: adapter.OpReleaseAnnounce, Key: key, Value: value})
	}
	return n.goReleaseAnnounce(ctx, key, value)
}

func (n *Node) goReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	v, err := n.publish.Run(ctx, n.client, []string{key}, value, ChannelPrefix).Int64()
	return v == 1, err
}

// WatchReleases opens the node's release subscription for one redlock
// client (adapter.HandoffNode): a go-redis PubSub of the node's client, on
// a connection of its own opened on the first Watch, on which every watched
// key is one SUBSCRIBE to ChannelPrefix+key. go-redis dials again after the
// connection drops and subscribes to every watched channel again; the
// releases announced in between are lost, and the waiters' timed retry
// (R10) covers them. A PubSub goes through go-redis, so its connection runs
// the client's OnConnect hook and credentials of any kind.
//
// Only a *redis.Client (a failover client is one) and a ClusterClient,
// whose releases are announced and heard on the key's shard (cluster.go),
// have it: a Ring routes a channel to another shard than the key whose
// release it announces. For any other client,
// WatchReleases returns an error wrapping errors.ErrUnsupported, and the
// waiters of a redlock client over it retry on their timed random delay
// (R10) alone; ReleaseAnnounce still works.
func (n *Node) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	if n.cluster != nil {
		return newShardWatch(n.cluster, notify), nil // cluster.go
	}
	rc, ok := n.client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("goredis: node %s: release announcements need a *redis.Client, not a %T: %w", n.name, n.client, errors.ErrUnsupported)
	}
	return &watch{client: rc, notify: notify, listen: batch.NewListener(func(ctx context.Context) error {
		return rc.Set(ctx, scripts.ListenKey, "1", batch.ListenTTL).Err()
	})}, nil
}

// watch is one node's multiplexed release subscription: a PubSub, opened on
// the first Watch, and the goroutine that receives its messages (receive).
type watch struct {
	client  *redis.Client
	cluster *redis.ClusterClient // instead of client: sharded (cluster.go)
	notify  func(key, value string)
	listen  *batch.Listener // the node's listening marker
	// dropped, on a cluster node, is told of a channel whose subscription
	// the master ended without an Unwatch asking (cluster.go); it must
	// not block.
	dropped func(ch string)

	mu     sync.Mutex
	closed bool
	ps     *redis.PubSub      // nil until the first Watch
	stop   context.CancelFunc // ends receive's context
	done   chan struct{}      // closed when receive returned
	// acks are the Watch and Unwatch calls waiting for the node to
	// confirm, by confirmation ("subscribe "+channel, say).
	acks map[string][]chan struct{}
}

// pubSub returns the subscription, opening it (without a connection yet)
// on first use.
func (w *watch) pubSub() (*redis.PubSub, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, false, redlock.ErrClosed
	}
	if w.ps != nil {
		return w.ps, false, nil
	}
	// Subscribe with no channel opens no connection: the first Watch's
	// SUBSCRIBE does, bounded by its context.
	if w.cluster != nil {
		w.ps = w.cluster.SSubscribe(context.Background())
	} else {
		w.ps = w.client.Subscribe(context.Background())
	}
	return w.ps, true, nil
}

// Watch subscribes to the releases of key. It returns once the node
// confirmed the subscription, so that every release announced after it
// calls notify.
func (w *watch) Watch(ctx context.Context, key string) error {
	ps, first, err := w.pubSub()
	if err != nil {
		return err
	}
	ch := ChannelPrefix + key
	if w.listen != nil { // nil on a cluster node, whose releases announce without a marker
		_ = w.listen.Watch(ctx, key) // best effort: announcements are hints
	}
	kind, subscribe := "subscribe", ps.Subscribe
	if w.cluster != nil {
		kind, subscribe = "ssubscribe", ps.SSubscribe
	}
	ack := w.expect(kind, ch)
	err = subscribe(ctx, ch)
	if err != nil && ctx.Err() == nil && !errors.Is(err, redis.ErrClosed) {
		// A write that failed made go-redis dial again and subscribe to
		// the channels it knew before this one: send it once more.
		err = subscribe(ctx, ch)
	}
	if first {
		w.startReceive(ps)
	}
	if err != nil {
		w.forget(kind, ch, ack)
		return err
	}
	return w.await(ctx, kind, ch, ack)
}

// expect registers a wait for the node's confirmation of kind (subscribe,
// unsubscribe) for channel ch, before the command is sent.
func (w *watch) expect(kind, ch string) chan struct{} {
	ack := make(chan struct{})
	w.mu.Lock()
	if w.acks == nil {
		w.acks = map[string][]chan struct{}{}
	}
	w.acks[kind+" "+ch] = append(w.acks[kind+" "+ch], ack)
	w.mu.Unlock()
	return ack
}

// await waits for ack (expect), or for ctx's end.
func (w *watch) await(ctx context.Context, kind, ch string, ack chan struct{}) error {
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		w.forget(kind, ch, ack)
		return fmt.Errorf("goredis: %s %s: no confirmation: %w", kind, ch, ctx.Err())
	}
}

// forget drops a wait that expect registered.
func (w *watch) forget(kind, ch string, ack chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := kind + " " + ch
	acks := w.acks[id]
	for i, a := range acks {
		if a == ack {
			acks = append(acks[:i], acks[i+1:]...)
			break
		}
	}
	if len(acks) == 0 {
		delete(w.acks, id)
	} else {
		w.acks[id] = acks
	}
}

// confirmed wakes the waits for the node's confirmation s; a
// sunsubscribe that nothing waited for (the master gave the channel's
// slot away) goes to dropped.
func (w *watch) confirmed(s *redis.Subscription) {
	id := s.Kind + " " + s.Channel
	w.mu.Lock()
	acks, waited := w.acks[id]
	delete(w.acks, id)
	w.mu.Unlock()
	for _, a := range acks {
		close(a)
	}
	if !waited && s.Kind == "sunsubscribe" && w.dropped != nil {
		w.dropped(s.Channel)
	}
}

// startReceive starts the goroutine that receives ps's messages, unless
// the watch was closed in between (Close then closed ps).
func (w *watch) startReceive(ps *redis.PubSub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	w.stop, w.done = stop, make(chan struct{})
	go w.receive(ctx, ps, w.done)
}

// Unwatch unsubscribes from the releases of key. It returns once the node
// confirmed it.
func (w *watch) Unwatch(ctx context.Context, key string) error {
	w.mu.Lock()
	ps, closed := w.ps, w.closed
	w.mu.Unlock()
	if ps == nil || closed {
		return nil
	}
	if w.listen != nil {
		w.listen.Unwatch(key)
	}
	ch := ChannelPrefix + key
	kind, unsubscribe := "unsubscribe", ps.Unsubscribe
	if w.cluster != nil {
		kind, unsubscribe = "sunsubscribe", ps.SUnsubscribe
	}
	ack := w.expect(kind, ch)
	if err := unsubscribe(ctx, ch); err != nil {
		w.forget(kind, ch, ack)
		return err
	}
	return w.await(ctx, kind, ch, ack)
}

// Close ends the subscription, closes its connection, and returns once its
// goroutine has returned. A Watch or Unwatch that is dialling the node
// holds go-redis' lock of the PubSub until its own context ends (a redlock
// client bounds each by one second), and Close waits for it.
func (w *watch) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	ps, stop, done := w.ps, w.stop, w.done
	w.mu.Unlock()
	if w.listen != nil {
		w.listen.Close()
	}
	if ps == nil {
		return nil
	}
	if stop != nil {
		stop() // the read loop's dial in progress returns
	}
	_ = ps.Close()
	if done != nil {
		<-done
	}
	return nil
}

// receive reads ps's messages and passes each release announcement to
// notify, until ps is closed or ctx ends. A read that fails makes go-redis
// close the connection; the next read dials again and subscribes to the
// watched channels, after a pause that doubles while the node stays
// unreachable. Nothing here logs.
func (w *watch) receive(ctx context.Context, ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	var pause time.Duration
	for {
		msg, err := ps.ReceiveTimeout(ctx, watchIdle)
		if isTimeout(err) && ctx.Err() == nil {
			// Silence: ask the node. Any reply will do; none within
			// watchPingTimeout is a read error that makes go-redis drop
			// the connection (Receive, unlike ReceiveTimeout, takes a
			// timeout for a dead connection).
			pctx, cancel := context.WithTimeout(ctx, watchPingTimeout)
			if err = ps.Ping(pctx); err == nil {
				msg, err = ps.Receive(pctx)
			}
			cancel()
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
				return
			}
			pause = min(max(2*pause, watchBackoffMin), watchBackoffMax)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		pause = 0
		switch m := msg.(type) {
		case *redis.Message:
			if key, ok := strings.CutPrefix(m.Channel, ChannelPrefix); ok {
				w.notify(key, m.Payload)
			}
		case *redis.Subscription:
			w.confirmed(m)
		}
	}
}

// isTimeout reports whether err is a read that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
