package byzantine

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Order is the value a commander sends: Attack, Retreat or any other short
// string, so the algorithms serve more than the parable (B1).
type Order string

// The two orders of the parable. Retreat is also the default order used when
// a message is missing or no majority exists (B5, B6, B8).
const (
	Attack  Order = "attack"
	Retreat Order = "retreat"
)

// MaxOrderLen is the longest order, in bytes, a general accepts; a longer one
// is rejected as oversized.
const MaxOrderLen = 64

// valid reports whether o is a well-formed order: non-empty and short.
func (o Order) valid() bool { return o != "" && len(o) <= MaxOrderLen }

// String returns o as it is when it shows unambiguously, and quoted as a
// Go string literal otherwise: when it holds a character that is not
// printable (a line break, a carriage return, a terminal's escape
// sequence, invalid UTF-8) or begins with a double quote. An order may be
// any bytes, and over TCP it comes from another general: printed raw, a
// traitor's value could erase or forge the lines of a loyal general's
// output. The %s and %v verbs of the fmt package use String; the
// order's bytes (string(o), JSON) are unchanged.
func (o Order) String() string {
	if strings.HasPrefix(string(o), `"`) {
		return strconv.Quote(string(o))
	}
	for _, r := range string(o) {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(string(o))
		}
	}
	return string(o)
}

// Flip returns the opposite order: Retreat for Attack and Attack for every
// other order. Traitors use it to lie.
func Flip(o Order) Order {
	if o == Attack {
		return Retreat
	}
	return Attack
}

// MajorityVariant selects one of the two majority functions of B5.
type MajorityVariant string

const (
	// Vote is B5 variant 1: the value held by a strict majority, otherwise
	// the default Retreat.
	Vote MajorityVariant = "vote"
	// Median is B5 variant 2: the median of the values, for ordered values.
	Median MajorityVariant = "median"
)

// Less orders two orders for the Median variant: numerically when both parse
// as numbers, otherwise lexicographically. It is a strict weak order, the same
// at every general.
func Less(a, b Order) bool {
	fa, ea := strconv.ParseFloat(string(a), 64)
	fb, eb := strconv.ParseFloat(string(b), 64)
	switch {
	case ea == nil && eb == nil:
		if fa != fb {
			return fa < fb
		}
	case ea == nil:
		return true // numbers before words
	case eb == nil:
		return false
	}
	return a < b
}

func compareOrders(a, b Order) int {
	switch {
	case Less(a, b):
		return -1
	case Less(b, a):
		return 1
	}
	return strings.Compare(string(a), string(b))
}

// Majority is majority(v1, ..., vk) of B5. With Vote it returns the value
// held by more than half of vs, or Retreat when there is none; with Median it
// returns the median of vs (the lower median for an even count). An empty vs
// gives Retreat. Majority sorts vs in place for Median.
func Majority(variant MajorityVariant, vs []Order) Order {
	if len(vs) == 0 {
		return Retreat
	}
	if variant == Median {
		slices.SortFunc(vs, compareOrders)
		return vs[(len(vs)-1)/2]
	}
	// Boyer-Moore vote, then a confirming count: no allocation.
	var cand Order
	count := 0
	for _, v := range vs {
		switch {
		case count == 0:
			cand, count = v, 1
		case v == cand:
			count++
		default:
			count--
		}
	}
	count = 0
	for _, v := range vs {
		if v == cand {
			count++
		}
	}
	if 2*count > len(vs) {
		return cand
	}
	return Retreat
}

// Choice is choice(V) of B8 over a set of orders: the single element when V
// holds one, and Retreat when V is empty or holds two or more distinct
// orders, with either majority variant. B8 allows any deterministic function
// of a larger set; a constant one is what lets an SM general keep and relay
// at most two orders (MaxValues): loyal generals may end with different
// pairs, but each pair gives Retreat. (The median of the set, which an
// earlier version used with Median, would differ between pairs.) The
// variant is kept for the callers' symmetry with Majority. Choice does not
// modify vs.
func Choice(_ MajorityVariant, vs []Order) Order {
	set := slices.Clone(vs)
	slices.SortFunc(set, compareOrders)
	set = slices.Compact(set)
	if len(set) == 1 {
		return set[0]
	}
	return Retreat
}
