package redlock

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

// DefaultFencePrefix is the default prefix of the fence keys (WithFencePrefix).
const DefaultFencePrefix = "dlm:fence:"

// The operations of fencing's fans (R18), carried by the blocking methods
// of adapter.FencingNode (fenceAcquire, fenceRaise), never by
// AsyncNode.Start; a set's are multi.go's, a writer's rw.go's.
const (
	opAcquireFenced adapter.Op = 200 + iota // phase 1
	opRaiseFence                            // phase 2
)

// WithFencing makes every lock of the client carry a fencing token (R18):
// Lock.Token is strictly greater than the token of every earlier grant of
// the same resource, through any client with fencing on, so a storage system
// that rejects writes carrying a token older than one it has seen is safe
// against a holder that paused past its validity. The token is kept as a
// quorum max-register on the nodes (see the package documentation for the
// argument): it costs a second round trip per acquisition, and it needs
// every node to implement FencingNode (New refuses others) and to keep its
// fence values (R16: persistence). Default off.
func WithFencing() Option {
	return clientOption(func(o *clientOptions) { o.fencing = true })
}

// WithFenceRetention bounds the memory of fence keys: a resource's fence key
// expires retention after its last grant, instead of never. To keep tokens
// increasing across such a gap, every token is then at least the granting
// client's wall clock in microseconds since the Unix epoch (a clock-derived
// floor); the guarantee after a gap longer than retention then rests on the
// clients' wall clocks being within retention of each other and never
// stepped back by as much. Clients of one resource may differ in
// retention on nodes with adapter.FenceFloorNode (both Redis adapters):
// each grant with a retention raises the node's floor to its token
// (docs/fencing.md); on other nodes they must agree. Default 0: fence keys never expire (about 100
// bytes per resource name ever locked, per node) and tokens count grants
// 1, 2, 3... It must exceed the ttl.
func WithFenceRetention(retention time.Duration) Option {
	return clientOption(func(o *clientOptions) { o.fenceRetention = retention })
}

// WithFencePrefix sets the prefix of the fence keys: the fence of resource r
// is kept under prefix+r. Default "dlm:fence:". Neither it nor the lock key
// prefix may be a prefix of the other, so that no resource name can make a
// lock key collide with a fence key.
func WithFencePrefix(p string) Option {
	return clientOption(func(o *clientOptions) { o.fencePrefix = p })
}

// Token returns the lock's fencing token (R18): strictly greater than the
// token of every earlier grant of the resource by a client with fencing on.
// Pass it to the protected storage with every write. It is 0 when the
// client was built without WithFencing.
func (l *Lock) Token() uint64 { return l.token }

// validateFencing checks the fencing settings against the nodes (New).
func (o clientOptions) validateFencing(nodes []Node, names []string) error {
	if !o.fencing {
		return nil
	}
	for i, n := range nodes {
		if _, ok := n.(adapter.FencingNode); !ok {
			return invalidf("node %q (position %d) does not implement adapter.FencingNode, which WithFencing needs: use an adapter with the fencing scripts, such as redlock/goredis", names[i], i)
		}
	}
	switch {
	case o.fencePrefix == "":
		return invalidf("fence key prefix must not be empty")
	case strings.HasPrefix(o.fencePrefix, o.prefix) || strings.HasPrefix(o.prefix, o.fencePrefix):
		return invalidf("lock key prefix %q and fence key prefix %q overlap: a resource name could make a lock key equal a fence key; choose prefixes neither of which starts the other", o.prefix, o.fencePrefix)
	case o.fenceRetention < 0:
		return invalidf("fence retention must be 0 (keep forever) or positive, got %v", o.fenceRetention)
	}
	return o.checkRetention(o.lock.ttl)
}

// errTokenSpace is a phase-1 read that leaves no larger token.
var errTokenSpace = errors.New("redlock: fence value at the top of the token space")

