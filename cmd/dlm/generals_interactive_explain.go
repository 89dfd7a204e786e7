package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"dlm/byzantine"
)

// icPathHelp says how to read a path of an interactive run's explanation,
// where instance i's commander is general i.
const icPathHelp = "In instance i general i is the commander of its own value. A path such as 2:0:3 names who carried a value, left to right: the instance's commander (general 2) sent it to general 0, who relayed it to general 3, who relayed it to the general reading it. In OM each such value is one input of a vote; in SM the chain v2:2:0:3 carries the signatures of 2, 0 and 3, in that order."

// explainedShown returns the explained generals whose explanations are
// printed: every one asked for, but traitors and crashed generals only
// when named alone (a traitor's vector means nothing, a crashed general
// has none; --explain all shows the loyal survivors).
func explainedShown(cfg byzantine.Config) []byzantine.ID {
	ids := slices.Compact(slices.Sorted(slices.Values(cfg.Explain)))
	if len(ids) == 1 {
		return ids
	}
	return slices.DeleteFunc(ids, func(id byzantine.ID) bool { return cfg.StrategyOf(id) != "" || cfg.CrashRound(id) >= 0 })
}

// generalLabel is "loyal", "traitor (flip)", with ", crashed at round r".
func generalLabel(cfg byzantine.Config, id byzantine.ID) string {
	label := "loyal"
	if s := cfg.StrategyOf(id); s != "" {
		label = "traitor, " + string(s)
	}
	if r := cfg.CrashRound(id); r >= 0 {
		label += fmt.Sprintf(", crashed at round %d", r)
	}
	return label
}

// writeInteractiveExplanations prints, instance by instance, what each
// explained general decided for that commander's entry and why, in the
// generals' own ids.
func writeInteractiveExplanations(w io.Writer, res *byzantine.InteractiveResult) {
	ic := res.Config
	cfg := ic.Config
	shown := explainedShown(cfg)
	ex := make(map[byzantine.ID][]*byzantine.Explanation, len(shown))
	for _, g := range shown {
		ex[g] = res.Explain(g)
	}
	fmt.Fprintln(w, "explanations, instance by instance:")
	fmt.Fprintf(w, "  (%s)\n", icPathHelp)
	for i := range cfg.Generals {
		cmdr := byzantine.ID(i)
		note := ""
		if cfg.StrategyOf(cmdr) != "" {
			note = ": a traitor's entry, which IC2 does not bind; IC1 makes the loyal generals agree on it"
		} else if cfg.CrashRound(cmdr) >= 0 {
			note = ": a crashed general's entry, which IC2 does not bind"
		}
		fmt.Fprintf(w, "instance %d: general %d (%s) commands its value %s%s\n", i, i, generalLabel(cfg, cmdr), ic.Values[i], note)
		for _, g := range shown {
			var e *byzantine.Explanation
			if len(ex[g]) > i {
				e = ex[g][i]
			}
			switch {
			case e == nil:
				fmt.Fprintf(w, "  general %d: no decision to explain (crashed)\n", g)
			case g == cmdr && cfg.StrategyOf(g) == "":
				fmt.Fprintf(w, "  general %d is the commander: its entry is its own value %s\n", g, e.Decision)
			case g == cmdr:
				fmt.Fprintf(w, "  general %d is the commander (a traitor): what it sends is its strategy's\n", g)
			default:
				who := fmt.Sprintf("general %d", g)
				if cfg.StrategyOf(g) != "" {
					who += " (a traitor: what it would decide)"
				}
				fmt.Fprintf(w, "  %s decided %s: %s\n", who, e.Decision, e.Why())
				lines := e.Lines()
				if cfg.Algorithm == byzantine.SM && len(lines) > 0 {
					lines = lines[1:] // V and choice(V) are in the line above
				}
				for _, line := range lines {
					fmt.Fprintf(w, "    %s\n", line)
				}
			}
		}
	}
}

