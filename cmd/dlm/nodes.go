package main

import (
	"context"
	"net/url"
	"os"
	"strings"

	"sync"
	"time"

	"github.com/spf13/cobra"

	"dlm/redlock"
	"dlm/redlock/goredis"
)

// nodesEnv is the environment variable that lists node URLs when --nodes is
// not given.
const nodesEnv = "DLM_NODES"

// addNodesFlag adds --nodes to cmd, filling dst.
func addNodesFlag(cmd *cobra.Command, dst *[]string) {
	cmd.Flags().Var((*nodesValue)(dst), "nodes",
		"node URLs, comma-separated: redis://[user:password@]host:port[/db], rediss://..., unix:///path (default $"+nodesEnv+")")
}

// nodesValue is the value of --nodes: URLs separated by commas, the flag
// given once or more. Unlike pflag's string slice, which reads its value
// as one line of CSV and drops every line after the first in silence (a
// list of URLs on three lines gave one node, and a quorum of 1), it splits
// on commas only, and nodeList refuses a line break inside a URL.
type nodesValue []string

func (v *nodesValue) Set(s string) error {
	*v = append(*v, splitNodes(s)...)
	return nil
}

func (v *nodesValue) String() string { return "" } // never shows a URL: it may hold a password

func (v *nodesValue) Type() string { return "urls" }

// splitNodes splits a list of node URLs at its commas, dropping the empty
// pieces and the spaces around each.
func splitNodes(s string) []string {
	var urls []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}

// resolveNodes returns the node URLs from --nodes, else from $DLM_NODES, and
// validates them; a missing list or a bad URL is bad usage (exit 64).
func resolveNodes(flag []string) ([]string, error) {
	urls, _, err := nodeList(flag)
	return urls, err
}

// resolveParsedNodes is resolveNodes for the commands that read the nodes'
// parsed URLs (doctor, status).
func resolveParsedNodes(flag []string) ([]redlock.NodeURL, error) {
	_, parsed, err := nodeList(flag)
	return parsed, err
}

func nodeList(flag []string) ([]string, []redlock.NodeURL, error) {
	urls, from := flag, "--nodes"
	if len(urls) == 0 {
		urls, from = splitNodes(os.Getenv(nodesEnv)), nodesEnv
	}
	if len(urls) == 0 {
		return nil, nil, usageErrorf("no nodes: give --nodes URL,URL,... or set %s", nodesEnv)
	}
	for i, u := range urls {
		if strings.ContainsFunc(u, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			// Not quoted: the URL may hold a password.
			return nil, nil, usageErrorf("%s: node URL %d of %d has a line break or another control character; separate node URLs with commas (URL,URL,...), on one line", from, i+1, len(urls))
		}
		if err := checkURLShape(u); err != nil {
			return nil, nil, err
		}
	}
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	return urls, parsed, nil
}

// checkURLShape refuses what redlock.ParseNodeURL would silently read
// otherwise: a unix socket path that is not absolute (unix://relative/sock
// reads as host "relative", path "/sock") and a tcp URL with a port but no
// host (redis://:7601). The error says what is expected (exit 64).
func checkURLShape(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil // ParseNodeURL says what is wrong
	}
	switch u.Scheme {
	case "unix":
		if u.Host != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			return usageErrorf("node URL %q: the socket path must be absolute, with three slashes: unix:///absolute/path (a relative path would depend on the directory dlm runs in)", raw)
		}
	case "redis", "rediss":
		if u.Host != "" && u.Hostname() == "" {
			return usageErrorf("node URL %q has no host name before the port; expected %s://host:port, e.g. %s://127.0.0.1%s", raw, u.Scheme, u.Scheme, u.Host)
		}
	}
	return nil
}

