// Package gotoolchain holds no code: its tests check the Go toolchain
// that the test suite relies on, so that a toolchain defect fails one
// test that names it instead of crashing an unrelated package now and
// then. See scripts/test.sh for the toolchain the suite runs on.
package gotoolchain
