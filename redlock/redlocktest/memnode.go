package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/internal/facts"
)

// Compile-time checks: a MemNode has every capability of a redlock node.
var (
	_ redlock.Node         = (*MemNode)(nil)
	_ adapter.FencingNode  = (*MemNode)(nil)
	_ adapter.AsyncNode    = (*MemNode)(nil)
	_ adapter.BatchNode    = (*MemNode)(nil)
	_ adapter.HandoffNode  = (*MemNode)(nil)
	_ adapter.TransferNode = (*MemNode)(nil)
	_ adapter.RWNode       = (*MemNode)(nil) // memnode_rw.go
	_ adapter.RecordNode   = (*MemNode)(nil) // memnode_record.go
	_ adapter.FactsNode    = (*MemNode)(nil) // memnode_facts.go
	_ adapter.ReleaseWatch = (*memWatch)(nil)
	_ Inspector            = (*MemNode)(nil)
)

// ErrNodeDown is the error of every request to a MemNode that is down
// (SetDown, or the down time of Restart).
var ErrNodeDown = errors.New("redlocktest: node down")

// Lie names what a lying MemNode claims (SetLie). A liar breaks the crash
// fault model of Redlock (R2, R7: nodes may fail but never lie); it is there
// to show what lies do, as the Byzantine quorum option expects (B11).
type Lie uint8

// The lies of a MemNode.
const (
	// Honest: the node does what it answers.
	Honest Lie = iota
	// LieAcquired: every acquisition (Acquire, AcquireFenced, OpAcquire,
	// Transfer) answers that it set the key, without setting it;
	// AcquireFenced reports the fence it read. The lie of a node that
	// claims to have locked a key it did not lock (as LieOnSet).
	LieAcquired
	// LieAll: LieAcquired, and every Extend and RaiseFence answers true
	// without changing anything.
	LieAll
)

// MemOption configures a MemNode.
type MemOption func(*MemNode)

// WithClock makes now the MemNode's reference clock (default time.Now,
// which is the fake clock inside a testing/synctest bubble). The node's own
// clock, which expires keys, runs from it at the rate and offset that
// SetClockRate and JumpClock set. Delays (SetSlow) always run on the time
// package's timers.
func WithClock(now func() time.Time) MemOption {
	return func(n *MemNode) { n.base = now }
}

// MemNode is an in-memory Redlock node with every capability of the real
// adapters (redlock.Node, FencingNode, AsyncNode, BatchNode, HandoffNode,
// TransferNode, MultiNode: memnode_multi.go), with the
// semantics of their Lua scripts (R3, R5, R17, R18),
// a clock of its own that expires keys, and faults that can be switched at
// run time. It holds one keyspace, like one redis-server: lock keys and
// fence keys (decimal strings) side by side.
//
// Every request goes through one ordered wire: requests are applied in the
// order they were started (Start, StartAll, or a blocking method's call),
// and each is answered exactly once, with what the blocking method returns,
// or with the context's error once its context ends, whichever comes first.
// A request whose context is already done when it is started is answered at
// once and not applied.
//
// The fault switches, all safe for concurrent use and effective for the
// requests that follow:
//   - SetDown: requests fail at once with ErrNodeDown and change nothing.
//   - SetSlow: requests are applied at once, and their answers arrive after
//     the delay (or the context's error first): a slow network, on which a
//     client that gave up waiting still changed the node.
//   - SetJitter: every answer and every announcement arrives after a
//     random delay of its own, each kind in the order it was sent: the
//     scheduling of a loaded machine, for tests that look for lost
//     wake-ups and races between replies and announcements.
//   - SetDropReplies: requests are applied, and their answers are lost: the
//     caller hears only its context's end.
//   - Freeze, Thaw: a stopped process. Requests wait, unapplied and
//     unanswered, until Thaw applies them in order, even those whose
//     context ended meanwhile (they were on the wire).
//   - Forget, Restart: the node loses every key, as a restart without
//     persistence does (R16.1); Restart also keeps it down for a while
//     (R16.3's delayed restart) and ends a freeze, losing the requests it
//     held.
//   - SetClockRate, JumpClock: the node's clock runs fast or slow, or jumps
//     (R9, R18); keys expire by it.
//   - SetLie: the node answers what it did not do (see Lie).
//
// The methods of Inspector read the keyspace without going through the
// wire or the faults; SetTrace keeps what the node applied, to explain a
// failed test. A MemNode is safe for concurrent use. Inside a
// testing/synctest bubble, create it inside the bubble: its clock and its
// delays are then the bubble's fake time.
type MemNode struct {
	name string
	base func() time.Time

	mu   sync.Mutex
	keys map[string]memEntry

	// The node's clock: local = localAt + (base - baseAt) * rate, or
	// base + offset when rate is 1.
	rate    float64
	offset  time.Duration
	baseAt  time.Time
	localAt time.Time

	down      bool
	downUntil time.Time // reference clock; zero: not restarting
	slow      time.Duration
	// jitter: SetJitter. lastReply and lastNote are the latest times an
	// answer and an announcement are due, which keep each in order.
	jitter              time.Duration
	jrng                *rand.Rand
	lastReply, lastNote time.Time
	drop                bool
	lie                 Lie
	frozen              bool
	held                []*memCall

	watches map[*memWatch]struct{}

	known facts.Known // SetFacts (memnode_facts.go)

	tracing bool // SetTrace (memnode_trace.go)
	trace   []TraceEntry

	applied atomic.Int64
}

