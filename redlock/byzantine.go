package redlock

// WithByzantineNodes makes the client tolerate up to f nodes that lie:
// answer OK to a SET they did not perform, confirm an extension or a fence
// they did not apply, report fence values they do not hold. The quorum
// becomes ceil((N+f+1)/2), so that two quorums share at least f+1 nodes and
// so at least one honest node (the B3 bound of the agreement spec: New
// refuses N < 3f+1, where f silent or lying nodes would leave fewer honest
// nodes than a quorum). With WithFencing the quorum is ceil((N+2f+1)/2) and
// N >= 4f+1 is required: a fencing token takes the (f+1)-th largest fence
// value of the quorum (so a liar cannot inflate it), which is safe only if
// every two quorums share f+1 honest nodes. Default 0: every node is
// trusted, and the quorum is the majority N/2+1 of R8.3.
//
// What the mode does not cover: more than f liars; a liar that colludes with
// a client; lying clients; clocks (a node whose clock runs fast is not a
// liar in this sense, see R9). See the package documentation.
func WithByzantineNodes(f int) Option {
	return clientOption(func(o *clientOptions) { o.byzantine = f })
}

// quorumFor is the number of nodes an acquisition needs among n nodes with
// the client's settings, or an error naming both numbers when n is too
// small for the Byzantine bound.
func quorumFor(n int, o clientOptions) (int, error) {
	f := o.byzantine
	switch {
	case f < 0:
		return 0, invalidf("byzantine nodes must be 0 or more, got %d", f)
	case f == 0:
		return majority(n), nil
	case o.fencing:
		if n < 4*f+1 {
			return 0, invalidf("byzantine mode with fencing and f=%d needs at least 4f+1 = %d nodes, got %d: fencing tokens need every two quorums to share f+1 honest nodes", f, 4*f+1, n)
		}
		return ceilHalf(n + 2*f + 1), nil
	case n < 3*f+1:
		return 0, invalidf("byzantine mode with f=%d needs at least 3f+1 = %d nodes, got %d (B3): with fewer, f silent nodes leave the honest ones short of a quorum that excludes the liars", f, 3*f+1, n)
	}
	return ceilHalf(n + f + 1), nil
}

// ceilHalf is ceil(x/2) for x >= 0.
func ceilHalf(x int) int { return (x + 1) / 2 }
