package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// CheckNodes over real nodes, both adapters: one server given twice (two
// URLs, 127.0.0.1 and localhost) is refused; a ttl over the max ttl that
// the nodes advertise is refused, and after the check so is every lock
// with a longer ttl, without a request; fencing over nodes that do not
// sync every write warns, naming dlm node --fencing; an even number of
// nodes warns. A ttl within the advertised max ttl passes.
func TestCheckNodes(t *testing.T) {
	eachAdapter(t, func(t *testing.T, a nodeAdapter) {
		cl := redlocktest.Start(t, 3)
		urls := cl.URLs()
		alias := strings.Replace(urls[0], "127.0.0.1", "localhost", 1)
		c, err := a.dial([]string{urls[0], alias, urls[1]}, redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.CheckNodes(t.Context()); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "one server") {
			t.Errorf("CheckNodes with one server twice = %v, want ErrInvalid saying one server", err)
		}

		for _, s := range cl.Servers {
			if err := s.Client().Set(t.Context(), adapter.MaxTTLKey, "40s", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		long, err := a.dial(urls, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer long.Close()
		if _, err := long.CheckNodes(t.Context()); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "max ttl 40s") {
			t.Errorf("CheckNodes with a 1m ttl on nodes advertising 40s = %v, want ErrInvalid naming max ttl 40s", err)
		}

		c2, err := a.dial(urls, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(time.Second), redlock.WithFencing())
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		rep, err := c2.CheckNodes(t.Context())
		if err != nil {
			t.Fatalf("CheckNodes with a 30s ttl = %v", err)
		}
		if len(rep.Warnings) != 3 || !strings.Contains(rep.Warnings[0], "dlm node --fencing") {
			t.Errorf("warnings %q, want one per node naming dlm node --fencing", rep.Warnings)
		}
		if rep.Facts[0].MaxTTL != 40*time.Second || rep.Facts[0].RunID == "" {
			t.Errorf("facts of node 1 = %+v, want max ttl 40s and a run id", rep.Facts[0])
		}
		if l, err := c2.TryLock(t.Context(), "x", redlock.WithTTL(time.Minute)); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("TryLock with a 1m ttl after the check = %v, %v; want ErrInvalid", l, err)
		}
		l, err := c2.TryLock(t.Context(), "x")
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Unlock(t.Context())

		even, err := a.dial(append(urls, redlocktest.Start(t, 1).URLs()...), redlock.WithNodeTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer even.Close()
		rep, err = even.CheckNodes(t.Context())
		if err != nil || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "even") {
			t.Errorf("CheckNodes over 4 nodes = %q, %v; want one warning about an even number", rep.Warnings, err)
		}
	})
}