type memEntry struct {
	value   string
	expires time.Time // node clock; zero: no expiry
	// hash, when not nil, makes the key a hash of fields to expiries on
	// the node's clock, as read-write locks keep readers (memnode_rw.go);
	// value is then empty.
	hash map[string]time.Time
}

// NewMemNode returns an empty, healthy MemNode named name (its String).
func NewMemNode(name string, opts ...MemOption) *MemNode {
	n := &MemNode{name: name, base: time.Now, keys: map[string]memEntry{}, rate: 1, watches: map[*memWatch]struct{}{}}
	for _, o := range opts {
		o(n)
	}
	return n
}

// NewMemNodes returns n MemNodes named m1, m2, ... as redlock.Nodes, ready
// for redlock.New, and the same nodes as MemNodes for the faults.
func NewMemNodes(n int, opts ...MemOption) ([]redlock.Node, []*MemNode) {
	nodes := make([]redlock.Node, n)
	mems := make([]*MemNode, n)
	for i := range mems {
		mems[i] = NewMemNode("m"+strconv.Itoa(i+1), opts...)
		nodes[i] = mems[i]
	}
	return nodes, mems
}

// String returns the node's name.
func (n *MemNode) String() string { return n.name }

// SetDown makes the node fail every request at once with ErrNodeDown (on)
// or serve again (off), and ends the down time of a Restart.
func (n *MemNode) SetDown(on bool) {
	n.mu.Lock()
	n.down, n.downUntil = on, time.Time{}
	n.mu.Unlock()
}

// SetSlow delays the answer of every request by d after it is applied (0:
// answers at once).
func (n *MemNode) SetSlow(d time.Duration) {
	n.mu.Lock()
	n.slow = d
	n.mu.Unlock()
}

// SetJitter delays each answer by a random extra delay in [0, max] (after
// SetSlow's) and each release announcement by one of its own, drawn from
// a generator seeded with seed; answers stay in the order the requests
// were applied, and announcements in the order of their releases, as on
// two connections of a real server, while an announcement may come
// before or after the answer to its release. 0 turns it off.
func (n *MemNode) SetJitter(max time.Duration, seed uint64) {
	n.mu.Lock()
	n.jitter, n.jrng = max, rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	n.mu.Unlock()
}

// jittered returns the delay from now of the next answer (note false) or
// announcement (note true) under SetJitter, at least base, never before
// the one before it. Called with n.mu held.
func (n *MemNode) jittered(base time.Duration, note bool) time.Duration {
	now := time.Now()
	due := now.Add(base + time.Duration(n.jrng.Int64N(int64(n.jitter)+1)))
	last := &n.lastReply
	if note {
		last = &n.lastNote
	}
	if !due.After(*last) {
		due = last.Add(time.Nanosecond)
	}
	*last = due
	return due.Sub(now)
}

