// Package goredis adapts go-redis v9 clients to redlock.Node, and dials
// Redlock clients from node URLs.
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
// next batch dials again. A client with an OnConnect hook or a
// StreamingCredentialsProvider, and any other UniversalClient (Ring,
// ClusterClient, failover), is used as it is, one pooled request per call.
// Fenced acquisitions (FencingNode) and read-write locks (RWNode) always go
// through the client.
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
// attempts"). The requests that do go through the client (fenced
// acquisitions, read-write locks, a client that is not pipelined) may still
// make go-redis log; a program that does not want those lines calls
// redis.SetLogger itself, as cmd/dlm does.
package goredis
