package redlocktest_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"dlm/checker"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// explainMaxLines bounds the explanation of a violation in the test's
// output.
const explainMaxLines = 300

// explainViolation says what the nodes did around a violation of the
// model's history, so that a violation found once explains itself: the
// operations of the grants involved, the faults of their time, and each
// node's requests on the resource's key from the nodes' traces, with the
// node's clock against the reference and when the key's life ends there.
// Values are named v1, v2, ... in order of appearance, never shown, each
// with the granted acquisitions in flight when a node first took it.
func explainViolation(h *checker.History, start time.Time, traces [][]redlocktest.TraceEntry, res checker.Result) string {
	byID := map[int]checker.Op{}
	for _, o := range h.Ops {
		byID[o.ID] = o
	}
	locks := map[string]bool{}
	resource := ""
	for _, id := range res.Ops {
		if o, ok := byID[id]; ok {
			locks[o.Lock] = true
			resource = o.Resource
		}
	}
	if resource == "" {
		return "  (no operation of the counterexample in the history: nothing to explain)"
	}
	from, to := int64(math.MaxInt64), int64(0)
	var involved []checker.Op
	for _, o := range h.Ops {
		if !locks[o.Lock] || o.Resource != resource {
			continue
		}
		involved = append(involved, o)
		from, to = min(from, o.Start), max(to, o.End, o.Until)
	}
	ms := func(t int64) string { return fmt.Sprintf("%.3fms", float64(t)/1e6) }
	var b strings.Builder
	lines := 0
	say := func(format string, args ...any) {
		lines++
		if lines <= explainMaxLines {
			fmt.Fprintf(&b, format+"\n", args...)
		}
	}
	say("  explanation, from %s to %s:", ms(from), ms(to))
	say("  the operations of the grants involved on %q:", resource)
	for _, o := range involved {
		line := fmt.Sprintf("    %s-%s %s %s %s ok=%v", ms(o.Start), ms(o.End), o.Client, o.Kind, o.Lock, o.OK)
		if o.Until > 0 {
			line += " until=" + ms(o.Until)
		}
		if o.Err != "" {
			line += " err=" + strings.ReplaceAll(o.Err, "\n", "; ")
		}
		say("%s", line)
	}
	say("  faults of that time:")
	for _, f := range h.Faults {
		if f.Start <= to && (f.End < 0 || f.End >= from) {
			say("    %s %s from %s to %s %s", f.Kind, f.Target, ms(f.Start), ms(f.End), f.Note)
		}
	}
	keys := map[string]bool{
		redlock.DefaultKeyPrefix + resource:                       true,
		redlock.HashTaggedKey(redlock.DefaultKeyPrefix, resource): true,
	}
	// Every value seen on the key in the round, named in order.
	names := map[string]string{}
	name := func(v string) string {
		if v == "" {
			return "-"
		}
		if _, ok := names[v]; !ok {
			names[v] = fmt.Sprintf("v%d", len(names)+1)
		}
		return names[v]
	}
	firstSet := map[string]int64{}
	say("  requests on its key that changed it or failed to extend or release, by node (node clock minus reference; life left on the node's clock, and its end on the reference clock at the node's rate):")
	for i, tr := range traces {
		for _, e := range tr {
			at := int64(e.At.Sub(start))
			if !keys[e.Key] || at < from || at > to {
				continue
			}
			if _, ok := firstSet[e.Value]; !ok && e.OK && e.Holds == e.Value {
				firstSet[e.Value] = at
			}
			if !e.OK && !strings.Contains(e.OpName(), "extend") && !strings.Contains(e.OpName(), "release") {
				continue // an acquisition refused: nothing changed
			}
			end := "no end"
			if t := e.End(); !t.IsZero() {
				end = "ends " + ms(int64(t.Sub(start)))
			}
			errText := ""
			if e.Err != nil {
				errText = " err=" + strings.ReplaceAll(e.Err.Error(), "\n", "; ")
			}
			say("    m%d %s %s %s ok=%v%s clock %+v rate %.4f: holds %s for %v, %s",
				i+1, ms(at), e.OpName(), name(e.Value), e.OK, errText, e.Offset, e.Rate, name(e.Holds), e.Life, end)
		}
	}
	say("  the values, by the granted acquisitions in flight when a node first took them:")
	named := make([]string, len(names))
	for v, n := range names {
		i, _ := strconv.Atoi(n[1:])
		named[i-1] = v
	}
	for _, v := range named {
		at, ok := firstSet[v]
		if !ok {
			continue
		}
		var by []string
		for _, o := range h.Ops {
			if o.Kind == checker.Acquire && o.OK && o.Resource == resource && o.Start <= at && at <= o.End {
				by = append(by, o.Lock)
			}
		}
		say("    %s first taken at %s: %s", names[v], ms(at), strings.Join(by, " or "))
	}
	if lines > explainMaxLines {
		fmt.Fprintf(&b, "  (%d more lines left out)\n", lines-explainMaxLines)
	}
	return b.String()
}
