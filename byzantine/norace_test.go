//go:build !race

package byzantine_test

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
