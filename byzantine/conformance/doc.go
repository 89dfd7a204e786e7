// Package conformance is the test suite every transport of package
// byzantine must pass: the same bodies run over the in-memory transport and
// over TCP between processes, as t.Run subtests (house style rule 13), and
// the same benchmark bodies too.
//
// A transport provides a Runner, a function with the signature of
// byzantine.Run; Run(t, runner) then checks B6's message counts, IC1 and IC2
// (B1) under traitorous lieutenants and commanders, late and silent
// traitors, SM's detection of equivocation (B9) and forgery (A4), and that
// the unsafe OM(1) with three generals breaks IC2 (B3).
package conformance
