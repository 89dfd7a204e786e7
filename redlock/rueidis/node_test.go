package rueidis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

func TestConformance(t *testing.T) {
	redlocktest.RunNodeConformance(t, func(t testing.TB, s *redlocktest.Server) redlock.Node {
		return node(t, s)
	})
}

// dial returns a client over urls with a node timeout generous enough for a
// loaded machine under -race (the tests check behaviour, not speed).
func dial(t *testing.T, urls []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := rueidis.Dial(urls, append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestDialRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		urls []string
		opts []redlock.Option
	}{
		{"no urls", nil, nil},
		{"bad scheme", []string{"http://127.0.0.1:1"}, nil},
		{"duplicate", []string{"redis://127.0.0.1:7000", "redis://127.0.0.1:7000"}, nil},
		{"bad option", []string{"redis://127.0.0.1:7000"}, []redlock.Option{redlock.WithNodeTimeout(-1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := rueidis.Dial(tt.urls, tt.opts...)
			if !errors.Is(err, redlock.ErrInvalid) {
				if c != nil {
					_ = c.Close()
				}
				t.Fatalf("Dial error = %v, want ErrInvalid", err)
			}
		})
	}
}

// DialNode refuses a URL it cannot use with an error that names it.
func TestDialNodeRefusesBadInput(t *testing.T) {
	for _, raw := range []string{"", "http://127.0.0.1:1", "redis://127.0.0.1:70000"} {
		n, err := rueidis.DialNode(raw)
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), raw) {
			if n != nil {
				_ = n.Close()
			}
			t.Fatalf("DialNode(%q) error = %v, want ErrInvalid naming the URL", raw, err)
		}
	}
}

func TestDialWithANodeDown(t *testing.T) { // R1.3: a quorum is enough
	cl := redlocktest.Start(t, 5)
	cl.Servers[4].Kill()
	c := dial(t, cl.URLs(), redlock.WithTTL(10*time.Second))
	for i := range 3 {
		l, err := c.TryLock(t.Context(), "down")
		if err != nil {
			t.Fatalf("TryLock %d with 4 of 5 nodes up: %v", i, err)
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
	cl.Servers[4].Restart(0)
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		l, err := c.TryLock(t.Context(), "back")
		if err != nil {
			return false
		}
		defer l.Unlock(t.Context())
		return len(cl.Servers[4].MustKeys("dlm:lock:back")) == 1
	}, "the restarted node never took part again")
}

// subscribers counts the subscribers of key's release channel on every node.
func subscribers(t *testing.T, cl *redlocktest.Cluster, key string) int {
	t.Helper()
	n := 0
	for _, s := range cl.Servers {
		m, err := s.Client().PubSubNumSub(t.Context(), rueidis.ChannelPrefix+key).Result()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		n += int(m[rueidis.ChannelPrefix+key])
	}
	return n
}

// perNodeSubscribers lists the subscribers of key's release channel, node
// by node.
func perNodeSubscribers(t *testing.T, cl *redlocktest.Cluster, key string) []int64 {
	t.Helper()
	var out []int64
	for _, s := range cl.Servers {
		m, err := s.Client().PubSubNumSub(t.Context(), rueidis.ChannelPrefix+key).Result()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		out = append(out, m[rueidis.ChannelPrefix+key])
	}
	return out
}

// A waiter in another client retries on the release announcement, not after
// its (here very long) random delay (R10, R14).
func TestHandoffAcrossClients(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	slow := redlock.WithRetryDelay(time.Minute, time.Minute)
	holder := dial(t, cl.URLs(), redlock.WithTTL(time.Minute))
	waiter := dial(t, cl.URLs(), redlock.WithTTL(time.Minute), slow)

	l, err := holder.TryLock(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l2, err := waiter.Lock(ctx, "job")
		if err == nil {
			err = l2.Unlock(context.Background())
		}
		got <- err
	}()
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		return subscribers(t, cl, "dlm:lock:job") == redlock.HandoffWatchNodes
	}, "the waiter never subscribed to the release channel on %d nodes: %v", redlock.HandoffWatchNodes, perNodeSubscribers(t, cl, "dlm:lock:job"))
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v (the retry delay was a minute: the announcement did not wake it)", err)
	}
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		return subscribers(t, cl, "dlm:lock:job") == 0
	}, "the waiter did not unsubscribe after it got the lock")
}

