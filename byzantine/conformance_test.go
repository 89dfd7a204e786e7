package byzantine_test

import (
	"testing"

	"dlm/byzantine"
	"dlm/byzantine/conformance"
)

// TestConformanceMemory runs the transport conformance suite over the
// in-memory transport (style rule 13); package tcp runs it over TCP.
func TestConformanceMemory(t *testing.T) {
	conformance.Run(t, byzantine.Run)
}
