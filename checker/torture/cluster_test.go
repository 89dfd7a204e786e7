package torture

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
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
