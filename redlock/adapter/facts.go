package adapter

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxTTLKey is the key under which a node started by `dlm node` advertises
// its --max-ttl, as a Go duration ("15s"), in database 0: the longest lock
// ttl it is safe for (a restart after a crash without persistence waits
// that long, so that every lock the node forgot has expired first). A
// Redis Cluster holds it on the master of its slot only.
const MaxTTLKey = "dlm:node:max-ttl"

// Facts is what one server of a node (the node's redis-server, or one
// master of a node that is a Redis Cluster) told about itself when a
// connection to it was made: which server it is, the longest lock ttl it
// advertises, and whether it writes every change to disk before it
// answers. The zero value knows nothing.
type Facts struct {
	// Addr is the server's address (host:port), without credentials.
	Addr string
	// RunID is the server's run id (INFO server), "" when unknown: two
	// servers with one run id are one server. A restart changes it.
	RunID string
	// MaxTTL is the max ttl the server advertises under MaxTTLKey, 0 when
	// it advertises none.
	MaxTTL time.Duration
	// PersistenceKnown is set when AppendOnly and FsyncAlways were read.
	PersistenceKnown bool
	// AppendOnly is the server's appendonly setting.
	AppendOnly bool
	// FsyncAlways is set when the server syncs its append-only file on
	// every write (appendfsync always).
	FsyncAlways bool
	// Snapshots is set when the server writes RDB snapshots (its save
	// setting is not empty).
	Snapshots bool
	// ReplicaOf is the address of the server's master when the server is
	// a replica (INFO replication), else "".
	ReplicaOf string
	// ReplicationKnown is set when Replica and Replicas were read (INFO
	// replication).
	ReplicationKnown bool
	// Replica is set when the server is itself a replica (role:slave): it
	// refuses the lock scripts' writes, or keeps them to itself.
	Replica bool
	// Replicas is the number of replicas connected to the server
	// (connected_slaves).
	Replicas int
	// MaxMemory is the server's maxmemory in bytes (0: no limit), and
	// MaxMemoryPolicy its maxmemory-policy, "" when CONFIG was refused.
	MaxMemory       int64
	MaxMemoryPolicy string
	// Refused names what the server refused to tell the node's user (an
	// ACL without the command, or a service that disables it), each once:
	// RefusedInfo, RefusedConfig, RefusedMaxTTL, RefusedClient. The facts
	// each one reads are unknown, so the client's checks of them cannot
	// run (redlock.WithUncheckedNodes).
	Refused []string
	// ClusterEnabled is set when the server runs in Redis Cluster mode
	// (INFO cluster: cluster_enabled:1): a node that is not a cluster node
	// (a URL without cluster=true) cannot use it, as the server refuses
	// the keys of the other masters' slots (MOVED).
	ClusterEnabled bool
	// Disabled names, of Refused, what the server does not know at all:
	// it answered "unknown command" or "unknown subcommand" (a managed
	// service that disables CONFIG, a rename-command), not NOPERM, so no
	// ACL rule can grant it. Each once.
	Disabled []string
}

// What a server can refuse to tell (Facts.Refused): the command, as an
// ACL names it, and what is unknown without it.
const (
	// RefusedInfo: INFO (its run id, so one server given as two nodes,
	// and its replication).
	RefusedInfo = "INFO"
	// RefusedConfig: CONFIG GET (its eviction policy and persistence).
	RefusedConfig = "CONFIG GET"
	// RefusedMaxTTL: the GET of MaxTTLKey (its advertised max ttl), which
	// an ACL key pattern may refuse.
	RefusedMaxTTL = "GET " + MaxTTLKey
	// RefusedClient: CLIENT ID or CLIENT KILL (the reconnect fence, which
	// closes the connections given up before a new one carries a
	// request).
	RefusedClient = "CLIENT KILL"
)

// Refusal reports whether msg, a server's error reply, refuses a command
// to the user: NOPERM (an ACL), or an unknown command or subcommand (a
// service that disables or renames it). Other errors (LOADING, MOVED on a
// cluster master that does not hold the key's slot) refuse nothing.
func Refusal(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "unknown subcommand")
}

// Denied reports whether msg, the text of a node's error, is a refusal
// of a command to the node's user: a refusal of the command itself
// (Refusal), or of a command that a script runs ("can't run this command
// or subcommand", as Redis words the refusal of a script's call). Such a
// request fails every time, until the user is granted the command.
func Denied(msg string) bool {
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't run this command") ||
		strings.Contains(msg, "unknown command")
}