// joinIDs writes ids as "0, 1 and 3".
func joinIDs(ids []byzantine.ID) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, strconv.Itoa(int(id)))
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// vectorSummary states the vector conditions of an interactive run in
// words: whether every loyal general's vector is the same, whether every
// loyal general's entry is its own value, entry by entry where not, and
// the traitors and crashed generals, whose entries IC2 does not bind.
func vectorSummary(res *byzantine.InteractiveResult) []string {
	ic := res.Config
	cfg := ic.Config
	loyal := res.Loyal()
	var out []string
	if len(loyal) == 0 {
		return []string{"no loyal general survived to decide a vector: IC1 and IC2 hold vacuously"}
	}
	if res.IC1() {
		out = append(out, fmt.Sprintf("IC1 holds: the loyal generals %s decided the same vector %v", joinIDs(loyal), res.Vectors[loyal[0]]))
	} else {
		for e := range cfg.Generals {
			var held []string
			same := true
			for _, g := range loyal {
				held = append(held, fmt.Sprintf("general %d holds %s", g, res.Vectors[g][e]))
				same = same && res.Vectors[g][e] == res.Vectors[loyal[0]][e]
			}
			if !same {
				out = append(out, fmt.Sprintf("IC1 VIOLATED at entry %d: %s (instance %d left its loyal generals disagreeing)", e, strings.Join(held, ", "), e))
			}
		}
	}
	var own []string
	for _, g := range loyal {
		own = append(own, fmt.Sprintf("%d = %s", g, ic.Values[g]))
	}
	if res.IC2() {
		out = append(out, fmt.Sprintf("IC2 holds: in every loyal vector the entry of each loyal general is its own value: %s", strings.Join(own, ", ")))
	} else {
		for _, e := range loyal {
			for _, g := range loyal {
				if got := res.Vectors[g][e]; got != ic.Values[e] {
					out = append(out, fmt.Sprintf("IC2 VIOLATED at entry %d: general %d holds %s, want %s, general %d's own value (instance %d: a loyal commander's value was not obeyed)", e, g, got, ic.Values[e], e, e))
				}
			}
		}
	}
	var traitors []string
	for _, t := range cfg.Faulty {
		agreed := "the loyal generals disagree on it (IC1 above)"
		if v := res.Vectors[loyal[0]][t.ID]; slices.IndexFunc(loyal, func(g byzantine.ID) bool { return res.Vectors[g][t.ID] != v }) < 0 {
			agreed = "every loyal general holds " + v.String()
		}
		traitors = append(traitors, fmt.Sprintf("%d (%s, %s)", t.ID, t.Strategy, agreed))
	}
	if len(traitors) == 0 {
		out = append(out, "traitors: none")
	} else {
		out = append(out, "traitors, whose entries IC2 does not bind: "+strings.Join(traitors, "; "))
	}
	for _, c := range cfg.Crashes {
		out = append(out, fmt.Sprintf("general %d crashed at round %d: it decides no vector, and IC2 does not bind its entry", c.ID, c.Round))
	}
	faulty := res.FaultyGenerals()
	bound, rule := 3*cfg.MaxTraitors+1, "3m+1"
	if cfg.Algorithm == byzantine.SM {
		bound, rule = cfg.MaxTraitors+2, "m+2"
	}
	verdict := fmt.Sprintf("at most m = %d, so the conditions are guaranteed", cfg.MaxTraitors)
	switch late := res.OutOfTime(); {
	case len(late) > 0:
		verdict = fmt.Sprintf("but loyal generals %v ran out of time, so the vectors prove nothing", late)
	case len(faulty) > cfg.MaxTraitors:
		verdict = fmt.Sprintf("more than m = %d, so the conditions are not guaranteed", cfg.MaxTraitors)
	case cfg.Generals < bound:
		verdict = fmt.Sprintf("but n = %d is below n >= %s = %d, so the conditions are not guaranteed", cfg.Generals, rule, bound)
	}
	counted := "none"
	if len(faulty) > 0 {
		counted = fmt.Sprintf("%v (%s)", faulty, faultReasonsText(res))
	}
	out = append(out, fmt.Sprintf("faulty generals: %s; %d, %s", counted, len(faulty), verdict))
	return out
}

// faultReasonsText says why each faulty general of an interactive run is
// counted: "2: a traitor (flip); 3: general 0 saw it absent from round 0".
func faultReasonsText(res *byzantine.InteractiveResult) string {
	why := res.FaultReasons()
	var parts []string
	for _, id := range res.FaultyGenerals() {
		parts = append(parts, fmt.Sprintf("%d: %s", id, strings.Join(why[id], ", ")))
	}
	return strings.Join(parts, "; ")
}