// nextToken is the token rule as a pure function: over the fence values read
// from the acquiring quorum, take the (f+1)-th largest (the maximum when f
// is 0), add one, and raise it to floor. With f > 0 at most f values come
// from liars, so the (f+1)-th largest is no larger than an honest node's
// value: a liar cannot inflate tokens, and with the fencing quorum of
// WithByzantineNodes at least f+1 honest nodes of the quorum hold the
// previous token, so it cannot deflate them either.
func nextToken(fences []uint64, f int, floor uint64) (uint64, error) {
	if len(fences) <= f {
		return 0, invalidf("fencing: %d fence values for f=%d", len(fences), f)
	}
	s := slices.Clone(fences)
	slices.SortFunc(s, func(a, b uint64) int { return cmp.Compare(b, a) }) // largest first
	v := s[f]
	if v == math.MaxUint64 {
		return 0, errTokenSpace
	}
	return max(v+1, floor), nil
}

// fenceFloor is the clock-derived floor of WithFenceRetention, or 0.
func (c *Client) fenceFloor() uint64 {
	if c.opts.fenceRetention <= 0 {
		return 0
	}
	return uint64(max(0, time.Now().UnixMicro()))
}

// fenceAcquire is the nodeCall of phase 1 of a fenced acquisition (R18):
// the lock key is set as by an acquisition, and the node's fence read with
// it. It confirms the grant with phase 2 (confirm).
type fenceAcquire struct {
	key  string   // the fence key of one resource
	keys []string // a set's fence keys, in the order of its lock keys (multi.go)
	// floor and floors are the floor keys of key and keys (floorKey).
	floor  string
	floors []string
	// fences holds each node's fence, lost whether the node lost its
	// fence values (the restart repair), each written before the node's
	// answer and read after it, under the fan's mu.
	fences []uint64
	lost   []bool
	raise  fenceRaise // phase 2's call, in the same allocation

	fencesBuf [7]uint64 // fences and lost for up to 7 nodes
	lostBuf   [7]bool
}

// fenceRaise is the nodeCall of phase 2 (R18): raise each node's fence to
// token where the lock key still holds the value.
type fenceRaise struct {
	key    string
	keys   []string // a set's (multi.go)
	floor  string   // the floor keys (fenceAcquire)
	floors []string
	token  uint64
	repair bool // repair the nodes that lost their fence values
}

// fenced returns the nodeCall of phase 1 of an acquisition of resource
// (names: a set's resource names), on a client with fencing, or nil
// without fencing.
func (c *Client) fenced(resource string, names []string) nodeCall {
	if !c.opts.fencing {
		return nil
	}
	fa := &fenceAcquire{}
	if names == nil {
		fa.key = c.opts.keyOf(c.opts.fencePrefix, resource)
		fa.floor = c.floorKey(fa.key)
	} else {
		fa.keys, fa.floors = make([]string, len(names)), make([]string, len(names))
		for i, name := range names {
			fa.keys[i] = c.opts.keyOf(c.opts.fencePrefix, name)
			fa.floors[i] = c.floorKey(fa.keys[i])
		}
	}
	n := len(c.nodes)
	fa.fences, fa.lost = fa.fencesBuf[:0], fa.lostBuf[:0]
	if n > len(fa.fencesBuf) {
		fa.fences, fa.lost = make([]uint64, 0, n), make([]bool, 0, n)
	}
	fa.fences, fa.lost = fa.fences[:n], fa.lost[:n]
	return fa
}

// call runs phase 1 on node i: of one resource (acquire), a set
// (multi.go) or a writer (rw.go), each reading the node's floor where it
// has one (fl, nil without: the restart repair, below), so that every
// kind of grant of a resource is repaired alike.
func (fa *fenceAcquire) call(f *fan, i int) (bool, error) {
	fl, _ := f.c.nodes[i].(adapter.FenceFloorNode)
	var (
		ok, kept bool
		fence    uint64
		err      error
	)
	switch f.req.Op {
	case opAcquireAllFenced:
		ok, fence, kept, err = fa.acquireAll(f, i, fl)
	case opWAcquireFenced:
		ok, fence, kept, err = fa.acquireWrite(f, i, fl)
	default:
		ok, fence, kept, err = fa.acquire(f, i, fl)
	}
	fa.fences[i], fa.lost[i] = fence, !kept // read after the answer, under the fan's mu
	return ok, err
}

