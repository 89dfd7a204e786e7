package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/adapter"
)

// newStatusCmd builds "dlm status".
func newStatusCmd() *cobra.Command {
	var (
		nodes     []string
		prefix    string
		timeout   time.Duration
		byzantine int
		tlsf      tlsFiles
		all       bool
		limit     int
		tags      bool
	)
	cmd := &cobra.Command{
		Use:   "status [flags] [RESOURCE...]",
		Short: "Show each node's state, and who holds the given resources or every lock",
		Long: `Show, per node: reachable or not, round-trip time, server version,
replication role and the number of lock keys under the key prefix. For each
RESOURCE given (or, with --all, every resource with a lock key on some
node, found by scanning the key prefix): how it is held by a quorum of
nodes (for write, by its owner; for read, by its readers; or free), the
validity that remains on a quorum, its fencing token, and each node's view.
Holders are named by their owner label (--owner of dlm lock and dlm
acquire, host and pid by default) and numbered per node; the lock's value
is a secret and is never shown, not a byte of it. To release a lock whose
holder is known to be dead: dlm release --force RESOURCE. A name shown
quoted (it has control characters or invalid UTF-8, or starts with a
quote) is given back to dlm status and dlm release --force in that quoted
form (Go syntax), quoted once more for the shell: '"job\x1b"'.

Two URLs that reach one server (the same run_id, e.g. 127.0.0.1 and
localhost) are flagged: they are not independent masters, which Redlock
needs (docs/spec/redlock.md).

--timeout bounds each request to a node (a round trip; a new connection's
first request has two): a node that answers within it is up, and its round
trip is shown; a node that refuses the connection, or does not answer
within it, is down. Inspecting a lock waits for a node that answers slowly
as a lock's grant does.

A resource is "unknown" rather than free when the nodes that did not answer
are enough, with those holding a key of it, to make a quorum: they could
hold it.

Exits 69 when fewer nodes answer than a quorum needs, 1 when two URLs reach
the same server, 3 (inconclusive) when a resource's state is unknown, else
0. With --all, when the key scan of a node fails the
list is printed and the nodes named: exit 3 (inconclusive) if a quorum of
nodes was scanned (every held lock is then listed, a leftover key only on
the failed nodes may not be), 69 if fewer were (a held lock may be missing).`,
		Example: `  dlm status --nodes redis://n1:6379,redis://n2:6379,redis://n3:6379 backup
  dlm status --all`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case timeout <= 0:
				return usageErrorf("--timeout must be positive, got %v", timeout)
			case all && len(args) > 0:
				return usageErrorf("give RESOURCE names or --all, not both")
			case limit < 1:
				return usageErrorf("--limit must be at least 1, got %d", limit)
			}
			if len(args) > 0 {
				var err error
				if args, err = namedResources(args); err != nil {
					return err
				}
			}
			parsed, q, cfgs, err := probeTargets(nodes, byzantine, tlsf)
			if err != nil {
				return err
			}
			ps := probeNodes(cmd.Context(), parsed, prefix, timeout, cfgs)
			printStatus(cmd.OutOrStdout(), ps, q)
			unknown := 0
			if len(args) > 0 || all {
				if unknown, err = printLocks(cmd, nodes, tlsf, prefix, tags, byzantine, timeout, args, all, limit, hungNodes(ps)); err != nil {
					return err
				}
			}
			if up := reachable(ps); up < q {
				return withCode(exitUnavailable, fmt.Errorf("only %d of %d nodes reachable, a quorum needs %d: no lock can be acquired", up, len(ps), q))
			}
			if as := findAliases(ps); len(as) > 0 {
				return withCode(exitFailure, fmt.Errorf("%d node URL(s) reach a server already listed (same run_id): the nodes are not independent", len(as)))
			}
			if unknown > 0 {
				return withCode(exitInconclusive, fmt.Errorf("the state of %d resource(s) is unknown: the nodes that did not answer could hold them", unknown))
			}
			return nil
		},
	}
	addNodesFlag(cmd, &nodes)
	f := cmd.Flags()
	f.StringVar(&prefix, "key-prefix", redlock.DefaultKeyPrefix, "prefix of the lock keys on the nodes")
	f.DurationVar(&timeout, "timeout", 2*time.Second, "time allowed for each request to a node (a round trip; a new connection's first request has two): a node that answers within it is up, however slowly")
	f.IntVar(&byzantine, "byzantine", 0, "lying nodes the clients tolerate (their --byzantine / WithByzantineNodes): the quorum is then the library's Byzantine quorum")
	f.BoolVarP(&all, "all", "a", false, "list every resource with a lock key on some node (a bounded SCAN of the key prefix on every node)")
	f.IntVar(&limit, "limit", redlock.DefaultLocksLimit, "with --all, list at most this many resources")
	addTLSFlags(cmd, &tlsf)
	addHashTagsFlag(cmd, &tags)
	return cmd
}