// SetDropReplies makes the node apply requests and lose their answers (on):
// a caller hears only its context's end, with the context's error.
func (n *MemNode) SetDropReplies(on bool) {
	n.mu.Lock()
	n.drop = on
	n.mu.Unlock()
}

// SetLie makes the node lie as l says (Honest: stop lying).
func (n *MemNode) SetLie(l Lie) {
	n.mu.Lock()
	n.lie = l
	n.mu.Unlock()
}

// Freeze stops the node like SIGSTOP: requests wait, unapplied, until Thaw.
func (n *MemNode) Freeze() {
	n.mu.Lock()
	n.frozen = true
	n.mu.Unlock()
}

// Thaw resumes a frozen node: the requests that waited are applied in the
// order they were started, and answered (their callers whose context ended
// already had the context's error).
func (n *MemNode) Thaw() {
	n.mu.Lock()
	held := n.held
	n.held, n.frozen = nil, false
	for _, c := range held {
		c.res = n.apply(c)
	}
	n.mu.Unlock()
	for _, c := range held {
		c.answer()
	}
}

// Frozen reports whether the node is frozen.
func (n *MemNode) Frozen() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.frozen
}

// Forget drops every key, fences included: the node restarted without
// persistence (R16.1), with no down time.
func (n *MemNode) Forget() {
	n.mu.Lock()
	clear(n.keys)
	n.mu.Unlock()
}

// Restart forgets every key (R16.1) and keeps the node down for downFor on
// the reference clock; a downFor above the largest ttl in use is R16.3's
// delayed restart, which keeps Redlock safe without persistence. It ends a
// freeze: the requests the frozen node held die with the process, answered
// with ErrNodeDown and never applied.
func (n *MemNode) Restart(downFor time.Duration) {
	n.mu.Lock()
	clear(n.keys)
	n.down, n.downUntil = false, n.base().Add(downFor)
	held := n.held
	n.held, n.frozen = nil, false
	n.mu.Unlock()
	for _, c := range held {
		c.deliver(memResult{err: fmt.Errorf("%w: %s", ErrNodeDown, n.name)})
	}
}

// SetClockRate makes the node's clock run at rate times the reference
// clock from now on (1: the same rate; 1.02: 2% fast), without a jump.
// Redlock assumes the rates of all clocks differ by little (R9).
func (n *MemNode) SetClockRate(rate float64) {
	if rate <= 0 {
		panic("redlocktest: SetClockRate: rate must be positive")
	}
	n.mu.Lock()
	now := n.base()
	local := n.nowLocked(now)
	// The clock goes on from where it is: the offset carries what it
	// gained or lost at the old rate, for the rate 1 too (nowLocked).
	n.localAt, n.baseAt, n.offset = local, now, local.Sub(now)
	n.rate = rate
	n.mu.Unlock()
}

// JumpClock steps the node's clock by d (forward when positive): the clock
// jump that expires keys early (R18).
func (n *MemNode) JumpClock(d time.Duration) {
	n.mu.Lock()
	n.offset += d
	n.localAt = n.localAt.Add(d)
	n.mu.Unlock()
}

// Now returns the time on the node's clock.
func (n *MemNode) Now() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nowLocked(n.base())
}

// Applied returns how many requests the node has applied (answered or
// not), faults aside: a request refused because the node was down is not
// counted.
func (n *MemNode) Applied() int64 { return n.applied.Load() }

func (n *MemNode) nowLocked(base time.Time) time.Time {
	if n.rate == 1 {
		return base.Add(n.offset)
	}
	return n.localAt.Add(time.Duration(float64(base.Sub(n.baseAt)) * n.rate))
}

