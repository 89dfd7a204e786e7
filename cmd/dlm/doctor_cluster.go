package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/redisproc"
)

// clusterProbe is what doctor learns of one node that is a Redis Cluster.
type clusterProbe struct {
	Name string
	Err  error
	Info map[string]string // CLUSTER INFO of the seed
	// Masters are the probes of the masters (probeNode).
	Masters []probe
	// Replicas maps a master's address to its replicas' failover
	// settings.
	Replicas map[string][]replicaProbe
	// Fenced holds the addresses of the masters that hold fence keys;
	// AllFenced is doctor's --fencing (judge every master's fencing).
	Fenced    map[string]bool
	AllFenced bool
	// Claims is what each server that answered says of itself in its
	// CLUSTER NODES (its "myself" line), by address: a master's config
	// epoch and slots.
	Claims map[string]slotClaim
	// FullCoverage holds the addresses of the masters whose
	// cluster-require-full-coverage is yes (Redis' default).
	FullCoverage map[string]bool
}

// slotClaim is a server's own view of itself: a master serving slots
// (ranges, bracketed slots under migration left out) under a config epoch.
type slotClaim struct {
	Master bool
	Epoch  uint64
	Slots  [][2]int
}

// myselfClaim reads the "myself" line of a reply of CLUSTER NODES.
func myselfClaim(nodes string) (slotClaim, bool) {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !slices.Contains(strings.Split(f[2], ","), "myself") {
			continue
		}
		c := slotClaim{Master: slices.Contains(strings.Split(f[2], ","), "master")}
		c.Epoch, _ = strconv.ParseUint(f[6], 10, 64)
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				continue
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					continue
				}
			}
			c.Slots = append(c.Slots, [2]int{a, b})
		}
		return c, true
	}
	return slotClaim{}, false
}

// overlap returns the first slot both claims serve, if any.
func (c slotClaim) overlap(d slotClaim) (int, bool) {
	for _, a := range c.Slots {
		for _, b := range d.Slots {
			if lo := max(a[0], b[0]); lo <= min(a[1], b[1]) {
				return lo, true
			}
		}
	}
	return 0, false
}

// replicaProbe is one replica of a cluster master.
type replicaProbe struct {
	Addr        string
	NodeTimeout time.Duration // cluster-node-timeout
	NoFailover  bool          // cluster-replica-no-failover yes
	Err         error
}

