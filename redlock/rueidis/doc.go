// Package rueidis adapts rueidis clients to redlock.Node, and dials Redlock
// clients from node URLs.
//
// A Node may serve several redlock clients at once (adapter.SharedNode):
// an application that elects a leader needs a client WithFencing beside
// its plain one, and may give both the same nodes. Each client's Close
// gives its share back, and the last one closes the node (its own
// connections, and the client Dial or DialNode made).
//
// Each Node batches (R15's multiplexing): every request to the node, from
// any goroutine and any lock operation, joins the node's queue, and one
// worker at a time sends the whole queue with one DoMulti, one write and
// one round trip, over one connection. The batches are self-clocking: the
// busier the node, the more requests each carries, with no flush delay; a
// lone request leaves at once. Node implements adapter.AsyncNode and
// adapter.BatchNode, so a redlock client over these nodes fans out without
// a goroutine per node, and its hand-off sends a release and the next
// waiter's acquisition to each node in one batch. A node executes its
// requests in the order they were queued, which AsyncNode requires: a
// release never overtakes the acquisition it undoes (R8.5). See
// docs/benchmarks.md for measured figures and the command to rerun them.
//
// Acquire is SET key value NX PX ttl (R3). Release and Extend are the Lua
// scripts release.lua (R5) and extend.lua (R17) of redlock/scripts, embedded
// in the binary and run by EVALSHA with the SHA1 computed once. Until a node
// has run a script, batches send it by EVAL instead, so that a NOSCRIPT
// cannot let the commands behind it in the batch run first; a node that
// answers NOSCRIPT later (after a restart, say) gets the script by EVAL
// again.
//
// Node also implements adapter.HandoffNode: ReleaseAnnounce runs
// release_publish.lua, which deletes the key and publishes the released
// value on ChannelPrefix+key in one atomic step (the script builds the
// channel name from the prefix), and WatchReleases opens one
// subscription connection per node, on which each waited-for key is one
// SUBSCRIBE. A redlock client over these nodes hands a lock off to the next
// waiter without polling (R10, R14).
//
// Node implements adapter.FencingNode too, with acquire_fenced.lua and
// raise_fence.lua (R18), so a client built WithFencing accepts it. The
// fenced scripts, like those of read-write locks and records, join the
// node's queue and leave in its batches, so that every request of a lock
// reaches the node in the order it was made: a release of one attempt
// never runs after the next attempt's acquisition of the same value
// (WithValue, election campaigns). A client from NewClient (and so Dial)
// also fences its connections: each new one closes on the node the ones
// rueidis gave up in the same run of the node (CLIENT ID and the run id
// of INFO, then CLIENT KILL ID) before it carries a request, so that a
// request left behind on one of them never runs after the new one's
// (fence.go). With none to close (a new client's connections), the
// fence's commands go in the round trip of rueidis' own handshake, so a
// new connection answers its first request after two round trips.
//
// A client you build yourself for NewNode should set DisableRetry, so that
// rueidis does not resend a command whose reply was lost (the redlock client
// retries whole attempts instead), DisableCache, and one connection
// (PipelineMultiplex -1), so that the node keeps the order of the requests.
// NewClient and Dial do all three.
//
// A node may be a Redis Cluster: NewClient, Dial and DialNode of a URL with
// cluster=true build a rueidis cluster client (NewClusterClient), seeded
// with the URL's addresses. Such a node is an adapter.ClusterNode, so that
// the redlock client builds hash-tagged keys; each batch is still one
// DoMulti, which rueidis sends as one pipeline per master, and every new
// connection to a master is fenced as a single node's is; a set whose keys
// span hash slots is stepped once per slot and joined all or nothing (see
// redlock/internal/slots); releases are announced by SPUBLISH and heard by
// one SSUBSCRIBE per watched key on the shard of the key. As a single node
// does, a cluster node of Dial or DialNode needs no seed to answer when it
// is dialled: it builds its cluster client in the background (rueidis must
// reach a seed to learn the slots), fails its requests as a node that is
// down until the cluster answers, and works from then on; NewClient and
// NewClusterClient fail when no seed answers. See the package documentation of redlock
// ("Nodes that are Redis Clusters") for what keeps the guarantees.
package rueidis
