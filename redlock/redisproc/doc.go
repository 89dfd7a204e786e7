// Package redisproc starts and controls real redis-server processes on
// loopback ports: the test harness (redlock/redlocktest), the safety checker,
// the demo and the benchmarks all use it. Each process gets its own data
// directory, runs without persistence unless asked, and can be crashed
// (SIGKILL), stopped cleanly, restarted on the same port (optionally after a
// delay, R16.3), frozen (SIGSTOP) and thawed (SIGCONT).
package redisproc
