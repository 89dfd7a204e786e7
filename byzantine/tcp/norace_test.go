//go:build !race

package tcp

// raceEnabled is true under the race detector, which slows the generals'
// work several times: tests with heavy rounds give them longer.
const raceEnabled = false