// refuseAliases asks every node for its run_id (INFO server), each within
// timeout, and refuses two URLs that reach the same server: they are not
// independent masters (R2), and a quorum counted over them would count one
// server twice. Nodes that do not answer are not checked.
func refuseAliases(ctx context.Context, urls []string, t tlsFiles, timeout time.Duration) error {
	cfgs, err := t.forURLs(urls)
	if err != nil {
		return err
	}
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return withCode(exitUsage, err)
	}
	ps := make([]probe, len(parsed))
	var wg sync.WaitGroup
	for i, u := range parsed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goredisTLS(goredis.NewClient(u), cfgs[i])
			defer c.Close()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ps[i] = probe{Node: u.String()}
			info, err := c.Info(pctx, "server").Result()
			if err != nil {
				ps[i].Err = err
				return
			}
			ps[i].RunID = parseInfo(info)["run_id"]
		}()
	}
	wg.Wait()
	if as := findAliases(ps); len(as) > 0 {
		a := as[0]
		return usageErrorf("%s and %s are the same server (run_id %s): each node must be an independent master; give each URL its own redis-server", a.First, a.Second, a.RunID)
	}
	return nil
}

// nodeFlags are the node flags of the commands that dial a lock client
// (acquire, extend, release, elect, leader).
type nodeFlags struct {
	nodes  []string
	nodeTO time.Duration
	prefix string
	tlsf   tlsFiles
	adapt  string
	tags   bool // --hash-tags
	// unchecked: --unchecked-nodes
	unchecked bool
	// promotable: --promotable-replicas
	promotable bool
}

// addPromotableFlag adds --promotable-replicas to cmd, filling dst.
func addPromotableFlag(cmd *cobra.Command, dst *bool) {
	cmd.Flags().BoolVar(dst, "promotable-replicas", false,
		"accept nodes with replicas that may be promoted (a plain master with replicas, which Sentinel or an operator may fail over; a Redis Cluster whose replicas fail over on their own), with a warning: replication is asynchronous, so a promoted replica can lack the last lock keys and let two clients hold a lock; safe only while the other nodes make a quorum without such a node (default: such nodes are refused, and counted as failed nodes while the others make a quorum)")
}

// addUncheckedFlag adds --unchecked-nodes to cmd, filling dst.
func addUncheckedFlag(cmd *cobra.Command, dst *bool) {
	cmd.Flags().BoolVar(dst, "unchecked-nodes", false,
		"accept nodes whose ACL user may not run INFO, CONFIG GET, CLIENT KILL or read dlm:node:max-ttl (or a service that disables CONFIG), with a warning: their replicas, eviction policy, advertised max ttl, one server given twice and the reconnect fence then go unchecked (default: such nodes are refused; dlm doctor names what to grant)")
}

// add adds the flags to cmd, with prefixHelp as --key-prefix's help.
func (nf *nodeFlags) add(cmd *cobra.Command, prefixHelp string) {
	addNodesFlag(cmd, &nf.nodes)
	f := cmd.Flags()
	f.DurationVar(&nf.nodeTO, "node-timeout", redlock.DefaultNodeTimeout, "time each node has to answer a request (small compared to the ttl)")
	f.StringVar(&nf.prefix, "key-prefix", redlock.DefaultKeyPrefix, prefixHelp)
	f.StringVar(&nf.adapt, "adapter", defaultAdapter, "Redis client adapter: "+strings.Join(adapterNames(), " or "))
	addTLSFlags(cmd, &nf.tlsf)
	addHashTagsFlag(cmd, &nf.tags)
	addUncheckedFlag(cmd, &nf.unchecked)
	addPromotableFlag(cmd, &nf.promotable)
}

// client checks the nodes and dials a lock client over them with opts and
// the flags' node timeout and key prefix; ttl bounds the node timeout.
func (nf *nodeFlags) client(ctx context.Context, ttl time.Duration, opts ...redlock.Option) (*redlock.Client, func(), error) {
	if err := checkNodeTimeout(nf.nodeTO, ttl); err != nil {
		return nil, nil, err
	}
	urls, err := resolveNodes(nf.nodes)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseAliases(ctx, urls, nf.tlsf, nf.nodeTO); err != nil {
		return nil, nil, err
	}
	opts = append(append([]redlock.Option{redlock.WithTTL(ttl), redlock.WithKeyPrefix(nf.prefix), redlock.WithNodeTimeout(nf.nodeTO)}, hashTagsOptions(nf.tags)...), opts...)
	if nf.unchecked {
		opts = append(opts, redlock.WithUncheckedNodes())
	}
	if nf.promotable {
		opts = append(opts, redlock.WithPromotableReplicas())
	}
	return dial(nf.adapt, urls, nf.tlsf, closeGrace(nf.nodeTO), opts...)
}
