package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"dlm/redlock/adapter"
)

// Seeing and managing locks: Inspect, Locks and
// ForceRelease read the nodes through adapter.InspectNode, which any
// client may call, holder or not. They never show a byte of a lock's
// value: values are compared inside the client, and holders are told
// apart by number (NodeView.Holder) and by owner label (owner.go).

// LockMode is how a resource is held, as Inspect sees it.
type LockMode uint8

// The modes of a resource.
const (
	// ModeFree: no value holds the key on a quorum of nodes, and no
	// reader does.
	ModeFree LockMode = iota
	// ModeWrite: one value holds the key on a quorum of nodes: a lock of
	// Lock, TryLock, LockAll or WLock (a writer's key is a plain lock
	// key), exclusive.
	ModeWrite
	// ModeRead: readers (RLock) hold the key, at least one of them on a
	// quorum of nodes.
	ModeRead
)

// String returns "free", "write" or "read".
func (m LockMode) String() string {
	switch m {
	case ModeWrite:
		return "write"
	case ModeRead:
		return "read"
	}
	return "free"
}

// LockInfo is what Client.Inspect saw of one resource: the quorum's view
// and each node's.
type LockInfo struct {
	// Resource is the resource's name.
	Resource string
	// Mode is the quorum's view: ModeWrite when one value holds the key
	// on a quorum of nodes, ModeRead when at least one reader does, else
	// ModeFree (a key on fewer nodes is a remnant: a failed attempt, or a
	// lock whose keys are expiring).
	Mode LockMode
	// Owner is the owner label (WithOwner) of the ModeWrite holder, ""
	// when unknown.
	Owner string
	// Validity is how long the ModeWrite holder's key lives on a quorum
	// of nodes by their clocks (the quorum-th longest remaining ttl), 0
	// for other modes. A holder's own validity (Lock.Validity) is shorter
	// by the drift and the time its acquisition took (R9).
	Validity time.Duration
	// Token is the resource's fence value (R18), the largest among the
	// nodes that hold the ModeWrite holder's value (among all nodes for
	// other modes): the token of the last fenced grant; 0 without fencing.
	Token uint64
	// Readers are the readers that a quorum of nodes holds, longest
	// validity first (ModeRead).
	Readers []ReaderInfo
	// Waiters is the most writers' waiting marks any node holds.
	Waiters int
	// Nodes are each node's view, in node order.
	Nodes []NodeView
}

// Held reports whether the resource is held (in either mode) by the
// quorum's view.
func (i LockInfo) Held() bool { return i.Mode != ModeFree }

// ReaderInfo is one reader that a quorum of nodes holds.
type ReaderInfo struct {
	// Owner is the reader's owner label, "" when unknown.
	Owner string
	// Validity is how long its entry lives on a quorum of nodes.
	Validity time.Duration
}

// NodeView is what one node holds for a resource.
type NodeView struct {
	// Node is the node's name.
	Node string
	// Err is the node's error (a timeout included); the other fields are
	// then zero.
	Err error
	// Kind is what the key holds on the node.
	Kind adapter.KeyKind
	// Holder numbers the value that holds a lock key on this node: 1 for
	// the value found on the most nodes, 2 for the next, and so on (0: no
	// lock key). Two nodes with the same number hold the same value; the
	// value itself is never shown.
	Holder int
	// Owner is the owner label of the value's client, "" when unknown.
	Owner string
	// TTL is the key's remaining time to live on the node's clock.
	TTL time.Duration
	// Readers counts the live readers of a readers' key.
	Readers int
	// Waiters counts the writers' waiting marks.
	Waiters int
	// Fence is the node's fence value for the resource (R18), 0 when none.
	Fence uint64
}

// inspectNodes returns the nodes as InspectNodes, or ErrInvalid naming
// the first that is not one.
func (c *Client) inspectNodes() ([]adapterInspect, error) {
	out := make([]adapterInspect, len(c.nodes))
	for i, n := range c.nodes {
		xn, ok := n.(adapterInspect)
		if !ok {
			return nil, invalidf("node %q (position %d) does not implement adapter.InspectNode, which inspecting locks needs: use redlock/goredis, redlock/rueidis or redlocktest.MemNode", c.names[i], i)
		}
		out[i] = xn
	}
	return out, nil
}

