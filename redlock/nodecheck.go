package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
)

// What the client checks of its nodes before it relies on them. Each node
// that is an adapter.FactsNode reads what its servers tell about
// themselves (run id, advertised max ttl, persistence) when it connects to
// them, in the handshake of the connection, so again after a restart; the
// client keeps a verdict computed from them (nodeFacts) and checks every
// lock's ttl against it with two atomic loads and one call per node that
// reads a version, without a request. Before its first lock the client
// makes the nodes connect (Connect), bounded by checkWait, so that even
// the first lock is checked; a node that does not connect in time (a
// loaded machine) is checked from its first connection on, and that is
// the lock's own attempt: a node grants a lock only over a connection
// whose handshake read its facts first, so a lock granted while some
// node's facts were unknown is checked again before it is returned
// (checkGranted), and given up if the facts its grant read refuse it. A
// slow node is never an error: it is waited for no longer than before.

// NodeCheck is what Client.CheckNodes found: each node's facts, in node
// order, and the warnings it gave (one line each).
type NodeCheck struct {
	// Facts are the facts of each node's servers: one for a single
	// master, one per master for a Redis Cluster; none where a node
	// cannot tell them (it is no adapter.FactsNode) or did not connect.
	Facts [][]adapter.Facts
	// Errs are the nodes' errors in connecting, in node order (nil where
	// none).
	Errs []error
	// Warnings are the settings that the nodes do not support safely but
	// that the client lets pass, one line each.
	Warnings []string
}

// NodeWarning is a setting of the nodes that the client lets pass but
// that weakens what it promises: a node that does not sync every write to
// disk under fencing, a node with replicas or that is one, an even number
// of nodes. The client tells each one
// once to every observer that is a NodeWarner (WithLogger logs it at Warn
// level); CheckNodes returns them too.
type NodeWarning struct {
	// Node is the node's name, "" for a warning about the set of nodes.
	Node string
	// Message says what is unsafe and what fixes it, on one line.
	Message string
}

// NodeWarner is an Observer that is also told the client's NodeWarnings,
// each once.
type NodeWarner interface {
	NodeWarning(NodeWarning)
}

// nodeFacts is what the client knows of its nodes' servers.
type nodeFacts struct {
	once    sync.Once           // the first check: connect, then judge (prime)
	nodes   []adapter.FactsNode // by node; nil where not a FactsNode
	verdict atomic.Pointer[factsVerdict]
	// primed is set once primeFacts read the facts first; read is then
	// made, by node (freshFacts).
	primed atomic.Bool
	read   []nodeReading

	mu     sync.Mutex      // judging; replicas
	warned map[string]bool // warnings told (once each)
	// replicas are each cluster node's replicas as the last reading that
	// got them saw them (nil before one did: New checked them).
	replicas [][]adapter.Replica

	rmu sync.Mutex // the readings' began and pending
}

// factsRefresh is how old the facts a lock counts on may be. Each node's
// facts are read on their own (readNode): a running client reads a node's
// facts again once they are half as old, in the background of the lock or
// extension that finds them so, and publishes each node's reading as it
// answers, stamped with its own beginning, so that a node that does not
// answer (frozen, or slower than the others) holds up neither the others'
// readings nor a lock. A lock never waits for a reading before its
// attempt; once granted, it waits (freshGrant) for the reading of the
// nodes that granted it whose facts are older than factsRefresh at its
// T1, as they answered its attempt, when it needs them for its quorum,
// and it is judged on them (checkGranted). So what an
// operator changes on a running server (a replica attached, or allowed
// to promote itself; an eviction policy set) is seen by every lock that
// begins factsRefresh after the change was made, for the nodes it counts
// on: its grant waits, when the nodes that granted it with facts read
// since are fewer than a quorum, up to one reading's round trip of the
// others, bounded by checkWait and by half of the lock's validity left (a
// node whose reading takes longer is judged on the facts at hand, and
// seen by the locks after its reading). The same
// period as the adapters' reading of a cluster's slot map.
const factsRefresh = 2 * time.Second

// nodeReading is what the client knows of its readings of one node's
// facts.
type nodeReading struct {
	// at is the last reading the node answered (primeFacts, then
	// readNode). nil: none.
	at atomic.Pointer[readStamp]
	// Under nodeFacts.rmu: when the last reading began, answered or not
	// (a node is read at most once per factsRefresh/2), and the channel
	// closed when the reading under way ends (nil: none).
	began   time.Time
	pending chan struct{}
	// masters are the readings of each master of a cluster node read
	// master by master (byMaster), by address, under nodeFacts.rmu; the
	// node's own reading is then that of its map and replicas.
	masters map[string]*nodeReading
}

// readStamp is when a reading of a node's facts began (its facts are at
// least that new) and when the node answered it (from then on the client
// judged them).
type readStamp struct{ began, answered time.Time }

// readable reports whether node i has facts to read: a FactsNode, or a
// cluster node whose replicas the client checks.
func (c *Client) readable(i int) bool {
	if c.facts.nodes[i] != nil {
		return true
	}
	cn, ok := c.nodes[i].(adapter.ClusterNode)
	return ok && cn.Cluster() && !c.opts.promotable
}

// factsAge is how old node i's facts are at now: since the beginning of
// the last reading it answered; a node never read is as old as the client
// plus one refresh.
func (c *Client) factsAge(i int, now time.Time) time.Duration {
	if at := c.facts.read[i].at.Load(); at != nil {
		return now.Sub(at.began)
	}
	return now.Sub(c.born) + factsRefresh
}

// freshFacts starts a reading of each node whose facts are half as old as
// factsRefresh or older and that is not being read (readNode). It never
// waits: a lock waits after its grant, for the nodes that granted it only
// (freshGrant).
func (c *Client) freshFacts() {
	f := &c.facts
	if !f.primed.Load() {
		return // primeFacts reads first
	}
	now := time.Now()
	for i := range f.read {
		if !c.readable(i) {
			continue
		}
		if c.factsAge(i, now) >= factsRefresh/2 {
			c.startReading(i, now)
		}
		mn, masters := c.byMaster(i)
		for _, m := range masters {
			if c.masterAge(i, m, now) >= factsRefresh/2 {
				c.startMaster(i, mn, m, now)
			}
		}
	}
}

