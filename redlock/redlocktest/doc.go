// Package redlocktest starts real redis-server processes for tests: N
// independent masters on free loopback ports, each in its own temporary
// directory, with per-node faults (kill, clean stop, restart, freeze, thaw)
// and key inspection. Everything is cleaned up with t.Cleanup, even when a
// test fails.
//
// When redis-server is not on PATH, Start skips the test with a loud message,
// unless the CI or DLM_REQUIRE_REDIS environment variable is set: then the
// test fails, so that a CI run can never pass by skipping.
package redlocktest
