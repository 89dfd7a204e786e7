// Package torture is dlm's fault-injecting runner: it runs Redlock clients
// against real redis-server processes, injects real faults (crashes with and
// without persistence and the delayed restart of R16.3, SIGSTOP pauses, slow
// and partitioned links through a toxiproxy TCP proxy per node and client
// group, clock jumps under libfaketime, client pauses past the ttl, a lying
// node that acknowledges SETs it never performs; on nodes that are Redis
// Clusters, masters killed, paused, failed over by hand, cut from their
// cluster through a redisproc.Gate on their bus and data ports while
// clients still reach them, and slots migrated), records a checker.History,
// and judges it with the pure checks of package dlm/checker (Analyze).
//
// A run is data: a Config with DefaultConfig and Validate, printed as the
// flags that replay it (Config.String). Config.Expect states what each
// configuration promises under its scenario's faults; a Report says whether
// the run matched it, or that the history cannot decide (Inconclusive).
// The fault kinds of random mode are one table (faults.go).
//
// libfaketime and Debian's redis-server: the server links jemalloc, which
// deadlocks libfaketime's initialisation (libfaketime issue #130); the
// runner preloads libc after libfaketime so that malloc resolves to glibc's,
// and the clock-jump scenario works with the stock packages.
package torture