// Waiters in the same client are woken by Unlock directly, oldest first, and
// with hand-off turned off they fall back to the timed retry.
func TestHandoffWithinClient(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	tests := []struct {
		name    string
		handoff bool
	}{
		{"on", true},
		{"off", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			delay := redlock.WithRetryDelay(time.Minute, time.Minute)
			if !tt.handoff {
				delay = redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond)
			}
			c := dial(t, cl.URLs(), redlock.WithTTL(time.Minute), delay, redlock.WithHandoff(tt.handoff))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			const workers, each = 8, 10
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						l, err := c.Lock(ctx, "shared-"+tt.name)
						if err != nil {
							errs <- err
							return
						}
						if err := l.Unlock(ctx); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("worker: %v", err)
			}
		})
	}
}

// A client built WithFencing accepts rueidis nodes and hands out increasing
// tokens (R18).
func TestFencingTokensIncrease(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	c := dial(t, cl.URLs(), redlock.WithFencing(), redlock.WithTTL(10*time.Second))
	var last uint64
	for i := range 3 {
		l, err := c.TryLock(t.Context(), "fenced")
		if err != nil {
			t.Fatalf("TryLock %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("token %d = %d, want > %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
	}
}

// Waiters that give up (their context ends) while Unlock hands the lock over
// to them leave no lock behind: an attempt sent on behalf of a waiter that
// left is settled in the background and its lock released, and mutual
// exclusion holds throughout (R1.1, R8.5).
func TestHandoffWaitersThatGiveUp(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	c, err := rueidis.Dial(cl.URLs(), redlock.WithNodeTimeout(time.Second),
		redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var inside, granted atomic.Int64
	// critical runs one critical section under l and releases it; it
	// reports what went wrong.
	critical := func(l *redlock.Lock, who string) error {
		if n := inside.Add(1); n != 1 {
			return fmt.Errorf("%d holders at once", n)
		}
		granted.Add(1)
		inside.Add(-1)
		if err := l.Unlock(ctx); err != nil {
			return fmt.Errorf("%s Unlock: %w", who, err)
		}
		return nil
	}
	errs := make(chan error, 16)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a steady holder: every Unlock hands over to the queue's head
		defer wg.Done()
		defer close(done)
		for range 150 {
			l, err := c.Lock(ctx, "quitters")
			if err != nil {
				errs <- fmt.Errorf("holder: %w", err)
				return
			}
			if err := critical(l, "holder"); err != nil {
				errs <- err
				return
			}
		}
	}()
	for w := range 8 {
		wg.Add(1)
		go func() { // waiters that give up after 0.1 to 2 ms
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				wctx, wcancel := context.WithTimeout(ctx, time.Duration(100+(w*7919+i*104729)%1900)*time.Microsecond)
				l, err := c.Lock(wctx, "quitters")
				wcancel()
				if err != nil {
					continue
				}
				if err := critical(l, "waiter"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := c.Close(); err != nil { // waits for the attempts settled in the background
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, s := range cl.Servers {
		if keys := s.MustKeys(redlock.DefaultKeyPrefix); len(keys) != 0 {
			t.Fatalf("%s: keys left after every Lock call ended and the client closed: %v (granted %d)", s.Addr(), keys, granted.Load())
		}
	}
	t.Logf("%d critical sections", granted.Load())
}

// A release that hands the lock to a waiter of the same client, in the same
// batch, is not announced to other clients (they could only fail against
// the waiter's SET NX); the waiter's own release, with no one left waiting,
// is (R14).
func TestLocalHandOverIsNotAnnounced(t *testing.T) {
	cl := redlocktest.Start(t, 5)
	c := dial(t, cl.URLs(), redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sub := cl.Servers[0].Client().Subscribe(ctx, rueidis.ChannelPrefix+"dlm:lock:local")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is active
		t.Fatal(err)
	}
	first, err := c.TryLock(ctx, "local")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *redlock.Lock, 1)
	go func() {
		l, err := c.Lock(ctx, "local")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		return subscribers(t, cl, "dlm:lock:local") == redlock.HandoffWatchNodes+1 // the waiter's client, and ours on node 0
	}, "the waiter never queued")
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second == nil {
		t.FailNow()
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Payload != second.Value() {
		t.Fatalf("first announcement carries %q; want the second holder's release %q (the hand-over from %q was announced)", msg.Payload, second.Value(), first.Value())
	}
}

func TestClusterConformance(t *testing.T) {
	redlocktest.RunClusterNodeConformance(t, func(t testing.TB, c *redlocktest.RedisCluster) redlock.Node {
		n, err := rueidis.DialNode(c.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		if !n.Cluster() {
			t.Fatal("a node dialled with cluster=true is not a cluster node")
		}
		return n
	})
}
