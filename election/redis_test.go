package election_test

import (
	"errors"
	"testing"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// adapters are the node adapters the tests over real redis-server run on.
var adapters = []struct {
	name string
	dial func(urls []string, opts ...redlock.Option) (*redlock.Client, error)
}{
	{"goredis", goredis.Dial},
	{"rueidis", rueidis.Dial},
}

// dialRedis returns a fenced client over urls with the adapter, closed at
// the end of the test; the node timeout is generous for -race on a busy
// machine.
func dialRedis(t testing.TB, dial func([]string, ...redlock.Option) (*redlock.Client, error), urls []string, ttl time.Duration) *redlock.Client {
	t.Helper()
	c, err := dial(urls, redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Over real nodes: a leader is read back with its term; a second candidate
// waits while it leads; after the leader's process stops (its client
// closed without resigning: the keys stay until they expire) and two of
// five nodes crash, the second is elected within the ttl and a retry, with
// a higher term.
func TestElectionOverRedis(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			const ttl = 2 * time.Second
			cl := redlocktest.Start(t, 5)
			ca := dialRedis(t, a.dial, cl.URLs(), ttl)
			cb := dialRedis(t, a.dial, cl.URLs(), ttl)
			// a's leadership is extended every 100 ms: a test process
			// not run for a second does not end it while b waits.
			ea, _ := election.New(ca, "db", election.WithLockOptions(redlock.WithExtendInterval(100*time.Millisecond)))
			eb, _ := election.New(cb, "db")
			ctx := t.Context()
			lead, err := ea.Campaign(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := eb.Leader(ctx)
			if err != nil || !ok || got != (election.Leader{ID: "a", Term: lead.Term()}) {
				t.Fatalf("Leader = %+v, %v, %v; want a with term %d", got, ok, err, lead.Term())
			}
			for _, s := range cl.Servers {
				for _, k := range s.MustKeys("") {
					if v, _ := s.Client().Get(ctx, k).Result(); k == redlock.DefaultKeyPrefix+"election:db" && v == "" {
						t.Fatalf("lock key %s empty", k)
					}
				}
			}
			elected := make(chan *election.Leadership, 1)
			go func() {
				l, err := eb.Campaign(ctx, "b")
				if err != nil {
					t.Error(err)
				}
				elected <- l
			}()
			select {
			case l := <-elected:
				t.Fatalf("b elected while a leads: %+v", l)
			case <-time.After(ttl): // a keeps its leadership by extension
			}
			cl.Servers[3].Kill()
			cl.Servers[4].Kill()
			_ = ca.Close() // a's process stops: no resign, no more extensions
			stopped := time.Now()
			if !errors.Is(lead.Err(), redlock.ErrClosed) {
				t.Errorf("a.Err() = %v, want ErrClosed", lead.Err())
			}
			b := <-elected
			if b == nil {
				return
			}
			// Within the ttl and a retry, which a loaded machine stretches:
			// the bound only tells an election at the expiry from none.
			if d := time.Since(stopped); d > ttl+5*time.Second {
				t.Errorf("b elected %v after a stopped, want within the ttl %v and a retry", d, ttl)
			}
			if b.Term() <= lead.Term() {
				t.Errorf("term of b = %d, want above a's %d", b.Term(), lead.Term())
			}
			got, ok, err = eb.Leader(ctx)
			if err != nil || !ok || got != (election.Leader{ID: "b", Term: b.Term()}) {
				t.Fatalf("Leader = %+v, %v, %v; want b with term %d", got, ok, err, b.Term())
			}
			if err := b.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			got, ok, err = eb.Leader(ctx)
			if err != nil || ok || got != (election.Leader{Term: b.Term()}) {
				t.Fatalf("Leader after resign = %+v, %v, %v; want none, last term %d", got, ok, err, b.Term())
			}
		})
	}
}
