package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/goredis"
)

// severity grades a doctor finding.
type severity int

const (
	sevOK   severity = iota // the check passed
	sevWarn                 // safe only under a condition doctor cannot see, or costs availability
	sevFail                 // breaks Redlock's safety
)

func (s severity) String() string {
	return [...]string{"ok", "WARN", "FAIL"}[s]
}

// finding is one result of a doctor check.
type finding struct {
	Sev  severity
	Node string // "" for the whole deployment
	Rule string // spec rule, such as "R2"
	What string
	Fix  string
}

// newDoctorCmd builds "dlm doctor".
func newDoctorCmd() *cobra.Command {
	var (
		nodes     []string
		timeout   time.Duration
		maxSkew   time.Duration
		byzantine int
		tlsf      tlsFiles
		fencing   bool
		fencePfx  string
	)
	cmd := &cobra.Command{
		Use:   "doctor [flags]",
		Short: "Check every node against what Redlock needs, with fixes",
		Long: `Check the nodes against what Redlock's safety rests on and print each
finding with its fix. Each finding is tagged with what it checks, as
below; docs/spec/redlock.md argues why Redlock needs each, and
docs/operations.md ("dlm status and dlm doctor") explains every finding.

  independent masters: no replicas, not a replica, and no two URLs
       naming the same server
  no eviction: an eviction policy that never evicts lock keys
       (noeviction)
  persistence: what a restarted node remembers of its locks: AOF with
       appendfsync always, or restarts delayed by more than the max ttl
       (dlm node)
  clock agreement: node clocks that agree (TIME compared across nodes,
       corrected for the round trip); a clock that jumps shortens the
       keys' real life
  node count: at least 3 nodes, an odd number
  fencing tokens: on a node that holds fence keys (dlm lock --fencing,
       and dlm elect, which always fences), or on every node with
       --fencing: the node keeps the tokens alone only with AOF and
       appendfsync always (dlm node --fencing). A node that comes back
       from a crash with an older copy of its keys (AOF with appendfsync
       everysec or no, RDB snapshots), or with none (no persistence),
       comes back with a new replication id: the clients count its fences
       as lost and repair the tokens of every fenced lock from their wall
       clocks (docs/fencing.md), so tokens then keep increasing only while
       those clocks are not stepped back (a warning)
  reachable: a node that does not answer takes no part in locks

A node that is a Redis Cluster (cluster=true in its URL) is checked master
by master: cluster state and slot coverage, eviction, persistence and fence
keys of each master, its replicas (a FAIL for a replica that may promote
itself, whatever the node timeout: it may lack the master's last locks),
and each master's clock against the others.

Exits 1 when a finding breaks safety (FAIL), 69 when fewer nodes answer than
a quorum needs, else 0; warnings (WARN) do not change the exit code.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive, got %v", timeout)
			}
			if maxSkew <= 0 {
				return usageErrorf("--max-skew must be positive, got %v", maxSkew)
			}
			parsed, q, cfgs, err := probeTargets(nodes, byzantine, tlsf)
			if err != nil {
				return err
			}
			ps := probeNodes(cmd.Context(), parsed, redlock.DefaultKeyPrefix, timeout, cfgs)
			fs := diagnose(ps, q, maxSkew)
			fs = append(fs, checkFencing(ps, probeFences(cmd.Context(), parsed, ps, fencePfx, timeout, cfgs), fencing)...)
			cps := map[int]clusterProbe{}
			for i, u := range parsed {
				if u.Cluster && ps[i].Err == nil {
					cp := probeCluster(cmd.Context(), u, cfgs[i], timeout, fencePfx) // doctor_cluster.go
					cp.AllFenced = fencing
					cps[i] = cp
					fs = append(fs, clusterFindings(cp, maxSkew)...)
				}
			}
			fs = append(fs, clusterAliases(ps, cps)...)
			fails := printFindings(cmd.OutOrStdout(), fs)
			switch up := reachable(ps); {
			case fails > 0:
				return withCode(exitFailure, fmt.Errorf("%d finding(s) break Redlock's safety (FAIL above)", fails))
			case up < q:
				return withCode(exitUnavailable, fmt.Errorf("only %d of %d nodes reachable, a quorum needs %d", up, len(ps), q))
			}
			return nil
		},
	}
	addNodesFlag(cmd, &nodes)
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "time allowed for each request to a node (a round trip; a new connection's first request has two): a node that answers within it is up, however slowly")
	cmd.Flags().DurationVar(&maxSkew, "max-skew", 250*time.Millisecond, "largest disagreement between node clocks before it is reported")
	cmd.Flags().IntVar(&byzantine, "byzantine", 0, "lying nodes the clients tolerate (their --byzantine / WithByzantineNodes): the quorum is then the library's Byzantine quorum")
	cmd.Flags().BoolVar(&fencing, "fencing", false, "the clients use fencing tokens (dlm lock --fencing, dlm elect, WithFencing): check every node's durability for them, not only the nodes that already hold fence keys")
	cmd.Flags().StringVar(&fencePfx, "fence-prefix", redlock.DefaultFencePrefix, "prefix of the fence keys to look for (WithFencePrefix)")
	addTLSFlags(cmd, &tlsf)
	return cmd
}

// maxFenceScan bounds the SCAN calls doctor makes on one node to find a
// fence key (COUNT 1000 each).
const maxFenceScan = 100

// probeFences reports, for each node that answered the probe, whether it
// holds a key under prefix (a fence key), looking with SCAN within timeout.
// A node that did not answer, or whose scan failed, reads false.
func probeFences(ctx context.Context, urls []redlock.NodeURL, ps []probe, prefix string, timeout time.Duration, cfgs []*tls.Config) []bool {
	out := make([]bool, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		if ps[i].Err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goredisTLS(goredis.NewClient(u), cfgs[i])
			defer c.Close()
			var cursor uint64
			for page := range maxFenceScan {
				// Each page within timeout; the first opens the
				// connection, a round trip more.
				within := timeout
				if page == 0 {
					within = 2 * timeout
				}
				sctx, cancel := context.WithTimeout(ctx, within)
				keys, next, err := c.Scan(sctx, cursor, prefix+"*", 1000).Result()
				cancel()
				if err != nil || len(keys) > 0 {
					out[i] = err == nil
					return
				}
				if cursor = next; cursor == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// checkFencing checks what a restart does to the fencing tokens (R18,
// R16.2; docs/fencing.md) on the nodes that hold fence keys (fenced[i]),
// or on every node with all. A node that keeps every acknowledged fence
// (AOF, appendfsync always) keeps the tokens alone: ok. Any other node can
// come back from a crash with an older copy of its keys (AOF with
// appendfsync everysec or no loses the last second or more; RDB snapshots
// bring back the last one) or with none (no persistence). Either way the
// server comes back with a new replication id, under which its fence
// floor key counts as missing (redlock/scripts/floor.lua), so the clients
// repair the tokens of every fenced grant, whatever its kind (one
// resource, a set, a writer, an election), from their wall clocks
// (redlock/fencing.go, the restart repair): a warning, as tokens then keep
// increasing only while those clocks are not stepped back.
func checkFencing(ps []probe, fenced []bool, all bool) []finding {
	const (
		repaired = "the clients repair the tokens of every fenced lock (one resource, a set, a writer; elections' terms) from their wall clocks, so tokens then keep increasing only while those clocks are not stepped back (docs/fencing.md)"
		fix      = "for tokens kept by the nodes alone, CONFIG SET appendonly yes and CONFIG SET appendfsync always (and in redis.conf), or run the node with `dlm node --fencing`"
	)
	var fs []finding
	for i, p := range ps {
		if p.Err != nil || p.ConfigErr != nil || !(all || fenced[i]) || p.Cluster { // diagnoseCluster checks every master
			continue
		}
		why := "the clients fence (--fencing)"
		if fenced[i] {
			why = "holds fence keys (dlm lock --fencing, dlm elect)"
		}
		aof, fsync, save := p.Config["appendonly"], p.Config["appendfsync"], strings.TrimSpace(p.Config["save"])
		_, saveKnown := p.Config["save"]
		switch {
		case aof == "yes" && fsync == "always":
			fs = append(fs, finding{Sev: sevOK, Node: p.Node, Rule: "R18", What: why + " with AOF and appendfsync always: its fences survive a crash"})
		case aof == "no" && saveKnown && save == "":
			fs = append(fs, finding{Sev: sevWarn, Node: p.Node, Rule: "R18",
				What: why + " without persistence (appendonly no, no RDB snapshots): a restart forgets every fence key and the fence floor key with them, and " + repaired,
				Fix:  fix})
		default:
			how := fmt.Sprintf("appendonly %s, appendfsync %s", orDash(aof), orDash(fsync))
			if save != "" {
				how += fmt.Sprintf(", RDB snapshots (save %q)", save)
			}
			fs = append(fs, finding{Sev: sevWarn, Node: p.Node, Rule: "R18",
				What: fmt.Sprintf("%s, with %s: after a crash or power loss the node can come back with an older copy of its keys (the writes of the last second or more, or those since the last snapshot, lost) and a new replication id, under which its fence floor key counts as missing, so, as after a restart without persistence, %s", why, how, repaired),
				Fix:  fix})
		}
	}
	return fs
}

// ruleMeaning is what the spec rule of a finding checks, printed as its
// tag instead of the rule's number: a user reads what is meant without
// looking the number up.
func ruleMeaning(rule string) string {
	switch rule {
	case "R1.3":
		return "reachable"
	case "R2":
		return "independent masters"
	case "R7":
		return "node count"
	case "R9":
		return "clock agreement"
	case "R13":
		return "no eviction"
	case "R16":
		return "persistence"
	case "R18":
		return "fencing tokens"
	case "checks":
		return "node checks"
	}
	return "rule"
}

// printFindings writes the findings, worst first, and returns the number
// of failures.
func printFindings(w io.Writer, fs []finding) int {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Sev > fs[j].Sev })
	fails := 0
	for _, f := range fs {
		where := f.Node
		if where == "" {
			where = "all nodes"
		}
		fmt.Fprintf(w, "%-4s  %s  [%s] %s\n", f.Sev, where, ruleMeaning(f.Rule), f.What)
		if f.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		}
		if f.Sev == sevFail {
			fails++
		}
	}
	return fails
}

// diagnose checks the probes against Redlock's requirements. It is a pure
// function of what the nodes answered.
func diagnose(ps []probe, q int, maxSkew time.Duration) []finding {
	var fs []finding
	add := func(sev severity, node, rule, what, fix string) {
		fs = append(fs, finding{Sev: sev, Node: node, Rule: rule, What: what, Fix: fix})
	}
	n := len(ps)
	switch {
	case n < 3:
		add(sevWarn, "", "R7", fmt.Sprintf("%d node(s): the deployment tolerates no node failure (a quorum of %d is every node)", n, q),
			"run at least 3 independent masters (5 recommended), on machines that fail independently")
	case n%2 == 0:
		add(sevWarn, "", "R7", fmt.Sprintf("%d nodes, an even count: tolerates %d failures, no more than %d nodes would", n, n-q, n-1),
			fmt.Sprintf("use an odd number of nodes (%d or %d)", n-1, n+1))
	default:
		add(sevOK, "", "R7", fmt.Sprintf("%d nodes: a quorum is %d, %d may fail", n, q, n-q), "")
	}
	runIDs := map[string]string{}
	for _, p := range ps {
		if p.Err != nil {
			add(sevWarn, p.Node, "R1.3", fmt.Sprintf("unreachable (%v): not checked, and it cannot take part in locks", p.Err),
				"start the node or fix the address; locks work while a quorum answers")
			continue
		}
		if prev, dup := runIDs[p.RunID]; dup && p.RunID != "" {
			add(sevFail, p.Node, "R2", "is the same server as "+prev+" (same run_id): the nodes are not independent",
				"give each URL its own redis-server")
		}
		runIDs[p.RunID] = p.Node
		if p.Cluster {
			continue // diagnoseCluster checks every master (doctor_cluster.go)
		}
		fs = append(fs, checkNode(p)...)
	}
	fs = append(fs, checkClocks(ps, maxSkew)...)
	return fs
}

// checkNode runs the per-node checks: role (R2), eviction (R13),
// persistence (R16).
func checkNode(p probe) []finding {
	var fs []finding
	add := func(sev severity, rule, what, fix string) {
		fs = append(fs, finding{Sev: sev, Node: p.Node, Rule: rule, What: what, Fix: fix})
	}
	if p.ClusterEnabled {
		add(sevFail, "R2", "is a master of a Redis Cluster, named without cluster=true: a lock whose key hashes to another master's slots gets MOVED and fails on this node",
			"add ?cluster=true to this node's URL (and &addr=host:port for more seed masters); the whole cluster is then one node")
	}
	switch {
	case p.Role == "slave" || p.Master != "":
		add(sevFail, "R2", "is a replica of "+orDash(p.Master)+": it is not an independent master, and a failover to it can lose lock keys (replication is asynchronous)",
			"make it an independent master (REPLICAOF NO ONE) with its own URL, and stop using failover for lock nodes")
	case p.Replicas > 0:
		add(sevFail, "R2", fmt.Sprintf("has %d replica(s): replication is asynchronous, so a failover to a replica can lose lock keys and let two clients hold a lock", p.Replicas),
			"remove the replicas (REPLICAOF NO ONE on each) and do not fail over lock nodes; Redlock's redundancy is the other masters")
	case p.Role == "master":
		add(sevOK, "R2", "independent master (no replicas)", "")
	}
	if len(p.Refused) > 0 {
		what, fix := uncheckedFinding(adapter.Facts{Refused: p.Refused, Disabled: p.Disabled})
		add(sevFail, "checks", what, fix)
	}
	if p.ConfigErr != nil {
		if !slices.Contains(p.Refused, adapter.RefusedConfig) { // else said once, above
			add(sevWarn, "R13", fmt.Sprintf("CONFIG GET failed (%v): eviction and persistence not checked", p.ConfigErr),
				"check maxmemory-policy and appendonly by hand")
		}
		return fs
	}
	policy, maxmem := p.Config["maxmemory-policy"], p.Config["maxmemory"]
	limit := "no maxmemory set now, but eviction starts as soon as one is"
	if maxmem != "" && maxmem != "0" {
		limit = "maxmemory " + maxmem + " bytes"
	}
	switch {
	case policy == "noeviction":
		add(sevOK, "R13", "maxmemory-policy noeviction: lock keys are never evicted", "")
	case strings.HasPrefix(policy, "allkeys-"):
		add(sevFail, "R13", "maxmemory-policy "+policy+" can evict lock keys before their ttl, freeing a held lock ("+limit+")",
			"CONFIG SET maxmemory-policy noeviction (and in redis.conf), and keep lock nodes for locks")
	case strings.HasPrefix(policy, "volatile-") && maxmem != "" && maxmem != "0":
		// Every lock key has a ttl: under maxmemory, volatile-ttl evicts
		// the locks that have the least time left first, held ones too.
		add(sevFail, "R13", "maxmemory-policy "+policy+" with "+limit+" evicts keys that have a ttl, and every lock key has one: a held lock can be freed before its ttl",
			"CONFIG SET maxmemory-policy noeviction (and in redis.conf), and keep lock nodes for locks")
	case strings.HasPrefix(policy, "volatile-"):
		add(sevWarn, "R13", "maxmemory-policy "+policy+" evicts keys that have a ttl, and every lock key has one ("+limit+")",
			"CONFIG SET maxmemory-policy noeviction, or never set a maxmemory")
	case policy != "":
		add(sevWarn, "R13", "unknown maxmemory-policy "+policy, "use noeviction")
	}
	aof, fsync := p.Config["appendonly"], p.Config["appendfsync"]
	delayed := ""
	if p.NodeMaxTTL != "" {
		delayed = " It runs under `dlm node --max-ttl " + p.NodeMaxTTL + "`, which delays a restart after a crash: safe if no client uses a longer ttl."
	}
	switch {
	case aof == "yes" && fsync == "always":
		add(sevOK, "R16", "AOF with appendfsync always: acknowledged lock keys survive a crash", "")
	case aof == "yes" && delayed == "":
		add(sevWarn, "R16", "AOF with appendfsync "+fsync+": a crash or power loss can lose the last second of lock keys",
			"delay restarts after a crash by more than the max ttl (run it with `dlm node --max-ttl`), or set appendfsync always")
	case aof != "" && delayed == "":
		add(sevWarn, "R16", "no AOF persistence: a restarted node has forgotten every lock it held",
			"delay every restart by more than the max ttl (run it with `dlm node --max-ttl`), or appendonly yes with appendfsync always")
	case delayed != "":
		add(sevOK, "R16", "appendonly "+aof+"."+delayed, "")
	}
	return fs
}

// uncheckedFinding is the finding of a node that refused commands to the
// user (probe.Refused): what the clients cannot check, so that they refuse
// it, and the fix, read as the clients read it (adapter.Facts.Unchecked):
// the ACL rules to grant what the user may not run, and for what the
// server disables (it answers "unknown command"), which no ACL rule
// grants, its configuration or --unchecked-nodes.
func uncheckedFinding(f adapter.Facts) (what, fix string) {
	u := f.Unchecked()
	var does, fixes []string
	if len(u.Refused) > 0 {
		does = append(does, "refuses "+strings.Join(u.Refused, ", ")+" to this user")
		fixes = append(fixes, "grant the clients' user what they read: ACL SETUSER <user> "+strings.Join(u.Grant, " ")+" (and in the ACL file)")
	}
	if len(u.Disabled) > 0 {
		does = append(does, "disables "+strings.Join(u.Disabled, ", ")+" (it answers \"unknown command\", as a managed service or a rename-command does)")
		fixes = append(fixes, "no ACL rule grants a command the server disables: enable it in the server's configuration, or run the clients with --unchecked-nodes (library: WithUncheckedNodes) and check by hand what they cannot")
	}
	return fmt.Sprintf("%s, so the clients cannot check %s: they refuse the node (unless --unchecked-nodes)", strings.Join(does, " and "), strings.Join(u.Lost, "; ")),
		strings.Join(fixes, "; ")
}

// checkClocks compares the node clocks (R9): each node's offset from this
// process's clock, against the median offset, allowing for each
// measurement's uncertainty (half its round trip).
func checkClocks(ps []probe, maxSkew time.Duration) []finding {
	var ok []probe
	for _, p := range ps {
		if p.Err == nil && p.ClockOK {
			ok = append(ok, p)
		}
	}
	if len(ok) < 2 {
		return nil
	}
	offs := make([]time.Duration, len(ok))
	for i, p := range ok {
		offs[i] = p.ClockOffset
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	median := offs[len(offs)/2]
	var fs []finding
	bad := 0
	for _, p := range ok {
		d := p.ClockOffset - median
		if d < 0 {
			d = -d
		}
		if d > maxSkew+p.ClockErr {
			bad++
			fs = append(fs, finding{Sev: sevWarn, Node: p.Node, Rule: "R9",
				What: fmt.Sprintf("clock is %v off the other nodes' (more than --max-skew %v): a clock that is not kept in sync may also jump, and a jump shortens the keys' real life", (p.ClockOffset - median).Round(time.Millisecond), maxSkew),
				Fix:  "keep node clocks synchronised with NTP that slews (chrony, ntpd -x), never steps"})
		}
	}
	if bad == 0 {
		fs = append(fs, finding{Sev: sevOK, Rule: "R9", What: fmt.Sprintf("node clocks agree within %v (offsets from this host: %v to %v)", maxSkew, offs[0].Round(time.Millisecond), offs[len(offs)-1].Round(time.Millisecond))})
	}
	return fs
}