// byMaster returns node i as an adapter.MastersNode and its masters when
// the client reads its facts master by master: a cluster node that is
// one and knows its masters (its last map reading named them). A hung
// master then leaves the others' readings, and the locks on their slots,
// as they are; the node's own reading (readNode) is of its map and
// replicas, which any server of the cluster tells. Otherwise (nil) the
// node is read as one.
func (c *Client) byMaster(i int) (adapter.MastersNode, []string) {
	mn, ok := c.nodes[i].(adapter.MastersNode)
	if !ok || !mn.Cluster() {
		return nil, nil
	}
	masters := mn.Masters()
	if len(masters) == 0 {
		return nil, nil
	}
	return mn, masters
}

// masterReading returns the reading of master addr of node i, made on
// first use. Under c.facts.rmu.
func (c *Client) masterReading(i int, addr string) *nodeReading {
	r := &c.facts.read[i]
	m := r.masters[addr]
	if m == nil {
		if r.masters == nil {
			r.masters = map[string]*nodeReading{}
		}
		m = &nodeReading{}
		r.masters[addr] = m
	}
	return m
}

// masterAge is factsAge of master addr of node i (byMaster).
func (c *Client) masterAge(i int, addr string, now time.Time) time.Duration {
	c.facts.rmu.Lock()
	at := c.masterReading(i, addr).at.Load()
	c.facts.rmu.Unlock()
	if at != nil {
		return now.Sub(at.began)
	}
	return now.Sub(c.born) + factsRefresh
}

// startMaster is startReading of master addr of node mn (byMaster): its
// facts read again (adapter.MastersNode.ConnectMaster), bounded as
// readNode is, on its own.
func (c *Client) startMaster(i int, mn adapter.MastersNode, addr string, now time.Time) chan struct{} {
	f := &c.facts
	f.rmu.Lock()
	defer f.rmu.Unlock()
	r := c.masterReading(i, addr)
	return c.startRead(r, now, func() {
		start := time.Now()
		ctx, cancel := c.readingContext()
		err := mn.ConnectMaster(ctx, addr)
		cancel()
		c.judgeFacts()
		if err == nil {
			r.at.Store(&readStamp{began: start, answered: time.Now()})
		}
	})
}

// startRead starts read in the background as reading r unless one is under
// way, or began less than factsRefresh/2 before now (a node that fails its
// readings is asked again no more often), and returns the channel closed
// when the reading under way ends; nil when none is (the client is closed,
// or too soon). Called with c.facts.rmu held.
func (c *Client) startRead(r *nodeReading, now time.Time, read func()) chan struct{} {
	if r.pending != nil {
		return r.pending
	}
	if !r.began.IsZero() && now.Sub(r.began) < factsRefresh/2 {
		return nil
	}
	if !c.bgAdd(1) {
		return nil
	}
	done := make(chan struct{})
	r.pending, r.began = done, now
	go func() {
		defer c.bg.Done()
		read()
		c.facts.rmu.Lock()
		r.pending = nil
		c.facts.rmu.Unlock()
		close(done)
	}()
	return done
}

// readingContext bounds a reading of facts: as New's reading of the
// replicas (the max of the node timeout and replicaCheckTimeout), and by
// Close.
func (c *Client) readingContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), max(c.opts.nodeTimeout, replicaCheckTimeout))
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// startReading starts a reading of node i's facts (readNode) as startRead
// says.
func (c *Client) startReading(i int, now time.Time) chan struct{} {
	f := &c.facts
	f.rmu.Lock()
	defer f.rmu.Unlock()
	return c.startRead(&f.read[i], now, func() { c.readNode(i) })
}

// readNode reads node i's facts again, bounded as New's reading of the
// replicas is (max of the node timeout and replicaCheckTimeout) and by
// Close: a FactsNode's Connect, which connects a node that is not
// connected and reads again on the live connections what a running
// server can change (its replication, its settings), and a cluster node's
// replicas (adapter.ClusterNode). A cluster node that is an
// adapter.MastersNode is asked its replicas (and its map of masters)
// first, which any server of the cluster tells; once it names its
// masters, its reading is that alone, and each master's facts are read
// on their own (byMaster, startMaster). An answer without an error is
// published at once, judged, and stamped with the reading's beginning.
func (c *Client) readNode(i int) {
	start := time.Now()
	ctx, cancel := c.readingContext()
	defer cancel()
	f := &c.facts
	var err error
	cn, cluster := c.nodes[i].(adapter.ClusterNode)
	cluster = cluster && cn.Cluster()
	_, masters := c.nodes[i].(adapter.MastersNode)
	if cluster && masters {
		var r []adapter.Replica
		if r, err = cn.Replicas(ctx); err == nil {
			c.keepReplicas(i, r)
			if mn, _ := c.byMaster(i); mn != nil {
				c.published(i, start)
				return
			}
		}
	}
	if fn := f.nodes[i]; fn != nil && err == nil {
		err = fn.Connect(ctx)
	}
	if cluster && !masters && !c.opts.promotable && err == nil {
		var r []adapter.Replica
		if r, err = cn.Replicas(ctx); err == nil {
			c.keepReplicas(i, r)
		}
	}
	if err == nil {
		c.published(i, start)
		return
	}
	c.judgeFacts()
}

// keepReplicas keeps what a reading of cluster node i read of its
// replicas, when the client checks them.
func (c *Client) keepReplicas(i int, r []adapter.Replica) {
	if c.opts.promotable {
		return
	}
	f := &c.facts
	f.mu.Lock()
	if f.replicas == nil {
		f.replicas = make([][]adapter.Replica, len(c.nodes))
	}
	f.replicas[i] = r
	f.mu.Unlock()
}

// published judges the facts and then stamps node i's reading that began
// at start and answered now: a lock that finds it fresh finds the verdict
// of it too.
func (c *Client) published(i int, start time.Time) {
	c.judgeFacts()
	c.facts.read[i].at.Store(&readStamp{began: start, answered: time.Now()})
}

