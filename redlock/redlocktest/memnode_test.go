package redlocktest_test

import (
	"testing"

	"dlm/redlock/redlocktest"
)

// The conformance suite of the redis adapters, over MemNode: the same case
// bodies, the store read through MemNode's Inspector.
func TestMemNodeConformance(t *testing.T) {
	redlocktest.RunConformance(t, redlocktest.MemBackend())
}
