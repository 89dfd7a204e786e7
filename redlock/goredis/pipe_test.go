package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// countingClient is a go-redis client whose Dialer counts its dials: the
// node must dial with the client's own Dialer.
func countingClient(t *testing.T, addr string, o redis.Options) (*redis.Client, *atomic.Int64) {
	t.Helper()
	var dials atomic.Int64
	o.Addr = addr
	o.MaxRetries = -1
	o.ContextTimeoutEnabled = true
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c, &dials
}

// A request that times out on a frozen node does not cost the node its
// connection: the replies are read later and dropped, and the requests
// after it get their own replies. On the unbatched adapter (one go-redis
// pool request per call) go-redis closed the timed-out connection and
// dialled again (dials 2 here, not 1).
func TestTimeoutKeepsTheConnection(t *testing.T) {
	s := redlocktest.StartServer(t)
	c, dials := countingClient(t, s.Addr(), redis.Options{})
	n := goredis.NewNode(c, s.Addr())
	t.Cleanup(func() { _ = n.Close() })
	ctx := t.Context()
	if ok, err := n.Acquire(ctx, "k:first", "v", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v; want true", ok, err)
	}
	s.Freeze()
	for _, key := range []string{"k:late1", "k:late2"} {
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		ok, err := n.Acquire(tctx, key, "v", time.Minute)
		cancel()
		if ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire on a frozen node = %v, %v; want a deadline error", ok, err)
		}
	}
	s.Thaw()
	// The late SETs were on the wire: the node ran them after the thaw.
	steps := []struct {
		key, value string
		want       bool
	}{
		{"k:late1", "w", false},
		{"k:late2", "w", false},
		{"k:after", "w", true},
		{"k:first", "w", false},
	}
	for _, st := range steps {
		ok, err := n.Acquire(ctx, st.key, st.value, time.Minute)
		if err != nil || ok != st.want {
			t.Fatalf("Acquire(%s) = %v, %v; want %v", st.key, ok, err, st.want)
		}
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("dials = %d, want 1 (the connection kept across the timeouts)", got)
	}
}

// The node's connection uses the client's credentials and DB; a wrong
// password is an error that does not quote it.
func TestConnectionHonoursTheClientOptions(t *testing.T) {
	const pass = "s3cret-pass"
	s := redlocktest.StartServer(t)
	// The password is set after the start (the start's readiness check
	// does not authenticate), and taken off again before the stop.
	if err := s.Client().ConfigSet(t.Context(), "requirepass", pass).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: pass})
		defer admin.Close()
		_ = admin.ConfigSet(context.Background(), "requirepass", "").Err()
	})
	tests := []struct {
		name    string
		opts    redis.Options
		wantErr bool
	}{
		{"password and DB", redis.Options{Password: pass, DB: 3}, false},
		{"credentials provider", redis.Options{CredentialsProvider: func() (string, string) { return "default", pass }}, false},
		{"wrong password", redis.Options{Password: "wrong-" + pass}, true},
		{"no password", redis.Options{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dials := countingClient(t, s.Addr(), tt.opts)
			n := goredis.NewNode(c, s.Addr())
			t.Cleanup(func() { _ = n.Close() })
			key := "opts:" + tt.name
			ok, err := n.Acquire(t.Context(), key, "v", time.Minute)
			if tt.wantErr {
				if err == nil || strings.Contains(err.Error(), pass) {
					t.Fatalf("Acquire = %v, %v; want an error that does not quote the password", ok, err)
				}
				return
			}
			if !ok || err != nil {
				t.Fatalf("Acquire = %v, %v; want true", ok, err)
			}
			if dials.Load() != 1 {
				t.Errorf("dials = %d, want 1 (the client's Dialer)", dials.Load())
			}
			admin := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: pass, DB: tt.opts.DB})
			defer admin.Close()
			if v, err := admin.Get(t.Context(), key).Result(); v != "v" || err != nil {
				t.Errorf("key in DB %d = %q, %v; want %q", tt.opts.DB, v, err, "v")
			}
		})
	}
}

// captureLog is a go-redis logger that keeps what it is given.
type captureLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *captureLog) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, v...))
	l.mu.Unlock()
}

// Locking over a quorum while other nodes are down prints nothing through
// go-redis' process-wide logger ("failed to dial after 1 attempts" was
// printed for every request to a down node by the unbatched adapter).
func TestDownNodesLogNothing(t *testing.T) {
	cl := redlocktest.Start(t, 3)
	urls := cl.URLs()
	for range 2 {
		// A port held for the test, where nothing listens: one listened
		// on and closed again was handed out twice in a fresh-clone run
		// (the client refused two URLs naming one server).
		urls = append(urls, "redis://"+redlocktest.RefusingAddr(t))
	}
	capture := &captureLog{}
	redis.SetLogger(capture)
	t.Cleanup(func() { redis.SetLogger(stderrLog{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })
	c, err := goredis.Dial(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 20 {
		l, err := c.TryLock(t.Context(), fmt.Sprintf("down-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if len(capture.msgs) > 0 {
		t.Errorf("go-redis logged %d lines, want none; first: %s", len(capture.msgs), capture.msgs[0])
	}
}

// stderrLog is go-redis' default logger again, after the test.
type stderrLog struct{ l *log.Logger }

func (s stderrLog) Printf(_ context.Context, format string, v ...any) {
	_ = s.l.Output(2, fmt.Sprintf(format, v...))
}