// freshGrant makes sure that lock l, just granted, counts on nodes whose
// facts were read within factsRefresh of its T1 (factsRefresh), and
// reports whether l must be judged again (checkGranted): when a node that
// granted it was not judged so before its attempt (its facts were older,
// or read by a reading that answered after T1). It waits for the reading
// of such nodes whose facts are older still, while the nodes that granted
// l with facts that new are fewer than a quorum: such a node answered the
// attempt, so its reading, started before the attempt (freshFacts), is
// due. It waits at most checkWait and half of l's validity left. A node
// that did not grant l (frozen, slow, refused) is never waited for, nor
// one the lock does not need. Of a cluster node read master by master
// (byMaster), the facts that count are its map's and replicas' and those
// of the masters that serve l's keys, which answered the attempt: a hung
// master of another slot is never waited for.
func (c *Client) freshGrant(l *Lock) bool {
	f := &c.facts
	if l == nil || l.acq == nil || !f.primed.Load() {
		return false
	}
	t1 := l.acq.t1
	fresh, judge := 0, false
	var stale []int
	for _, r := range l.acq.replies() {
		if !r.ok || r.err != nil {
			continue
		}
		if !c.readable(r.i) {
			fresh++
			continue
		}
		for _, at := range c.lockStamps(r.i, l) {
			if at == nil || t1.Sub(at.began) >= factsRefresh || !at.answered.Before(t1) {
				judge = true // not judged on such facts before the attempt
			}
		}
		if c.lockAge(r.i, l, t1) >= factsRefresh {
			stale = append(stale, r.i)
			continue
		}
		fresh++
	}
	if len(stale) == 0 || fresh >= c.quorum {
		return judge
	}
	l.mu.Lock()
	left := time.Until(l.until)
	l.mu.Unlock()
	t := time.NewTimer(min(c.checkWait(), left/2))
	defer t.Stop()
	for _, i := range stale {
		for c.lockAge(i, l, t1) >= factsRefresh {
			done := c.startStale(i, l, t1, time.Now())
			if done == nil {
				return true // closed, or read too recently: the facts at hand
			}
			select {
			case <-done:
				continue
			case <-t.C:
			case <-c.stop:
			}
			return true
		}
		if fresh++; fresh >= c.quorum {
			break
		}
	}
	return true
}

