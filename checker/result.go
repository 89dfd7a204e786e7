package checker

import "fmt"

// Verdict is the three-way outcome of a check.
type Verdict int

// The verdicts of a check.
const (
	// OK: the history satisfies the property.
	OK Verdict = iota
	// Violated: the history breaks the property; Result.Counterexample says
	// how.
	Violated
	// Unknown: the history cannot decide (outcomes of operations are unknown,
	// or the check ran out of time).
	Unknown
)

// String returns "ok", "violated" or "unknown".
func (v Verdict) String() string {
	switch v {
	case OK:
		return "ok"
	case Violated:
		return "violated"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// MarshalText encodes the verdict as its name.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText decodes a verdict's name.
func (v *Verdict) UnmarshalText(b []byte) error {
	for _, c := range []Verdict{OK, Violated, Unknown} {
		if c.String() == string(b) {
			*v = c
			return nil
		}
	}
	return fmt.Errorf("checker: unknown verdict %q (want ok, violated or unknown)", b)
}

// Result is the outcome of one check over one history.
type Result struct {
	// Check names the property: "mutex", "fencing", "linearizable",
	// "liveness".
	Check string `json:"check"`
	// Verdict is the outcome.
	Verdict Verdict `json:"verdict"`
	// Violations counts the distinct violations found (0 unless Violated).
	Violations int `json:"violations"`
	// Counterexample describes the first violation in words, or why the
	// verdict is Unknown; empty when OK.
	Counterexample string `json:"counterexample,omitempty"`
	// Ops are the ids of the operations the counterexample involves.
	Ops []int `json:"ops,omitempty"`
}

// String summarises the result on one line.
func (r Result) String() string {
	if r.Counterexample == "" {
		return r.Check + ": " + r.Verdict.String()
	}
	return r.Check + ": " + r.Verdict.String() + ": " + r.Counterexample
}
