package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redisproc"
)

// maxClusterMasters bounds dlm node --cluster.
const maxClusterMasters = 64

// clusterBusOffset is how far above its port a cluster master listens for
// the cluster bus (redis-server's default cluster-port).
const clusterBusOffset = 10000

// members returns the configurations of the masters of dlm node --cluster
// M: ports port..port+M-1, data directories dir/PORT, each a
// cluster-enabled redis-server with the delayed restarts of one node.
func (nc *nodeConfig) members() ([]*nodeConfig, error) {
	if nc.cluster > maxClusterMasters {
		return nil, usageErrorf("--cluster %d: at most %d masters per node", nc.cluster, maxClusterMasters)
	}
	if nc.port+nc.cluster-1+clusterBusOffset > 65535 {
		return nil, usageErrorf("--cluster %d from --port %d: the masters' cluster bus ports (port + %d) run past port 65535", nc.cluster, nc.port, clusterBusOffset)
	}
	out := make([]*nodeConfig, nc.cluster)
	for i := range out {
		m := *nc
		m.cluster, m.member = 0, true
		m.port = nc.port + i
		m.dir = filepath.Join(nc.dir, strconv.Itoa(m.port))
		// --cluster-require-full-coverage no: a lost master takes only its
		// slots' locks down on this node, not every lock.
		m.extra = append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-require-full-coverage", "no"}, nc.extra...)
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, usageErrorf("--dir %q: %v", m.dir, err)
		}
		if err := m.portFree(); err != nil {
			return nil, err
		}
		// Each master also listens on its cluster bus port: taken, the
		// master exits at once with the reason in its log only.
		if err := m.listenFree(strconv.Itoa(m.port+clusterBusOffset), "port "+strconv.Itoa(m.port)); err != nil {
			return nil, err
		}
		out[i] = &m
	}
	return out, nil
}

// runCluster runs the masters of dlm node --cluster, each as one node
// (run), forms the cluster once they answer (or finds it formed by an
// earlier run), prints its node URL on stdout, and returns when every
// master has exited: with the first unclean exit's error, if any. A master
// that ends uncleanly (a crash, kill -9) stops the others: the node has
// lost that master's keys, which is a Redlock node that forgot its locks
// for those slots (R16), and serving the other slots would only hide it
// from a supervisor. The whole node exits with the error, to be restarted;
// the crashed master then waits --max-ttl before it serves (R16.3).
func (nc *nodeConfig) runCluster(ctx context.Context, stdout, stderr io.Writer) error {
	members, err := nc.members()
	if err != nil {
		return err
	}
	// A master that did not stop cleanly waits --max-ttl before it serves
	// (R16.3): the cluster's formation waits for it, beyond
	// --start-timeout. Read before the masters start, which rewrite their
	// markers.
	var restartWait time.Duration
	for _, m := range members {
		if _, err := os.Stat(filepath.Join(m.dir, nodeMarker)); err == nil {
			restartWait = nc.maxTTL
		}
	}
	stopAll := make(chan struct{})
	done := make(chan error, len(members))
	for _, m := range members {
		m.stop = stopAll
		go func() {
			err := m.run(ctx, stderr, stderr) // stdout carries the node URL only
			if err != nil {
				err = fmt.Errorf("master on port %d: %w", m.port, err)
			}
			done <- err
		}()
	}
	var stopOnce sync.Once
	stopMasters := func() { stopOnce.Do(func() { close(stopAll) }) }
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	formed := make(chan struct{})
	notFormed := make(chan struct{}) // closed before the masters are stopped for it
	var formErr error                // read after formed is closed
	go func() {
		defer close(formed)
		u, err := nc.form(fctx, members, restartWait)
		if err != nil {
			if fctx.Err() == nil {
				// A node that never serves must not look alive to its
				// supervisor: stop the masters and exit.
				formErr = withCode(exitUnavailable, fmt.Errorf("the cluster was not formed: %w", err))
				fmt.Fprintf(stderr, "dlm node: the cluster was not formed: %v; stopping the masters\n", err)
				close(notFormed)
				stopMasters()
			}
			return
		}
		fmt.Fprintf(stderr, "dlm node: cluster of %d masters serving (cluster_state:ok); its node URL for --nodes:\n", len(members))
		fmt.Fprintln(stdout, u)
	}()
	var first error
	for range members {
		if err := <-done; err != nil && first == nil {
			select {
			case <-notFormed:
				// Stopped by this node because the cluster was not
				// formed (a master still starting dies of the SIGTERM):
				// formErr says why the node ends.
				continue
			default:
			}
			first = err
			fmt.Fprintf(stderr, "dlm node: %v: stopping the other masters; restart the node (the crashed master waits --max-ttl before serving)\n", err)
			stopMasters()
		}
	}
	stop()
	<-formed
	if first == nil {
		return formErr
	}
	return first
}