// inspectStart checks what Inspect and ForceRelease need: a resource
// name, InspectNodes, an open client.
func (c *Client) inspectStart(resource string) ([]adapterInspect, error) {
	if resource == "" {
		return nil, invalidf("empty resource name")
	}
	nodes, err := c.inspectNodes()
	if err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	return nodes, nil
}

// Inspect reads resource's lock on every node, at once (R15), and returns
// the quorum's view and each node's: the mode (free, write, or read with its readers), the owner
// label of each holder (WithOwner), the remaining validity, and the fence
// token. Any client may call it, holder or not; it changes nothing, and it
// never returns a byte of a lock's value. Every node must implement
// adapter.InspectNode (else ErrInvalid); a node that fails is reported in
// its NodeView. The error is not nil only for bad input, such nodes, a
// closed client or an ended ctx.
//
// A healthy node that answers slowly (a loaded machine) is no error: each
// request waits for a node as a grant of the client does for a slow one,
// up to ttl/2 - drift of the client's ttl (WithTTL), ctx permitting. A
// node that does not answer in that time (frozen, cut off) is an error,
// and for the next ttl the calls of Inspect, Locks and ForceRelease wait
// for it only the node timeout's limit (twenty node timeouts, 1s at the
// default); so a dead node costs them at most ttl/2 - drift once per ttl
// (4.9s at the default ttl), and a node that refuses costs nothing. Once
// a quorum of nodes answered Inspect's read (and ForceRelease's), a node
// that has not is waited for the limit more at most, unless it answered
// the client late within the last ttl (slow, and answering): a node
// frozen while a quorum answers costs them the limit, not the patience.
func (c *Client) Inspect(ctx context.Context, resource string) (LockInfo, error) {
	nodes, err := c.inspectStart(resource)
	if err != nil {
		return LockInfo{}, err
	}
	info, _ := c.inspect(ctx, nodes, resource, map[string]string{})
	return info, ctx.Err()
}

// nodeRead is one node's answer to inspect, with the values inside.
type nodeRead struct {
	st    adapter.KeyState
	fence uint64
	err   error
}