// Disabling reports whether msg, a server's error reply that refuses a
// command (Refusal), says that the server does not know the command (a
// service that disables or renames it), rather than that the user may
// not run it (NOPERM).
func Disabling(msg string) bool {
	return !strings.HasPrefix(msg, "NOPERM") && (strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand"))
}

// Decline records the server's error reply msg to what: when it refuses
// the command (Refusal), what is added to Refused, and to Disabled when
// the server does not know the command (Disabling); it reports whether it
// refused.
func (f *Facts) Decline(what, msg string) bool {
	if !Refusal(msg) {
		return false
	}
	f.Refuse(what)
	if Disabling(msg) && !f.Disables(what) {
		f.Disabled = append(f.Disabled, what)
	}
	return true
}

// Declined copies into f what d refused and disabled (Decline), for the
// facts that are read before the reply that says the rest.
func (f *Facts) Declined(d Facts) {
	for _, r := range d.Refused {
		f.Refuse(r)
	}
	for _, r := range d.Disabled {
		if !f.Disables(r) {
			f.Disabled = append(f.Disabled, r)
		}
	}
}

// Refuse adds what to Refused, once.
func (f *Facts) Refuse(what string) {
	if !f.Refuses(what) {
		f.Refused = append(f.Refused, what)
	}
}

// Refuses reports whether the server refused what (Refused).
func (f Facts) Refuses(what string) bool { return slices.Contains(f.Refused, what) }

// Disables reports whether the server does not know what (Disabled).
func (f Facts) Disables(what string) bool { return slices.Contains(f.Disabled, what) }

// Unchecked is what a client cannot check of a server that refused to
// tell some of its facts (Facts.Unchecked), and the ways to each: the one
// reading of Facts.Refused for the library's refusal and dlm doctor's.
type Unchecked struct {
	// Refused is what the user's ACL refuses (NOPERM), Disabled what the
	// server does not know (Facts.Disabled): no ACL rule grants it.
	Refused, Disabled []string
	// Lost is what the client cannot check without them, each once.
	Lost []string
	// Grant is the ACL rules that grant Refused, in its order.
	Grant []string
}

// Unchecked returns what the client cannot check of the server, as
// Refused and Disabled say (nothing when it refused nothing).
func (f Facts) Unchecked() Unchecked {
	var u Unchecked
	fence := "the reconnect fence (a request left on a connection given up can run after the next connection's)"
	for _, r := range []struct{ what, lost, grant string }{
		{RefusedInfo, "its run id (one server given as two nodes counts twice toward the quorum), its replicas, " + fence, "+info"},
		{RefusedConfig, "its eviction policy (a lock key evicted before its ttl) and persistence", "+config|get"},
		{RefusedMaxTTL, "the max ttl it advertises", "%R~" + MaxTTLKey},
		{RefusedClient, fence, "+client|id +client|kill"},
	} {
		if !f.Refuses(r.what) {
			continue
		}
		if !slices.Contains(u.Lost, r.lost) && !(r.what == RefusedClient && f.Refuses(RefusedInfo)) {
			u.Lost = append(u.Lost, r.lost)
		}
		if f.Disables(r.what) {
			u.Disabled = append(u.Disabled, r.what)
			continue
		}
		u.Refused = append(u.Refused, r.what)
		u.Grant = append(u.Grant, r.grant)
	}
	return u
}

// Evicts reports whether the server may evict lock keys before their ttl:
// it has a memory limit and a policy that evicts keys (allkeys-* evicts
// any, volatile-* those with a ttl, which every lock key has).
func (f Facts) Evicts() bool {
	return f.MaxMemory > 0 && f.MaxMemoryPolicy != "" && f.MaxMemoryPolicy != "noeviction"
}

// Durable reports whether the server keeps every acknowledged write
// across a crash (appendonly yes, appendfsync always), as fence counters
// and leaders' terms need.
func (f Facts) Durable() bool { return f.PersistenceKnown && f.AppendOnly && f.FsyncAlways }

// Forgets reports whether the server keeps nothing across a restart
// (appendonly no, no RDB snapshots): it comes back empty, its fence floor
// key gone, which a fencing client sees and repairs (redlock.WithFencing),
// rather than with an older copy of its keys, which it cannot see.
func (f Facts) Forgets() bool { return f.PersistenceKnown && !f.AppendOnly && !f.Snapshots }

// FactsNode is an optional capability of a Node: what its servers tell
// about themselves, read when the node connects to them and kept, so that
// the client checks its settings against them (the lock ttl against an
// advertised max ttl, one server given as two nodes, fencing without
// durable writes) without a request on the path of a lock. A node reads
// a server's Facts in the handshake of every new connection to it (so
// again after the server restarted), before the connection carries a
// request.
type FactsNode interface {
	Node
	// Connect makes the node's connections that are not made yet (to
	// every master, for a Redis Cluster), bounded by ctx, so that Facts
	// tells what they read, and reads again on the live ones what a
	// running server can change (RereadCommands). It may send requests
	// to do so; the client calls it before its first lock, from
	// CheckNodes, and every few seconds while it locks.
	Connect(ctx context.Context) error
	// Facts returns, without a request, the Facts of each server that
	// the node's connections reached (one for a single master, one per
	// master for a cluster), and a version that changes whenever a new
	// connection read them: 0 before the first. The slice must not be
	// modified.
	Facts() (servers []Facts, version uint64)
}

// FactsCommands are the commands, sent in a connection's handshake, whose
// replies ParseFacts reads (with INFO server, which the handshake sends to
// learn the connection's run id anyway): the advertised max ttl, the
// persistence settings (CONFIG GET append*, CONFIG GET save), the memory
// limit and eviction policy (CONFIG GET maxmemory*), the replication
// role and replicas (INFO replication) and the cluster mode (INFO
// cluster). The replies after the first are arrays of settings (CONFIG
// GET) or INFO text; a refusal of each names RefusedBy of its command.
func FactsCommands() [][]string {
	return [][]string{{"GET", MaxTTLKey}, {"CONFIG", "GET", "append*"}, {"CONFIG", "GET", "save"},
		{"CONFIG", "GET", "maxmemory*"}, {"INFO", "replication"}, {"INFO", "cluster"}}
}

// RefusedBy is what a server that refuses cmd, one of FactsCommands or
// RereadCommands, refuses to tell (Facts.Refused).
func RefusedBy(cmd []string) string {
	switch cmd[0] {
	case "INFO":
		return RefusedInfo
	case "CONFIG":
		return RefusedConfig
	}
	return RefusedMaxTTL
}

// RereadCommands are the commands that read again, on a live connection,
// what a running server can change of its Facts (a replica attached or
// detached, CONFIG SET of its persistence or eviction): INFO server and
// FactsCommands without the max ttl's GET, which a new connection reads
// (a node advertises its max ttl when it starts), in database 0 where
// `dlm node` keeps it.
func RereadCommands() [][]string {
	return append([][]string{{"INFO", "server"}}, FactsCommands()[1:]...)
}

// ParseFacts builds the Facts of the server at addr from its INFO replies
// (INFO server, and INFO replication and INFO cluster when they answered,
// one after the other as an INFO of several sections answers), the value of MaxTTLKey
// ("" when absent or refused) and the settings its CONFIG GETs answered
// (appendonly, appendfsync, save, maxmemory, maxmemory-policy; none when
// CONFIG was refused, as an ACL may). A value under MaxTTLKey that is not
// a positive duration is ignored.
func ParseFacts(addr, info, maxTTL string, config map[string]string) Facts {
	f := Facts{Addr: addr}
	var host, port string
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "run_id":
			f.RunID = v
		case "role":
			f.ReplicationKnown = true
			f.Replica = v == "slave"
			if f.Replica {
				f.ReplicaOf = "?"
			}
		case "master_host":
			host = v
		case "master_port":
			port = v
		case "connected_slaves":
			f.Replicas, _ = strconv.Atoi(v)
		case "cluster_enabled":
			f.ClusterEnabled = v == "1"
		}
	}
	if f.ReplicaOf != "" && host != "" {
		f.ReplicaOf = net.JoinHostPort(host, port)
	}
	if policy := config["maxmemory-policy"]; policy != "" {
		f.MaxMemoryPolicy = policy
		f.MaxMemory, _ = strconv.ParseInt(config["maxmemory"], 10, 64)
	}
	if d, err := time.ParseDuration(strings.TrimSpace(maxTTL)); err == nil && d > 0 {
		f.MaxTTL = d
	}
	if fsync := config["appendfsync"]; fsync != "" {
		f.PersistenceKnown = true
		f.AppendOnly = config["appendonly"] == "yes"
		f.FsyncAlways = fsync == "always"
		f.Snapshots = strings.TrimSpace(config["save"]) != ""
	}
	return f
}
