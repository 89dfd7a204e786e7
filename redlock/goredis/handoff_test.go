package goredis_test

import (
	"context"
	"errors"
	"log"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// dialers are the adapters a client of these tests can be built over: the
// hand-off must work across them on the same nodes.
var dialers = map[string]func(urls []string, opts ...redlock.Option) (*redlock.Client, error){
	"goredis": goredis.Dial,
	"rueidis": rueidis.Dial,
}

// dialWith returns a client over urls through the named adapter, with a
// node timeout generous enough for a loaded machine under -race.
func dialWith(t *testing.T, adapterName string, urls []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := dialers[adapterName](urls, append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("Dial over %s: %v", adapterName, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// subscribers counts the subscribers of key's release channel on every node.
func subscribers(t *testing.T, cl *redlocktest.Cluster, key string) int {
	t.Helper()
	n := 0
	for _, s := range cl.Servers {
		m, err := s.Client().PubSubNumSub(t.Context(), goredis.ChannelPrefix+key).Result()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		n += int(m[goredis.ChannelPrefix+key])
	}
	return n
}

// The go-redis node is a HandoffNode, on the channels of the rueidis node.
// On main it was not: a client over go-redis had no hand-off at all.
func TestNodeIsAHandoffNode(t *testing.T) {
	var n redlock.Node = goredis.NewNode(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), "x")
	defer n.(*goredis.Node).Client().Close()
	if _, ok := n.(adapter.HandoffNode); !ok {
		t.Fatal("goredis.Node is not an adapter.HandoffNode")
	}
	if goredis.ChannelPrefix != rueidis.ChannelPrefix {
		t.Fatalf("ChannelPrefix = %q, want rueidis' %q", goredis.ChannelPrefix, rueidis.ChannelPrefix)
	}
}

// A waiter in another client retries on the release announcement, not
// after its (here a minute long) random delay (R10, R14), whichever adapter
// the holder and the waiter are built over: both announce on the same
// channels with the same script. On main, the go-redis waiter never
// subscribed and slept out its delay.
func TestHandoffAcrossClientsAndAdapters(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	slow := redlock.WithRetryDelay(time.Minute, time.Minute)
	for _, tt := range []struct{ holder, waiter string }{
		{"goredis", "goredis"},
		{"rueidis", "goredis"},
		{"goredis", "rueidis"},
	} {
		t.Run(tt.holder+"-to-"+tt.waiter, func(t *testing.T) {
			key := "job-" + tt.holder + "-" + tt.waiter
			holder := dialWith(t, tt.holder, cl.URLs(), redlock.WithTTL(time.Minute))
			waiter := dialWith(t, tt.waiter, cl.URLs(), redlock.WithTTL(time.Minute), slow)
			l, err := holder.TryLock(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			got := make(chan error, 1)
			go func() {
				l2, err := waiter.Lock(ctx, key)
				if err == nil {
					err = l2.Unlock(context.Background())
				}
				got <- err
			}()
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				return subscribers(t, cl, "dlm:lock:"+key) == redlock.HandoffWatchNodes
			}, "the %s waiter never subscribed to the release channel on %d nodes", tt.waiter, redlock.HandoffWatchNodes)
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("%s waiter: %v (the retry delay was a minute: the %s holder's announcement did not wake it)", tt.waiter, err, tt.holder)
			}
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				return subscribers(t, cl, "dlm:lock:"+key) == 0
			}, "the waiter did not unsubscribe after it got the lock")
		})
	}
}

// nodes returns the two kinds of go-redis node over s: the batched one (a
// plain client) and the pooled one (a client with an OnConnect hook, which
// the Node cannot batch for). Both announce and hear releases.
func nodes(t *testing.T, s *redlocktest.Server) map[string]*goredis.Node {
	t.Helper()
	plain := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	hooked := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true,
		OnConnect: func(context.Context, *redis.Conn) error { return nil }})
	out := map[string]*goredis.Node{
		"batched": goredis.NewNode(plain, s.Addr()),
		"pooled":  goredis.NewNode(hooked, s.Addr()),
	}
	t.Cleanup(func() {
		for _, n := range out {
			_ = n.Close()
		}
		_ = plain.Close()
		_ = hooked.Close()
	})
	return out
}

