package slots

import (
	"net"
	"slices"
	"strconv"
	"strings"
)

// Shard is a range of hash slots with the master that serves them and its
// replicas, as Owners decides from the servers' slot maps.
type Shard struct {
	Start, End int      // the first and the last slot, inclusive
	Master     string   // host:port
	Replicas   []string // host:port of each replica not marked failed
}

// Owners merges the slot maps that the servers of a cluster report
// (CLUSTER NODES, each text keyed by the address of the server that
// wrote it) into one, as the cluster itself settles a conflict: a slot is
// served by the master that claims it with the highest config epoch.
//
// One server's map is not enough: a master cut from its cluster (its bus)
// while clients still reach it keeps claiming its slots after its replica
// took them over with a higher epoch, and a client that reads its map
// there sends the slots' requests to it, which refuses them
// (CLUSTERDOWN, in a minority), until it happens to read the map
// elsewhere. The promoted replica's claim wins here as soon as one server
// that knows of the promotion answered.
func Owners(views map[string]string) []Shard {
	type claim struct {
		epoch int64
		id    string
	}
	type server struct {
		addr   string
		master string // its master's id, for a replica
		failed bool
	}
	var owner [Count]claim
	servers := map[string]server{} // node id -> what the maps say of it
	for asked, txt := range views {
		askedHost, _, _ := net.SplitHostPort(asked)
		for _, line := range strings.Split(txt, "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			id, flags := f[0], f[2]
			addr, _, _ := strings.Cut(f[1], "@")
			addr, _, _ = strings.Cut(addr, ",") // ",hostname"
			if host, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
				continue // no address known yet
			} else if host == "" {
				addr = net.JoinHostPort(askedHost, port) // a lone server's own line
			}
			failed := hasFlag(flags, "fail") || hasFlag(flags, "noaddr") || hasFlag(flags, "handshake")
			if s, ok := servers[id]; !ok || !s.failed && failed {
				servers[id] = server{addr: addr, master: f[3], failed: failed}
			}
			if !hasFlag(flags, "master") {
				continue
			}
			epoch, err := strconv.ParseInt(f[6], 10, 64)
			if err != nil {
				continue
			}
			for _, r := range f[8:] {
				if strings.HasPrefix(r, "[") {
					continue // a slot on the move: [slot->-id] or [slot-<-id]
				}
				lo, hi, ok := parseRange(r)
				if !ok {
					continue
				}
				for s := lo; s <= hi; s++ {
					if c := &owner[s]; c.id == "" || epoch > c.epoch {
						*c = claim{epoch: epoch, id: id}
					}
				}
			}
		}
	}
	replicas := map[string][]string{} // master id -> replicas
	for _, s := range servers {
		if s.master != "-" && !s.failed {
			replicas[s.master] = append(replicas[s.master], s.addr)
		}
	}
	for _, r := range replicas {
		slices.Sort(r)
	}
	var out []Shard
	for s := 0; s < Count; s++ {
		id := owner[s].id
		if id == "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == s-1 && out[n-1].Master == servers[id].addr {
			out[n-1].End = s
			continue
		}
		out = append(out, Shard{Start: s, End: s, Master: servers[id].addr, Replicas: replicas[id]})
	}
	return out
}

// Owner returns the master that serves slot among shards, "" when none
// does.
func Owner(shards []Shard, slot int) string {
	for _, s := range shards {
		if s.Start <= slot && slot <= s.End {
			return s.Master
		}
	}
	return ""
}

// parseRange reads "lo-hi" or "slot" of CLUSTER NODES.
func parseRange(r string) (lo, hi int, ok bool) {
	a, b, isRange := strings.Cut(r, "-")
	lo, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	if lo < 0 || hi >= Count || lo > hi {
		return 0, 0, false
	}
	return lo, hi, true
}

// hasFlag reports whether the comma-separated flags of CLUSTER NODES hold
// flag ("fail" is not "nofailover").
func hasFlag(flags, flag string) bool {
	for _, f := range strings.Split(flags, ",") {
		if f == flag {
			return true
		}
	}
	return false
}
