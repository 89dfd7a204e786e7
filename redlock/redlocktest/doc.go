// Package redlocktest is the test kit of redlock and its adapters.
//
// Real servers: Start and StartServer launch redis-server processes for
// tests, N independent masters on free loopback ports, each in its own
// temporary directory, with per-node faults (kill, clean stop, restart,
// freeze, thaw) and key inspection. Everything is cleaned up with
// t.Cleanup, even when a test fails. When redis-server is not on PATH, they
// skip the test with a loud message, unless the CI or DLM_REQUIRE_REDIS
// environment variable is set: then the test fails, so that a CI run can
// never pass by skipping.
//
// In-memory nodes: MemNode is a node with every capability of the real
// adapters, a clock of its own and faults switched at run time (down, slow,
// replies dropped, frozen, forgetful, fast or jumping clock, lying), for
// tests of the core that run in milliseconds under testing/synctest.
//
// Shared suites: RunConformance runs the same node conformance cases over
// any Backend (RunNodeConformance: an adapter on redis-server; MemBackend:
// a MemNode), reading the store through an Inspector; BenchLockUnlock is
// the shared benchmark body.
package redlocktest