// probeCluster asks every server of a cluster node's URL for the
// cluster's map (CLUSTER NODES) at once and keeps the first answer, then
// every master it names (as probeNode does a plain node) and every
// replica, each master and replica at once and under its own deadline
// (timeout): a hung master (a stopped process, which the cluster still
// counts as up for its node timeout) is reported unreachable and hides
// no other master's findings.
func probeCluster(ctx context.Context, u redlock.NodeURL, cfg *tls.Config, timeout time.Duration, fencePfx string) clusterProbe {
	cp := clusterProbe{Name: u.String(), Replicas: map[string][]replicaProbe{}, Fenced: map[string]bool{}, Claims: map[string]slotClaim{}, FullCoverage: map[string]bool{}}
	// claim records what a server says of itself (clusterFindings compares
	// the masters' slots: an old master that came back beside the replica
	// promoted in its place serves the same slots).
	var mu sync.Mutex
	claim := func(ctx context.Context, c *redis.Client, addr string) {
		if txt, err := c.ClusterNodes(ctx).Result(); err == nil {
			if sc, ok := myselfClaim(txt); ok {
				mu.Lock()
				cp.Claims[addr] = sc
				mu.Unlock()
			}
		}
	}
	client, err := clusterClients(u, cfg, timeout) // status_cluster.go
	if err != nil {
		cp.Err = err
		return cp
	}
	seed, nodes, info, err := clusterMap(ctx, u.Addrs, client, timeout)
	if err != nil {
		cp.Err = err
		return cp
	}
	cp.Info = parseInfo(info)
	var fromMasters [][2]string // replicas each master reports
	maxTTLs := map[string]string{}
	var wg sync.WaitGroup
	for _, addr := range clusterMasterAddrs(nodes, seed) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := client(addr)
			defer m.Close()
			ctx, cancel := context.WithTimeout(ctx, probeBudget(timeout))
			defer cancel()
			p := probeNode(ctx, m, addr, redlock.DefaultKeyPrefix, timeout)
			var repl, maxTTL string
			fenced, full := false, false
			if p.Err == nil {
				if c, err := m.ConfigGet(ctx, "cluster-require-full-coverage").Result(); err == nil {
					full = c["cluster-require-full-coverage"] == "yes"
				}
				repl, _ = m.Info(ctx, "replication").Result()
				maxTTL, _ = m.Get(ctx, nodeMaxTTLKey).Result() // on its slot's master only
				fenced = holdsKeys(ctx, m, fencePfx)
				claim(ctx, m, addr)
			}
			mu.Lock()
			defer mu.Unlock()
			cp.Masters = append(cp.Masters, p)
			cp.Fenced[p.Node] = fenced
			cp.FullCoverage[p.Node] = full
			maxTTLs[addr] = maxTTL
			for _, r := range connectedReplicas(repl) {
				fromMasters = append(fromMasters, [2]string{r, p.Node})
			}
		}()
	}
	wg.Wait()
	maxTTL := ""
	for _, v := range maxTTLs {
		if v != "" {
			maxTTL = v
		}
	}
	for i := range cp.Masters {
		cp.Masters[i].NodeMaxTTL = maxTTL
	}
	// CLUSTER NODES of the seed may not list a replica yet (the cluster
	// bus spreads the news in a few seconds), while its master already
	// serves it: a master's own list counts too.
	replicas := clusterReplicas(nodes)
	for _, r := range fromMasters {
		if !slices.ContainsFunc(replicas, func(x [2]string) bool { return x[0] == r[0] }) {
			replicas = append(replicas, r)
		}
	}
	for _, r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := client(r[0])
			defer rc.Close()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			rp := replicaProbe{Addr: r[0]}
			if c, err := rc.ConfigGet(ctx, "cluster-node-timeout").Result(); err == nil {
				ms, _ := strconv.Atoi(c["cluster-node-timeout"])
				rp.NodeTimeout = time.Duration(ms) * time.Millisecond
			} else {
				rp.Err = err
			}
			if c, err := rc.ConfigGet(ctx, "cluster-replica-no-failover").Result(); err == nil {
				rp.NoFailover = c["cluster-replica-no-failover"] == "yes"
			}
			claim(ctx, rc, r[0])
			mu.Lock()
			cp.Replicas[r[1]] = append(cp.Replicas[r[1]], rp)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(cp.Masters, func(i, j int) bool { return cp.Masters[i].Node < cp.Masters[j].Node })
	return cp
}

// clusterMap asks each of a cluster node's seed addresses for the
// cluster's map (CLUSTER NODES) and state (CLUSTER INFO) at once, each
// under its own deadline (timeout), and returns the first full answer
// with its server's address; when none answers, the first error.
func clusterMap(ctx context.Context, seeds []string, client func(addr string) *redis.Client, timeout time.Duration) (seed, nodes, info string, err error) {
	type answer struct {
		addr, nodes, info string
		err               error
	}
	answers := make(chan answer, len(seeds))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, addr := range seeds {
		go func() {
			c := client(addr)
			defer c.Close()
			a := answer{addr: addr}
			if a.nodes, a.err = c.ClusterNodes(ctx).Result(); a.err == nil {
				a.info, a.err = c.ClusterInfo(ctx).Result()
			}
			answers <- a
		}()
	}
	for range seeds {
		a := <-answers
		if a.err == nil {
			return a.addr, a.nodes, a.info, nil
		}
		if err == nil {
			err = a.err
		}
	}
	if err == nil {
		err = errors.New("no seed address")
	}
	return "", "", "", err
}

// clusterMasterAddrs reads CLUSTER NODES, as written by the server at
// seed: the address of every master, failed or not (a hung master is
// reported unreachable, not left out), sorted.
func clusterMasterAddrs(nodes, seed string) []string {
	seedHost, _, _ := net.SplitHostPort(seed)
	var out []string
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !slices.Contains(strings.Split(f[2], ","), "master") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "0" {
			continue
		}
		if host == "" {
			addr = net.JoinHostPort(seedHost, port) // a lone server's own line
		}
		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out
}

// connectedReplicas reads a master's INFO replication: the address of
// each replica connected to it (slaveN:ip=...,port=...).
func connectedReplicas(info string) []string {
	var out []string
	for k, v := range parseInfo(info) {
		if !strings.HasPrefix(k, "slave") || !strings.Contains(v, "ip=") {
			continue
		}
		var ip, port string
		for _, kv := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(kv, "=")
			switch name {
			case "ip":
				ip = val
			case "port":
				port = val
			}
		}
		if ip != "" && port != "" {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	sort.Strings(out)
	return out
}

// clusterReplicas reads CLUSTER NODES: each replica's address and its
// master's.
func clusterReplicas(nodes string) [][2]string {
	addr := map[string]string{} // node id -> host:port
	type rep struct{ addr, master string }
	var reps []rep
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		addr[f[0]] = a
		flags := strings.Split(f[2], ",")
		if slices.Contains(flags, "slave") && !slices.Contains(flags, "fail") {
			reps = append(reps, rep{a, f[3]})
		}
	}
	out := make([][2]string, len(reps))
	for i, r := range reps {
		out[i] = [2]string{r.addr, addr[r.master]}
	}
	return out
}

