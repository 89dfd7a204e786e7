// Package rueidis adapts rueidis clients to redlock.Node, and dials Redlock
// clients from node URLs.
//
// rueidis pipelines automatically: the commands that concurrent callers send
// to one node share a few connections and go out in shared writes, so many
// lock operations ride on each round trip (R15's multiplexing). Under
// concurrency this is several times faster than a connection pool; see
// docs/benchmarks.md for measured figures and the command to rerun them.
//
// Acquire is SET key value NX PX ttl (R3). Release and Extend are the Lua
// scripts release.lua (R5) and extend.lua (R17) of redlock/scripts, embedded in
// the binary and
// run by EVALSHA with the SHA1 computed once per node, falling back to EVAL
// when a node answers NOSCRIPT (after a restart, say).
//
// Node also implements redlock.HandoffNode: ReleaseAnnounce runs
// release_publish.lua, which deletes the key and publishes the released
// value on ChannelPrefix+key in one atomic step, and WatchReleases opens one
// subscription connection per node, on which each waited-for key is one
// SUBSCRIBE. A redlock client over these nodes hands a lock off to the next
// waiter without polling (R10, R14).
//
// Node implements redlock.FencingNode too, with acquire_fenced.lua and
// raise_fence.lua (R18), so a client built WithFencing accepts it.
//
// A client you build yourself should set DisableRetry, so that rueidis does
// not resend a command whose reply was lost (the redlock client retries
// whole attempts instead), and DisableCache. NewClient and Dial do both.
package rueidis
