// Package goredis adapts go-redis v9 clients to redlock.Node, and dials
// Redlock clients from node URLs.
//
// A Node may serve several redlock clients at once (adapter.SharedNode):
// an application that elects a leader needs a client WithFencing beside
// its plain one, and may give both the same nodes. Each client's Close
// gives its share back, and the last one closes the node (its own
// connections, and the client Dial or DialNode made).
//
// Acquire is SET key value NX PX ttl (R3); Release and Extend are the Lua
// scripts release.lua (R5) and extend.lua (R17) of redlock/scripts, embedded
// in the binary and run by EVALSHA, falling back to EVAL when a node answers
// NOSCRIPT (after a restart, say).
//
// # Batches on a connection of the node's own
//
// Over a *redis.Client, a Node does not send its lock requests through the
// client's connection pool. It gathers the requests of every concurrent
// caller into batches (redlock/internal/batch, as redlock/rueidis does) and
// writes each batch as one pipeline on a single connection it owns, whose
// replies a reader goroutine reads in order (R15): one write and one round
// trip per node for any number of concurrent lock operations, in the order
// they were started, so a release never overtakes the acquisition it
// undoes (R8.5). The connection is dialled with the client's own settings,
// taken from client.Options(): its Dialer (and so its TLSConfig and
// DialTimeout, or the dialer you set), Username and Password or
// CredentialsProvider(Context), DB and ClientName; it speaks RESP2. A batch
// whose deadline passes is answered as timed out at once, and its replies
// are still read when they come and dropped: the connection is kept, so a
// slow or paused node does not cost a new connection and handshake per
// timeout (go-redis closes a pooled connection whose read timed out). The
// connection is closed only when a read or a write on it fails, and the
// next batch dials again. Every request belongs to the connection it was
// written on: only that connection's replies answer it, and it fails with
// that connection. The handshake of each connection asks its CLIENT ID
// and the node's run id, and closes on the node the connections given up
// before it in the same run (CLIENT KILL ID) before it carries a request,
// so that a request left behind on one of them never runs after the
// requests of the new one (a user whose ACL refuses CLIENT or INFO goes
// without this). A client with an OnConnect hook or a
// StreamingCredentialsProvider, and any other UniversalClient (Ring,
// ClusterClient, failover), is used as it is, one pooled request per call.
// Fenced acquisitions and fence raises (FencingNode, MultiNode),
// read-write locks (RWNode) and records (RecordNode) go through the same
// queue and connection, one script each, so that every request of a lock
// reaches the node in the order it was made: a release of one attempt
// never runs after the next attempt's acquisition of the same value
// (WithValue, election campaigns).
//
// # Hand-off
//
// A Node is an adapter.HandoffNode (R10, R14), like a redlock/rueidis node
// and on the same channels: a release that Unlock announces runs
// release_publish.lua of redlock/scripts, which deletes the key and
// publishes the released value on ChannelPrefix+key in one atomic step (in
// the node's batches, or through the client for a Node that does not
// batch), and the waiters of a redlock client hear the releases through one
// go-redis PubSub per node, on a connection of its own, where every watched
// key is one SUBSCRIBE. Clients over go-redis and over rueidis sharing the
// nodes therefore wake each other's waiters. Watch and Unwatch return once
// the node confirmed them. The subscription pings a connection that stayed
// silent for 10 s and lets go-redis drop it when no reply comes within 5 s;
// go-redis dials again after a dropped connection and subscribes to every
// watched key again, and the releases announced in between are lost: the
// waiters' timed random retry (R10) covers them. While the node is down the
// subscription dials again after a pause that doubles up to 1 s. Close of
// the redlock client ends the subscriptions and their goroutines.
//
// Every *redis.Client hears releases, also one with an OnConnect hook or a
// StreamingCredentialsProvider (a PubSub connection goes through go-redis'
// own connection setup, which runs them) and a failover client. Another
// UniversalClient does not: a Ring routes the channel to another shard than
// the key whose release it announces, and a ClusterClient is not an
// independent master (R2). WatchReleases then returns an error wrapping
// errors.ErrUnsupported, and the client's waiters for other clients'
// releases fall back to the timed retry (R10); Unlock still hands the lock
// over to a waiter of its own client directly, which needs no
// subscription.
//
// A client you configure yourself should set ContextTimeoutEnabled, so that
// the redlock client's per-node timeout (R8.2) bounds every request that
// goes through go-redis, and MaxRetries -1, so that go-redis does not retry
// a command whose reply was lost (the redlock client retries whole attempts
// instead). Dial does both.
//
// # Logging
//
// The adapter never writes to stderr and never changes go-redis' logger,
// which is process-wide (redis.SetLogger): a library must not touch a
// global its user did not ask it to. The batched requests do not go through
// go-redis at all, so a node that is down produces errors in the lock
// results, not lines from go-redis' pool ("failed to dial after 1
// attempts"). The release subscriptions dial through go-redis' PubSub
// connections, which do not log a failed dial, and are read by the
// adapter's own loop, not by PubSub.Channel (which logs a message it
// could not deliver). The requests that do go through the client (fenced
// acquisitions, read-write locks, a client that is not pipelined) may still
// make go-redis log; a program that does not want those lines calls
// redis.SetLogger itself, as cmd/dlm does. A cluster node's requests go
// over its own connections too; go-redis only reads the cluster's slot
// map for it, and may log when a master it asks is down.
//
// # Nodes that are Redis Clusters
//
// A node may be a Redis Cluster: NewNode of a *redis.ClusterClient, or
// Dial and DialNode of a URL with cluster=true (NewClusterClient). Such a
// node is an adapter.ClusterNode, so that the redlock client builds
// hash-tagged keys; all its requests (fenced acquisitions, read-write
// locks and records too) go through its queue, and each batch to the
// masters of the requests' slots as one pipeline per master, over one
// connection of the node's own per master, dialled with go-redis' settings
// for it and fenced as a single node's connection is (a new one closes on
// its master the connections given up before it carries a request);
// go-redis only keeps the slot map. go-redis' cluster pipelines are not
// used: after a failed read they send commands again that the master had
// already run (up to MaxRedirects times), and answer them wrongly. A
// ClusterClient with an OnConnect hook or a StreamingCredentialsProvider
// keeps them, without this order or the fence. A request that a master
// answers MOVED or ASK (it ran nothing) goes to the master named, up to
// three hops. The node routes by the slot map that the cluster's servers
// agree on: CLUSTER NODES of its seeds and of every master and replica it
// knows, asked at once over clients of its own and merged by config
// epoch, without waiting for a server that does not answer. It reads
// that map at its first request, again after a failed request or a
// redirection, and every 2 s while it is used (and has go-redis read its
// own then too), so that it follows a failover within a second, a hung
// master's too, and knows the replicas that one may promote. Close of a
// node over a ClusterClient of the caller's own closes what the node made
// (its connections to the masters, its clients of the servers) and waits
// for nothing of the caller's client: a request that client makes on its
// own (its reading of its slot map, on a hung master) ends at its
// deadline, or at its owner's Close. A set whose
// keys span hash slots is stepped once per slot and joined all or nothing
// (see redlock/internal/slots for the argument); releases are announced by
// SPUBLISH and heard by SSUBSCRIBE, on the shard of the key only. See the
// package documentation of redlock ("Nodes that are Redis Clusters") for
// what keeps the guarantees on a cluster node.
package goredis