// live returns key's entry when it exists and has not expired on the
// node's clock; an expired key is deleted, as Redis does on access.
func (n *MemNode) live(key string, now time.Time) (memEntry, bool) {
	e, ok := n.keys[key]
	if ok && !e.expires.IsZero() && now.After(e.expires) {
		delete(n.keys, key)
		return memEntry{}, false
	}
	return e, ok
}

// Inspector is what the conformance suite reads of the store behind a
// node, instead of asking a server directly: a MemNode is one, and
// (*Server).Inspector returns one for a redis-server.
type Inspector interface {
	// Value returns key's value and whether key exists.
	Value(ctx context.Context, key string) (value string, exists bool, err error)
	// TTL returns key's remaining time to live and whether key exists; a
	// key without expiry has NoExpiry.
	TTL(ctx context.Context, key string) (ttl time.Duration, exists bool, err error)
	// Fence returns the fence value stored under fenceKey, 0 when there is
	// none, and an error when it is not a decimal uint64.
	Fence(ctx context.Context, fenceKey string) (uint64, error)
	// Keys returns the keys that start with prefix, sorted.
	Keys(ctx context.Context, prefix string) ([]string, error)
	// Put sets key to value without expiry, bypassing any lock logic (to
	// plant a corrupt value, say).
	Put(ctx context.Context, key, value string) error
}

// NoExpiry is the TTL an Inspector reports for a key without expiry.
const NoExpiry time.Duration = -1

// Value returns key's value on the node's clock and whether key exists
// (Inspector).
func (n *MemNode) Value(_ context.Context, key string) (string, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.live(key, n.nowLocked(n.base()))
	return e.value, ok, nil
}

// TTL returns key's remaining time to live on the node's clock, and
// whether key exists (Inspector).
func (n *MemNode) TTL(_ context.Context, key string) (time.Duration, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.nowLocked(n.base())
	e, ok := n.live(key, now)
	switch {
	case !ok:
		return 0, false, nil
	case e.expires.IsZero():
		return NoExpiry, true, nil
	}
	return e.expires.Sub(now), true, nil
}

// Fence returns the fence value under fenceKey (Inspector).
func (n *MemNode) Fence(_ context.Context, fenceKey string) (uint64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fenceLocked(fenceKey, n.nowLocked(n.base()))
}