// printLocks inspects resources (or, with all, every resource under the
// key prefix, at most limit) through a lock client over the nodes, and
// prints each. hung counts the nodes that did not answer the probe within
// timeout: each inspection waits timeout for such a node.
func printLocks(cmd *cobra.Command, nodes []string, tlsf tlsFiles, prefix string, tags bool, byzantine int, timeout time.Duration, resources []string, all bool, limit, hung int) (unknown int, err error) {
	urls, err := resolveNodes(nodes)
	if err != nil {
		return 0, err
	}
	// Each request to a node is bounded by --timeout: the library's bound
	// is twenty node timeouts (timeout.go), or, for a slow node, ttl/2 -
	// drift (Inspect). This process is a new client: its first request to
	// a node opens the connection, a round trip more, so a grant's patience
	// for the ttl is five node bounds' half: two round trips of up to
	// --timeout each, with room for the drift.
	nodeTimeout := max(min(timeout, redlock.DefaultMaxTTL/5)/20, time.Millisecond)
	ttl := 5 * 20 * nodeTimeout
	opts := []redlock.Option{redlock.WithKeyPrefix(prefix), redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(ttl)}
	if byzantine > 0 {
		opts = append(opts, redlock.WithByzantineNodes(byzantine))
	}
	opts = append(opts, hashTagsOptions(tags)...)
	// go-redis dials lazily: a node that is down is reported per node.
	client, closeClient, err := dial("goredis", urls, tlsf, closeGrace(timeout), opts...)
	if err != nil {
		return 0, err
	}
	defer closeClient()
	ctx, cancel := context.WithTimeout(cmd.Context(), listingBudget(timeout, len(resources), all, limit, hung))
	defer cancel()
	w := cmd.OutOrStdout()
	var infos []redlock.LockInfo
	complete := true
	var cut error
	var scan *redlock.ScanError
	if all {
		infos, complete, cut = client.Locks(ctx, limit)
		if errors.As(cut, &scan) && cut == error(scan) {
			cut = nil // the list is whole but for the failed nodes: said below
		}
		if cut != nil && len(infos) == 0 {
			return 0, fmt.Errorf("list the locks: %w", cut)
		}
		fmt.Fprintf(w, "\n%d resource(s) with a lock key under %q\n", len(infos), prefix)
	}
	for _, r := range resources {
		info, err := client.Inspect(ctx, r)
		if err != nil {
			return 0, fmt.Errorf("inspect %q: %w", r, err)
		}
		infos = append(infos, info)
	}
	for _, info := range infos {
		fmt.Fprintln(w)
		key := prefix + info.Resource
		if tags {
			key = redlock.HashTaggedKey(prefix, info.Resource)
		}
		fmt.Fprint(w, describeLock(info, client.Quorum(), key))
		if couldHold(info, client.Quorum()) > 0 {
			unknown++
		}
		if name, ok := election.NameOf(info.Resource); ok {
			fmt.Fprint(w, describeElection(ctx, client, name))
		}
	}
	switch {
	case cut != nil && hung > 0:
		return unknown, fmt.Errorf("the list of locks is cut short (%d shown): %d node(s) did not answer within --timeout %v, and each lock waits that long for them: %w", len(infos), hung, timeout, cut)
	case cut != nil:
		return unknown, fmt.Errorf("the list of locks is cut short (%d shown): %w", len(infos), cut)
	case scan != nil:
		return unknown, incompleteScan(scan, client.Quorum())
	case !complete:
		fmt.Fprintf(w, "\n(more resources than --limit %d: the list is cut)\n", limit)
	}
	return unknown, nil
}

// incompleteScan is the error of dlm status --all when the key scan of
// some nodes failed. A lock held on a quorum has a key on some node that
// was scanned whole when at least a quorum of nodes were (two quorums
// meet): the list then misses at most keys left on fewer nodes, and the
// answer is inconclusive (exit 3). Scanned on fewer than a quorum, a
// held lock may be missing: exit 69, as for too few nodes.
func incompleteScan(se *redlock.ScanError, quorum int) error {
	if se.Scanned() < quorum {
		return withCode(exitUnavailable, fmt.Errorf("the list of locks is incomplete: only %d of %d nodes were scanned, fewer than a quorum (%d), so held locks may be missing: %w", se.Scanned(), se.Nodes, quorum, se))
	}
	return withCode(exitInconclusive, fmt.Errorf("the list of locks is incomplete: every lock held on a quorum is listed, but keys only on the %d node(s) whose scan failed may be missing: %w", len(se.Failed), se))
}

