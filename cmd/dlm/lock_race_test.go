//go:build race

package main

// raceEnabled is true when the tests run with -race; TestMain then builds
// the dlm binary with -race too, so the end-to-end runs check dlm itself.
const raceEnabled = true