// Keys returns the live keys that start with prefix, sorted (Inspector).
func (n *MemNode) Keys(_ context.Context, prefix string) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.nowLocked(n.base())
	var out []string
	for k := range n.keys {
		if _, ok := n.live(k, now); ok && strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Put sets key to value without expiry (Inspector).
func (n *MemNode) Put(_ context.Context, key, value string) error {
	n.mu.Lock()
	n.keys[key] = memEntry{value: value}
	n.mu.Unlock()
	return nil
}

func (n *MemNode) fenceLocked(fenceKey string, now time.Time) (uint64, error) {
	e, ok := n.live(fenceKey, now)
	if !ok {
		return 0, nil
	}
	f, err := strconv.ParseUint(e.value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redlocktest: %s: a fence key holds something other than a counter (%d bytes, not a uint64; its content is not shown: it may be a secret)", n.name, len(e.value))
	}
	return f, nil
}

// The operations of the wire beyond adapter.Op's.
const (
	opAcquireFenced adapter.Op = 200 + iota
	opRaiseFence
)

// memCall is one request on the wire, answered exactly once.
type memCall struct {
	ctx       context.Context
	req       adapter.Request
	fenceKey  string
	floorKey  string // memnode_floor.go
	token     uint64
	retention time.Duration
	recordKey string // memnode_record.go
	record    string
	// fn, when set, is the operation itself (memnode_inspect.go), run on
	// the keyspace with n.mu held.
	fn func(now time.Time) memResult

	reply func(memResult)
	slow  time.Duration
	note  time.Duration // SetJitter: the delay of its announcements
	drop  bool
	res   memResult

	answered atomic.Bool
	stopCtx  func() bool
	timer    *time.Timer
	tmu      sync.Mutex
}

type memResult struct {
	ok     bool
	fence  uint64
	lost   bool             // memnode_floor.go
	record string           // memnode_record.go
	state  adapter.KeyState // memnode_inspect.go
	keys   []string
	err    error
	// notify, when set, is the release to announce (ReleaseAnnounce).
	announce []func()
}

// deliver answers c with r unless it was answered already.
func (c *memCall) deliver(r memResult) {
	if !c.answered.CompareAndSwap(false, true) {
		return
	}
	c.tmu.Lock()
	stop, timer := c.stopCtx, c.timer
	c.tmu.Unlock()
	if stop != nil {
		stop()
	}
	if timer != nil {
		timer.Stop()
	}
	c.reply(r)
}

// answer sends c's result as the faults at its start say: at once, after
// the slow delay, or never (its context's end answers it).
func (c *memCall) answer() {
	for _, f := range c.res.announce {
		if c.note > 0 {
			time.AfterFunc(c.note, f)
		} else {
			f()
		}
	}
	c.res.announce = nil
	switch {
	case c.drop:
	case c.slow > 0:
		res := c.res
		c.tmu.Lock()
		if !c.answered.Load() {
			c.timer = time.AfterFunc(c.slow, func() { c.deliver(res) })
		}
		c.tmu.Unlock()
	default:
		c.deliver(c.res)
	}
}

// isDown reports whether the node refuses requests: SetDown, or the down
// time of a Restart. Called with n.mu held.
func (n *MemNode) isDown() bool {
	return n.down || (!n.downUntil.IsZero() && n.base().Before(n.downUntil))
}

// submit puts c on the wire: it is applied now, or held while the node is
// frozen, and answered as the faults say.
func (n *MemNode) submit(c *memCall) {
	if err := c.ctx.Err(); err != nil {
		c.reply(memResult{err: err})
		return
	}
	n.mu.Lock()
	if n.isDown() {
		n.mu.Unlock()
		c.reply(memResult{err: fmt.Errorf("%w: %s", ErrNodeDown, n.name)})
		return
	}
	c.slow, c.drop = n.slow, n.drop
	if n.jitter > 0 {
		c.slow = n.jittered(n.slow, false)
		if c.req.Op == adapter.OpReleaseAnnounce || c.req.Op == adapter.OpReleaseAllAnnounce {
			c.note = n.jittered(0, true)
		}
	}
	if c.drop || c.slow > 0 || n.frozen {
		// The answer may wait: the context's end answers it first.
		stop := context.AfterFunc(c.ctx, func() { c.deliver(memResult{err: c.ctx.Err()}) })
		c.tmu.Lock()
		c.stopCtx = stop
		c.tmu.Unlock()
	}
	if n.frozen {
		n.held = append(n.held, c)
		n.mu.Unlock()
		return
	}
	c.res = n.apply(c)
	n.mu.Unlock()
	c.answer()
}

// apply runs c's operation on the keyspace, with the lies of the node,
// and traces it (SetTrace).
func (n *MemNode) apply(c *memCall) memResult {
	c.res = n.applyOp(c)
	n.traceLocked(c)
	return c.res
}

// applyOp runs c's operation on the keyspace, with the lies of the node.
func (n *MemNode) applyOp(c *memCall) memResult {
	n.applied.Add(1)
	now := n.nowLocked(n.base())
	if c.fn != nil {
		return c.fn(now)
	}
	r := c.req
	lieAcq, lieAll := n.lie >= LieAcquired, n.lie == LieAll
	switch r.Op {
	case adapter.OpAcquire:
		if lieAcq {
			return memResult{ok: true}
		}
		if _, held := n.live(r.Key, now); held {
			return memResult{}
		}
		n.keys[r.Key] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		return memResult{ok: true}
	case opAcquireFenced:
		if !lieAcq {
			if _, held := n.live(r.Key, now); held {
				return memResult{}
			}
			n.keys[r.Key] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		}
		f, err := n.fenceLocked(c.fenceKey, now)
		if err != nil {
			return memResult{err: err}
		}
		return memResult{ok: true, fence: f}
	case adapter.OpRelease, adapter.OpReleaseAnnounce:
		e, ok := n.live(r.Key, now)
		if !ok || e.value != r.Value {
			return memResult{}
		}
		delete(n.keys, r.Key)
		var ann []func()
		if r.Op == adapter.OpReleaseAnnounce {
			for w := range n.watches {
				if w.watching(r.Key) {
					key, value := r.Key, r.Value
					ann = append(ann, func() { w.notify(key, value) })
				}
			}
		}
		return memResult{ok: true, announce: ann}
	case adapter.OpExtend:
		if lieAll {
			return memResult{ok: true}
		}
		e, ok := n.live(r.Key, now)
		if !ok || e.value != r.Value {
			return memResult{}
		}
		n.keys[r.Key] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		return memResult{ok: true}
	case adapter.OpTransfer:
		if lieAcq {
			return memResult{ok: true}
		}
		e, ok := n.live(r.Key, now)
		if !ok || e.value != r.From {
			return memResult{} // only what the holder still holds
		}
		n.keys[r.Key] = memEntry{value: r.Value, expires: now.Add(r.TTL)}
		return memResult{ok: true}
	case adapter.OpRAcquire, adapter.OpRRelease, adapter.OpRExtend, adapter.OpWAcquire, adapter.OpWUnwait, adapter.OpWMark, opWAcquireFenced:
		return n.applyRW(c, now, lieAcq, lieAll) // memnode_rw.go
	case opRaiseFence:
		if lieAll {
			return memResult{ok: true}
		}
		e, ok := n.live(r.Key, now)
		if !ok || e.value != r.Value {
			return memResult{}
		}
		cur, err := n.fenceLocked(c.fenceKey, now)
		if err != nil {
			return memResult{err: err}
		}
		if cur >= c.token {
			return memResult{}
		}
		var exp time.Time
		if c.retention > 0 {
			exp = now.Add(c.retention)
		}
		n.keys[c.fenceKey] = memEntry{value: strconv.FormatUint(c.token, 10), expires: exp}
		return memResult{ok: true}
	case opPutRecord, opReadRecord:
		return n.applyRecord(c, now)
	case opAcquireFencedFloor, opRaiseFenceRepair, opWAcquireFencedFloor, opAcquireAllFencedFloor, opRaiseFencesRepair:
		return n.applyFloor(c, now, lieAll) // memnode_floor.go
	}
	if res, ok := n.applyMulti(c, now); ok { // memnode_multi.go
		return res
	}
	n.applied.Add(-1)
	return memResult{err: fmt.Errorf("redlocktest: %s: unknown operation %v", n.name, r.Op)}
}

// ask sends req on the wire, waits for its answer and returns whether
// the node acted.
func (n *MemNode) ask(ctx context.Context, req adapter.Request) (bool, error) {
	r := n.call(&memCall{ctx: ctx, req: req})
	return r.ok, r.err
}

// call runs c on the wire and waits for its answer.
func (n *MemNode) call(c *memCall) memResult {
	ch := make(chan memResult, 1)
	c.reply = func(r memResult) { ch <- r }
	n.submit(c)
	return <-ch
}

// Acquire sets key to value with an expiry of ttl if key does not exist
// (redlock.Node, R3).
func (n *MemNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpAcquire, Key: key, Value: value, TTL: ttl})
}

