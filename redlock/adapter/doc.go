// Package adapter holds what only the writers of node adapters need: the
// interface a Redis client must offer to serve as a Redlock node (Node), and
// the optional capabilities that the lock client discovers by type
// assertion. Users of locks need none of it: they build nodes with an
// adapter package (redlock/goredis, redlock/rueidis) and pass them to
// redlock.New, where Node is also known as redlock.Node.
//
// Every method speaks Redlock's level of meaning (acquire, release, extend a
// key with a value and a ttl), never raw Redis commands, so an in-memory
// node (redlock/redlocktest) implements the same interfaces without
// emulating EVAL. The rule numbers (R3, R5, ...) refer to docs/spec/redlock.md.
//
// # What an adapter implements
//
// Node, with its three methods, is all a client needs for exclusive locks.
// Each optional capability is one interface, and the client works without
// it, doing without what it brings; thirteen in five groups, plus two of
// the standard library:
//
//   - Speed: AsyncNode (Start: requests that start without a goroutine per
//     node, so the adapter can gather many lock operations into one round
//     trip) and BatchNode (StartAll: several requests sent together, so a
//     release and the next waiter's acquisition share a round trip).
//   - Waiting: HandoffNode (releases announced to subscribed waiters, who
//     retry at once instead of sleeping out their delay) and TransferNode
//     (the key handed from one value to another in one step, never free in
//     between, for a waiter of the same client).
//   - Fencing: FencingNode (tokens as a quorum max-register: what
//     WithFencing needs) and FenceFloorNode (the floor key that tells a node
//     that lost its fence values, so that tokens never go down after it).
//   - Other locks: MultiNode (a set of keys as one lock, fenced or not:
//     LockAll), RWNode (readers and writers: RLock, WLock) and RecordNode
//     (a public record bound to the holder's value: elections).
//   - The node itself: ClusterNode (a Redis Cluster: hash-tagged keys, and
//     its masters' replicas, which New checks), FactsNode (what its servers
//     tell about themselves on connecting: run id, advertised max ttl,
//     persistence, checked on every lock without a request), InspectNode
//     (what operators see and manage: status, force release, owner notes)
//     and SharedNode (one Node value given to several clients, closed by
//     the last Client.Close).
//   - The standard library's fmt.Stringer (the node's name in errors and
//     reports) and io.Closer (closed by Client.Close).
//
// They are apart because a node can have one without another: the
// in-memory node has no floor of its own (MemNode.WithFloor adds it),
// test nodes announce releases without a transfer, a node that is no
// cluster still tells its facts. docs/design.md argues each.
//
// An implementation states each capability it has with a compile-time check:
//
//	var _ adapter.BatchNode = (*Node)(nil)
package adapter
