package goredis_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// A node that is down when a key is watched and comes back later: the
// Watch fails (the redlock client ignores it: the timed retry covers the
// gap, R10), but the subscription is made once the node is back, and the
// releases announced after that are heard; an Unwatch then ends it.
// (A final review: held.)
func TestWatchOfADownNodeThatComesBack(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	for name, n := range nodes(t, s) {
		t.Run(name, func(t *testing.T) {
			key := "back:" + name
			h := make(heard, 8)
			w, err := n.WatchReleases(h.notify)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			s.Kill()
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			err = w.Watch(wctx, key)
			cancel()
			if err == nil {
				t.Fatal("Watch with the node down = nil, want an error")
			}
			s.Restart(0)
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				m, err := s.Client().PubSubNumSub(ctx, goredis.ChannelPrefix+key).Result()
				return err == nil && m[goredis.ChannelPrefix+key] == 1
			}, "the key watched while the node was down is not subscribed once it is back")
			if ok, err := n.Acquire(ctx, key, "v", time.Minute); !ok || err != nil {
				t.Fatalf("Acquire = %v, %v; want true", ok, err)
			}
			if ok, err := n.ReleaseAnnounce(ctx, key, "v"); !ok || err != nil {
				t.Fatalf("ReleaseAnnounce = %v, %v; want true", ok, err)
			}
			if got, want := h.next(t), key+"=v"; got != want {
				t.Fatalf("heard %q, want %q", got, want)
			}
			if err := w.Unwatch(ctx, key); err != nil {
				t.Fatalf("Unwatch: %v", err)
			}
			m, err := s.Client().PubSubNumSub(ctx, goredis.ChannelPrefix+key).Result()
			if err != nil || m[goredis.ChannelPrefix+key] != 0 {
				t.Fatalf("after Unwatch: %v subscribers, %v; want 0", m, err)
			}
		})
	}
}

// Close while the first Watch is still dialling a node that accepts the
// connection but never answers (a node in a long pause): Close returns,
// the Watch returns an error, no goroutine is left, and neither error
// shows the password of the node's URL. (A final review: held.)
func TestCloseDuringTheFirstWatchsDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	const secret = "s3cr3t-pw"
	before := goleak.IgnoreCurrent()
	c := goredis.NewClient(mustParse(t, "redis://:"+secret+"@"+ln.Addr().String()))
	n := goredis.NewNode(c, ln.Addr().String())
	w, err := n.WatchReleases(func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), time.Second) // the redlock client's bound (handoffSubscribeTimeout)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- w.Watch(wctx, "mid-dial") }()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the Watch never dialled")
	}
	closed := make(chan error, 1)
	closing := time.Now()
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close still blocked 30s after the dial began")
	}
	t.Logf("Close returned after %v", time.Since(closing))
	var werr error
	select {
	case werr = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("Watch still blocked 30s after Close")
	}
	t.Logf("Watch returned %v after %v", werr, time.Since(closing))
	if werr == nil {
		t.Fatal("Watch = nil against a node that never answers, want an error")
	}
	if strings.Contains(werr.Error(), secret) {
		t.Errorf("Watch's error shows the password: %v", werr)
	}
	if err := w.Watch(t.Context(), "after"); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Watch after Close = %v, want ErrClosed", err)
	}
	_ = n.Close()
	_ = c.Close()
	goleak.VerifyNone(t, before)
}

// Many keys watched at once over go-redis: a waiter on each of 40 keys
// hears its release (the waiters' timed retry is a minute away), and once
// every lock is unlocked no channel keeps a subscriber on any node: the
// Watch and Unwatch calls of the keys, queued per node, end in order.
// (A final review: held.)
func TestManyKeysWatchedThenUnwatched(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	holder := dialWith(t, "goredis", cl.URLs(), redlock.WithTTL(time.Minute))
	waiter := dialWith(t, "goredis", cl.URLs(), redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const keys = 40
	held := make([]*redlock.Lock, keys)
	for i := range held {
		l, err := holder.TryLock(ctx, "many"+string(rune('A'+i)))
		if err != nil {
			t.Fatal(err)
		}
		held[i] = l
	}
	got := make(chan error, keys)
	for i := range keys {
		go func() {
			l, err := waiter.Lock(ctx, "many"+string(rune('A'+i)))
			if err == nil {
				err = l.Unlock(context.WithoutCancel(ctx))
			}
			got <- err
		}()
	}
	for i := range keys {
		key := "dlm:lock:many" + string(rune('A'+i))
		redlocktest.Eventually(t, 20*time.Second, func() bool {
			return subscribers(t, cl, key) == redlock.HandoffWatchNodes
		}, "the waiter of %s never subscribed on %d nodes", key, redlock.HandoffWatchNodes)
	}
	for _, l := range held {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range keys {
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v (a release not heard: the timed retry is a minute away)", err)
		}
	}
	for i := range keys {
		key := "dlm:lock:many" + string(rune('A'+i))
		redlocktest.Eventually(t, 20*time.Second, func() bool {
			return subscribers(t, cl, key) == 0
		}, "%s still has subscribers after every lock was unlocked", key)
	}
}