// clusterAliases finds the masters of cluster nodes that are also another
// node's server (a plain node, or a master of another cluster node): one
// server counted twice toward the quorum, which the clients refuse as
// they refuse two URLs of one server (redlock.Client.CheckNodes). The
// nodes' own servers (a cluster node's seed) are compared by diagnose.
func clusterAliases(ps []probe, cps map[int]clusterProbe) []finding {
	owner := map[string]int{} // run id -> node
	for i, p := range ps {
		if p.Err == nil && p.RunID != "" && !p.Cluster {
			owner[p.RunID] = i
		}
	}
	var fs []finding
	for i := range ps {
		cp, ok := cps[i]
		if !ok {
			continue
		}
		for _, m := range cp.Masters {
			if m.Err != nil || m.RunID == "" {
				continue
			}
			j, dup := owner[m.RunID]
			switch {
			case !dup:
				owner[m.RunID] = i
			case j != i && m.RunID != ps[i].RunID: // a seed's alias is diagnose's
				fs = append(fs, finding{Sev: sevFail, Node: m.Node, Rule: "R2",
					What: fmt.Sprintf("master of cluster node %s is the same server as node %s (same run_id): the nodes are not independent", cp.Name, ps[j].Node),
					Fix:  "give each node its own redis-servers"})
			}
		}
	}
	return fs
}

// holdsKeys reports whether m holds a key under prefix, looking with a
// bounded SCAN (as probeFences does a plain node).
func holdsKeys(ctx context.Context, m *redis.Client, prefix string) bool {
	var cursor uint64
	for range maxFenceScan {
		keys, next, err := m.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil || len(keys) > 0 {
			return err == nil
		}
		if cursor = next; cursor == 0 {
			return false
		}
	}
	return false
}

// clusterFindings is diagnoseCluster's judgement of a probe.
func clusterFindings(cp clusterProbe, maxSkew time.Duration) []finding {
	var fs []finding
	add := func(sev severity, node, rule, what, fix string) {
		fs = append(fs, finding{Sev: sev, Node: node, Rule: rule, What: what, Fix: fix})
	}
	if cp.Err != nil {
		add(sevWarn, cp.Name, "R1.3", fmt.Sprintf("cluster not inspected (%v)", cp.Err), "check that the seed and addr addresses of the URL reach the cluster")
		return fs
	}
	state, served := cp.Info["cluster_state"], cp.Info["cluster_slots_ok"]
	switch {
	case state != "ok":
		add(sevWarn, cp.Name, "R1.3", "cluster_state:"+state+": the cluster refuses every request, so this node takes part in no lock",
			"bring the failed masters back or fail them over (after the max ttl, below), and assign every slot")
	case served != strconv.Itoa(redisproc.Slots):
		add(sevWarn, cp.Name, "R1.3", fmt.Sprintf("%s of %d hash slots served: locks whose keys hash to the others are unavailable on this node", served, redisproc.Slots),
			"assign the missing slots (CLUSTER ADDSLOTSRANGE) or bring their master back")
	default:
		add(sevOK, cp.Name, "R1.3", fmt.Sprintf("cluster_state:ok, all %d slots served by %d master(s)", redisproc.Slots, len(cp.Masters)), "")
	}
	fs = append(fs, claimFindings(cp.Claims)...)
	if n := len(cp.Masters); n == 2 {
		add(sevWarn, cp.Name, "R1.3", "2 masters: when one is lost the other is a minority, which Redis Cluster stops, so the whole node stops instead of the lost master's slots only",
			"give the cluster 3 masters or more")
	}
	for _, m := range cp.Masters {
		if m.Err != nil {
			add(sevWarn, m.Node, "R1.3", fmt.Sprintf("master unreachable (%v): the locks of its slots are unavailable on this node", m.Err), "bring it back")
			if rs := cp.Replicas[m.Node]; len(rs) > 0 {
				// Its replicas are judged all the same: one that may
				// promote itself does so a node timeout from now,
				// without the master's last locks.
				fs = append(fs, replicaFinding(m, rs))
			}
			continue
		}
		for _, f := range checkNode(m) {
			if f.Rule != "R2" { // replicas are judged below, for a cluster
				fs = append(fs, f)
			}
		}
		if cp.FullCoverage[m.Node] {
			add(sevWarn, m.Node, "R1.3", "cluster-require-full-coverage yes (Redis' default): once any master of the cluster is lost (after the node timeout), this master refuses every request, so the whole node takes part in no lock instead of losing the lost master's slots only",
				"set cluster-require-full-coverage no on every master (CONFIG SET and redis.conf), as dlm node --cluster does")
		}
		fs = append(fs, replicaFinding(m, cp.Replicas[m.Node]))
	}
	fenced := make([]bool, len(cp.Masters))
	for i, m := range cp.Masters {
		fenced[i] = cp.Fenced[m.Node]
	}
	fs = append(fs, checkFencing(cp.Masters, fenced, cp.AllFenced)...)
	cf := checkClocks(cp.Masters, maxSkew)
	for i := range cf {
		if cf[i].Node == "" {
			cf[i].Node = cp.Name
			cf[i].What = "masters' " + cf[i].What
		}
	}
	return append(fs, cf...)
}

