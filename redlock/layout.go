package redlock

import (
	"context"
	"io"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

// The key layout of each node (options.go: the key layout). The client
// builds every key without hash tags, unless it was built WithHashTags:
// the keys of a plain master are then the same whatever else is in the
// node list. A node that is a Redis Cluster needs the keys of one
// resource in one hash slot, so a client without WithHashTags puts a
// tagNode between itself and each such node (New: tagClusters): every key
// and release channel it hands the node is written in the tagged form,
// and every key the node gives back (a scan, an announced release) in the
// untagged one. This is the one place where a request reaches a cluster
// node in another layout; the rest of the client never knows.

// clusterKeyed is what a node that is a Redis Cluster must implement for
// a client without WithHashTags to tag its keys on the way (tagNode): the
// capabilities that a wrapper cannot give a node that lacks them. (A
// BatchNode, a FenceFloorNode and an io.Closer may be missing: tagNode
// does what the client does without them.)
type clusterKeyed interface {
	adapter.ClusterNode
	adapter.TransferNode
	adapter.FencingNode
	adapter.HandoffNode
	adapter.MultiNode
	adapter.RWNode
	adapter.RecordNode
	adapter.InspectNode
	adapter.FactsNode
}

// tagNode is a node that is a Redis Cluster, seen by a client without
// WithHashTags: it hands the node every key of a resource with the hash
// tag of the resource, as HashTaggedKey writes it, and gives back the keys
// the node names in the client's untagged layout. It has every
// capability the client looks for on its nodes: those of clusterKeyed,
// which the node has too, and BatchNode, FenceFloorNode and io.Closer,
// which it gives a node without them as the client would do without
// them. A new optional capability of adapter's nodes must be added here,
// or the client would not find it on cluster nodes.
type tagNode struct {
	n     clusterKeyed
	floor adapter.FenceFloorNode // nil when n keeps no floor
	batch adapter.BatchNode      // nil when n sends no batches
	// The prefixes of the keys of a resource (WithKeyPrefix,
	// WithFencePrefix, WithRecordPrefix), and of the notes, which are
	// not a resource's and stay as they are (WithInfoPrefix).
	lock, fence, record, info string
}

var (
	_ clusterKeyed           = (*tagNode)(nil)
	_ adapter.BatchNode      = (*tagNode)(nil)
	_ adapter.FenceFloorNode = (*tagNode)(nil)
	_ io.Closer              = (*tagNode)(nil)
	_ adapter.SharedNode     = (*tagNode)(nil)
	_ adapter.MastersNode    = (*tagNode)(nil)
)

// tagClusters returns nodes with each node that is a Redis Cluster behind
// a tagNode, when the client is not built WithHashTags (then every key is
// tagged already). A cluster node that lacks a capability of
// clusterKeyed is refused: the client could not tag its keys on the way.
func (o *clientOptions) tagClusters(nodes []Node, names []string) ([]Node, error) {
	if o.hashTags {
		return nodes, nil
	}
	var out []Node
	for i, n := range nodes {
		if !isCluster(n) {
			continue
		}
		ck, ok := n.(clusterKeyed)
		if !ok {
			return nil, invalidf("node %q (position %d) is a Redis Cluster that does not implement every capability of redlock/goredis and redlock/rueidis (adapter.TransferNode, FencingNode, HandoffNode, MultiNode, RWNode, RecordNode, InspectNode, FactsNode), which the client needs to give its keys hash tags on this node only: build the client WithHashTags (every node's keys then carry them, for every client of the same resources)", names[i], i)
		}
		if out == nil {
			out = append([]Node(nil), nodes...)
		}
		t := &tagNode{n: ck, lock: o.prefix, fence: o.fencePrefix, record: o.recordPrefix, info: o.infoPrefix}
		t.floor, _ = n.(adapter.FenceFloorNode)
		t.batch, _ = n.(adapter.BatchNode)
		out[i] = t
	}
	if out == nil {
		return nodes, nil
	}
	return out, nil
}

// tagged returns key, a key under prefix, with the hash tag of its
// resource; a key not under prefix as it is.
func tagged(prefix, key string) string {
	if prefix == "" || !strings.HasPrefix(key, prefix) {
		return key
	}
	return HashTaggedKey(prefix, key[len(prefix):])
}

// taggedAll returns keys, each under prefix, tagged.
func taggedAll(prefix string, keys []string) []string {
	if keys == nil {
		return nil
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = tagged(prefix, k)
	}
	return out
}

// untagged returns key, a key as HashTaggedKey writes it under prefix, in
// the untagged form; any other key as it is.
func untagged(prefix, key string) string {
	if prefix == "" || !strings.HasPrefix(key, prefix) {
		return key
	}
	s := key[len(prefix):]
	if len(s) < 2 || s[0] != '{' || strings.IndexByte(s, '}') != len(s)-1 {
		return key
	}
	return prefix + (&clientOptions{hashTags: true}).resourceOf("", s)
}

// noteKey returns the key of a note (Note, PutNote) in the node's layout:
// a fence key is read as a note (Client.Inspect), and is tagged; the
// client's own notes (WithInfoPrefix) are not a resource's, and stay as
// they are.
func (t *tagNode) noteKey(key string) string {
	if strings.HasPrefix(key, t.fence) && !(t.info != "" && strings.HasPrefix(key, t.info) && len(t.info) >= len(t.fence)) {
		return tagged(t.fence, key)
	}
	return key
}

// request returns req with its keys tagged.
func (t *tagNode) request(req adapter.Request) adapter.Request {
	if req.Key != "" {
		req.Key = tagged(t.lock, req.Key)
	}
	req.Keys = taggedAll(t.lock, req.Keys)
	return req
}

// floorOf is the floor key of a tagged fence key: the resource's own, as
// a client with hash tags names it (fencing.go: floorKey).
func floorOf(taggedFence string) string { return taggedFence + floorSuffix }

// String names the node as the node names itself.
func (t *tagNode) String() string {
	if s, ok := t.n.(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}

// Close closes the node, when it is an io.Closer.
func (t *tagNode) Close() error {
	if cl, ok := t.n.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// Acquire is adapter.Node's, on the tagged key.
func (t *tagNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return t.n.Acquire(ctx, tagged(t.lock, key), value, ttl)
}

// Release is adapter.Node's, on the tagged key.
func (t *tagNode) Release(ctx context.Context, key, value string) (bool, error) {
	return t.n.Release(ctx, tagged(t.lock, key), value)
}

// Extend is adapter.Node's, on the tagged key.
func (t *tagNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return t.n.Extend(ctx, tagged(t.lock, key), value, ttl)
}

// Start is adapter.AsyncNode's, with the request's keys tagged.
func (t *tagNode) Start(ctx context.Context, req adapter.Request, to adapter.Receiver, tag int) {
	t.n.Start(ctx, t.request(req), to, tag)
}

// StartAll is adapter.BatchNode's, with each request's keys tagged; for a
// node that sends no batches, Start for each call in order, as the client
// does.
func (t *tagNode) StartAll(calls []adapter.Call) {
	out := make([]adapter.Call, len(calls))
	for i, cl := range calls {
		cl.Req = t.request(cl.Req)
		out[i] = cl
	}
	if t.batch != nil {
		t.batch.StartAll(out)
		return
	}
	for _, cl := range out {
		t.n.Start(cl.Ctx, cl.Req, cl.To, cl.Tag)
	}
}

// Transfer is adapter.TransferNode's, on the tagged key.
func (t *tagNode) Transfer(ctx context.Context, key, from, value string, ttl time.Duration) (bool, error) {
	return t.n.Transfer(ctx, tagged(t.lock, key), from, value, ttl)
}

// AcquireFenced is adapter.FencingNode's, on the tagged keys.
func (t *tagNode) AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (bool, uint64, error) {
	return t.n.AcquireFenced(ctx, tagged(t.lock, key), tagged(t.fence, fenceKey), value, ttl)
}

// RaiseFence is adapter.FencingNode's, on the tagged keys.
func (t *tagNode) RaiseFence(ctx context.Context, key, fenceKey, value string, token uint64, retention time.Duration) (bool, error) {
	return t.n.RaiseFence(ctx, tagged(t.lock, key), tagged(t.fence, fenceKey), value, token, retention)
}

// AcquireFencedFloor is adapter.FenceFloorNode's, on the tagged keys and
// the resource's own floor key (the client's floorKey names the node's one
// floor, which a cluster node cannot use beside a resource's keys). For a
// node that keeps no floor, AcquireFenced, which never reports a loss, as
// the client does with such a node.
func (t *tagNode) AcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value string, ttl time.Duration) (bool, uint64, bool, error) {
	key, fenceKey = tagged(t.lock, key), tagged(t.fence, fenceKey)
	if t.floor == nil {
		ok, fence, err := t.n.AcquireFenced(ctx, key, fenceKey, value, ttl)
		return ok, fence, true, err
	}
	return t.floor.AcquireFencedFloor(ctx, key, fenceKey, floorOf(fenceKey), value, ttl)
}

// RaiseFenceRepair is adapter.FenceFloorNode's, as AcquireFencedFloor;
// RaiseFence for a node that keeps no floor.
func (t *tagNode) RaiseFenceRepair(ctx context.Context, key, fenceKey, floorKey, value string, token uint64, retention time.Duration) (bool, error) {
	key, fenceKey = tagged(t.lock, key), tagged(t.fence, fenceKey)
	if t.floor == nil {
		return t.n.RaiseFence(ctx, key, fenceKey, value, token, retention)
	}
	return t.floor.RaiseFenceRepair(ctx, key, fenceKey, floorOf(fenceKey), value, token, retention)
}

// WAcquireFencedFloor is adapter.FenceFloorNode's, as AcquireFencedFloor;
// WAcquireFenced for a node that keeps no floor.
func (t *tagNode) WAcquireFencedFloor(ctx context.Context, key, fenceKey, floorKey, value, waiter string, ttl time.Duration) (bool, uint64, bool, error) {
	key, fenceKey = tagged(t.lock, key), tagged(t.fence, fenceKey)
	if t.floor == nil {
		ok, fence, err := t.n.WAcquireFenced(ctx, key, fenceKey, value, waiter, ttl)
		return ok, fence, true, err
	}
	return t.floor.WAcquireFencedFloor(ctx, key, fenceKey, floorOf(fenceKey), value, waiter, ttl)
}

// AcquireAllFencedFloor is adapter.FenceFloorNode's, on the tagged keys
// and each resource's own floor key (AcquireFencedFloor);
// AcquireAllFenced for a node that keeps no floor.
func (t *tagNode) AcquireAllFencedFloor(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, ttl time.Duration) (bool, uint64, bool, error) {
	keys, fenceKeys = taggedAll(t.lock, keys), taggedAll(t.fence, fenceKeys)
	if t.floor == nil {
		ok, fence, err := t.n.AcquireAllFenced(ctx, keys, fenceKeys, value, ttl)
		return ok, fence, true, err
	}
	return t.floor.AcquireAllFencedFloor(ctx, keys, fenceKeys, floorsOf(fenceKeys), value, ttl)
}

// RaiseFencesRepair is adapter.FenceFloorNode's, as AcquireAllFencedFloor;
// RaiseFences for a node that keeps no floor.
func (t *tagNode) RaiseFencesRepair(ctx context.Context, keys, fenceKeys, floorKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	keys, fenceKeys = taggedAll(t.lock, keys), taggedAll(t.fence, fenceKeys)
	if t.floor == nil {
		return t.n.RaiseFences(ctx, keys, fenceKeys, value, token, retention)
	}
	return t.floor.RaiseFencesRepair(ctx, keys, fenceKeys, floorsOf(fenceKeys), value, token, retention)
}

// floorsOf returns the floor key of each tagged fence key (floorOf).
func floorsOf(taggedFences []string) []string {
	out := make([]string, len(taggedFences))
	for i, k := range taggedFences {
		out[i] = floorOf(k)
	}
	return out
}

// AbortSetup is adapter.SetupNode's, when the node has it.
func (t *tagNode) AbortSetup() {
	if sn, ok := t.n.(adapter.SetupNode); ok {
		sn.AbortSetup()
	}
}

// Share is adapter.SharedNode's: the node counts one more client, when it
// counts them; else nothing (Close then closes it, as without tagNode).
func (t *tagNode) Share() {
	if sn, ok := t.n.(adapter.SharedNode); ok {
		sn.Share()
	}
}

// ReleaseAnnounce is adapter.HandoffNode's, on the tagged key: the release
// is announced on the tagged key's channel.
func (t *tagNode) ReleaseAnnounce(ctx context.Context, key, value string) (bool, error) {
	return t.n.ReleaseAnnounce(ctx, tagged(t.lock, key), value)
}

// WatchReleases is adapter.HandoffNode's: the client watches untagged
// keys, the node's subscription the tagged ones, and notify hears the
// untagged key.
func (t *tagNode) WatchReleases(notify func(key, value string)) (adapter.ReleaseWatch, error) {
	w, err := t.n.WatchReleases(func(key, value string) { notify(untagged(t.lock, key), value) })
	if err != nil {
		return nil, err
	}
	return tagWatch{w: w, lock: t.lock}, nil
}

// tagWatch is a tagNode's subscription to release announcements.
type tagWatch struct {
	w    adapter.ReleaseWatch
	lock string
}

// Watch starts delivering the releases of key, watched tagged.
func (w tagWatch) Watch(ctx context.Context, key string) error {
	return w.w.Watch(ctx, tagged(w.lock, key))
}

// Unwatch stops delivering the releases of key.
func (w tagWatch) Unwatch(ctx context.Context, key string) error {
	return w.w.Unwatch(ctx, tagged(w.lock, key))
}

// Close ends the subscription.
func (w tagWatch) Close() error { return w.w.Close() }

// AcquireAll is adapter.MultiNode's, on the tagged keys.
func (t *tagNode) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return t.n.AcquireAll(ctx, taggedAll(t.lock, keys), value, ttl)
}

// ReleaseAll is adapter.MultiNode's, on the tagged keys.
func (t *tagNode) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	return t.n.ReleaseAll(ctx, taggedAll(t.lock, keys), value, announce)
}

