// Package goredis adapts go-redis v9 clients to redlock.Node, and dials
// Redlock clients from node URLs.
//
// Acquire is SET key value NX PX ttl (R3); Release, Extend, the announced
// release of the hand-off and the local hand-over are the Lua scripts of
// redlock/scripts (release.lua R5, extend.lua R17, release_publish.lua,
// transfer.lua), embedded in the binary and run by EVALSHA once the node is
// known to have them (by EVAL before, and again after a NOSCRIPT). Each
// node gathers the requests of concurrent callers into batches, one
// pipeline each, sent in order (R15; redlock/internal/batch), and
// implements redlock.AsyncNode, redlock.BatchNode, redlock.HandoffNode
// (one PubSub per node and client) and redlock.TransferNode, as
// redlock/rueidis does. Fenced acquisitions (redlock.FencingNode) run
// their scripts directly, outside the batches.
//
// A client you configure yourself should set ContextTimeoutEnabled, so that
// the redlock client's per-node timeout (R8.2) bounds every request, and
// MaxRetries -1, so that go-redis does not retry a command whose reply was
// lost (the redlock client retries whole attempts instead). Dial does both.
package goredis