// replicaFinding judges a master's replicas. A replica that may promote
// itself is a FAIL whatever its cluster-node-timeout: replication is
// asynchronous, and a master cut from the rest of its cluster while clients
// still reach it keeps granting locks until its node timeout, none of which
// reach the replica, promoted soon after, within their ttl: a node that
// forgot its locks (R16), and two clients may hold one. Replicas with
// cluster-replica-no-failover yes are a WARN: the failover by hand must
// follow the procedure of docs/operations.md.
func replicaFinding(m probe, rs []replicaProbe) finding {
	f := finding{Node: m.Node, Rule: "R16"}
	if len(rs) == 0 {
		f.Sev, f.What = sevOK, "no replicas: no failover can hand its slots to a server that missed a lock"
		return f
	}
	var auto []string
	for _, r := range rs {
		if !r.NoFailover {
			auto = append(auto, fmt.Sprintf("%s (cluster-node-timeout %v)", r.Addr, r.NodeTimeout))
		}
	}
	switch {
	case len(auto) > 0:
		f.Sev = sevFail
		f.What = fmt.Sprintf("replica(s) %s fail over on their own: a master cut from its cluster keeps granting locks until the node timeout and its replica is promoted without them (asynchronous replication), whatever the node timeout, so two clients may hold a lock; the clients refuse this node (redlock.ErrPromotableReplica)", strings.Join(auto, ", "))
		f.Fix = "set cluster-replica-no-failover yes on every replica (CONFIG SET and redis.conf) and fail over only by hand as docs/operations.md says, or remove the replicas"
	default:
		f.Sev = sevWarn
		f.What = fmt.Sprintf("%d replica(s) that never fail over on their own (cluster-replica-no-failover yes; max ttl %s)", len(rs), orDash(m.NodeMaxTTL))
		f.Fix = "fail over by hand only after the old master stopped taking writes (stop it) and the max ttl has passed since, then CLUSTER FAILOVER TAKEOVER on the replica (docs/operations.md)"
	}
	return f
}

// claimFindings compares what the servers of a cluster node say of
// themselves: two masters serving one slot are a FAIL. It happens when a
// master comes back beside the replica promoted in its place while it
// cannot reach the cluster's bus (restarted with its old nodes.conf, or a
// cut from the clients healed first): it believes it still serves its old
// slots, and grants locks there beside the new master, two holders of one
// lock. The one with the lower config epoch is the old master.
func claimFindings(claims map[string]slotClaim) []finding {
	addrs := slices.Sorted(maps.Keys(claims))
	var fs []finding
	for i, a := range addrs {
		for _, b := range addrs[i+1:] {
			ca, cb := claims[a], claims[b]
			if !ca.Master || !cb.Master {
				continue
			}
			slot, ok := ca.overlap(cb)
			if !ok {
				continue
			}
			old, now := a, b
			if ca.Epoch > cb.Epoch {
				old, now = b, a
			}
			fs = append(fs, finding{Sev: sevFail, Node: old, Rule: "R2",
				What: fmt.Sprintf("serves slot %d (and maybe more) that %s serves too, with config epochs %d and %d: an old master back beside the replica promoted in its place, which grants locks there beside the new master, so two clients may hold one lock",
					slot, now, claims[old].Epoch, claims[now].Epoch),
				Fix: "stop " + old + " now; bring it back only as a new, empty replica (docs/operations.md, the failover by hand)"})
		}
	}
	return fs
}