// ExtendAll is adapter.MultiNode's, on the tagged keys.
func (t *tagNode) ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return t.n.ExtendAll(ctx, taggedAll(t.lock, keys), value, ttl)
}

// RestoreAll is adapter.MultiNode's, on the tagged keys.
func (t *tagNode) RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return t.n.RestoreAll(ctx, taggedAll(t.lock, keys), value, ttl)
}

// AcquireAllFenced is adapter.MultiNode's, on the tagged keys.
func (t *tagNode) AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (bool, uint64, error) {
	return t.n.AcquireAllFenced(ctx, taggedAll(t.lock, keys), taggedAll(t.fence, fenceKeys), value, ttl)
}

// RaiseFences is adapter.MultiNode's, on the tagged keys.
func (t *tagNode) RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	return t.n.RaiseFences(ctx, taggedAll(t.lock, keys), taggedAll(t.fence, fenceKeys), value, token, retention)
}

// RAcquire is adapter.RWNode's, on the tagged key.
func (t *tagNode) RAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return t.n.RAcquire(ctx, tagged(t.lock, key), value, ttl)
}

// RRelease is adapter.RWNode's, on the tagged key.
func (t *tagNode) RRelease(ctx context.Context, key, value string) (bool, error) {
	return t.n.RRelease(ctx, tagged(t.lock, key), value)
}

