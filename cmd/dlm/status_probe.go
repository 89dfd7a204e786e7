package main

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
)

// nodeMaxTTLKey is the key `dlm node` sets on its redis-server after
// starting it: its value is the --max-ttl the node waits after an unclean
// stop (R16.3), which `dlm doctor` reads.
const nodeMaxTTLKey = "dlm:node:max-ttl"

// maxKeysCounted bounds the SCAN that counts lock keys on a node.
const maxKeysCounted = 100000

// probe is what status and doctor learned from one node.
type probe struct {
	// Node is the node's address (no credentials).
	Node string
	// Err is why the node could not be reached; the fields below are then
	// empty.
	Err error
	// RTT is the round trip of one request on the open connection
	// (TIME's; the first PING's, the connection's included, when TIME
	// failed).
	RTT time.Duration
	// Version and RunID come from INFO server.
	Version, RunID string
	// Role is "master" or "slave" (INFO replication); Master is the
	// master's host:port of a replica; Replicas counts a master's
	// connected replicas.
	Role     string
	Master   string
	Replicas int
	// ClusterEnabled is INFO cluster's cluster_enabled:1: a master of a
	// Redis Cluster (a URL without cluster=true reaches one master only).
	ClusterEnabled bool
	// Keys counts the lock keys under the prefix (at most maxKeysCounted),
	// on every master of a node that is a Redis Cluster.
	Keys int
	// Config holds CONFIG GET answers (maxmemory-policy, maxmemory,
	// appendonly, appendfsync, save); ConfigErr is set when CONFIG is
	// refused.
	Config    map[string]string
	ConfigErr error
	// ClockOffset is the node's TIME minus this process's clock at the
	// midpoint of the request; ClockErr is half the request's round trip,
	// the offset's uncertainty. ClockOK is false when TIME failed.
	ClockOffset, ClockErr time.Duration
	ClockOK               bool
	// NodeMaxTTL is the --max-ttl of a node started by `dlm node` ("" when
	// absent).
	NodeMaxTTL string
	// Cluster is true for a node that is a Redis Cluster: the fields
	// above are its seed master's (or, when the seed does not answer,
	// another live master's), and doctor checks every master
	// (doctor_cluster.go). Masters are then each master's probe
	// (status_cluster.go).
	Cluster bool
	Masters []probe
	// Refused names what the node refused to tell the user, as the
	// clients name it (adapter.Facts.Refused: INFO, CONFIG GET, the GET
	// of the advertised max ttl, CLIENT KILL): the clients then refuse
	// the node (redlock.WithUncheckedNodes). Disabled names those of
	// them that the server does not know (adapter.Facts.Disabled: a
	// service that disables CONFIG), which no ACL rule grants.
	Refused, Disabled []string
}

// probeNodes probes every node concurrently, each request to a node
// bounded by timeout (probeNode). cfgs[i] (nil: the adapter's defaults)
// applies to urls[i] when it is rediss://.
func probeNodes(ctx context.Context, urls []redlock.NodeURL, prefix string, timeout time.Duration, cfgs []*tls.Config) []probe {
	out := make([]probe, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if u.Cluster {
				out[i] = probeClusterNode(ctx, u, cfgs[i], timeout, prefix) // status_cluster.go
			} else {
				c := goredisTLS(goredis.NewClient(u), cfgs[i])
				defer c.Close()
				out[i] = probeNode(ctx, c, u.String(), prefix, timeout)
			}
			if err := out[i].Err; err != nil {
				if h := schemeHint(ctx, u, max(timeout, probeTimeout)); h != "" { // tls_scheme.go
					if re, ok := err.(*reasonError); ok {
						err = re.err // withTLSHint's guess: h says what it is
					}
					out[i].Err = &reasonError{msg: err.Error() + "; " + h, err: err}
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// probeBudget bounds a whole probe of one node whose requests are each
// bounded by timeout: the round trips probeNode makes on nodes that
// answer, the connection's included, with a few SCAN pages.
func probeBudget(timeout time.Duration) time.Duration {
	const roundTrips = 8
	if timeout > math.MaxInt64/roundTrips {
		return math.MaxInt64
	}
	return roundTrips * timeout
}

// probeNode asks one node everything status and doctor need, each request
// within timeout: a healthy node that answers slowly (a loaded machine, a
// slow link) is reported up with its round trip, not down. The first
// request opens the connection, whose handshake is a round trip of its
// own: it has two timeouts. Only an unanswered PING makes the node
// unreachable (refused or reset at once: down; no answer within the two
// timeouts: hung); later failures leave their fields empty.
func probeNode(ctx context.Context, c *redis.Client, name, prefix string, timeout time.Duration) probe {
	p := probe{Node: name}
	within := func(n int) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, time.Duration(n)*timeout)
	}
	start := time.Now()
	rctx, cancel := within(2)
	err := c.Ping(rctx).Err()
	cancel()
	if err != nil {
		p.Err = withTLSHint(err)
		return p
	}
	p.RTT = time.Since(start)  // the connection's too; TIME's below when it answers
	var declined adapter.Facts // what the node refused, as the clients read it
	refused := func(err error, what string) {
		if err != nil {
			declined.Decline(what, err.Error())
		}
	}
	// The questions whose answers need no timing, at once: each on a
	// connection of its own (go-redis' pool), its handshake included, so
	// that a slow node costs two round trips for them all.
	configKeys := []string{"maxmemory-policy", "maxmemory", "appendonly", "appendfsync", "save"}
	var (
		infoCmd *redis.StringCmd
		configs = make([]*redis.MapStringStringCmd, len(configKeys))
		maxTTL  *redis.StringCmd
		kill    *redis.IntCmd
		wg      sync.WaitGroup
	)
	ask := func(f func(ctx context.Context)) {
		wg.Go(func() {
			rctx, cancel := within(2)
			defer cancel()
			f(rctx)
		})
	}
	ask(func(ctx context.Context) { infoCmd = c.Info(ctx, "server", "replication", "cluster") })
	for i, k := range configKeys {
		ask(func(ctx context.Context) { configs[i] = c.ConfigGet(ctx, k) })
	}
	ask(func(ctx context.Context) { maxTTL = c.Get(ctx, nodeMaxTTLKey) })
	ask(func(ctx context.Context) { kill = c.ClientKillByFilter(ctx, "ID", "0") }) // closes nothing
	wg.Wait()
	info, err := infoCmd.Result()
	refused(err, adapter.RefusedInfo)
	if err == nil {
		kv := parseInfo(info)
		p.Version, p.RunID, p.Role = kv["redis_version"], kv["run_id"], kv["role"]
		p.ClusterEnabled = kv["cluster_enabled"] == "1"
		p.Replicas, _ = strconv.Atoi(kv["connected_slaves"])
		if h := kv["master_host"]; h != "" {
			p.Master = h + ":" + kv["master_port"]
		}
	}
	p.Config = map[string]string{}
	for i, k := range configKeys {
		m, err := configs[i].Result()
		if err != nil {
			refused(err, adapter.RefusedConfig)
			p.ConfigErr = err
			break
		}
		if v, ok := m[k]; ok {
			p.Config[k] = v
		}
	}
	p.NodeMaxTTL, err = maxTTL.Result()
	refused(err, adapter.RefusedMaxTTL)
	refused(kill.Err(), adapter.RefusedClient)
	p.Refused, p.Disabled = declined.Refused, declined.Disabled
	rctx, cancel = within(1)
	t0 := time.Now()
	tm, err := c.Time(rctx).Result()
	cancel()
	if err == nil {
		t1 := time.Now()
		mid := t0.Add(t1.Sub(t0) / 2)
		p.ClockOffset, p.ClockErr, p.ClockOK = tm.Sub(mid), t1.Sub(t0)/2, true
		p.RTT = t1.Sub(t0)
	}
	var cursor uint64
	for p.Keys < maxKeysCounted {
		rctx, cancel = within(1)
		keys, next, err := c.Scan(rctx, cursor, prefix+"*", 1000).Result()
		cancel()
		if err != nil {
			break
		}
		p.Keys = min(p.Keys+len(keys), maxKeysCounted)
		if cursor = next; cursor == 0 {
			break
		}
	}
	return p
}

// parseInfo parses the "key:value" lines of an INFO reply.
func parseInfo(info string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			kv[k] = v
		}
	}
	return kv
}