// call runs phase 2 on node i: of one resource (raise) or a set
// (multi.go).
func (fr *fenceRaise) call(f *fan, i int) (bool, error) {
	if f.req.Op == opRaiseFences {
		return fr.raiseAll(f, i)
	}
	return fr.raiseOne(f, i)
}

// confirm is phase 2 of a fenced acquisition, run once phase 1 (acq)
// reached a quorum within the validity (R18): compute the token from the
// fences that the nodes of the acquiring quorum read (phase1, in node
// order), then raise every node's fence to it where the lock key still
// holds the value, and decide as soon as a quorum confirmed or can no
// longer confirm (a fan, engine.go). Late answers are ignored: a late
// raise is harmless, as raising is monotone.
func (fa *fenceAcquire) confirm(acq *fan, resource string, phase1 []NodeResult) confirmation {
	c := acq.c
	if s := seamOf(acq.ctx); s != nil && s.phase != nil {
		s.phase(resource) // tests: a client frozen between the phases
	}
	var res confirmation
	read := make([]uint64, 0, c.quorum)
	floor, repair := c.fenceFloor(), false
	for i, r := range phase1 {
		if r.Outcome == Acquired {
			read = append(read, fa.fences[i])
			// A node of the quorum lost its fence values (the restart
			// repair, see repairFloor).
			repair = repair || fa.lost[i]
		}
	}
	if repair {
		floor = max(floor, repairFloor())
	}
	// With a retention every token is at least the clock, as a repair's,
	// and every raise marks the floor as a repair does: a kept floor is
	// raised to the token and expires with the fence (floor.lua), so that
	// a client without retention never reads this fence, once expired,
	// as a floor below the token (mixed retentions, see repairFloor).
	repair = repair || c.opts.fenceRetention > 0
	token, err := nextToken(read, c.opts.byzantine, floor)
	if err != nil {
		res.at, res.failed, res.err = time.Now(), true, err
		return res
	}
	res.token = token
	req := adapter.Request{Op: opRaiseFence, Key: acq.req.Key, Value: acq.req.Value}
	if acq.req.Keys != nil {
		req = adapter.Request{Op: opRaiseFences, Keys: acq.req.Keys, Value: acq.req.Value} // multi.go
	}
	f := c.newFanAfter(acq, req, stopDecided)
	if f == nil {
		res.at, res.failed, res.err = time.Now(), true, ErrClosed
		return res
	}
	fa.raise = fenceRaise{key: fa.key, keys: fa.keys, floor: fa.floor, floors: fa.floors, token: token, repair: repair}
	f.by = &fa.raise
	c.send(f)
	state, t2 := f.await()
	f.settle(false, false)
	res.nodes, res.at, res.failed = f.results(), t2, state != reached
	if !t2.Before(f.t1.Add(f.waited)) {
		res.waited = f.waited // timed out by the patience, if at all
	}
	return res
}