// lockMasters returns the masters of node i (byMaster) that serve lock
// l's keys, nil when the node is not read master by master; every master
// it knows when it knows not which serves a key.
func (c *Client) lockMasters(i int, l *Lock) (adapter.MastersNode, []string) {
	mn, masters := c.byMaster(i)
	if mn == nil {
		return nil, nil
	}
	keys := l.keys
	if keys == nil {
		keys = []string{l.key}
	}
	var out []string
	for _, k := range keys {
		m := mn.MasterOf(k)
		if m == "" {
			return mn, masters
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return mn, out
}

// lockStamps returns the stamps of the readings of node i that lock l is
// judged on: the node's, and for a node read master by master those of
// the masters of l's keys (lockMasters); nil where none answered.
func (c *Client) lockStamps(i int, l *Lock) []*readStamp {
	stamps := []*readStamp{c.facts.read[i].at.Load()}
	if _, masters := c.lockMasters(i, l); masters != nil {
		c.facts.rmu.Lock()
		for _, m := range masters {
			stamps = append(stamps, c.masterReading(i, m).at.Load())
		}
		c.facts.rmu.Unlock()
	}
	return stamps
}

// lockAge is factsAge of node i for lock l at now: of the oldest of its
// readings that l is judged on (lockStamps).
func (c *Client) lockAge(i int, l *Lock, now time.Time) time.Duration {
	age := c.factsAge(i, now)
	if _, masters := c.lockMasters(i, l); masters != nil {
		for _, m := range masters {
			age = max(age, c.masterAge(i, m, now))
		}
	}
	return age
}

// startStale starts the reading of node i that lock l is judged on and
// that is factsRefresh old at t1 (lockStamps): the node's, then each
// master's; it returns the channel of the first one under way, nil when
// none can start (closed, or read too recently).
func (c *Client) startStale(i int, l *Lock, t1, now time.Time) chan struct{} {
	if c.factsAge(i, t1) >= factsRefresh {
		if done := c.startReading(i, now); done != nil {
			return done
		}
	}
	mn, masters := c.lockMasters(i, l)
	for _, m := range masters {
		if c.masterAge(i, m, t1) >= factsRefresh {
			if done := c.startMaster(i, mn, m, now); done != nil {
				return done
			}
		}
	}
	return nil
}

// factsVerdict is the client's judgement of its nodes' facts, at the
// versions it read.
type factsVerdict struct {
	versions []uint64
	maxTTL   time.Duration // the smallest advertised max ttl, 0: none
	maxNode  string        // the node (and server) that advertises it
	dup      error         // two nodes are one server
	unsafe   error         // servers that cannot keep a lock (serverRefusal)
	warnings []NodeWarning // every warning the facts give now
	unknown  int           // FactsNodes that have read no facts yet
	// By node: why the client refuses it (unsafe's part), and the
	// smallest max ttl its servers advertise (0: none), with the
	// server's name. A lock counts such a node as failed (countedOut)
	// while the others can make a quorum.
	nodeErr  []error
	nodeMax  []time.Duration
	nodeName []string
	out      bool // some node has a nodeErr or a nodeMax
}

// refuses is why the client refuses node i for a lock of ttl (0: any
// ttl), nil when it does not.
func (v *factsVerdict) refuses(i int, ttl time.Duration) error {
	if v.nodeErr[i] != nil {
		return v.nodeErr[i]
	}
	if m := v.nodeMax[i]; m > 0 && ttl > m {
		return overMaxTTL(ttl, m, v.nodeName[i])
	}
	return nil
}

// grants reports whether op can grant a lock on a node, or keep one
// (extensions, a fenced lock's second phase): the requests that a node the
// client refuses is counted out of, fenced or not. Releases and the rest
// still reach it.
func grants(op adapter.Op) bool {
	switch op {
	case adapter.OpAcquire, adapter.OpExtend, adapter.OpTransfer, adapter.OpAcquireAll, adapter.OpExtendAll,
		adapter.OpRAcquire, adapter.OpRExtend, adapter.OpWAcquire,
		opAcquireFenced, opRaiseFence, opAcquireAllFenced, opRaiseFences, opWAcquireFenced, opRestoreAll:
		return true
	}
	return false
}

// out reports whether the client refuses some node for some lock
// (countedOut), with one atomic load.
func (f *nodeFacts) out() bool {
	v := f.verdict.Load()
	return v != nil && v.out
}

// countOut answers the fans whose request node i is counted out of
// (countedOut) with the refusal, without sending it, and returns the
// others (fans itself when none is).
func (c *Client) countOut(i int, fans []*fan) []*fan {
	var out []bool
	for k, f := range fans {
		if c.countedOut(i, f.req) != nil {
			if out == nil {
				out = make([]bool, len(fans))
			}
			out[k] = true
		}
	}
	if out == nil {
		return fans
	}
	live := make([]*fan, 0, len(fans))
	for k, f := range fans {
		if out[k] {
			f.Receive(i, false, c.countedOut(i, f.req))
			continue
		}
		live = append(live, f)
	}
	return live
}

// countedOut is why node i is counted as failed for req without being
// sent it (Client.send), nil when req goes to it: a request that grants
// (grants) on a node the client refuses (a replica attached, a max ttl
// below req's ttl, facts it hides), while the other nodes can still make
// a quorum (checkAdvertised refuses the lock otherwise). The quorum is
// still of every node, so no two clients' grants can both count on
// another node because of it.
func (c *Client) countedOut(i int, req adapter.Request) error {
	v := c.facts.verdict.Load()
	if v == nil || !v.out || !grants(req.Op) {
		return nil
	}
	return v.refuses(i, req.TTL)
}

// CheckNodes connects every node that is not connected (bounded by four
// node timeouts, at least 250 ms; a node that does not connect in time is
// not checked) and checks the client's settings against what the nodes'
// servers told about themselves (adapter.FactsNode), as every lock does
// without a request (the first lock makes the nodes connect first), and
// says what a lock of the client's ttl (WithTTL) would do. It returns an
// error wrapping ErrInvalid, on one line, naming the nodes and the fix,
// when:
//
//   - two nodes are one server (the same run id: two URLs for one
//     redis-server), which would count one server twice toward the quorum;
//   - the nodes it refuses (below) leave fewer than a quorum, so that
//     every lock would be refused.
//
// A node is refused when it advertises a max ttl below the client's ttl
// (a node started by `dlm node --max-ttl`: after a crash without
// persistence, such a node restarts once its max ttl has passed, while a
// longer lock it forgot may still be valid); when it is a replica, a
// plain master with replicas (unless WithPromotableReplicas: a replica
// promoted by Sentinel or by hand can lack the last lock keys) or a
// server that evicts keys under memory pressure (maxmemory with an
// allkeys-* or volatile-* policy), all read with the facts, without a
// request; and when its server refuses to tell (an ACL user without
// INFO, CONFIG GET, CLIENT KILL or the max ttl's GET), naming the ACL
// rules to grant, unless WithUncheckedNodes, which makes it a warning.
// While the other nodes make a quorum, a refused node is counted as a
// failed node by every lock (not asked to grant; its refusal in the
// AcquireError), and CheckNodes warns of it (NodeCheck.Warnings and,
// once, a NodeWarning) instead of returning an error: the same rule as
// the locks', so that a program that checks first refuses exactly what
// its locks would refuse. Each lock checks the same without a request:
// while two nodes are one server it is refused (ErrInvalid), and it is
// refused with ErrInvalid, before any request, when refused nodes leave
// fewer than a quorum. A node reads its servers' facts again on every new
// connection, so after a restart, and the client makes its nodes read
// again, every 2 s while it locks, what a running server can change (its
// replicas, its settings; a cluster node's replicas): a lock that begins
// 2 s after such a change, plus one reading's round trip, is checked
// against it (factsRefresh).
//
// It warns (NodeCheck.Warnings; each once to the observers that are
// NodeWarners, and WithLogger), without refusing, when the client fences
// (WithFencing: fencing tokens, elections) over a server that does not
// sync every write to disk (appendonly yes, appendfsync always; `dlm node
// --fencing` sets it), where a crash can lose the fence counter and a
// token go back; when a node that is not a cluster is a replica (it
// refuses writes) or has replicas (a failover to one can lose lock keys);
// and when the number of nodes is even, which tolerates no more failures
// than one node fewer. The masters of a node that is a Redis Cluster are
// checked each, and its replicas (ErrPromotableReplica).
func (c *Client) CheckNodes(ctx context.Context) (NodeCheck, error) {
	c.primeFacts()
	errs := c.connectNodes(ctx, true, 0)
	v := c.judgeFacts()
	rep := NodeCheck{Facts: make([][]adapter.Facts, len(c.nodes)), Errs: errs}
	for i, fn := range c.facts.nodes {
		if fn != nil {
			servers, _ := fn.Facts()
			rep.Facts[i] = append([]adapter.Facts(nil), servers...)
		}
	}
	ttl := c.opts.lock.ttl
	quorate := v.refused(ttl) <= len(c.nodes)-c.quorum
	for _, w := range v.warnings {
		if !quorate && c.countOutWarning(v, w) {
			continue // not counted out: the error names it
		}
		rep.Warnings = append(rep.Warnings, w.Message)
	}
	if quorate {
		// Counted as failed nodes by the locks: warned of.
		for i, m := range v.nodeMax {
			if m > 0 && ttl > m && v.nodeErr[i] == nil {
				w := NodeWarning{Node: c.names[i], Message: countedOutWarning(c.names[i], "of ttl "+ttl.String(), overMaxTTL(ttl, m, v.nodeName[i]))}
				rep.Warnings = append(rep.Warnings, w.Message)
				c.tell(w)
			}
		}
	}
	return rep, c.refusedFor(v, ttl)
}

// countOutWarning reports whether w is the warning of v that a refused
// node is counted as a failed node (judgeFacts).
func (c *Client) countOutWarning(v *factsVerdict, w NodeWarning) bool {
	for i, err := range v.nodeErr {
		if err != nil && w.Message == countedOutWarning(c.names[i], "", err) {
			return true
		}
	}
	return false
}

// refused is the number of nodes that v refuses for a lock of ttl.
func (v *factsVerdict) refused(ttl time.Duration) int {
	n := 0
	for i := range v.nodeErr {
		if v.refuses(i, ttl) != nil {
			n++
		}
	}
	return n
}

// refusedFor is why verdict v refuses every lock of ttl before any
// request (checkAdvertised, CheckNodes), nil when it refuses none: two
// nodes that are one server, or refused nodes that leave fewer than a
// quorum, all named in one error on one line. Refused nodes that leave a
// quorum are counted as failed nodes (countedOut) instead.
func (c *Client) refusedFor(v *factsVerdict, ttl time.Duration) error {
	if v.dup != nil {
		return v.dup
	}
	if !v.out {
		return nil
	}
	out := v.refused(ttl)
	if out <= len(c.nodes)-c.quorum {
		return nil
	}
	var over []string // the nodes whose max ttl is below ttl: one error for all
	var maxes []time.Duration
	for i, m := range v.nodeMax {
		if m > 0 && ttl > m {
			over, maxes = append(over, v.nodeName[i]), append(maxes, m)
		}
	}
	bad := []error{v.unsafe}
	if len(over) > 0 {
		bad = append(bad, overMaxTTLs(ttl, over, maxes))
	}
	lead := ""
	if len(c.nodes) > 1 {
		lead = fmt.Sprintf("%d of %d nodes refused, leaving fewer than the quorum of %d", out, len(c.nodes), c.quorum)
	}
	return refusal(lead, bad...)
}

// refusal is one error of the refusals errs (each wrapping ErrInvalid,
// some ErrPromotableReplica), on one line with one prefix: lead (if any),
// then each refusal's reason, "; " between them. errors.Is finds every
// sentinel that one of them wraps.
func refusal(lead string, errs ...error) error {
	var parts []string
	kinds := []error{ErrInvalid}
	var add func(error)
	add = func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok && !isKind(err) {
			for _, e := range j.Unwrap() {
				add(e)
			}
			return
		}
		if errors.Is(err, ErrPromotableReplica) && !slices.Contains(kinds, ErrPromotableReplica) {
			kinds = append(kinds, ErrPromotableReplica)
		}
		parts = append(parts, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	for _, err := range errs {
		add(err)
	}
	if len(parts) == 0 {
		return nil
	}
	if lead != "" {
		parts[0] = lead + ": " + parts[0]
	}
	return &kindError{kinds: kinds, detail: strings.Join(parts, "; ")}
}

// isKind reports whether err is one refusal of several kinds (kindError),
// not a list of refusals.
func isKind(err error) bool {
	_, ok := err.(*kindError)
	return ok
}

// countedOutWarning is the warning of node name that locks (which: "", or
// the ones it counts it out of) count as a failed node, for why.
func countedOutWarning(name, which string, why error) string {
	lock := "every lock"
	if which != "" {
		lock += " " + which
	}
	return fmt.Sprintf("node %s is counted as a failed node by %s (refused while the other nodes make a quorum without it): %s",
		name, lock, strings.ReplaceAll(strings.TrimPrefix(why.Error(), ErrInvalid.Error()+": "), "\n", "; "))
}

// checkWait bounds the connections of the nodes before their facts are
// judged: generous for a slow healthy node (a slow node is not an error),
// short for a frozen one.
func (c *Client) checkWait() time.Duration {
	return max(4*c.opts.nodeTimeout, 250*time.Millisecond)
}

// primeFacts makes, once, the nodes connect (bounded by checkWait) and
// judges what they read; concurrent first locks wait for it.
func (c *Client) primeFacts() {
	c.facts.once.Do(func() {
		c.facts.nodes = make([]adapter.FactsNode, len(c.nodes))
		for i, n := range c.nodes {
			if fn, ok := n.(adapter.FactsNode); ok {
				c.facts.nodes[i] = fn
			}
		}
		c.facts.read = make([]nodeReading, len(c.nodes))
		start := time.Now()
		errs := c.connectNodes(context.Background(), false, c.quorum)
		at := &readStamp{began: start, answered: time.Now()}
		for i, err := range errs {
			if !c.readable(i) {
				continue
			}
			// A reading, answered or not: a node still connecting is
			// not read again for factsRefresh/2 (startReading).
			c.facts.read[i].began = start
			if err == nil {
				c.facts.read[i].at.Store(at)
				// Every master connected: each read.
				_, masters := c.byMaster(i)
				c.facts.rmu.Lock()
				for _, m := range masters {
					c.masterReading(i, m).at.Store(at)
				}
				c.facts.rmu.Unlock()
			}
		}
		c.judgeFacts()
		c.facts.primed.Store(true)
	})
}

// stragglerWait is how long primeFacts waits for the nodes still
// connecting once a quorum has: as long again as the quorum took, at
// least minStraggler, so that the first lock does not wait for a frozen
// node (a slow one is checked from its connection on).
func stragglerWait(quorumTook time.Duration) time.Duration {
	return max(quorumTook, minStraggler)
}

// minStraggler is the least time primeFacts waits for a node still
// connecting once a quorum has.
const minStraggler = 50 * time.Millisecond

// connectNodes calls Connect on every FactsNode at once (on those that
// know no facts yet, unless all), bounded by ctx and checkWait, and, once
// quorum of the nodes answered (0: all), by stragglerWait; a node that
// does not answer in time is left behind, its goroutine ending when its
// Connect does. It returns each node's error.
func (c *Client) connectNodes(ctx context.Context, all bool, quorum int) []error {
	errs := make([]error, len(c.nodes))
	wait := c.checkWait()
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var straggle <-chan time.Time // armed once quorum answered
	type answer struct {
		i   int
		err error
	}
	answers := make(chan answer, len(c.nodes)) // never blocks a Connect left behind
	asked := make([]bool, len(c.nodes))
	pending := 0
	for i, fn := range c.facts.nodes {
		if fn == nil {
			continue
		}
		if _, v := fn.Facts(); v > 0 && !all {
			continue
		}
		pending++
		asked[i] = true
		go func() { answers <- answer{i, fn.Connect(cctx)} }()
	}
	answered := len(c.nodes) - pending // not FactsNodes, or known
	for ; pending > 0; pending-- {
		if answered >= quorum && quorum > 0 && straggle == nil {
			t := time.NewTimer(stragglerWait(time.Since(start)))
			defer t.Stop()
			straggle = t.C
		}
		select {
		case a := <-answers:
			errs[a.i], asked[a.i] = a.err, false
			answered++
			continue
		case <-cctx.Done():
		case <-straggle:
		}
		break
	}
	for i, left := range asked {
		if left {
			errs[i] = fmt.Errorf("%s: not connected within %v: not checked", c.names[i], wait)
		}
	}
	return errs
}

// checkAdvertised refuses a lock ttl over the smallest max ttl that a
// node advertises, and every lock while two nodes are one server: on the
// path of every lock, without a request (see nodeFacts).
func (c *Client) checkAdvertised(ttl time.Duration) error {
	return c.checkFacts(ttl)
}

// checkExtension is checkAdvertised for an extension. Neither waits for a
// reading of the facts (freshFacts); an extension has no wait after it
// either (a lock's grant has: freshGrant): it has a validity to keep, and
// a change is seen by the next extension after the reading.
func (c *Client) checkExtension(ttl time.Duration) error {
	return c.checkFacts(ttl)
}

// checkFacts is checkAdvertised: it starts a reading of the facts that are
// half as old as factsRefresh (freshFacts) and judges on the facts at hand.
func (c *Client) checkFacts(ttl time.Duration) error {
	v := c.facts.verdict.Load()
	if v == nil {
		c.primeFacts()
		v = c.facts.verdict.Load()
	}
	c.freshFacts()
	if nv := c.facts.verdict.Load(); nv != v {
		v = nv // judged by the reading
	}
	for i, fn := range c.facts.nodes {
		if fn == nil {
			continue
		}
		if _, ver := fn.Facts(); ver != v.versions[i] {
			v = c.judgeFacts()
			break
		}
	}
	return c.refusedFor(v, ttl)
}

// checkAdvertisedAll is checkAdvertised with every refused node refusing
// the lock, for checkGranted: a node whose facts were unknown when the
// lock's attempt was sent was not counted out, and may have granted it.
func (c *Client) checkAdvertisedAll(ttl time.Duration) error {
	if err := c.checkAdvertised(ttl); err != nil {
		return err
	}
	v := c.facts.verdict.Load()
	if v.unsafe != nil {
		return v.unsafe
	}
	if v.maxTTL > 0 && ttl > v.maxTTL {
		return overMaxTTL(ttl, v.maxTTL, v.maxNode)
	}
	return nil
}

// checkGranted checks lock l with ttl that the nodes have just granted,
// when some node's facts were still unknown at the last judgement (the
// first lock of a client whose nodes connected after checkWait): the
// nodes that granted it connected for the attempt and read their facts
// first, so the check that could not be made before the attempt is made
// now. As before an attempt, a refused node counts as a failed node: the
// lock is kept when the nodes that granted it and are not refused are
// still a quorum. The same when a node that granted it had facts older
// than factsRefresh at its T1, read again now (freshGrant). Otherwise it
// costs an atomic load per node that granted it.
func (c *Client) checkGranted(l *Lock, ttl time.Duration) error {
	waited := c.freshGrant(l) // granting nodes whose facts were stale: read again
	if v := c.facts.verdict.Load(); v != nil && v.unknown == 0 && !waited {
		return nil
	}
	if l == nil || l.acq == nil {
		return c.checkAdvertisedAll(ttl)
	}
	if err := c.checkAdvertised(ttl); err != nil {
		return err // one server twice, or too many refused for any lock
	}
	v := c.facts.verdict.Load()
	if v.unsafe == nil && (v.maxTTL == 0 || ttl <= v.maxTTL) {
		return nil
	}
	good := 0
	var why error
	for _, r := range l.acq.replies() {
		if !r.ok || r.err != nil {
			continue
		}
		if err := v.refuses(r.i, ttl); err != nil {
			why = err
			continue
		}
		good++
	}
	if good >= c.quorum || why == nil {
		return nil
	}
	return why
}

// judgeFacts judges the nodes' facts as they are now, publishes the
// verdict, and tells the observers the warnings not told before.
func (c *Client) judgeFacts() *factsVerdict {
	f := &c.facts
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(c.nodes)
	v := &factsVerdict{versions: make([]uint64, n), nodeErr: make([]error, n), nodeMax: make([]time.Duration, n), nodeName: make([]string, n)}
	seen := map[string]where{}
	var unsafe []error
	for i, fn := range f.nodes {
		from := len(unsafe) // node i's refusals: unsafe[from:]
		c.judgeNode(i, fn, v, seen, &unsafe)
		if len(unsafe) > from {
			v.nodeErr[i] = refusal("", unsafe[from:]...)
			v.warnings = append(v.warnings, NodeWarning{Node: c.names[i], Message: countedOutWarning(c.names[i], "", v.nodeErr[i])})
		}
		v.out = v.out || v.nodeErr[i] != nil || v.nodeMax[i] > 0
	}
	v.unsafe = refusal("", unsafe...)
	if len(c.nodes)%2 == 0 {
		v.warnings = append(v.warnings, NodeWarning{Message: fmt.Sprintf(
			"%d nodes: an even number tolerates no more node failures (%d) than %d nodes; use an odd number",
			len(c.nodes), len(c.nodes)-c.quorum, len(c.nodes)-1)})
	}
	f.verdict.Store(v)
	for _, w := range v.warnings {
		c.tellLocked(w)
	}
	return v
}

// tell tells w to the observers that are NodeWarners, unless it was told
// before.
func (c *Client) tell(w NodeWarning) {
	c.facts.mu.Lock()
	defer c.facts.mu.Unlock()
	c.tellLocked(w)
}

// tellLocked is tell under c.facts.mu.
func (c *Client) tellLocked(w NodeWarning) {
	f := &c.facts
	if f.warned[w.Message] {
		return
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[w.Message] = true
	for _, o := range c.obs {
		if nw, ok := o.(NodeWarner); ok {
			nw.NodeWarning(w)
		}
	}
}

// judgeNode judges node i's facts (fn nil: it tells none) into v, its
// refusals appended to unsafe; seen is the run ids of the servers judged
// before, for one server given twice. Under c.facts.mu (judgeFacts).
func (c *Client) judgeNode(i int, fn adapter.FactsNode, v *factsVerdict, seen map[string]where, unsafe *[]error) {
	f := &c.facts
	cluster := isCluster(c.nodes[i])
	if cluster && !c.opts.promotable && f.replicas != nil {
		// Its replicas as the last reading saw them (New refused
		// those it saw).
		if err := promotableError(c.names[i], f.replicas[i]); err != nil {
			*unsafe = append(*unsafe, err)
		}
	}
	if fn == nil {
		return
	}
	servers, ver := fn.Facts()
	v.versions[i] = ver
	if ver == 0 {
		v.unknown++
	}
	for _, s := range servers {
		name := serverName(c.names[i], s)
		if s.RunID != "" {
			if w, dup := seen[s.RunID]; dup && w.node != i && v.dup == nil {
				v.dup = invalidf("nodes %s and %s are one server (run id %s): it would count twice toward the quorum; give each node its own redis-server", w.server, name, s.RunID)
			} else if !dup {
				seen[s.RunID] = where{i, name}
			}
		}
		refused := c.serverRefusal(i, name, s)
		if refused != nil {
			*unsafe = append(*unsafe, refused)
		}
		if c.opts.fencing && c.opts.unchecked && s.Refuses(adapter.RefusedInfo) {
			// Accepted unchecked, but the fencing scripts run INFO.
			*unsafe = append(*unsafe, cannotFence(name, s))
		}
		if msg := hiddenFacts(name, s); msg != "" && !c.opts.unchecked {
			*unsafe = append(*unsafe, invalidf("%s, or accept the node unchecked with WithUncheckedNodes (dlm: --unchecked-nodes)", msg))
		} else if msg != "" {
			v.warnings = append(v.warnings, NodeWarning{Node: c.names[i], Message: msg})
		}
		if s.MaxTTL > 0 && (v.maxTTL == 0 || s.MaxTTL < v.maxTTL) {
			v.maxTTL, v.maxNode = s.MaxTTL, name
		}
		if s.MaxTTL > 0 && (v.nodeMax[i] == 0 || s.MaxTTL < v.nodeMax[i]) {
			v.nodeMax[i], v.nodeName[i] = s.MaxTTL, name
		}
		// What is refused is not warned of too: the warning is for
		// replicas accepted with WithPromotableReplicas.
		if msg := replicationWarning(name, s); msg != "" && !cluster && refused == nil {
			v.warnings = append(v.warnings, NodeWarning{Node: c.names[i], Message: msg})
		}
		if c.opts.fencing {
			if msg := persistenceWarning(name, s); msg != "" {
				v.warnings = append(v.warnings, NodeWarning{Node: c.names[i], Message: msg})
			}
		}
	}
}

// where is a server judged, by its run id (judgeNode).
type where struct {
	node   int
	server string
}

// serverRefusal is why server s (named name) of node i cannot keep a
// lock, nil when it can as far as its facts tell: dlm doctor FAILs each.
//
//   - A replica (role:slave) refuses the lock's writes (READONLY): the
//     nodes then tolerate one failure fewer, silently, and a replica that
//     accepts writes keeps them to itself, not on its master.
//   - A plain master with replicas: replication is asynchronous, so a
//     replica promoted by Sentinel or by hand serves without the last
//     lock keys its master granted, and a second client can take a lock
//     the first still holds; refused unless WithPromotableReplicas, as a
//     cluster node's self-promoting replicas are (replicas.go, which
//     judges a cluster's masters by their replicas' settings).
//   - A server that evicts keys (maxmemory with an allkeys-* or volatile-*
//     policy; every lock key has a ttl) can drop a lock key before its
//     ttl under memory pressure, with the same result; no option accepts
//     it: the fix is one setting on the server.
//   - A master of a Redis Cluster given as a plain node (its URL without
//     cluster=true) refuses the keys of the other masters' slots: the
//     node fails most locks, silently one failure fewer; the fix is its
//     URL.
//
// Each breaks the locks on the node, not only a fencing token's order, so
// they are refused like a ttl over the advertised max ttl, not warned.
func (c *Client) serverRefusal(i int, name string, s adapter.Facts) error {
	cluster := isCluster(c.nodes[i])
	switch {
	case s.ClusterEnabled && !cluster:
		return invalidf("node %s is a master of a Redis Cluster, named without cluster=true: it refuses the keys of the other masters' slots (MOVED) and a lock of several keys (CROSSSLOT), so it fails most locks; add cluster=true to its URL (the whole cluster is then one node)", name)
	case (s.Replica || s.ReplicaOf != "") && !cluster:
		// A cluster's replicas (and a master demoted by a failover)
		// are among its servers but take no lock writes: the cluster
		// routes to its masters, and replicas.go judges them.
		return invalidf("node %s is a replica (role:slave): it refuses the lock's writes, so the nodes tolerate one failure fewer (or, writable, keeps them to itself); give the masters only", name)
	case s.Replicas > 0 && !c.opts.promotable && !cluster:
		return promotablef("node %s has %d replica(s): replication is asynchronous, so a replica promoted by Sentinel or by hand can lack the last lock keys and let two clients hold a lock; remove the replicas, or accept the risk with WithPromotableReplicas (dlm: --promotable-replicas)",
			name, s.Replicas)
	case s.Evicts():
		return invalidf("node %s evicts keys under memory pressure (maxmemory %d, maxmemory-policy %s): a lock key evicted before its ttl lets a second client take the lock; set maxmemory-policy noeviction (or maxmemory 0)", name, s.MaxMemory, s.MaxMemoryPolicy)
	}
	return nil
}

// WithUncheckedNodes makes the client accept a node whose server refuses
// to tell the facts the client checks (an ACL user without INFO, CONFIG
// GET, CLIENT KILL or read access to the advertised max ttl's key, as
// "+@all -@dangerous" and "+@all -@admin" are; a managed service that
// disables CONFIG), warning of it (NodeWarning, CheckNodes) instead. Such
// a node's checks cannot run: one server given as two nodes (which would
// count twice toward the quorum), a ttl over its advertised max ttl,
// replicas that may be promoted, an eviction policy, and the reconnect
// fence (a request left on a connection given up running after the next
// connection's) go unseen. Default off: such a node is refused (counted
// as a failed node, or every lock refused with ErrInvalid when that
// leaves no quorum), naming what it refused and the permissions to grant.
// A fencing client (WithFencing, elections) still refuses a node whose
// server refuses INFO: the fencing scripts run it, so every fenced lock
// would fail there.
func WithUncheckedNodes() Option {
	return clientOption(func(o *clientOptions) { o.unchecked = true })
}

// hiddenFacts says what server s (named name) refused to tell the
// client's user (adapter.Facts.Refused), what cannot be checked without
// it and the fix: the ACL rules to grant what the user may not run, or,
// for a command the server disables (it answers "unknown command", as a
// managed service or a rename-command does), that no ACL rule grants it;
// on one line, "" when it refused nothing. The caller adds the way on
// without the checks (WithUncheckedNodes).
func hiddenFacts(name string, s adapter.Facts) string {
	if len(s.Refused) == 0 {
		return ""
	}
	u := s.Unchecked()
	var what, fix []string
	if len(u.Refused) > 0 {
		what = append(what, "refuses "+strings.Join(u.Refused, ", ")+" to the client's user")
		fix = append(fix, "grant them (ACL SETUSER <user> "+strings.Join(u.Grant, " ")+")")
	}
	if len(u.Disabled) > 0 {
		what = append(what, "disables "+strings.Join(u.Disabled, ", ")+" (it answers \"unknown command\", as a managed service or a rename-command does)")
		fix = append(fix, "no ACL rule grants a command the server disables: enable it in the server's configuration")
	}
	return fmt.Sprintf("node %s %s, so the client cannot check %s: %s",
		name, strings.Join(what, " and "), strings.Join(u.Lost, "; "), strings.Join(fix, "; "))
}

// cannotFence is the refusal of server s (named name), accepted unchecked
// (WithUncheckedNodes), by a fencing client: the fencing scripts read
// INFO (the server's replication id, for the restart repair of tokens),
// which s refuses to the client's user, so every fenced lock, and every
// election, would fail on it.
func cannotFence(name string, s adapter.Facts) error {
	if s.Disables(adapter.RefusedInfo) {
		return invalidf("node %s disables INFO, which the fencing scripts run (the node's replication id, for the restart repair of tokens): every fenced lock, and so every election, fails on it; enable INFO in the server's configuration, or lock without fencing (WithUncheckedNodes accepts the node for plain locks only)", name)
	}
	return invalidf("node %s refuses INFO to the client's user, and the fencing scripts run it (the node's replication id, for the restart repair of tokens): every fenced lock, and so every election, fails on it; grant it (ACL SETUSER <user> +info), or lock without fencing (WithUncheckedNodes accepts the node for plain locks only)", name)
}

// deniedCause is why the failed attempt e cannot succeed by retrying,
// nil when it can: so many nodes refused one of its requests to the
// client's user (adapter.Denied: an ACL's NOPERM, a script's call the ACL
// refuses, a command the server disables) that the others cannot make a
// quorum, in its first phase or in the fencing phase. That is a setting
// to fix, not contention nor a node down: the Lock call ends with it
// (ErrInvalid) instead of retrying until its context ends.
func (c *Client) deniedCause(e *AcquireError) error {
	rs, what := e.Nodes, "the lock's request"
	if e.Fence != nil {
		rs, what = e.Fence, "the fencing phase's request"
	}
	var denied []string
	var why error
	for _, r := range rs {
		if r.Outcome == Failed && r.Err != nil && adapter.Denied(r.Err.Error()) {
			denied = append(denied, r.Node)
			why = r.Err
		}
	}
	if len(denied) == 0 || len(rs)-len(denied) >= c.quorum {
		return nil
	}
	return invalidf("%d of %d nodes (%s) refuse %s to the client's user (%v), leaving fewer than the quorum of %d, which no retry changes: grant the user what the lock runs on the nodes (its scripts: EVALSHA, EVAL, and INFO when fencing)",
		len(denied), len(rs), strings.Join(denied, ", "), what, why, c.quorum)
}

// isCluster reports whether n is a Redis Cluster (adapter.ClusterNode).
func isCluster(n Node) bool {
	cn, ok := n.(adapter.ClusterNode)
	return ok && cn.Cluster()
}

// serverName names a server of a node: the node's name, and for a node
// of several servers (a cluster's masters) the server's address too.
func serverName(node string, s adapter.Facts) string {
	if s.Addr == "" || s.Addr == node {
		return node
	}
	return node + " (" + s.Addr + ")"
}

// overMaxTTL is the error of a ttl over the max ttl of node.
func overMaxTTL(ttl, maxTTL time.Duration, node string) error {
	return invalidf("ttl %v is over the max ttl %v that node %s advertises: after a crash without persistence the node restarts once %v has passed, while a lock it forgot may still be valid; use a ttl of at most %v, or restart the node with `dlm node --max-ttl %v` or more",
		ttl, maxTTL, node, maxTTL, maxTTL, ttl)
}

// overMaxTTLs is the one error of a ttl over the max ttls (maxes) of
// several nodes, each named once, with its max ttl where they differ.
func overMaxTTLs(ttl time.Duration, nodes []string, maxes []time.Duration) error {
	if len(nodes) == 1 {
		return overMaxTTL(ttl, maxes[0], nodes[0])
	}
	least := slices.Min(maxes)
	what, names := "max ttl "+least.String(), strings.Join(nodes, ", ")
	if slices.ContainsFunc(maxes, func(m time.Duration) bool { return m != least }) {
		named := make([]string, len(nodes))
		for i, n := range nodes {
			named[i] = fmt.Sprintf("%s (%v)", n, maxes[i])
		}
		what, names = "max ttls", strings.Join(named, ", ")
	}
	return invalidf("ttl %v is over the %s that nodes %s advertise: after a crash without persistence a node restarts once its max ttl has passed, while a lock it forgot may still be valid; use a ttl of at most %v, or restart the nodes with `dlm node --max-ttl %v` or more",
		ttl, what, names, least, ttl)
}

// replicationWarning is the warning about the replication of server s of
// node name, "" when it is a master without replicas. A replica refuses
// the lock's writes; a master's replica may be promoted (by Sentinel, or
// by hand) without the master's last lock keys, as replication is
// asynchronous, and two clients may then hold a lock (dlm doctor FAILs
// both). A warning, not a refusal: the client cannot see whether anything
// will promote the replica.
func replicationWarning(name string, s adapter.Facts) string {
	switch {
	case s.Replicas > 0:
		return fmt.Sprintf("node %s has %d replica(s): replication is asynchronous, so a failover to one can lose lock keys and let two clients hold a lock; remove them (REPLICAOF NO ONE on each) and never fail over lock nodes", name, s.Replicas)
	}
	return ""
}

// persistenceWarning is the warning of a fencing client about the
// persistence of server s of node name, "" when it keeps every fence: a
// server that keeps nothing across a restart loses its fence floor key
// with its fences, and one that keeps an older copy of its keys
// (appendfsync everysec or no, RDB snapshots) comes back with a new
// replication id, so that its floor counts as missing: the client sees
// both and repairs the tokens of every fenced lock, elections' terms
// included (fencing.go), from the wall clocks of the clients, which the
// tokens then rest on.
func persistenceWarning(name string, s adapter.Facts) string {
	switch {
	case !s.PersistenceKnown || s.Durable():
		return ""
	case s.Forgets():
		return fmt.Sprintf("node %s keeps no keys across a restart (appendonly no, no RDB snapshots): after its restart fencing tokens and terms are repaired from the clients' wall clocks, and keep increasing only while those clocks are not stepped back; for tokens kept by the nodes alone run it with `dlm node --fencing` (appendfsync always)", name)
	}
	how := "appendonly no"
	if s.AppendOnly {
		how = "appendfsync not always"
	}
	if s.Snapshots {
		how += ", RDB snapshots"
	}
	return fmt.Sprintf("node %s can come back from a crash with an older copy of its keys (%s): its fence floor then counts as lost (a new replication id), and fencing tokens and terms are repaired from the clients' wall clocks, increasing only while those clocks are not stepped back; for tokens kept by the nodes alone run it with `dlm node --fencing` (appendfsync always)", name, how)
}
