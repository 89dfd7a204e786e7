package batch

import (
	"context"
	"sync"
	"time"
)

// The listening marker (scripts.ListenKey): a key that a client sets on a
// node, with an expiry of ListenTTL, before it subscribes there to any
// release channel, and sets again every ListenRefresh while it listens.
// The batch script (batch.lua) looks for a subscriber to a release's
// channel only while the marker exists: a node where nobody listens then
// pays one EXISTS per batch for its releases' announcements, instead of
// building each channel's name and asking for its subscribers.
const (
	ListenTTL     = 10 * time.Second
	ListenRefresh = 3 * time.Second
	// listenTimeout bounds one refresh of the marker by the keeper.
	listenTimeout = time.Second
)

// Listener keeps one node's listening marker set while a release watch
// there has keys. Its methods are safe for concurrent use.
type Listener struct {
	set func(ctx context.Context) error // SET the marker, PX ListenTTL

	mu      sync.Mutex
	last    time.Time // of the last marker set that succeeded
	keys    map[string]struct{}
	keeping bool
	closed  bool
	stop    chan struct{}
}

// NewListener returns a Listener that sets the marker with set.
func NewListener(set func(ctx context.Context) error) *Listener {
	return &Listener{set: set, keys: map[string]struct{}{}, stop: make(chan struct{})}
}

// Watch records that key is about to be subscribed to, and sets the marker
// first unless it was set less than ListenRefresh ago, so that every
// release after the subscription looks for its subscribers. An error to
// set it leaves the announcements of batched releases off on the node
// until a refresh succeeds; they are hints, and a waiter's timed retry
// (R10) covers them.
func (l *Listener) Watch(ctx context.Context, key string) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.keys[key] = struct{}{}
	due := time.Since(l.last) >= ListenRefresh
	if !l.keeping {
		l.keeping = true
		go l.keep()
	}
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.mark(ctx)
}

// Unwatch records that key is no longer subscribed to.
func (l *Listener) Unwatch(key string) {
	l.mu.Lock()
	delete(l.keys, key)
	l.mu.Unlock()
}

// Mark sets the marker now, whatever its age: before subscribing again
// after a lost connection, when the node may have restarted without it.
func (l *Listener) Mark(ctx context.Context) error { return l.mark(ctx) }

// mark sets the marker.
func (l *Listener) mark(ctx context.Context) error {
	start := time.Now()
	if err := l.set(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	if start.After(l.last) {
		l.last = start
	}
	l.mu.Unlock()
	return nil
}

// keep sets the marker again every ListenRefresh while any key is watched,
// until Close.
func (l *Listener) keep() {
	t := time.NewTicker(ListenRefresh)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		active := len(l.keys) > 0
		l.mu.Unlock()
		if active {
			ctx, cancel := context.WithTimeout(context.Background(), listenTimeout)
			_ = l.mark(ctx) // the next tick tries again
			cancel()
		}
	}
}

// Close stops the refreshes; the marker expires on its own.
func (l *Listener) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.stop)
	}
}
