package checker_test

import (
	"fmt"
	"strings"

	"dlm/checker"
)

// A history in which B acquired while A's validity was still running: the
// shape of R16.1, a node of A's majority restarted empty.
const overlapping = `{"nodes": 5, "fenced": false, "faults": [],
 "ops": [
  {"id": 1, "client": "A", "resource": "r", "kind": "acquire", "lock": "A#1", "start": 0, "end": 5000000, "ok": true, "ttl": 1000000000, "until": 988000000},
  {"id": 2, "client": "B", "resource": "r", "kind": "acquire", "lock": "B#1", "start": 300000000, "end": 302000000, "ok": true, "ttl": 1000000000, "until": 1290000000}
 ]}`

// CheckMutex is a pure function over a recorded history.
func ExampleCheckMutex() {
	h, err := checker.DecodeHistory(strings.NewReader(overlapping))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := checker.CheckMutex(h)
	fmt.Println(r.Verdict)
	fmt.Println(r.Counterexample)
	// Output:
	// violated
	// resource "r": B (lock B#1) acquired it at 302.0ms, while A (lock A#1) still held it until 988.0ms (validity end), 686.0ms later
}

// Holds gives the intervals the checks reason about, for reports that draw
// them.
func ExampleHistory_Holds() {
	h, err := checker.DecodeHistory(strings.NewReader(overlapping))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, hd := range h.Holds()["r"] {
		fmt.Printf("%s held by %s from %dms to %dms (%s)\n", hd.Lock, hd.Client, hd.From/1e6, hd.To/1e6, hd.Why)
	}
	fmt.Printf("out of range: %q\n", h.OutOfRange())
	// Output:
	// A#1 held by A from 5ms to 988ms (validity end)
	// B#1 held by B from 302ms to 1290ms (validity end)
	// out of range: ""
}