// inspect reads resource on every node and builds its LockInfo; it also
// returns each node's read (values included, for ForceRelease). owners
// caches the owner labels by tag.
func (c *Client) inspect(ctx context.Context, nodes []adapterInspect, resource string, owners map[string]string) (LockInfo, []nodeRead) {
	key, fenceKey := c.one(resource).key, c.opts.keyOf(c.opts.fencePrefix, resource)
	reads := make([]nodeRead, len(nodes))
	// Once a quorum answered, a node that is not slow and answering is
	// waited for the limit more (onQuorumPatiently): one frozen since a
	// new client's start costs no patience.
	c.onQuorumPatiently(ctx, nodes, func(ask asker, i int, n adapterInspect) bool {
		rctx, done := ask()
		st, err := n.Inspect(rctx, key)
		done()
		if err != nil {
			reads[i].err = err
			return false
		}
		reads[i].st = st
		if c.opts.fencePrefix != "" {
			rctx, done := ask()
			v, ok, err := n.Note(rctx, fenceKey)
			done()
			if err == nil && ok {
				reads[i].fence, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		return true
	})
	for i := range reads {
		if ctx.Err() == nil && errors.Is(reads[i].err, context.Canceled) {
			// Given up on once a quorum answered (onQuorumPatiently).
			reads[i].err = context.DeadlineExceeded
		}
	}
	info := LockInfo{Resource: resource, Nodes: make([]NodeView, len(nodes))}
	// Number the lock values by how many nodes hold them.
	count := map[string]int{}
	var values []string
	readerTTLs := map[string][]time.Duration{}
	var readers []string
	for _, r := range reads {
		if r.err != nil {
			continue
		}
		if r.st.Kind == adapter.KeyLock {
			if count[r.st.Value] == 0 {
				values = append(values, r.st.Value)
			}
			count[r.st.Value]++
		}
		for _, rd := range r.st.Readers {
			if readerTTLs[rd.Value] == nil {
				readers = append(readers, rd.Value)
			}
			readerTTLs[rd.Value] = append(readerTTLs[rd.Value], rd.TTL)
		}
	}
	sort.SliceStable(values, func(i, j int) bool { return count[values[i]] > count[values[j]] })
	number := map[string]int{}
	for i, v := range values {
		number[v] = i + 1
	}
	// Owner labels need the notes (WithInfoPrefix); without them, unknown.
	owner := func(string) string { return "" }
	if c.infoNodes() != nil {
		owner = func(v string) string { return c.readOwner(ctx, nodes, reads, v, owners) }
	}
	var holderTTLs []time.Duration
	for i, r := range reads {
		nv := NodeView{Node: c.names[i], Err: r.err}
		if r.err == nil {
			nv.Kind, nv.TTL, nv.Readers, nv.Waiters, nv.Fence = r.st.Kind, r.st.TTL, len(r.st.Readers), r.st.Waiters, r.fence
			if r.st.Kind == adapter.KeyLock {
				nv.Holder, nv.Owner = number[r.st.Value], owner(r.st.Value)
			}
			info.Waiters = max(info.Waiters, r.st.Waiters)
		}
		info.Nodes[i] = nv
	}
	switch {
	case len(values) > 0 && count[values[0]] >= c.quorum:
		info.Mode, info.Owner = ModeWrite, owner(values[0])
		for i, r := range reads {
			if r.err == nil && r.st.Kind == adapter.KeyLock && r.st.Value == values[0] {
				holderTTLs = append(holderTTLs, r.st.TTL)
				info.Token = max(info.Token, reads[i].fence)
			}
		}
		info.Validity = quorumTTL(holderTTLs, c.quorum)
	default:
		for _, r := range reads {
			info.Token = max(info.Token, r.fence)
		}
		for _, v := range readers {
			if ttls := readerTTLs[v]; len(ttls) >= c.quorum {
				info.Readers = append(info.Readers, ReaderInfo{Owner: owner(v), Validity: quorumTTL(ttls, c.quorum)})
			}
		}
		sort.SliceStable(info.Readers, func(i, j int) bool { return info.Readers[i].Validity > info.Readers[j].Validity })
		if len(info.Readers) > 0 {
			info.Mode = ModeRead
		}
	}
	return info, reads
}

// readOwner returns the owner label of the client that drew value, as the
// nodes keep it (owner.go: ownerOf), or "" when unknown. It asks the nodes
// whose read answered, as patiently (onEveryNodePatiently), and ends at
// the first label found: every node keeps the same one.
func (c *Client) readOwner(ctx context.Context, nodes []adapterInspect, reads []nodeRead, value string, cache map[string]string) string {
	tag := tagOf(value)
	if tag == "" {
		return ""
	}
	if o, ok := cache[tag]; ok {
		return o
	}
	key := c.ownerNote(tag)
	ctx, found := context.WithCancel(ctx)
	defer found()
	var mu sync.Mutex
	owner := ""
	c.onEveryNodePatiently(ctx, nodes, func(ask asker, i int, n adapterInspect) {
		if reads[i].err != nil {
			return
		}
		rctx, done := ask()
		v, ok, err := n.Note(rctx, key)
		done()
		if err != nil || !ok || v == "" {
			return
		}
		mu.Lock()
		if owner == "" {
			owner = strings.ToValidUTF8(v, "?")
		}
		mu.Unlock()
		found()
	})
	cache[tag] = owner
	return owner
}

// quorumTTL is the quorum-th longest of ttls: how long a quorum of nodes
// keeps the key (a key without expiry counts as the longest).
func quorumTTL(ttls []time.Duration, quorum int) time.Duration {
	if len(ttls) < quorum || quorum < 1 {
		return 0
	}
	s := slices.Clone(ttls)
	for i, d := range s {
		if d < 0 {
			s[i] = time.Duration(1<<63 - 1)
		}
	}
	slices.Sort(s)
	return s[len(s)-quorum]
}

// DefaultLocksLimit is the default bound of Client.Locks.
const DefaultLocksLimit = 1000

// Locks lists the resources whose lock keys are on the nodes, by scanning
// the key prefix (WithKeyPrefix) on every node (SCAN, a bounded number of
// keys per call), and inspects each (see Inspect): held ones, and the
// remnants on fewer than a quorum of nodes. At most limit resources are
// listed (0: DefaultLocksLimit), sorted by name; complete is false when
// there were more. When the scan of a node fails (on any page), the
// resources found are still listed and inspected, but complete is false
// and the error is a *ScanError naming each failed node (errors.Is finds
// ErrScanIncomplete): a resource whose keys are only on such nodes may be
// missing. When ctx ends while the resources are inspected, Locks returns
// those inspected so far with ctx's error. Each request (a page of a scan,
// a read) waits for a slow node as Inspect's do. Once a quorum of nodes
// scanned, a node that has not is waited for the node timeout's limit
// more at most (unless it answered the client late within the last ttl:
// slow, and answering), and then is a failed scan, not asked again for
// each lock: its NodeView's Err says so. A node frozen while a quorum
// answers costs Locks the limit (1s at the default), whatever the number
// of locks.
func (c *Client) Locks(ctx context.Context, limit int) (infos []LockInfo, complete bool, err error) {
	if limit <= 0 {
		limit = DefaultLocksLimit
	}
	nodes, err := c.inspectNodes()
	if err != nil {
		return nil, false, err
	}
	if c.isClosed() {
		return nil, false, ErrClosed
	}
	prefix := c.opts.prefix
	var mu sync.Mutex
	names := map[string]bool{}
	complete = true
	failed, silent := make([]error, len(nodes)), make([]error, len(nodes))
	// The scan of a quorum's nodes lists what the quorum holds: once a
	// quorum scanned, a node that has not is waited for the limit more at
	// most, unless slow and answering (onQuorumPatiently), as Inspect's
	// read is; a node frozen while a quorum answers costs the list the
	// limit, not a grant's patience.
	c.onQuorumPatiently(ctx, nodes, func(ask asker, i int, n adapterInspect) bool {
		cursor := ""
		for seen := 0; ; {
			rctx, done := ask()
			keys, next, err := n.Scan(rctx, prefix, cursor, 100)
			done()
			if err != nil {
				if ctx.Err() == nil && (isTimeout(err) || errors.Is(err, context.Canceled)) {
					// Given up on (onQuorumPatiently), or timed out: it
					// did not answer, and is not asked again by this call.
					err = context.DeadlineExceeded
					silent[i] = fmt.Errorf("no answer to the key scan: %w", err)
				}
				failed[i] = nodeError(c.names[i], err) // one writer per index
				return false
			}
			mu.Lock()
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) && len(k) > len(prefix) {
					names[c.opts.resourceOf(prefix, k)] = true // hash tags too (options.go: the key layout)
				}
			}
			seen += len(keys)
			full := len(names) > limit
			mu.Unlock()
			if next == "" {
				return true
			}
			if full || seen/10 > limit { // not 10*limit: it may overflow
				mu.Lock()
				complete = false
				mu.Unlock()
				return true
			}
			cursor = next
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	var scanErr error
	if se := newScanError(failed); se != nil {
		scanErr, complete = se, false
	}
	sorted := make([]string, 0, len(names))
	for r := range names {
		sorted = append(sorted, r)
	}
	sort.Strings(sorted)
	if len(sorted) > limit {
		sorted, complete = sorted[:limit], false
	}
	// A node that did not answer the scan is not waited for again, once
	// per lock: its reads fail at once with the scan's error.
	for i, err := range silent {
		if err != nil {
			nodes[i] = silentNode{nodes[i], err}
		}
	}
	owners := map[string]string{}
	for _, r := range sorted {
		if err := ctx.Err(); err != nil {
			return infos, false, errors.Join(err, scanErr) // the resources inspected so far
		}
		info, _ := c.inspect(ctx, nodes, r, owners)
		infos = append(infos, info)
	}
	if err := ctx.Err(); err != nil {
		return infos, false, errors.Join(err, scanErr)
	}
	return infos, complete, scanErr
}

// silentNode stands, in Locks, for a node that did not answer the scan:
// its reads fail at once with err, so that a frozen node costs the list
// one wait, not one per lock.
type silentNode struct {
	adapterInspect
	err error
}

// Inspect fails at once (adapter.InspectNode).
func (n silentNode) Inspect(context.Context, string) (adapter.KeyState, error) {
	return adapter.KeyState{}, n.err
}

// Note fails at once (adapter.InspectNode).
func (n silentNode) Note(context.Context, string) (string, bool, error) {
	return "", false, n.err
}

// ErrScanIncomplete is in the error of Client.Locks when the scan of some
// node failed: the list may miss the resources whose keys are only there.
var ErrScanIncomplete = errors.New("redlock: the key scan of some nodes failed: the list of locks may miss some")

// ScanError is the error of Client.Locks when the scan of one or more
// nodes failed. errors.Is finds ErrScanIncomplete and each node's error.
type ScanError struct {
	// Nodes is the number of nodes of the client.
	Nodes int
	// Failed are the errors of the nodes whose scan failed, each a
	// *NodeError naming the node, in node order.
	Failed []error
}

// newScanError returns the ScanError of the per-node scan errors (nil
// where a node's scan did not fail), or nil when none failed.
func newScanError(perNode []error) *ScanError {
	e := &ScanError{Nodes: len(perNode)}
	for _, err := range perNode {
		if err != nil {
			e.Failed = append(e.Failed, err)
		}
	}
	if len(e.Failed) == 0 {
		return nil
	}
	return e
}

// Scanned is the number of nodes whose scan did not fail.
func (e *ScanError) Scanned() int { return e.Nodes - len(e.Failed) }

// Error says how many nodes failed their scan, and why.
func (e *ScanError) Error() string {
	msgs := make([]string, len(e.Failed))
	for i, err := range e.Failed {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%v: %d of %d node(s): %s", ErrScanIncomplete, len(e.Failed), e.Nodes, strings.Join(msgs, "; "))
}

// Unwrap returns ErrScanIncomplete and the nodes' errors.
func (e *ScanError) Unwrap() []error { return append([]error{ErrScanIncomplete}, e.Failed...) }

// ForceReport is what Client.ForceRelease did.
type ForceReport struct {
	// Before is the resource as Inspect saw it before the release.
	Before LockInfo
	// Released counts, per node in node order, the keys or readers' entries
	// it deleted.
	Released []int
	// Errs are the nodes' errors, in node order (nil where none).
	Errs []error
}

// releaseUnread sends, to each node whose read of key did not answer
// (reads: ForceRelease's), the release of every value the other nodes
// showed there, holder's and readers', in the background (Close waits for
// it, within the release timeout): a node frozen while ForceRelease ran
// applies them when it resumes, so that it does not keep the lock until
// its ttl. Each release deletes only its value (R5).
func (c *Client) releaseUnread(nodes []adapterInspect, reads []nodeRead, key string) {
	var holders, readers []string
	for _, r := range reads {
		if r.err != nil {
			continue
		}
		if r.st.Kind == adapter.KeyLock && !slices.Contains(holders, r.st.Value) {
			holders = append(holders, r.st.Value)
		}
		for _, rd := range r.st.Readers {
			if !slices.Contains(readers, rd.Value) {
				readers = append(readers, rd.Value)
			}
		}
	}
	var unread []int
	for i, r := range reads {
		if r.err != nil {
			unread = append(unread, i)
		}
	}
	if len(unread) == 0 || len(holders)+len(readers) == 0 {
		return
	}
	c.settle(false, func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.releaseTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for _, i := range unread {
			n := nodes[i]
			for _, v := range holders {
				wg.Go(func() { _, _ = n.Release(ctx, key, v) })
			}
			if rn, ok := n.(adapter.RWNode); ok {
				for _, v := range readers {
					wg.Go(func() { _, _ = rn.RRelease(ctx, key, v) })
				}
			}
		}
		wg.Wait()
	})
}

// ForceRelease is an operator's release of resource, whoever holds it: on
// every node, it reads the key (as Inspect) and deletes the lock key by
// compare-and-delete with the value it read (R5), or each reader's entry
// of a readers' key (adapter.RWNode), so that a holder that acquired in
// between is never deleted. Before each delete it keeps a release marker
// of the value on the node (for twice the longest ttl it knows of: the
// client's and the key's remaining time), so that a holder's extension
// racing the release does not set the key again where the release came
// first, as it would on a node that forgot the key (a restart): that
// extension fails with ErrNotHeld instead. A node where the marker could
// not be written reports it in Errs; there, and without notes on the
// nodes (WithInfoPrefix), a racing extension can still restore the lock.
// The holders are not told: their next Extend fails (an extension that
// raced the release and was confirmed by a quorum before it may succeed),
// and until then each may still believe it holds the lock (R9): use
// it for a holder known to be dead, or with fencing (R18) on the resources
// it guards. It is logged at Warn level to the client's logger
// (WithLogger), with the owner labels, never the values. Every node must
// be an adapter.InspectNode. Each request (a read, a marker, a delete)
// waits for a slow node as Inspect's do: a healthy node that answers
// slowly is released too, and a dead one costs at most ttl/2 - drift of
// the client's ttl once per ttl. A node whose read did not answer (frozen)
// is sent the release of every value the other nodes showed, in the
// background (Close waits for it, within the release timeout), without a
// marker: it applies them if it resumes while they are on its connection.
func (c *Client) ForceRelease(ctx context.Context, resource string) (ForceReport, error) {
	nodes, err := c.inspectStart(resource)
	if err != nil {
		return ForceReport{}, err
	}
	info, reads := c.inspect(ctx, nodes, resource, map[string]string{})
	rep := ForceReport{Before: info, Released: make([]int, len(nodes)), Errs: make([]error, len(nodes))}
	key := c.one(resource).key
	// Before each delete, the value's release marker (restore.go), so
	// that a holder's extension racing this release does not restore the
	// key where it came first: kept for twice the longest life the
	// holder's key can have, as far as this client knows it.
	marks, life := c.infoNodes() != nil, c.opts.lock.ttl
	for _, r := range reads {
		life = max(life, r.st.TTL)
		for _, rd := range r.st.Readers {
			life = max(life, rd.TTL)
		}
	}
	// ask gives each request its context (onEveryNodePatiently).
	mark := func(ask asker, n adapterInspect, value string) error {
		if !marks {
			return nil
		}
		rctx, done := ask()
		defer done()
		return n.PutNote(rctx, c.releaseMarker(value), "released", c.markerTTL(life))
	}
	c.onEveryNodePatiently(ctx, nodes, func(ask asker, i int, n adapterInspect) {
		r := reads[i]
		if r.err != nil {
			rep.Errs[i] = r.err
			return
		}
		switch r.st.Kind {
		case adapter.KeyLock:
			merr := mark(ask, n, r.st.Value)
			rctx, done := ask()
			ok, err := n.Release(rctx, key, r.st.Value)
			done()
			if ok {
				rep.Released[i]++
			}
			rep.Errs[i] = errors.Join(merr, err)
		case adapter.KeyReaders:
			rn, isRW := n.(adapter.RWNode)
			if !isRW {
				rep.Errs[i] = invalidf("node %q holds readers but is not an adapter.RWNode", c.names[i])
				return
			}
			for _, rd := range r.st.Readers {
				merr := mark(ask, n, rd.Value)
				rctx, done := ask()
				ok, err := rn.RRelease(rctx, key, rd.Value)
				done()
				if ok {
					rep.Released[i]++
				}
				if err := errors.Join(merr, err); err != nil {
					rep.Errs[i] = err
				}
			}
		}
	})
	c.releaseUnread(nodes, reads, key)
	total := 0
	for _, n := range rep.Released {
		total += n
	}
	for _, o := range c.obs {
		if lo, ok := o.(logObserver); ok {
			owners := []string{}
			if info.Owner != "" {
				owners = append(owners, info.Owner)
			}
			for _, r := range info.Readers {
				owners = append(owners, r.Owner)
			}
			lo.l.Warn("redlock: force release", slog.String("resource", resource), slog.String("mode", info.Mode.String()),
				slog.Any("owners", owners), slog.Int("deleted", total))
		}
	}
	return rep, ctx.Err()
}
