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
	// ID and Epoch are the master's node id and the config epoch of its
	// claim, which a later Merge weighs against the claims it reads.
	ID    string
	Epoch int64
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
func Owners(views map[string]string) []Shard { return Merge(nil, views) }

// Merge is Owners of views over prev, a map that Merge or Owners made
// before: a slot's claim in prev stands unless views hold one with a
// higher config epoch. The map then only moves forward: a read that
// reaches only a stale server (a master failed over that came back with
// its old slot map, claiming with its old epoch the slots its replica
// took) does not give it back the slots it lost. A slot that moves
// moves forward too: the master that imports a slot takes a config epoch
// above every other one (CLUSTER SETSLOT NODE), and a replica that takes
// its master's slots over takes a new one.
func Merge(prev []Shard, views map[string]string) []Shard {
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
	known := map[string]Shard{}    // node id -> its shard in prev, for a master views do not name
	for _, sh := range prev {
		for s := sh.Start; s <= sh.End; s++ {
			owner[s] = claim{epoch: sh.Epoch, id: sh.ID}
		}
		known[sh.ID] = sh
	}
	for asked, txt := range views {
		for _, line := range strings.Split(txt, "\n") {
			f, addr, failed, ok := nodeLine(asked, line)
			if !ok {
				continue
			}
			id, flags := f[0], f[2]
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
		c := owner[s]
		if c.id == "" {
			continue
		}
		addr, reps := servers[c.id].addr, replicas[c.id]
		if _, ok := servers[c.id]; !ok {
			addr, reps = known[c.id].Master, known[c.id].Replicas
		}
		if n := len(out); n > 0 && out[n-1].End == s-1 && out[n-1].ID == c.id && out[n-1].Epoch == c.epoch {
			out[n-1].End = s
			continue
		}
		out = append(out, Shard{Start: s, End: s, Master: addr, Replicas: reps, ID: c.id, Epoch: c.epoch})
	}
	return out
}

// Servers returns the address of every server that the CLUSTER NODES
// texts of views name and do not mark failed (nor without an address
// yet), sorted: the servers a read of the slot map asks next, so that
// the first server that answered, which may be stale, does not decide
// alone.
func Servers(views map[string]string) []string {
	var out []string
	for asked, txt := range views {
		for _, line := range strings.Split(txt, "\n") {
			if _, addr, failed, ok := nodeLine(asked, line); ok && !failed {
				out = append(out, addr)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nodeLine reads one line of a CLUSTER NODES text that the server at
// asked wrote: its fields, the address of the server it describes (a lone
// server's own line names no host: asked's), and whether it is marked
// failed, without an address, or still in its handshake; false for a line
// that describes no server with a known address.
func nodeLine(asked, line string) (f []string, addr string, failed, ok bool) {
	f = strings.Fields(line)
	if len(f) < 8 {
		return nil, "", false, false
	}
	addr, _, _ = strings.Cut(f[1], "@")
	addr, _, _ = strings.Cut(addr, ",") // ",hostname"
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		return nil, "", false, false // no address known yet
	}
	if host == "" {
		askedHost, _, _ := net.SplitHostPort(asked)
		addr = net.JoinHostPort(askedHost, port)
	}
	failed = hasFlag(f[2], "fail") || hasFlag(f[2], "noaddr") || hasFlag(f[2], "handshake")
	return f, addr, failed, true
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
