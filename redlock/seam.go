package redlock

import "context"

// testSeam is what a test may carry in the context of a call (see
// export_test.go) to run code at points of an acquisition that no node
// sees: between the two phases of a fenced acquisition (phase), and when a
// Lock call is about to look for the waiters ahead of it in its client
// (turn). No production call carries one, and no production type holds
// one.
type testSeam struct {
	phase func(resource string)
	turn  func(resource string)
}

// seamKey is the context key of a testSeam.
type seamKey struct{}

// seamOf returns the testSeam that ctx carries, or nil.
func seamOf(ctx context.Context) *testSeam {
	s, _ := ctx.Value(seamKey{}).(*testSeam)
	return s
}