// The restart repair. A quorum max-register keeps a fence value only while
// a quorum of its nodes keeps it: a node that restarts without persistence
// (R16.1) forgets every fence value, and after such restarts on enough
// nodes, a quorum may read the fence of a resource lower than its last
// token, so that the token goes down (election terms too). Each node that
// has adapter.FenceFloorNode keeps a floor key, named by the fence prefix
// itself (no resource has an empty name, so no fence key is the prefix);
// it never expires (without WithFenceRetention), so a node without it is
// new or lost its keys. A Redis server writes its replication id into the
// floor key beside the token, and a floor written under another id counts
// as missing: a server gets a new replication id when it restarts and
// when a replica of it is promoted, and a promoted replica may lack its
// master's last fence raises (replication is asynchronous) while it holds
// the floor key, replicated long before; it is then repaired as a node
// that lost its keys, which is what makes a failover by hand safe for
// tokens (docs/fencing.md). Phase 1 reads the floor with the fence (the
// fence counts as at least the floor), for every kind of fenced
// acquisition alike (call: one resource, a writer, a set, which reads the
// floor of each of its resources), and phase 2 repairs it alike. When
// every node of the acquiring quorum kept its floor, the token is the
// quorum max-register's, as before. When one did not, the token is at
// least the wall clock in microseconds (repairFloor), and phase 2 sets the
// floor key of each node that lacks it to the token: the node's missing
// fences of every resource then read as that token.
//
// Why tokens still strictly increase: let t be the last token of a
// resource, confirmed on a quorum Q. A later acquiring quorum shares a node
// Y with Q. If a node of the quorum lost its floor, the new token is above
// the clock, and so above t (t counted grants, far below the clock in
// microseconds, or counted up from a clock value of an earlier repair, one
// per grant of round trips, so below the clock unless clocks stepped back). Otherwise Y kept its floor: either Y
// kept its fence since t (at least t), or Y lost its keys after t and a
// later repair set its floor to a clock value above t. Either way the read
// is at least t and the token above it. The wall clock is trusted only
// after a loss, as WithFenceRetention trusts it after a gap. With
// WithFenceRetention the floor key expires with the retention, as the fence
// keys do: every token is then at least the clock already, so a floor
// that expired adds nothing the clock does not. Clients with and without
// a retention may share a resource: every raise with a retention marks
// the floor as a repair does, raising a kept floor to its token with the
// retention's expiry (floor.lua). A fence that expired beside a kept
// floor then reads as at least every token with retention since the floor
// was set, and once the floor expired the node counts as one that lost
// its keys; a client without retention never counts up from a floor below
// such a token.

// floorSuffix names a resource's own floor key, its fence key and this,
// where keys carry hash tags (a Redis Cluster node): a floor per resource
// instead of one per node, since a script's keys must share a slot. A node
// that never held the resource's floor then counts as one that lost it, so
// the first fenced grant of a resource there is a clock value, as on a new
// node; the argument below holds per resource word for word. No fence or
// lock key ends in it: hash-tagged keys end at the closing brace.
const floorSuffix = ":floor"

// repairFloor is the clock floor of a token that repairs nodes: the wall
// clock in microseconds since the Unix epoch.
func repairFloor() uint64 { return uint64(max(0, time.Now().UnixMicro())) }

// floorKey is the floor key of the fence key fenceKey (the restart
// repair).
func (c *Client) floorKey(fenceKey string) string {
	if c.opts.hashTags {
		// Every script runs on one slot (options.go: the key layout):
		// each resource keeps its own floor, beside its fence key in the
		// same hash tag.
		return fenceKey + floorSuffix
	}
	return c.opts.fencePrefix
}

// acquire runs phase 1 of a single-resource fenced acquisition on node i,
// reading the floor key where the node has it (fl not nil); kept is true
// on a node without.
func (fa *fenceAcquire) acquire(f *fan, i int, fl adapter.FenceFloorNode) (ok bool, fence uint64, kept bool, err error) {
	if fl != nil {
		return fl.AcquireFencedFloor(f.nctx, f.req.Key, fa.key, fa.floor, f.req.Value, f.req.TTL)
	}
	ok, fence, err = f.c.nodes[i].(adapter.FencingNode).AcquireFenced(f.nctx, f.req.Key, fa.key, f.req.Value, f.req.TTL)
	return ok, fence, true, err
}

// raiseOne runs phase 2 of a fenced acquisition of one resource, or of a
// writer (whose key is a plain lock key), on node i, repairing the node's
// floor where it has one and a node of the quorum lost it.
func (fr *fenceRaise) raiseOne(f *fan, i int) (bool, error) {
	c := f.c
	if fl, floored := c.nodes[i].(adapter.FenceFloorNode); floored && fr.repair {
		return fl.RaiseFenceRepair(f.nctx, f.req.Key, fr.key, fr.floor, f.req.Value, fr.token, c.opts.fenceRetention)
	}
	return c.nodes[i].(adapter.FencingNode).RaiseFence(f.nctx, f.req.Key, fr.key, f.req.Value, fr.token, c.opts.fenceRetention)
}