// Release deletes key if it holds value (redlock.Node, R5).
func (n *MemNode) Release(ctx context.Context, key, value string) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpRelease, Key: key, Value: value})
}

// Extend resets key's expiry to ttl if key holds value (redlock.Node, R17).
func (n *MemNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpExtend, Key: key, Value: value, TTL: ttl})
}

// AcquireFenced is Acquire that also reads the fence under fenceKey when
// it set the key (adapter.FencingNode, R18). A fence that is not a decimal
// uint64 is an error, the key being set all the same (as the script does).
func (n *MemNode) AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (bool, uint64, error) {
	r := n.call(&memCall{ctx: ctx, fenceKey: fenceKey,
		req: adapter.Request{Op: opAcquireFenced, Key: key, Value: value, TTL: ttl}})
	return r.ok, r.fence, r.err
}

// RaiseFence sets the fence under fenceKey to token, with an expiry of
// retention (0: none), if key holds value and the fence is below token
// (adapter.FencingNode, R18).
func (n *MemNode) RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error) {
	r := n.call(&memCall{ctx: ctx, fenceKey: fenceKey, token: token, retention: retention,
		req: adapter.Request{Op: opRaiseFence, Key: key, Value: value}})
	return r.ok, r.err
}

// Transfer sets key to value with an expiry of ttl if key holds from or
// does not exist (adapter.TransferNode).
func (n *MemNode) Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpTransfer, Key: key, From: from, Value: value, TTL: ttl})
}