// RExtend is adapter.RWNode's, on the tagged key.
func (t *tagNode) RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return t.n.RExtend(ctx, tagged(t.lock, key), value, ttl)
}

// WAcquire is adapter.RWNode's, on the tagged key.
func (t *tagNode) WAcquire(ctx context.Context, key, value, waiter string, ttl time.Duration) (bool, error) {
	return t.n.WAcquire(ctx, tagged(t.lock, key), value, waiter, ttl)
}

// WUnwait is adapter.RWNode's, on the tagged key.
func (t *tagNode) WUnwait(ctx context.Context, key, waiter string) (bool, error) {
	return t.n.WUnwait(ctx, tagged(t.lock, key), waiter)
}

// WMark is adapter.RWNode's, on the tagged key.
func (t *tagNode) WMark(ctx context.Context, key, waiter string, ttl time.Duration) (bool, error) {
	return t.n.WMark(ctx, tagged(t.lock, key), waiter, ttl)
}

// WAcquireFenced is adapter.RWNode's, on the tagged keys.
func (t *tagNode) WAcquireFenced(ctx context.Context, key, fenceKey, value, waiter string, ttl time.Duration) (bool, uint64, error) {
	return t.n.WAcquireFenced(ctx, tagged(t.lock, key), tagged(t.fence, fenceKey), value, waiter, ttl)
}