// heard collects a watch's announcements.
type heard chan string

func (h heard) notify(key, value string) { h <- key + "=" + value }

// next returns the next announcement, failing the test after a deadline.
func (h heard) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-h:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no announcement heard within 10s")
		return ""
	}
}

// releaseHeard acquires key with value on n, releases it with an
// announcement (after a release of wrong, when not "", which must delete
// nothing) and checks that h hears it.
func releaseHeard(t *testing.T, n adapter.HandoffNode, h heard, key, value, wrong string) {
	t.Helper()
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, key, value, time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v; want true", ok, err)
	}
	if wrong != "" {
		if ok, err := n.ReleaseAnnounce(ctx, key, wrong); ok || err != nil {
			t.Fatalf("ReleaseAnnounce of another value = %v, %v; want false", ok, err)
		}
	}
	if ok, err := n.ReleaseAnnounce(ctx, key, value); !ok || err != nil {
		t.Fatalf("ReleaseAnnounce = %v, %v; want true", ok, err)
	}
	if got, want := h.next(t), key+"="+value; got != want {
		t.Fatalf("heard %q, want %q", got, want)
	}
}

// A release is announced, with the released value, only when it deleted
// the key; a rueidis node on the same server hears the go-redis node's
// announcements and the other way round. The first announcement heard
// after a release of the wrong value is the right value's: both went over
// the same ordered connection, so the wrong one would have come first.
func TestReleaseAnnounceAcrossAdapters(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	rn, err := rueidis.DialNode(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	for name, gn := range nodes(t, s) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range []struct {
				name      string
				announcer adapter.HandoffNode
				listener  adapter.HandoffNode
			}{
				{"goredis-heard-by-rueidis", gn, rn},
				{"rueidis-heard-by-goredis", rn, gn},
				{"goredis-heard-by-goredis", gn, gn},
			} {
				t.Run(tt.name, func(t *testing.T) {
					key := "ann:" + name + ":" + tt.name
					h := make(heard, 8)
					w, err := tt.listener.WatchReleases(h.notify)
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
					if err := w.Watch(ctx, key); err != nil {
						t.Fatalf("Watch: %v", err)
					}
					releaseHeard(t, tt.announcer, h, key, "mine", "other")
				})
			}
		})
	}
}

// The subscription outlives its connection: killed by the node (CLIENT
// KILL), it is dialled again by go-redis and subscribed to every watched
// key, and the announcements after that are heard.
func TestWatchSurvivesADroppedConnection(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	for name, n := range nodes(t, s) {
		t.Run(name, func(t *testing.T) {
			keys := []string{"drop:" + name + ":a", "drop:" + name + ":b"}
			h := make(heard, 8)
			w, err := n.WatchReleases(h.notify)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for _, k := range keys {
				if err := w.Watch(ctx, k); err != nil {
					t.Fatalf("Watch: %v", err)
				}
			}
			if err := s.Client().ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
				t.Fatalf("CLIENT KILL: %v", err)
			}
			redlocktest.Eventually(t, 10*time.Second, func() bool {
				m, err := s.Client().PubSubNumSub(ctx, goredis.ChannelPrefix+keys[0], goredis.ChannelPrefix+keys[1]).Result()
				return err == nil && m[goredis.ChannelPrefix+keys[0]] == 1 && m[goredis.ChannelPrefix+keys[1]] == 1
			}, "the subscription did not come back after its connection was killed")
			for _, k := range keys {
				releaseHeard(t, n, h, k, "v", "")
			}
		})
	}
}

