package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock"
	"dlm/redlock/goredis"
)

// clusterClients returns how status and doctor reach each server of a
// node that is a Redis Cluster: a client of its own per address, with
// the URL's credentials and TLS settings (cfg as for the node), bounded
// by timeout to dial. They ask no server through go-redis' cluster
// client, whose first request loads its slot map and command table from
// one server after another under one deadline, which one hung master
// uses up.
func clusterClients(u redlock.NodeURL, cfg *tls.Config, timeout time.Duration) (func(addr string) *redis.Client, error) {
	cc, err := goredis.NewClusterClient(u)
	if err != nil {
		return nil, err
	}
	tlsConfig := cc.Options().TLSConfig // go-redis' settings, not its requests
	_ = cc.Close()
	if cfg != nil && tlsConfig != nil {
		tlsConfig = forServer(cfg, tlsConfig.ServerName)
	}
	return func(addr string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, Username: u.Username, Password: u.Password, TLSConfig: tlsConfig,
			MaxRetries: -1, DialTimeout: timeout, Protocol: 2, DisableIdentity: true, ContextTimeoutEnabled: true})
	}, nil
}

// probeClusterNode probes a node that is a Redis Cluster master by master:
// the cluster's map from the first of the URL's addresses that answers
// (clusterMap), then every master it names at once, each bounded by
// timeout (probeNode), and the lock keys under prefix on each (at most
// maxKeysCounted in all). The node is up while one master answers: its
// fields are then the URL's first master's, or the first live one's, and
// Masters holds every master's probe (a hung one down, as the locks of its
// slots are, while the others serve theirs).
func probeClusterNode(ctx context.Context, u redlock.NodeURL, cfg *tls.Config, timeout time.Duration, prefix string) probe {
	down := probe{Node: u.String(), Cluster: true}
	client, err := clusterClients(u, cfg, timeout)
	if err != nil {
		down.Err = err
		return down
	}
	seed, nodes, _, err := clusterMap(ctx, u.Addrs, client, timeout) // doctor_cluster.go
	if err != nil {
		down.Err = err
		return down
	}
	masters := clusterMasterAddrs(nodes, seed)
	ps := make([]probe, len(masters))
	keys := make([]int, len(masters))
	var wg sync.WaitGroup
	for j, addr := range masters {
		wg.Go(func() {
			m := client(addr)
			defer m.Close()
			ctx, cancel := context.WithTimeout(ctx, probeBudget(timeout))
			defer cancel()
			ps[j] = probeNode(ctx, m, addr, prefix, timeout)
			if ps[j].Err != nil {
				return
			}
			iter := m.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for keys[j] < maxKeysCounted && iter.Next(ctx) {
				keys[j]++
			}
		})
	}
	wg.Wait()
	pick := -1
	for j, p := range ps {
		if p.Err == nil && (pick < 0 || len(u.Addrs) > 0 && p.Node == u.Addrs[0]) {
			pick = j
		}
	}
	if pick < 0 {
		down.Err = errors.New("the cluster's map names no master")
		if len(ps) > 0 {
			down.Err = ps[0].Err
		}
		down.Masters = ps
		return down
	}
	p := ps[pick]
	p.Node, p.Cluster, p.Masters, p.Keys = u.String(), true, ps, 0
	for _, k := range keys {
		p.Keys = min(p.Keys+k, maxKeysCounted)
	}
	return p
}

// printMasters writes a line per master of a cluster node p under its
// own, when some master is down: the locks of its slots are unavailable
// on the node, while the others' are served.
func printMasters(w io.Writer, p probe) {
	if !slices.ContainsFunc(p.Masters, func(m probe) bool { return m.Err != nil }) {
		return
	}
	for _, m := range p.Masters {
		if m.Err != nil {
			fmt.Fprintf(w, "  master %s\tdown\t-\t-\t-\t-\t(%v: the locks of its slots are unavailable on this node)\n", m.Node, m.Err)
			continue
		}
		fmt.Fprintf(w, "  master %s\tup\t%s\t%s\t%s\t-\n", m.Node, ms(m.RTT), orDash(m.Version), orDash(m.Role))
	}
}
