// Package goredis adapts go-redis v9 clients to redlock.Node, and dials
// Redlock clients from node URLs.
//
// Acquire is SET key value NX PX ttl (R3); Release and Extend are the Lua
// scripts release.lua (R5) and extend.lua (R17) of redlock/scripts, embedded in
// the binary and
// run by EVALSHA, falling back to EVAL when a node answers NOSCRIPT (after a
// restart, say).
//
// A client you configure yourself should set ContextTimeoutEnabled, so that
// the redlock client's per-node timeout (R8.2) bounds every request, and
// MaxRetries -1, so that go-redis does not retry a command whose reply was
// lost (the redlock client retries whole attempts instead). Dial does both.
package goredis