// listingBudget is the time dlm status gives its inspections. Each lock
// is inspected in turn, each request within timeout, and on nodes that
// answer an inspection takes two round trips (the key, then its fence)
// and the first one a round trip more (the connection): the listing has
// two timeouts for each lock it may inspect (with all, up to limit), and
// two more, so that a long list on a slow network is not cut short. A
// hung node (one that did not answer the probe) makes every inspection
// wait timeout for it: the listing is then bounded as for four locks (or
// the named ones), a timeout each, and shows what was inspected by then.
func listingBudget(timeout time.Duration, named int, all bool, limit, hung int) time.Duration {
	if hung > 0 {
		n := max(named, 4)
		if n+1 > int(math.MaxInt64/timeout) {
			return math.MaxInt64 // no bound but the nodes' own
		}
		return time.Duration(n+1) * timeout
	}
	n := named
	if all {
		n = min(named+limit, math.MaxInt/2-1)
	}
	if n > math.MaxInt/2-1 || 2*n+2 > int(math.MaxInt64/timeout) {
		return math.MaxInt64
	}
	return time.Duration(2*n+2) * timeout
}

// hungNodes counts the probes that ended by their deadline: nodes that
// accept a connection but do not answer (a stopped process, a stalled
// disk), as opposed to nodes that refuse at once.
func hungNodes(ps []probe) int {
	n := 0
	for _, p := range ps {
		var ne net.Error
		if p.Err != nil && (errors.Is(p.Err, context.DeadlineExceeded) || errors.As(p.Err, &ne) && ne.Timeout()) {
			n++
		}
	}
	return n
}

