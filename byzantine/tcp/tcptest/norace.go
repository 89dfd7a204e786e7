//go:build !race

package tcptest

// RaceEnabled is true under the race detector, which slows the generals'
// work several times: scenarios with heavy rounds get longer rounds.
const RaceEnabled = false
