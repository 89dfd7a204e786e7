// Package goredis adapts go-redis v9 clients to redlock.Node, and dials
// Redlock clients from node URLs.
//
// Acquire is SET key value NX PX ttl (R3); Release, Extend, the announced
// release and the hand-over are the Lua scripts of redlock/scripts (R5,
// R17, R14), embedded in the binary.
//
// A Node gathers the requests of concurrent lock operations into batches
// (redlock/internal/batch, shared with redlock/rueidis) and submits each to
// the client's AsyncAutoPipeline in its ordered full-duplex form: one
// connection per node, a writer that streams the commands and a reader that
// completes them in order, so the node executes the requests in the order
// they were started (adapter.AsyncNode). A script goes by EVALSHA only as
// the last request of its batch on its key, else by EVAL, so that its
// retry after a NOSCRIPT answer (a restart, SCRIPT FLUSH), sent before the
// next batch, moves it behind other keys' requests only.
//
// Deadlines are the node's, not go-redis's. A batch still unanswered at the
// latest deadline of its requests is answered with
// context.DeadlineExceeded; its commands stay on the connection and their
// replies are read and dropped, so a slow or paused node keeps its
// connection and does not dial again under the requests behind (go-redis
// closes a connection whose read timed out). Only a node silent for 30 s
// (the client's read and write timeouts) loses its connection.
//
// A client you configure yourself should set MaxRetries -1, so that go-redis
// does not retry a command whose reply was lost (the redlock client retries
// whole attempts instead), leave its AsyncAutoPipeline to the node (or make
// it ordered and full-duplex; otherwise the node sends one pipeline per
// batch, and a passing deadline closes its connection), and set
// ContextTimeoutEnabled for the fenced operations, which go as plain
// commands. NewClient does all this.
//
// go-redis prints some failures (a failed dial: "failed to dial after 1
// attempts") through a process-wide logger (redis.SetLogger). The clients
// that NewClient builds dial through a dialer that hands a failed dial's
// error to the request instead, so nothing reaches a user's stderr; the
// adapter does not touch the process-wide logger.
package goredis