// printStatus writes the node table.
func printStatus(w io.Writer, ps []probe, q int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tRTT\tVERSION\tROLE\tLOCK KEYS")
	for _, p := range ps {
		if p.Err != nil {
			fmt.Fprintf(tw, "%s\tdown\t-\t-\t-\t-\t(%v)\n", p.Node, p.Err)
			printMasters(tw, p)
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
		printMasters(tw, p)
	}
	tw.Flush()
	up := reachable(ps)
	verdict := "locks can be acquired"
	if up < q {
		verdict = "NO QUORUM: no lock can be acquired"
	}
	fmt.Fprintf(w, "%d nodes, %d reachable, quorum %d: %s\n", len(ps), up, q, verdict)
	for _, a := range findAliases(ps) {
		fmt.Fprintf(w, "NOT INDEPENDENT: %s is the same server as %s (run_id %s): each node must be its own redis-server\n", a.Second, a.First, a.RunID)
	}
}

// describeElection says who leads the election name, in which term and
// since when, for a lock that is an election's (dlm elect).
func describeElection(ctx context.Context, client *redlock.Client, name string) string {
	st, err := election.ReadStatus(ctx, client, name)
	switch {
	case err != nil:
		return fmt.Sprintf("  election %q: not read (%v)\n", name, err)
	case !st.OK:
		return fmt.Sprintf("  election %q: no leader (highest term %d)\n", name, st.Leader.Term)
	case st.Since.IsZero():
		return fmt.Sprintf("  election %q: leader %q, term %d\n", name, st.Leader.ID, st.Leader.Term)
	}
	return fmt.Sprintf("  election %q: leader %q, term %d, since %s (%s ago)\n", name, st.Leader.ID, st.Leader.Term,
		st.Since.Format(time.RFC3339), time.Since(st.Since).Round(time.Second))
}

// shownName is a resource name as dlm status prints it: as is when it is
// printable UTF-8, else quoted (as also when it starts with a quote), so
// that a name found on the nodes, which whoever wrote the key chose,
// cannot forge a line of the report or send escapes to the terminal.
func shownName(r string) string {
	if r == "" || strings.HasPrefix(r, `"`) || !utf8.ValidString(r) || strings.IndexFunc(r, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return strconv.Quote(r)
	}
	return r
}

// describeLock says how info's resource is held by a quorum of nodes (q)
// and by each node, without a byte of any value: holders are numbered, and
// named by their owner labels. key is the resource's key on the nodes,
// named when a key there is not dlm's (foreignKind).
func describeLock(info redlock.LockInfo, q int, key string) string {
	var b strings.Builder
	info.Resource = shownName(info.Resource)
	owner := func(o string) string {
		if o == "" {
			return "an unknown owner"
		}
		return strconv.Quote(o)
	}
	n := len(info.Nodes)
	switch info.Mode {
	case redlock.ModeWrite:
		on := 0
		for _, v := range info.Nodes {
			if v.Holder == 1 {
				on++
			}
		}
		fmt.Fprintf(&b, "%s: HELD for write by %s on %d of %d nodes (quorum %d), validity %v, token %d",
			info.Resource, owner(info.Owner), on, n, q, info.Validity.Round(time.Millisecond), info.Token)
	case redlock.ModeRead:
		rs := make([]string, len(info.Readers))
		for i, r := range info.Readers {
			rs[i] = fmt.Sprintf("%s (%v)", owner(r.Owner), r.Validity.Round(time.Millisecond))
		}
		noun := "readers"
		if len(rs) == 1 {
			noun = "reader"
		}
		fmt.Fprintf(&b, "%s: HELD for read by %d %s on a quorum (quorum %d): %s", info.Resource, len(rs), noun, q, strings.Join(rs, ", "))
	case redlock.ModeFree:
		if e := couldHold(info, q); e > 0 {
			fmt.Fprintf(&b, "%s: unknown: %d node(s) did not answer, and they could hold it (a lock needs %d nodes)", info.Resource, e, q)
			break
		}
		fallthrough
	default:
		some, foreign := false, 0
		for _, v := range info.Nodes {
			some = some || v.Kind != adapter.KeyAbsent
			if foreignKind(v) != "" {
				foreign++
			}
		}
		switch {
		case foreign > 0:
			fmt.Fprintf(&b, "%s: BLOCKED by a key that is not a lock of dlm on %d of %d nodes: no lock of it can be acquired while it is there; if no program of yours owns it, delete it on those nodes: redis-cli DEL %s",
				info.Resource, foreign, n, shellWord(key))
		case !some:
			fmt.Fprintf(&b, "%s: free (no node holds it)", info.Resource)
		default:
			fmt.Fprintf(&b, "%s: free (keys on fewer than a quorum of %d nodes: remnants of a failed attempt or an expiring lock, not a lock)", info.Resource, q)
		}
	}
	if info.Waiters > 0 {
		fmt.Fprintf(&b, ", %d writer(s) waiting", info.Waiters)
	}
	b.WriteString("\n")
	if info.Mode == redlock.ModeFree && info.Waiters == 0 {
		some := false
		for _, v := range info.Nodes {
			some = some || v.Kind != adapter.KeyAbsent || v.Err != nil
		}
		if !some {
			return b.String()
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, v := range info.Nodes {
		switch {
		case v.Err != nil:
			fmt.Fprintf(tw, "  %s\tno answer\t(%v)\n", v.Node, v.Err)
		case foreignKind(v) != "":
			fmt.Fprintf(tw, "  %s\tnot a lock of dlm: %s\n", v.Node, foreignKind(v))
		case v.Kind == adapter.KeyLock:
			fmt.Fprintf(tw, "  %s\tholder %d\t%s\tttl %v\tfence %d\n", v.Node, v.Holder, owner(v.Owner), v.TTL.Round(time.Millisecond), v.Fence)
		case v.Kind == adapter.KeyReaders:
			fmt.Fprintf(tw, "  %s\t%d reader(s), %d writer(s) waiting\t\tttl %v\tfence %d\n", v.Node, v.Readers, v.Waiters, v.TTL.Round(time.Millisecond), v.Fence)
		default:
			fmt.Fprintf(tw, "  %s\tabsent\t\t\tfence %d\n", v.Node, v.Fence)
		}
	}
	tw.Flush()
	return b.String()
}

// couldHold is the number of nodes that did not answer info's read when
// they, with the nodes that hold a key of the resource, are a quorum (q):
// the resource could then be held although the answers read it free. 0
// when the answers decide.
func couldHold(info redlock.LockInfo, q int) int {
	if info.Mode != redlock.ModeFree {
		return 0
	}
	errs, keys := 0, 0
	for _, v := range info.Nodes {
		switch {
		case v.Err != nil:
			errs++
		case v.Kind != adapter.KeyAbsent:
			keys++
		}
	}
	if errs == 0 || errs+keys < q {
		return 0
	}
	return errs
}

// foreignKind says what a node's key is when it is not a lock of dlm,
// "" when it is one (or absent): a key of a type dlm never writes there,
// or a string or hash without expiry (dlm sets one on every lock key and
// readers' hash). Such a key refuses every lock of the resource, forever
// when it has no expiry.
func foreignKind(v redlock.NodeView) string {
	switch {
	case v.Err != nil:
		return ""
	case v.Kind == adapter.KeyOther:
		return "a key of a type dlm does not write (not a string or hash)"
	case v.Kind == adapter.KeyReaders && v.TTL < 0:
		return "a hash without expiry"
	case v.Kind == adapter.KeyLock && v.TTL < 0:
		return "a string without expiry"
	}
	return ""
}

// shellWord is s as one word of a POSIX shell command line, quoted when
// it holds anything but letters, digits and -_.:/{}.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("-_.:/{}", c)))
	}) < 0 {
		return s
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
		return strconv.Quote(s) + " (the key in Go syntax: unquote it for the shell)"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
