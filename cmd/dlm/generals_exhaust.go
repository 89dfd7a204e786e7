package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dlm/byzantine"
)

// newGeneralsExhaustCmd builds "dlm generals exhaust": every behaviour of
// a stated finite adversary, for every traitor set of a small run.
func newGeneralsExhaustCmd() *cobra.Command {
	var (
		algorithm  string
		n, m       int
		majority   string
		domain     string
		faulty     string
		unsafe     bool
		noSymmetry bool
		maxRuns    int
		budget     time.Duration
		asJSON     bool
		fi         interactiveFlags
	)
	cmd := &cobra.Command{
		Use:   "exhaust --algorithm om|sm -n N -m M",
		Short: "Enumerate every traitor set and behaviour of a small run and check IC1/IC2 for all",
		Long: `Run the algorithm for every set of at most m traitors (one set per class
of sets equal up to renaming the lieutenants, unless --no-symmetry; or only
the --faulty set), every order of the domain given by a loyal commander,
and every behaviour of the traitors in a stated finite adversary:

  OM  every message a traitor sends a loyal general, on every relay path
      and in every round, is any order of the domain or nothing;
  SM  the traitors pool their keys and send each loyal lieutenant, in every
      round, any subset of the orders they can put in a valid chain (so a
      traitorous commander sends nothing, one order, or several signed
      orders).

The output says what was enumerated (traitor sets, runs, distinct loyal
states) and what was not (orders outside the domain, timing, forged
signatures: other tests cover those). The runs go to every traitor set in
turn, so a budget is divided fairly between the sets; --budget and
--max-runs are checked inside runs too. A search stopped by either proves
nothing, says so, and gives the share of each set it covered.

--interactive --values V0,V1,... searches interactive consistency: the
domain becomes the private values and RETREAT (plus --domain when given),
and since instance i of an interactive run is the one-commander run of
general i's value with the traitor set renamed, and a loyal general's
entry i depends on that instance's messages only, the search covers every
instance of every interactive run with these values, every traitor set of
at most m generals and every behaviour of the adversary above, however the
traitors act across instances.

Configurations outside the bounds (OM with n < 3m+1, or more traitors than
m) are refused unless --unsafe: there the search finds the violations.

Exit 0 when the search was complete and IC1 and IC2 held in every run, 1
when a violation was found, 3 when the search stopped before its end
without finding one, 64 on bad usage.`,
		Example: `  dlm generals exhaust --algorithm om -n 4 -m 1
  dlm generals exhaust --algorithm sm -n 5 -m 2
  dlm generals exhaust --algorithm om -n 5 -m 2 --faulty 1,2 --unsafe
  dlm generals exhaust --interactive --values north,east,south,west`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := byzantine.DefaultConfig()
			cfg.Algorithm = byzantine.Algorithm(strings.ToLower(algorithm))
			cfg.Generals, cfg.MaxTraitors = n, m
			cfg.Majority = byzantine.MajorityVariant(strings.ToLower(majority))
			cfg.AllowUnsafe = unsafe
			var opts byzantine.ExhaustOptions
			for _, o := range strings.Split(domain, ",") {
				opts.Domain = append(opts.Domain, byzantine.Order(strings.TrimSpace(o)))
			}
			if faulty != "" {
				opts.Faulty = []byzantine.ID{}
				for _, item := range strings.Split(faulty, ",") {
					id, err := strconv.Atoi(strings.TrimSpace(item))
					if err != nil {
						return usageErrorf("--faulty: %q is not a general id", item)
					}
					opts.Faulty = append(opts.Faulty, byzantine.ID(id))
				}
			}
			opts.NoSymmetry, opts.MaxRuns = noSymmetry, maxRuns
			if budget <= 0 {
				return usageErrorf("--budget %v: want a positive duration", budget)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), budget)
			defer cancel()
			var res *byzantine.ExhaustResult
			var err error
			if fi.on {
				if !cmd.Flags().Changed("domain") {
					opts.Domain = nil
				}
				ic := byzantine.InteractiveConfig{Config: cfg}
				if fi.values == "" {
					for i := range n {
						ic.Values = append(ic.Values, byzantine.Order(fmt.Sprintf("v%d", i)))
					}
				} else {
					for _, v := range strings.Split(fi.values, ",") {
						ic.Values = append(ic.Values, byzantine.Order(strings.TrimSpace(v)))
					}
				}
				res, err = byzantine.ExhaustInteractive(ctx, ic, opts)
			} else {
				if fi.values != "" {
					return usageErrorf("--values needs --interactive")
				}
				res, err = byzantine.Exhaust(ctx, cfg, opts)
			}
			if err != nil {
				if errors.Is(err, byzantine.ErrUnsafe) && !unsafe {
					err = fmt.Errorf("%w (dlm: --unsafe searches it anyway, to find the violations)", err)
				}
				if errors.Is(err, byzantine.ErrInvalidConfig) {
					return withCode(exitUsage, err)
				}
				return withCode(exitCouldNotRun, err)
			}
			if cmd.Context().Err() != nil {
				return withCode(exitCouldNotRun, cmd.Context().Err())
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				writeExhaustText(cmd.OutOrStdout(), res)
				if fi.on {
					writeInteractiveCounterexamples(cmd.OutOrStdout(), res, fi.values, n)
				}
			}
			switch {
			case res.Violations() > 0:
				return withCode(exitFailure, nil)
			case !res.Complete:
				return withCode(exitInconclusive, nil)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&algorithm, "algorithm", "om", "om or sm")
	fl.IntVarP(&n, "generals", "n", 4, "number of generals n, the commander included")
	fl.IntVarP(&m, "traitors", "m", 1, "m of OM(m) / SM(m): traitor sets of 0 to m generals are searched")
	fl.StringVar(&majority, "majority", "vote", "how a lieutenant decides among the values it received: vote or median")
	fl.StringVar(&domain, "domain", "attack,retreat", "the orders traitors may send and a loyal commander is tried with, comma-separated (a traitor may also send nothing)")
	fl.StringVar(&faulty, "faulty", "", "search only this traitor set, ids comma-separated")
	fl.BoolVar(&unsafe, "unsafe", false, "search a configuration outside the bounds (OM n < 3m+1, more traitors than m)")
	fl.BoolVar(&noSymmetry, "no-symmetry", false, "search every traitor set, not one per class equal up to renaming the lieutenants")
	fl.IntVar(&maxRuns, "max-runs", byzantine.MaxExhaustRuns, "stop after this many runs (the result is then incomplete)")
	fl.DurationVar(&budget, "budget", time.Minute, "stop after this long (the result is then incomplete)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	fl.BoolVar(&fi.on, "interactive", false, "search interactive consistency: every instance of every interactive run with the private values --values")
	fl.StringVar(&fi.values, "values", "", "with --interactive: the private values V0,V1,... of generals 0,1,... (default v0,v1,...)")
	return cmd
}

func writeExhaustText(w io.Writer, res *byzantine.ExhaustResult) {
	fmt.Fprintf(w, "%s(%d) with %d generals, exhaustive search\n", strings.ToUpper(string(res.Algorithm)), res.MaxTraitors, res.Generals)
	fmt.Fprintln(w, "enumerated:")
	for _, a := range res.Adversary {
		fmt.Fprintf(w, "  - %s\n", a)
	}
	fmt.Fprintln(w, "traitor sets:")
	for _, s := range res.Sets {
		state := ""
		if !s.Complete {
			state = fmt.Sprintf("  INCOMPLETE: %.2g%% covered", 100*s.Covered)
		}
		fmt.Fprintf(w, "  %-12s stands for %3d sets: %9d runs, %d violating%s\n", fmt.Sprint(s.Traitors), s.Stands, s.Runs, s.Violations, state)
	}
	capped := ""
	if res.StatesCapped {
		capped = " (counted up to that)"
	}
	fmt.Fprintf(w, "total: %d traitor sets covered by %d searched, %d runs, %d distinct loyal states%s\n", res.SetsCovered, len(res.Sets), res.Runs, res.States, capped)
	fmt.Fprintln(w, "not enumerated:")
	for _, a := range res.NotEnumerated {
		fmt.Fprintf(w, "  - %s\n", a)
	}
	if !res.Complete {
		fmt.Fprintln(w, "INCOMPLETE: the search stopped (--budget or --max-runs) before its end; the sets marked INCOMPLETE were searched in part (the runs go to every set in turn), the share given")
	}
	if res.Violations() == 0 {
		if res.Complete {
			fmt.Fprintln(w, "IC1 and IC2 held in every run: none of these behaviours breaks the algorithm")
		} else {
			fmt.Fprintln(w, "no violation found in the runs made; this proves nothing about the rest")
		}
		return
	}
	fmt.Fprintf(w, "VIOLATED: IC1 in %d runs, IC2 in %d runs\n", res.IC1Violations, res.IC2Violations)
	for _, c := range res.Counterexamples {
		fmt.Fprintf(w, "counterexample: traitors %v, loyal order %s\n", c.Traitors, c.Order)
		for _, s := range c.Sent {
			fmt.Fprintf(w, "  %s\n", s)
		}
		var dec []string
		for id := range res.Generals {
			if d, ok := c.Decisions[byzantine.ID(id)]; ok {
				dec = append(dec, fmt.Sprintf("%d=%s", id, d))
			}
		}
		fmt.Fprintf(w, "  loyal decisions: %s\n", strings.Join(dec, " "))
		fmt.Fprintf(w, "  verdict: %s\n", c.Err)
	}
}

// writeInteractiveCounterexamples says where each counterexample of an
// interactive search happens in an interactive run: in instance i the
// commander is general i, and general 0 takes id i.
func writeInteractiveCounterexamples(w io.Writer, res *byzantine.ExhaustResult, values string, n int) {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("v%d", i)
	}
	if values != "" {
		vals = strings.Split(values, ",")
		for i := range vals {
			vals[i] = strings.TrimSpace(vals[i])
		}
	}
	for _, c := range res.Counterexamples {
		var where []string
		for i, v := range vals {
			if slices.Contains(c.Traitors, 0) || v == string(c.Order) {
				var set []byzantine.ID
				for _, t := range c.Traitors {
					set = append(set, byzantine.InstanceID(byzantine.ID(i), t))
				}
				slices.Sort(set)
				where = append(where, fmt.Sprintf("instance %d with traitors %v", i, set))
			}
			if slices.Contains(c.Traitors, 0) {
				break // a traitorous commander: any instance of a traitor, the first stands for them
			}
		}
		if where == nil {
			where = []string{fmt.Sprintf("none with these values (no general's value is %s)", c.Order)}
		}
		fmt.Fprintf(w, "counterexample (traitors %v, loyal order %s) in an interactive run: %s (ids above are the instance's: general i is 0 there, general 0 is i)\n",
			c.Traitors, c.Order, strings.Join(where, "; "))
	}
}