// PutRecord is adapter.RecordNode's, on the tagged keys.
func (t *tagNode) PutRecord(ctx context.Context, key, recordKey, value, record string, retention time.Duration) (bool, error) {
	return t.n.PutRecord(ctx, tagged(t.lock, key), tagged(t.record, recordKey), value, record, retention)
}

// ReadRecord is adapter.RecordNode's, on the tagged keys.
func (t *tagNode) ReadRecord(ctx context.Context, key, recordKey, fenceKey string) (string, bool, uint64, error) {
	return t.n.ReadRecord(ctx, tagged(t.lock, key), tagged(t.record, recordKey), tagged(t.fence, fenceKey))
}

// Inspect is adapter.InspectNode's, on the tagged key.
func (t *tagNode) Inspect(ctx context.Context, key string) (adapter.KeyState, error) {
	return t.n.Inspect(ctx, tagged(t.lock, key))
}

// Scan is adapter.InspectNode's: the tagged keys start with the same
// prefix, and each is given back untagged.
func (t *tagNode) Scan(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	keys, next, err := t.n.Scan(ctx, prefix, cursor, count)
	for i, k := range keys {
		for _, p := range [...]string{t.lock, t.fence, t.record} {
			if u := untagged(p, k); u != k {
				keys[i] = u
				break
			}
		}
	}
	return keys, next, err
}