// Close ends the subscription's goroutine and connection, also while its
// node is unreachable and it keeps dialling, and a redlock client that had
// waiters leaves no goroutine once closed.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	s := redlocktest.StartServer(t)
	ctx := t.Context()
	// The go-redis client stays open until the end: closing it would
	// close the subscription's connection too, and hide a Close that
	// does not.
	for _, tt := range []struct{ name, url string }{
		{"watch", s.URL()},
		{"watch-of-a-down-node", "redis://" + freeAddr(t)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := goredis.NewClient(mustParse(t, tt.url))
			t.Cleanup(func() { _ = c.Close() })
			n := goredis.NewNode(c, tt.name)
			t.Cleanup(func() { _ = n.Close() })
			before := goleak.IgnoreCurrent()
			w, err := n.WatchReleases(func(string, string) {})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			err = w.Watch(wctx, "leak")
			if up := tt.url == s.URL(); up != (err == nil) {
				t.Fatalf("Watch = %v with the node up = %v", err, up)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			goleak.VerifyNone(t, before)
			if err := w.Watch(ctx, "leak"); !errors.Is(err, redlock.ErrClosed) {
				t.Fatalf("Watch after Close = %v, want ErrClosed", err)
			}
		})
	}
	t.Run("client", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		cl := &redlocktest.Cluster{Servers: []*redlocktest.Server{s}}
		holder, err := goredis.Dial(cl.URLs(), redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		waiter, err := goredis.Dial(cl.URLs(), redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer waiter.Close()
		l, err := holder.TryLock(ctx, "leak-client")
		if err != nil {
			t.Fatal(err)
		}
		lctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() {
			_, err := waiter.Lock(lctx, "leak-client")
			got <- err
		}()
		redlocktest.Eventually(t, 10*time.Second, func() bool {
			return subscribers(t, cl, "dlm:lock:leak-client") == 1
		}, "the waiter never subscribed")
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock = %v, want context.Canceled", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := waiter.Close(); err != nil {
			t.Fatal(err)
		}
		if err := holder.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A client that is not a *redis.Client cannot hear releases: a Ring routes
// the release channel to another shard than the key. WatchReleases says so.
func TestWatchReleasesRefusesARing(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	n := goredis.NewNode(ring, "ring")
	w, err := n.WatchReleases(func(string, string) {})
	if w != nil || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("WatchReleases over a Ring = %v, %v; want an error wrapping errors.ErrUnsupported", w, err)
	}
}

// Waiting for a lock while some nodes are down prints nothing through
// go-redis' process-wide logger: the subscriptions to the down nodes dial
// again and again, quietly.
func TestDownNodesLogNothingWhileWaiting(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	urls := append(cl.URLs(), "redis://"+freeAddr(t), "redis://"+freeAddr(t))
	capture := &captureLog{}
	redis.SetLogger(capture)
	t.Cleanup(func() { redis.SetLogger(stderrLog{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })
	holder := dialWith(t, "goredis", urls, redlock.WithTTL(time.Minute))
	waiter := dialWith(t, "goredis", urls, redlock.WithTTL(time.Minute), redlock.WithRetryDelay(time.Minute, time.Minute))
	l, err := holder.TryLock(t.Context(), "down-wait")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		l2, err := waiter.Lock(ctx, "down-wait")
		if err == nil {
			err = l2.Unlock(context.Background())
		}
		got <- err
	}()
	redlocktest.Eventually(t, 10*time.Second, func() bool {
		return subscribers(t, cl, "dlm:lock:down-wait") == redlock.HandoffWatchNodes
	}, "the waiter never subscribed on %d of the nodes that are up", redlock.HandoffWatchNodes)
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if len(capture.msgs) > 0 {
		t.Errorf("go-redis logged %d lines, want none; first: %s", len(capture.msgs), capture.msgs[0])
	}
}

func mustParse(t *testing.T, url string) redlock.NodeURL {
	t.Helper()
	u, err := redlock.ParseNodeURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	return redlocktest.RefusingAddr(t)
}
