package torture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"dlm/internal/ports"
	"dlm/redlock/redisproc"
)

// ErrEnvironment is wrapped by the errors of a run that this machine cannot
// perform: redis-server or libfaketime missing. The message says what to
// install.
var ErrEnvironment = errors.New("torture: environment cannot run this scenario")

// faketimeDirs are where Debian and a source install put libfaketime.
var faketimeDirs = []string{
	"/usr/lib/x86_64-linux-gnu/faketime",
	"/usr/lib/aarch64-linux-gnu/faketime",
	"/usr/lib/faketime",
	"/usr/local/lib/faketime",
}

// FaketimeLibrary returns the path of libfaketime.so.1, or an error wrapping
// ErrEnvironment that says how to install it.
func FaketimeLibrary() (string, error) {
	for _, d := range faketimeDirs {
		p := filepath.Join(d, "libfaketime.so.1")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: libfaketime.so.1 not found in %s (Debian: apt-get install faketime)", ErrEnvironment, strings.Join(faketimeDirs, ", "))
}

// cluster is N redis-server processes, each reached by each group of clients
// through its own TCP proxy, so that links can be cut or slowed per group.
type cluster struct {
	procs   []*redisproc.Process
	clocks  []string             // faketime timestamp files, "" for a node on real time
	offsets []int64              // current clock offset of each node, seconds
	proxies [][]*toxiproxy.Proxy // [group][node]
	ports   []*ports.Port        // the proxies' ports, reserved until close
	server  *toxiproxy.ApiServer
	liar    *redisproc.Liar // in front of node liarAt, nil when every node is honest
	liarAt  int
	dir     string
	redis   []*redisproc.Cluster // nodes that are Redis Clusters (scenario_cluster.go), instead of procs

	mu     sync.Mutex
	toxics map[string]bool // "group/node/name" of the toxics in place
}

// clusterSpec describes the cluster a scenario needs.
type clusterSpec struct {
	nodes       int
	groups      int
	persistence bool
	faketime    []bool // nodes run under libfaketime
	liar        int    // index of the lying node, -1 for none
}

// startCluster starts the nodes and their proxies; on error it stops what
// it started.
func startCluster(ctx context.Context, s clusterSpec) (_ *cluster, err error) {
	if !redisproc.Available() {
		return nil, fmt.Errorf("%w: %v", ErrEnvironment, redisproc.ErrNotFound)
	}
	dir, err := os.MkdirTemp("", "dlm-torture-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, toxics: map[string]bool{}}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	c.server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	lib := ""
	for _, ft := range s.faketime {
		if ft && lib == "" {
			if lib, err = FaketimeLibrary(); err != nil {
				return nil, err
			}
		}
	}
	c.procs = make([]*redisproc.Process, s.nodes)
	c.clocks = make([]string, s.nodes)
	c.offsets = make([]int64, s.nodes)
	var wg sync.WaitGroup
	errs := make([]error, s.nodes)
	for i := range s.nodes {
		cfg := redisproc.Config{Persistence: s.persistence}
		if i < len(s.faketime) && s.faketime[i] {
			c.clocks[i] = filepath.Join(dir, fmt.Sprintf("clock%d", i))
			if err := os.WriteFile(c.clocks[i], []byte("+0\n"), 0o644); err != nil {
				return nil, err
			}
			// Debian's redis-server links jemalloc, which clashes with
			// libfaketime's initialisation (libfaketime issue #130);
			// preloading libc after libfaketime makes malloc resolve to
			// glibc's and the server starts. FAKETIME_NO_CACHE makes a
			// rewrite of the timestamp file take effect at once.
			cfg.Env = []string{
				"LD_PRELOAD=" + lib + " libc.so.6",
				"FAKETIME_TIMESTAMP_FILE=" + c.clocks[i],
				"FAKETIME_NO_CACHE=1",
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.procs[i], errs[i] = redisproc.Start(ctx, cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.liarAt = s.liar
	if s.liar >= 0 {
		if c.liar, err = redisproc.StartLiar(c.procs[s.liar].Addr(), redisproc.LieOnSet); err != nil {
			return nil, err
		}
	}
	c.proxies = make([][]*toxiproxy.Proxy, s.groups)
	for g := range s.groups {
		c.proxies[g] = make([]*toxiproxy.Proxy, s.nodes)
		for i, p := range c.procs {
			upstream := p.Addr()
			if c.liar != nil && i == s.liar {
				upstream = c.liar.Addr()
			}
			port, err := ports.Reserve()
			if err != nil {
				return nil, fmt.Errorf("torture: proxy for node%d: %w", i, err)
			}
			c.ports = append(c.ports, port)
			px := toxiproxy.NewProxy(c.server, fmt.Sprintf("g%d-node%d", g, i), port.Addr(), upstream)
			if err := startProxy(px, proxyPortWait); err != nil {
				return nil, fmt.Errorf("torture: proxy for node%d: %w", i, err)
			}
			c.proxies[g][i] = px
		}
	}
	return c, nil
}

// nodeName names node i in histories and reports.
func nodeName(i int) string { return "node" + strconv.Itoa(i) }

// urls returns the node URLs that clients of group g use.
// The nodes are the single servers (procs), then the cluster nodes
// (redis): in random mode with cluster nodes, both.
func (c *cluster) urls(g int) []string {
	var out []string
	if g < len(c.proxies) {
		for _, px := range c.proxies[g] {
			out = append(out, "redis://"+px.Listen)
		}
	}
	for _, rc := range c.redis {
		out = append(out, rc.URL())
	}
	return out
}

// addToxic puts a toxic on node i's proxy of group g.
func (c *cluster) addToxic(g, i int, name, typ, stream string, attrs string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := fmt.Sprintf("%d/%d/%s", g, i, name)
	if c.toxics[key] {
		return nil
	}
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := c.proxies[g][i].Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		return fmt.Errorf("torture: toxic %s on node%d (group %d): %w", name, i, g, err)
	}
	c.toxics[key] = true
	return nil
}

// removeToxic takes a toxic off node i's proxy of group g.
func (c *cluster) removeToxic(ctx context.Context, g, i int, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := fmt.Sprintf("%d/%d/%s", g, i, name)
	if !c.toxics[key] {
		return
	}
	_ = c.proxies[g][i].Toxics.RemoveToxic(ctx, name)
	delete(c.toxics, key)
}

// cut holds back every byte between group g and node i, both ways:
// requests time out, as across a partition. heal delivers what was held;
// healDropping drops it.
func (c *cluster) cut(g, i int) error {
	if err := c.addToxic(g, i, "cut-up", "timeout", "upstream", `{"timeout":0}`); err != nil {
		return err
	}
	return c.addToxic(g, i, "cut-down", "timeout", "downstream", `{"timeout":0}`)
}

// heal undoes cut.
func (c *cluster) heal(ctx context.Context, g, i int) {
	c.removeToxic(ctx, g, i, "cut-up")
	c.removeToxic(ctx, g, i, "cut-down")
}

// healDropping undoes cut and drops what the cut held back: the proxy's
// connections close before the link comes back, so that no request sent
// across the cut reaches node i late (heal delivers it: the cut delays
// bytes, as a partition that TCP outlives does). The clients of group g
// reconnect on their next request.
func (c *cluster) healDropping(ctx context.Context, g, i int) error {
	px := c.proxies[g][i]
	px.Stop()
	c.heal(ctx, g, i)
	if err := startProxy(px, proxyPortWait); err != nil {
		return fmt.Errorf("torture: restarting the proxy for node%d (group %d): %w", i, g, err)
	}
	return nil
}

// proxyPortWait is how long a proxy waits for its port, reserved but held
// by another socket (startProxy).
const proxyPortWait = 10 * time.Second

// startProxy starts px listening on its port, which is reserved for it
// (dlm/internal/ports) but may be held a moment by a socket of a process
// that ignores reservations: while the bind is refused as "address
// already in use", it tries again every 20ms, up to wait; then it fails
// naming the processes that hold the port. A proxy restarted by
// healDropping once found its port taken in a fresh-clone run beside two
// busy loops ("listen tcp 127.0.0.1:15116: bind: address already in
// use"), by a socket no reservation showed.
func startProxy(px *toxiproxy.Proxy, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := px.Start()
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		if time.Now().After(deadline) {
			if _, p, perr := net.SplitHostPort(px.Listen); perr == nil {
				if port, perr := strconv.Atoi(p); perr == nil {
					if hs := ports.Holders(port); len(hs) > 0 {
						err = fmt.Errorf("%w; the port is held by %s", err, strings.Join(hs, "; "))
					}
				}
			}
			return fmt.Errorf("%w (tried for %v)", err, wait)
		}
		time.Sleep(20 * time.Millisecond) // polling the port, bounded by wait
	}
}

// slow adds latency to node i's replies, for every group.
func (c *cluster) slow(i int, d time.Duration) error {
	for g := range c.proxies {
		if err := c.addToxic(g, i, "slow", "latency", "downstream", fmt.Sprintf(`{"latency":%d,"jitter":0}`, d.Milliseconds())); err != nil {
			return err
		}
	}
	return nil
}

// unslow undoes slow.
func (c *cluster) unslow(ctx context.Context, i int) {
	for g := range c.proxies {
		c.removeToxic(ctx, g, i, "slow")
	}
}

// jump moves node i's clock by d (whole seconds, rounded up), through
// libfaketime's timestamp file.
func (c *cluster) jump(i int, d time.Duration) error {
	if c.clocks[i] == "" {
		return fmt.Errorf("torture: node%d does not run under libfaketime", i)
	}
	secs := int64((d + time.Second - 1) / time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offsets[i] += secs
	return os.WriteFile(c.clocks[i], fmt.Appendf(nil, "%+d\n", c.offsets[i]), 0o644)
}

// close stops the proxies and the nodes and removes the data.
func (c *cluster) close() {
	c.mu.Lock()
	for key := range c.toxics {
		var g, i int
		var name string
		if _, err := fmt.Sscanf(strings.ReplaceAll(key, "/", " "), "%d %d %s", &g, &i, &name); err == nil {
			_ = c.proxies[g][i].Toxics.RemoveToxic(context.Background(), name)
		}
		delete(c.toxics, key)
	}
	c.mu.Unlock()
	for _, g := range c.proxies {
		for _, px := range g {
			if px != nil {
				px.Stop()
			}
		}
	}
	for _, p := range c.ports {
		p.Release()
	}
	if c.liar != nil {
		c.liar.Close()
	}
	for _, p := range c.procs {
		if p != nil {
			p.Close()
		}
	}
	for _, rc := range c.redis {
		rc.Close()
	}
	_ = os.RemoveAll(c.dir)
}
