package goredis

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redlocktest"
	"dlm/redlock/redlocktest/faultconn"
)

// TestAFenceKeepsWhatItDidNotClose: a connection given up stays on the
// pipe's list until a later connection's kills were answered, whatever
// step of a replacing connection fails: the next connection that comes
// through closes it on the node. (The rueidis adapter forgot it when a
// connection could not write its kills, and a request held back on the old
// connection ran after the new one's: its TestAFenceKeepsWhatItDidNotClose.)
func TestAFenceKeepsWhatItDidNotClose(t *testing.T) {
	t.Parallel()
	s := redlocktest.StartServer(t)
	for _, tc := range []struct {
		name  string
		fault faultconn.Steps // of the connection that replaces the old one
	}{
		{"its handshake cannot be written", faultconn.Steps{FailWrite: 1}},
		{"its handshake is never answered", faultconn.Steps{FailReadsFrom: 1}},
		{"its kills cannot be written", faultconn.Steps{FailWrite: 2}},
		{"its kills are lost on the way and never answered", faultconn.Steps{DropFrom: 2, FailReadsFrom: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var faulty atomic.Bool
			dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				nc, err := d.DialContext(ctx, network, addr)
				if err != nil || !faulty.Load() {
					return nc, err
				}
				return faultconn.WithSteps(nc, tc.fault), nil
			}
			p := &pipe{opts: &redis.Options{Network: "tcp", Addr: s.Addr(), Dialer: dialer}}
			old, _, oldWho, err := p.dial(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			p.given.Retire(oldWho) // as startSetup does; its socket stays open
			if p.given.Empty() {
				t.Fatal("a given-up connection is not listed")
			}

			faulty.Store(true)
			if nc, _, _, err := p.dial(t.Context()); err == nil {
				_ = nc.Close()
				t.Fatal("the dial succeeded")
			}
			if p.given.Empty() {
				t.Error("after a replacing connection that closed nothing, the pipe's list is empty: the given-up connection is forgotten")
			}

			faulty.Store(false)
			next, _, _, err := p.dial(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			list, err := s.Client().ClientList(t.Context()).Result()
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.Lines(list) {
				for kv := range strings.FieldsSeq(line) {
					if kv == "id="+strconv.FormatInt(oldWho.ID, 10) {
						t.Errorf("the given-up connection (id %d) is still open on the node after the next connection's handshake", oldWho.ID)
					}
				}
			}
		})
	}
}
