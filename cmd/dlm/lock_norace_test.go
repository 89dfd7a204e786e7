//go:build !race

package main

// raceEnabled is true when the tests run with -race (see lock_race_test.go).
const raceEnabled = false