// form assigns each master an even range of the hash slots, joins them and
// waits for cluster_state:ok; a cluster that an earlier run formed (every
// master knows the others) is only waited for. It records --max-ttl on the
// cluster for dlm doctor and returns the cluster's node URL.
func (nc *nodeConfig) form(ctx context.Context, members []*nodeConfig, restartWait time.Duration) (string, error) {
	clients := make([]*redis.Client, len(members))
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = net.JoinHostPort(m.host(), strconv.Itoa(m.port))
		clients[i] = redis.NewClient(&redis.Options{Addr: addrs[i], Password: m.setting("requirepass"),
			MaxRetries: -1, DialTimeout: time.Second, Protocol: 2, DisableIdentity: true, ContextTimeoutEnabled: true})
		defer clients[i].Close()
	}
	poll := func(what string, extra time.Duration, cond func(c *redis.Client) bool) error {
		deadline := time.Now().Add(nc.startTimeout + extra)
		for {
			ok := true
			for _, c := range clients {
				if !cond(c) {
					ok = false
					break
				}
			}
			if ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("waited --start-timeout %v for %s", nc.startTimeout, what)
			}
			t := time.NewTimer(50 * time.Millisecond) // polling interval, bounded by the deadline
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	info := func(c *redis.Client) map[string]string {
		s, _ := c.ClusterInfo(ctx).Result()
		return parseInfo(s)
	}
	if err := poll("every master to answer", restartWait, func(c *redis.Client) bool { return c.Ping(ctx).Err() == nil }); err != nil {
		return "", err
	}
	// Each master's CLUSTER INFO, read until it answers: an INFO that
	// timed out on a loaded machine read as "slots assigned", and the
	// master was left without its slots, the cluster never ok.
	infos := make([]map[string]string, len(clients))
	for i, c := range clients {
		if err := poll("CLUSTER INFO of "+addrs[i], 0, func(*redis.Client) bool {
			s, err := c.ClusterInfo(ctx).Result()
			infos[i] = parseInfo(s)
			return err == nil
		}); err != nil {
			return "", err
		}
	}
	if infos[0]["cluster_known_nodes"] != strconv.Itoa(len(members)) {
		for i, c := range clients {
			if infos[i]["cluster_slots_assigned"] != "0" {
				continue
			}
			lo, hi := i*redisproc.Slots/len(clients), (i+1)*redisproc.Slots/len(clients)-1
			if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
				return "", fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, addrs[i], err)
			}
		}
		for i, c := range clients[1:] {
			if err := c.ClusterMeet(ctx, members[0].host(), strconv.Itoa(members[0].port)).Err(); err != nil {
				return "", fmt.Errorf("CLUSTER MEET from %s: %w", addrs[i+1], err)
			}
		}
	}
	if err := poll("cluster_state:ok", 0, func(c *redis.Client) bool {
		i := info(c)
		return i["cluster_state"] == "ok" && i["cluster_known_nodes"] == strconv.Itoa(len(members))
	}); err != nil {
		// What each master says, so that a cluster that never formed
		// tells why (a master that knows too many or too few nodes, or
		// has no slots).
		var states []string
		for i, c := range clients {
			in := info(c)
			states = append(states, fmt.Sprintf("%s: cluster_state:%s known_nodes:%s slots_assigned:%s", addrs[i],
				in["cluster_state"], in["cluster_known_nodes"], in["cluster_slots_assigned"]))
		}
		return "", fmt.Errorf("%w (%s)", err, strings.Join(states, "; "))
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: nc.setting("requirepass"), MaxRetries: 2, DisableIdentity: true})
	defer cc.Close()
	if err := cc.Set(ctx, nodeMaxTTLKey, nc.maxTTL.String(), 0).Err(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "dlm node: could not record --max-ttl on the cluster for dlm doctor: %v\n", err)
	}
	q := url.Values{"cluster": {"true"}}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	return "redis://" + addrs[0] + "?" + q.Encode(), nil
}

// host is the address a client reaches the node at: its first --bind
// address, or loopback when it listens on every address.
func (nc *nodeConfig) host() string {
	if ip := net.ParseIP(strings.TrimPrefix(firstField(nc.setting("bind")), "-")); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	return "127.0.0.1"
}