// PutNote is adapter.InspectNode's, on the note's key in the node's
// layout (noteKey).
func (t *tagNode) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	return t.n.PutNote(ctx, t.noteKey(key), note, ttl)
}

// Note is adapter.InspectNode's, on the note's key in the node's layout
// (noteKey).
func (t *tagNode) Note(ctx context.Context, key string) (string, bool, error) {
	return t.n.Note(ctx, t.noteKey(key))
}

// Connect is adapter.FactsNode's.
func (t *tagNode) Connect(ctx context.Context) error { return t.n.Connect(ctx) }

// Facts is adapter.FactsNode's.
func (t *tagNode) Facts() ([]adapter.Facts, uint64) { return t.n.Facts() }

// Cluster is adapter.ClusterNode's: true.
func (t *tagNode) Cluster() bool { return t.n.Cluster() }

// Replicas is adapter.ClusterNode's.
func (t *tagNode) Replicas(ctx context.Context) ([]adapter.Replica, error) {
	return t.n.Replicas(ctx)
}

// Masters is adapter.MastersNode's; none when the node is not one.
func (t *tagNode) Masters() []string {
	if mn, ok := t.n.(adapter.MastersNode); ok {
		return mn.Masters()
	}
	return nil
}

// MasterOf is adapter.MastersNode's, of the tagged key.
func (t *tagNode) MasterOf(key string) string {
	if mn, ok := t.n.(adapter.MastersNode); ok {
		return mn.MasterOf(tagged(t.lock, key))
	}
	return ""
}

// ConnectMaster is adapter.MastersNode's; Connect when the node is not
// one.
func (t *tagNode) ConnectMaster(ctx context.Context, addr string) error {
	if mn, ok := t.n.(adapter.MastersNode); ok {
		return mn.ConnectMaster(ctx, addr)
	}
	return t.n.Connect(ctx)
}

// tagsEveryNode reports whether every node's keys carry hash tags: the
// client is built WithHashTags, or every node is a Redis Cluster
// (Handle.HashTags).
func (c *Client) tagsEveryNode() bool { return c.opts.hashTags || c.clustersOnly() }

// clustersOnly reports whether every node is a Redis Cluster.
func (c *Client) clustersOnly() bool {
	for _, n := range c.nodes {
		if !isCluster(n) {
			return false
		}
	}
	return true
}

// sameLayout refuses a handle whose keys this client would name otherwise
// on one of its nodes. On a cluster node every client tags every key, so
// only plain masters can differ, and only when both the handle's writer
// and this client have one: a handle tagged on every node (HashTags) on a
// plain master of a client without WithHashTags, or one tagged only on
// cluster nodes on a plain master of a client built WithHashTags. A
// handle of a client over cluster nodes only (ClustersOnly) has no key
// on a plain master, and a client over cluster nodes only has no plain
// master: either takes any handle. (The handle does not say which plain
// masters its writer had, so two lists with different plain masters and
// layouts are refused, though they share none.)
func (c *Client) sameLayout(h Handle) error {
	if h.HashTags == c.opts.hashTags || h.ClustersOnly || c.clustersOnly() {
		return nil
	}
	if h.HashTags {
		return invalidf("handle: its keys carry hash tags on every node (written by a client built WithHashTags, or by a version before the per-node key layout over nodes of which one is a Redis Cluster, or by an earlier version over Redis Cluster nodes only), and this client tags only the keys on its Redis Cluster nodes, so it would look for the lock under other keys on its plain masters: build it WithHashTags to use this handle (dlm: --hash-tags)")
	}
	return invalidf("handle: its keys carry hash tags only on Redis Cluster nodes, and this client is built WithHashTags, so it would look for the lock under other keys on its plain masters: build it without WithHashTags to use this handle (dlm: without --hash-tags)")
}
