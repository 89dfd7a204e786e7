package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"dlm/redlock"
)

// newStatusCmd builds "dlm status".
func newStatusCmd() *cobra.Command {
	var (
		nodes     []string
		prefix    string
		timeout   time.Duration
		byzantine int
		tlsf      tlsFiles
	)
	cmd := &cobra.Command{
		Use:   "status [flags] [RESOURCE...]",
		Short: "Show each node's state and who holds the given resources",
		Long: `Show, per node: reachable or not, round-trip time, server version,
replication role and the number of lock keys under the key prefix. For each
RESOURCE given: which lock value holds it on which nodes, whether that is a
quorum (a valid lock) and the remaining ttl.

Two URLs that reach one server (the same run_id, e.g. 127.0.0.1 and
localhost) are flagged: they are not independent masters (R2).

Exits 69 when fewer nodes answer than a quorum needs, 1 when two URLs reach
the same server, else 0.`,
		Example: `  dlm status --nodes redis://n1:6379,redis://n2:6379,redis://n3:6379 backup`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive, got %v", timeout)
			}
			parsed, q, cfgs, err := probeTargets(nodes, byzantine, tlsf)
			if err != nil {
				return err
			}
			ps := probeNodes(cmd.Context(), parsed, prefix, args, timeout, cfgs)
			printStatus(cmd.OutOrStdout(), ps, q, args)
			if up := reachable(ps); up < q {
				return withCode(exitUnavailable, fmt.Errorf("only %d of %d nodes reachable, a quorum needs %d: no lock can be acquired", up, len(ps), q))
			}
			if as := findAliases(ps); len(as) > 0 {
				return withCode(exitFailure, fmt.Errorf("%d node URL(s) reach a server already listed (same run_id): the nodes are not independent (R2)", len(as)))
			}
			return nil
		},
	}
	addNodesFlag(cmd, &nodes)
	cmd.Flags().StringVar(&prefix, "key-prefix", redlock.DefaultKeyPrefix, "prefix of the lock keys on the nodes")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "time allowed for each node to answer")
	cmd.Flags().IntVar(&byzantine, "byzantine", 0, "lying nodes the clients tolerate (their --byzantine / WithByzantineNodes): the quorum is then the library's Byzantine quorum")
	addTLSFlags(cmd, &tlsf)
	return cmd
}

// printStatus writes the node table and the per-resource holders.
func printStatus(w io.Writer, ps []probe, q int, resources []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tRTT\tVERSION\tROLE\tLOCK KEYS")
	for _, p := range ps {
		if p.Err != nil {
			fmt.Fprintf(tw, "%s\tdown\t-\t-\t-\t-\t(%v)\n", p.Node, p.Err)
			continue
		}
		role := p.Role
		switch {
		case p.Master != "":
			role += " of " + p.Master
		case p.Replicas > 0:
			role += fmt.Sprintf(" (%d replicas)", p.Replicas)
		}
		if role == "" {
			role = "?"
		}
		fmt.Fprintf(tw, "%s\tup\t%s\t%s\t%s\t%d\n", p.Node, ms(p.RTT), orDash(p.Version), role, p.Keys)
	}
	tw.Flush()
	up := reachable(ps)
	verdict := "locks can be acquired"
	if up < q {
		verdict = "NO QUORUM: no lock can be acquired"
	}
	fmt.Fprintf(w, "%d nodes, %d reachable, quorum %d: %s\n", len(ps), up, q, verdict)
	for _, a := range findAliases(ps) {
		fmt.Fprintf(w, "NOT INDEPENDENT: %s is the same server as %s (run_id %s): each node must be its own redis-server (R2)\n", a.Second, a.First, a.RunID)
	}
	for _, r := range resources {
		fmt.Fprintln(w)
		fmt.Fprint(w, describeHolders(r, ps, q))
	}
}

// describeHolders says who holds resource on which nodes: a value on a
// quorum of nodes is a valid lock (R8.3); on fewer it is a remnant (a failed
// attempt, or a lock whose keys are expiring).
func describeHolders(resource string, ps []probe, q int) string {
	type holder struct {
		nodes  []string
		minTTL time.Duration
	}
	by := map[string]*holder{}
	for _, p := range ps {
		h, ok := p.Holds[resource]
		if !ok {
			continue
		}
		e := by[h.Value]
		if e == nil {
			e = &holder{minTTL: h.TTL}
			by[h.Value] = e
		}
		e.nodes = append(e.nodes, p.Node)
		e.minTTL = min(e.minTTL, h.TTL)
	}
	if len(by) == 0 {
		return fmt.Sprintf("%s: free (no node holds it)\n", resource)
	}
	values := make([]string, 0, len(by))
	for v := range by {
		values = append(values, v)
	}
	sort.Slice(values, func(i, j int) bool { return len(by[values[i]].nodes) > len(by[values[j]].nodes) })
	var b strings.Builder
	for _, v := range values {
		h := by[v]
		kind := "HELD (quorum)"
		if len(h.nodes) < q {
			kind = "partial, not a lock"
		}
		fmt.Fprintf(&b, "%s: %s by value %s on %d of %d nodes (quorum %d), ttl left >= %v: %s\n",
			resource, kind, shortValue(v), len(h.nodes), len(ps), q, h.minTTL.Round(time.Millisecond), strings.Join(h.nodes, ", "))
	}
	return b.String()
}

// shortValue abbreviates a lock value for display.
func shortValue(v string) string {
	if len(v) > 12 {
		return v[:12] + "..."
	}
	return v
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
