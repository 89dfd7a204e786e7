package torture

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"dlm/internal/ports"
)

// The proxies listen below the ephemeral range, so that healDropping,
// which stops a proxy and listens on its port again, never finds the port
// taken by an outgoing connection: with 127.0.0.1:0 a loaded run of
// TestScenarios/lying-node failed with "restarting the proxy for node2
// (group 0): listen tcp 127.0.0.1:41055: bind: address already in use".
func TestProxyPortsBelowEphemeralRange(t *testing.T) {
	low := 32768 // Linux's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	c, err := startCluster(t.Context(), clusterSpec{nodes: 2, groups: 2, liar: -1})
	requireEnv(t, err)
	defer c.close()
	for g := range c.proxies {
		for i, px := range c.proxies[g] {
			_, p, err := net.SplitHostPort(px.Listen)
			if err != nil {
				t.Fatal(err)
			}
			if port, _ := strconv.Atoi(p); port >= low {
				t.Errorf("proxy of node%d (group %d) listens on %s, in the ephemeral range from %d", i, g, px.Listen, low)
			}
			before := px.Listen
			if err := c.healDropping(t.Context(), g, i); err != nil {
				t.Fatal(err)
			}
			if px.Listen != before {
				t.Errorf("proxy of node%d (group %d) listens on %s after healDropping, want %s", i, g, px.Listen, before)
			}
		}
	}
}

// A proxy whose reserved port another socket holds for a moment starts
// once the port is free, and one whose port stays held fails naming the
// process that holds it. Before startProxy, the proxy's Start failed at
// once ("bind: address already in use"), and a restart by healDropping
// failed its scenario so in a fresh-clone run.
func TestAProxyWaitsForItsPortHeldAMoment(t *testing.T) {
	p, err := ports.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	hold := func() net.Listener {
		l, err := net.Listen("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	held := hold()
	px := toxiproxy.NewProxy(server, "held-a-moment", p.Addr(), "127.0.0.1:1")
	freed := make(chan struct{})
	go func() {
		defer close(freed)
		time.Sleep(200 * time.Millisecond) // the holder's moment, not a wait for an event
		_ = held.Close()
	}()
	if err := startProxy(px, time.Minute); err != nil {
		t.Fatalf("a proxy whose port was held for 200ms: %v, want it started once the port was free", err)
	}
	<-freed
	if c, err := net.Dial("tcp", p.Addr()); err != nil {
		t.Errorf("the proxy does not accept on %s: %v", p.Addr(), err)
	} else {
		_ = c.Close()
	}
	px.Stop()

	held = hold()
	defer held.Close()
	px = toxiproxy.NewProxy(server, "held-for-good", p.Addr(), "127.0.0.1:1")
	err = startProxy(px, 100*time.Millisecond)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("a proxy whose port stays held: %v, want address already in use", err)
	}
	if _, serr := os.Stat("/proc/net/tcp"); serr == nil && !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())+" (") {
		t.Errorf("a proxy whose port stays held: %v, want the holder (this process, pid %d) named", err, os.Getpid())
	}
}