// reachable counts the probes that answered.
func reachable(ps []probe) int {
	n := 0
	for _, p := range ps {
		if p.Err == nil {
			n++
		}
	}
	return n
}

// probeTargets resolves the node URLs of --nodes (or DLM_NODES), the quorum
// for them and the TLS configuration of each: what status and doctor probe.
func probeTargets(nodes []string, byzantine int, tlsf tlsFiles) ([]redlock.NodeURL, int, []*tls.Config, error) {
	parsed, err := resolveParsedNodes(nodes)
	if err != nil {
		return nil, 0, nil, err
	}
	q, err := quorumOf(len(parsed), byzantine)
	if err != nil {
		return nil, 0, nil, err
	}
	raws := make([]string, len(parsed))
	for i, u := range parsed {
		raws[i] = u.Raw
	}
	cfgs, err := tlsf.forURLs(raws)
	if err != nil {
		return nil, 0, nil, err
	}
	return parsed, q, cfgs, nil
}

// quorumOf is the quorum the library computes for n nodes of which
// byzantine may lie (redlock.WithByzantineNodes; 0: the majority of R8.3),
// asked of a client over n placeholder nodes that never do I/O. An
// impossible setting (too few nodes for the Byzantine bound) is bad usage.
func quorumOf(n, byzantine int) (int, error) {
	nodes := make([]redlock.Node, n)
	for i := range nodes {
		nodes[i] = placeholderNode(i)
	}
	c, err := redlock.New(nodes, redlock.WithByzantineNodes(byzantine))
	if err != nil {
		return 0, withCode(exitUsage, err)
	}
	defer c.Close()
	return c.Quorum(), nil
}

// placeholderNode is a node that is never asked anything: quorumOf needs
// only the count.
type placeholderNode int

func (p placeholderNode) String() string { return "placeholder-" + strconv.Itoa(int(p)) }
func (placeholderNode) Acquire(context.Context, string, string, time.Duration) (bool, error) {
	return false, errPlaceholder
}
func (placeholderNode) Release(context.Context, string, string) (bool, error) {
	return false, errPlaceholder
}
func (placeholderNode) Extend(context.Context, string, string, time.Duration) (bool, error) {
	return false, errPlaceholder
}

// errPlaceholder is what a placeholder node answers, should it be asked.
var errPlaceholder = errors.New("dlm: placeholder node")

var _ redlock.Node = placeholderNode(0)

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}

// alias is two node URLs that reached one server (the same run_id).
type alias struct {
	First, Second, RunID string
}

// findAliases returns every node whose run_id an earlier node already had.
// Nodes that did not answer, or gave no run_id, are not compared.
func findAliases(ps []probe) []alias {
	var out []alias
	seen := map[string]string{}
	for _, p := range ps {
		if p.Err != nil || p.RunID == "" {
			continue
		}
		if prev, dup := seen[p.RunID]; dup {
			out = append(out, alias{First: prev, Second: p.Node, RunID: p.RunID})
			continue
		}
		seen[p.RunID] = p.Node
	}
	return out
}
