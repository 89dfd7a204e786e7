package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// nodeInteractiveFlags are the flags of "dlm generals node --interactive".
type nodeInteractiveFlags struct {
	on    bool
	value string
}

// nodeInteractiveConfig builds general id's part of an interactive run:
// its own value at its index, and a placeholder for every other general's
// value, which only that general knows.
func nodeInteractiveConfig(cfg byzantine.Config, id int, value string) (byzantine.InteractiveConfig, error) {
	if value == "" {
		value = fmt.Sprintf("v%d", id)
	}
	ic := byzantine.InteractiveConfig{Config: cfg, Values: make([]byzantine.Order, cfg.Generals)}
	for i := range ic.Values {
		ic.Values[i] = "-"
	}
	if id >= 0 && id < len(ic.Values) {
		ic.Values[id] = byzantine.Order(value)
	}
	if len(value) > byzantine.MaxOrderLen {
		return ic, fmt.Errorf("--value: %d bytes: want 1 to %d", len(value), byzantine.MaxOrderLen)
	}
	return ic, ic.Validate()
}

// nodeInteractiveJSON is the --json output of "dlm generals node
// --interactive".
type nodeInteractiveJSON struct {
	ID       byzantine.ID       `json:"id"`
	Loyal    bool               `json:"loyal"`
	Strategy byzantine.Strategy `json:"strategy,omitempty"`
	Value    byzantine.Order    `json:"value"`
	// Vector is the vector decided: entry i is general i's value as this
	// general decided it.
	Vector []byzantine.Order `json:"vector"`
	// Heard[p] is true when general p's own value reached this general
	// directly and in time.
	Heard  []bool                `json:"heard"`
	Faults []byzantine.PeerFault `json:"faults"`
	// FaultyPeers are the peers seen absent, gone, late, unreachable or refused in any instance.
	FaultyPeers []byzantine.ID  `json:"faulty_peers"`
	Overran     []int           `json:"overran,omitempty"`
	Stats       byzantine.Stats `json:"stats"`
	// Explanations (with --explain ID, this general's id): for each
	// instance's id, how this general decided that entry.
	Explanations map[string]icExplainJSON `json:"explanations,omitempty"`
	// Verdict is "ok", or why the vector proves nothing (exit 3).
	Verdict string `json:"verdict"`
	// OtherRuns are the peers refused for running with other run flags.
	OtherRuns []otherRun `json:"other_runs,omitempty"`
}

// runInteractiveNode runs general node's part of the interactive run ic
// from start and prints the vector it decided. It exits as the
// one-commander node does: 0 when it decided within the schedule and saw
// at most m faulty peers, 3 when its vector proves nothing (it ran out of
// time, or saw more than m faulty peers), 69 when it could not run.
func runInteractiveNode(ctx context.Context, node *tcp.Node, id byzantine.ID, ic byzantine.InteractiveConfig, priv ed25519.PrivateKey, c tcp.Cluster, start time.Time, asJSON bool, w io.Writer) error {
	cfg := ic.Config
	res, err := tcp.RunInteractiveNode(ctx, node, ic, priv, c, start)
	if errors.Is(err, byzantine.ErrCrashed) {
		fmt.Fprintf(w, "general %d crashed as asked (--crash): %v\n", id, err)
		return nil
	}
	if errors.Is(err, tcp.ErrCluster) {
		return withCode(exitUsage, err)
	}
	if err != nil {
		return withCode(exitCouldNotRun, err)
	}
	out := nodeInteractiveJSON{
		ID: id, Loyal: cfg.StrategyOf(id) == "", Strategy: cfg.StrategyOf(id), Value: ic.Values[id],
		Vector: res.Vector, Heard: res.Heard, Faults: res.Faults(), FaultyPeers: res.FaultyPeers(),
		Overran: res.Overran(), Stats: res.Stats(), Verdict: "ok", OtherRuns: otherRuns(node),
	}
	if out.Faults == nil {
		out.Faults, out.FaultyPeers = []byzantine.PeerFault{}, []byzantine.ID{}
	}
	var late error
	switch {
	case len(out.Overran) > 0:
		late = withCode(exitInconclusive, fmt.Errorf("general %d ran out of time in rounds %v: it sent its messages after the round's deadline, or was stopped over it, or did not take messages that had arrived in time, or could not send to a peer that stayed connected; its vector proves nothing; use a later --start or a longer --round-timeout", id, out.Overran))
	case len(out.FaultyPeers) > cfg.MaxTraitors:
		late = withCode(exitInconclusive, fmt.Errorf("general %d saw %d faulty generals %v (absent, gone, late, unreachable or refused), more than m = %d: the vector conditions are guaranteed only with at most m faulty generals, so its vector proves nothing%s", id, len(out.FaultyPeers), out.FaultyPeers, cfg.MaxTraitors, otherRunsText(out.OtherRuns)))
	}
	if late != nil {
		out.Verdict = late.Error()
	}
	var explained []*byzantine.Explanation
	for i, in := range res.Instances {
		if in.Explanation == nil {
			continue
		}
		e := in.Explanation.Relabel(func(x byzantine.ID) byzantine.ID { return byzantine.InstanceID(byzantine.ID(i), x) })
		if explained == nil {
			explained = make([]*byzantine.Explanation, len(res.Instances))
			out.Explanations = map[string]icExplainJSON{}
		}
		explained[i] = e
		why := e.Why()
		switch {
		case byzantine.ID(i) == id && out.Loyal:
			why = "the commander's entry is its own value"
		case byzantine.ID(i) == id:
			why = "the commander is a traitor: what it sends is its strategy's"
		}
		out.Explanations[strconv.Itoa(i)] = icExplainJSON{Explanation: e, Why: why}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return errors.Join(enc.Encode(out), late)
	}
	label := "loyal"
	if !out.Loyal {
		label = "traitor (" + string(out.Strategy) + "): its vector means nothing"
	}
	fmt.Fprintf(w, "general %d (%s, value %s) decides the vector %v; sent %d messages, rejected %v\n",
		id, label, out.Value, out.Vector, out.Stats.Sent, out.Stats.Rejected)
	fmt.Fprintln(w, "  (entry i is general i's value as this general decided it; RETREAT stands for no value)")
	if len(out.Faults) > 0 {
		var parts []string
		for _, pf := range out.Faults {
			parts = append(parts, fmt.Sprintf("%d %s from round %d", pf.ID, pf.Kind, pf.Round))
		}
		fmt.Fprintf(w, "  faulty peers seen (%d, at most m = %d tolerated): %s\n", len(out.FaultyPeers), cfg.MaxTraitors, strings.Join(parts, ", "))
	}
	printOtherRuns(w, out.OtherRuns)
	if explained != nil {
		fmt.Fprintf(w, "  (%s)\n", icPathHelp)
		for i, e := range explained {
			switch {
			case e == nil:
			case byzantine.ID(i) == id:
				fmt.Fprintf(w, "  instance %d: it is the commander: its entry is its own value %s\n", i, e.Decision)
			default:
				fmt.Fprintf(w, "  instance %d: decided %s: %s\n", i, e.Decision, e.Why())
				for _, line := range e.Lines() {
					fmt.Fprintf(w, "    %s\n", line)
				}
			}
		}
	}
	if late != nil {
		fmt.Fprintf(w, "verdict: %s\n", late)
	}
	return late
}
