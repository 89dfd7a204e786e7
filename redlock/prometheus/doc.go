// Package prometheus exports a redlock client's activity as Prometheus
// metrics, through client_golang: New returns a redlock.Observer to pass to
// redlock.WithObserver (or an adapter's Dial).
//
// The metrics, under the namespace "dlm" and subsystem "redlock" by
// default:
//
//	acquire_attempts_total{outcome}              attempts by outcome (acquired, contended, no_quorum, too_late, fence_failed, canceled)
//	acquire_attempt_duration_seconds{outcome}    histogram of attempt durations, T1 to the decision (R8)
//	node_request_duration_seconds{node,op}       histogram of each node's answer time, by operation (acquire, fence, extend, release)
//	node_errors_total{node,op,kind}              node errors (kind "error") and timeouts (kind "timeout")
//	held_locks                                   locks granted and not yet ended (unlocked, lost, expired, closed)
//	handovers_total                              locks passed by Unlock to a waiting Lock call of the same client (not attempts)
//	extensions_total{mode,result}                extensions (mode auto or manual; result ok or failed)
//	releases_total{result}                       Unlock calls (result released, not_held when no quorum deleted the key, or handed)
//	losses_total{reason}                         locks lost while held (reason lost, expired, extension_bound, closed)
//
// Resource names are never labels: they are unbounded. A lock without
// auto-extension whose Done is never watched leaves held_locks only at its
// Unlock.
package prometheus