// ReleaseAnnounce is Release that also announces the release to the
// watchers of key on this node (adapter.HandoffNode).
func (n *MemNode) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	return n.ask(ctx, adapter.Request{Op: adapter.OpReleaseAnnounce, Key: key, Value: value})
}

// Start puts req on the node's wire behind every request started before it
// and returns; to.Receive(tag, ...) is called exactly once, possibly before
// Start returns (adapter.AsyncNode). An operation that is not one of
// adapter.Op's is answered at once with an error naming it.
func (n *MemNode) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	c := &memCall{ctx: ctx, req: req, reply: func(r memResult) { to.Receive(tag, r.ok, r.err) }}
	switch req.Op {
	case adapter.OpAcquire, adapter.OpRelease, adapter.OpReleaseAnnounce, adapter.OpExtend, adapter.OpTransfer,
		adapter.OpAcquireAll, adapter.OpReleaseAll, adapter.OpReleaseAllAnnounce, adapter.OpExtendAll:
	default:
		c.reply(memResult{err: fmt.Errorf("redlocktest: %s: unknown operation %v", n.name, req.Op)})
		return
	}
	n.submit(c)
}

// StartAll is Start for each call, in order (adapter.BatchNode).
func (n *MemNode) StartAll(calls []adapter.Call) {
	for _, c := range calls {
		n.Start(c.Ctx, c.Req, c.To, c.Tag)
	}
}

// WatchReleases opens a subscription to the node's release announcements
// (adapter.HandoffNode). It fails while the node is down. Announcements
// are delivered synchronously, after the release is applied and before its
// answer.
func (n *MemNode) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isDown() {
		return nil, fmt.Errorf("%w: %s", ErrNodeDown, n.name)
	}
	w := &memWatch{n: n, notify: notify, keys: map[string]bool{}}
	n.watches[w] = struct{}{}
	return w, nil
}

// Watchers returns how many open subscriptions of the node watch key's
// releases (the hand-off listens on some nodes only: redlock.
// HandoffWatchNodes).
func (n *MemNode) Watchers(key string) int {
	n.mu.Lock()
	ws := make([]*memWatch, 0, len(n.watches))
	for w := range n.watches {
		ws = append(ws, w)
	}
	n.mu.Unlock()
	c := 0
	for _, w := range ws {
		if w.watching(key) {
			c++
		}
	}
	return c
}

// memWatch is one subscription of a MemNode (adapter.ReleaseWatch).
type memWatch struct {
	n      *MemNode
	notify func(key, value string)

	mu     sync.Mutex
	keys   map[string]bool
	closed bool
}

func (w *memWatch) watching(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.closed && w.keys[key]
}

// Watch starts delivering the announced releases of key.
func (w *memWatch) Watch(ctx context.Context, key string) error {
	return w.set(ctx, key, true)
}

// Unwatch stops delivering the announced releases of key.
func (w *memWatch) Unwatch(ctx context.Context, key string) error {
	return w.set(ctx, key, false)
}

func (w *memWatch) set(ctx context.Context, key string, on bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("redlocktest: release watch closed")
	}
	if on {
		w.keys[key] = true
	} else {
		delete(w.keys, key)
	}
	return nil
}

// Close ends the subscription.
func (w *memWatch) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.n.mu.Lock()
	delete(w.n.watches, w)
	w.n.mu.Unlock()
	return nil
}
