package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"dlm/byzantine"
)

// sweepRow is one measured (algorithm, n, m) point of "dlm generals sweep".
type sweepRow struct {
	Algorithm          byzantine.Algorithm
	N, M               int
	Messages           int
	FormulaMessages    int
	Bytes              int64
	SignaturesMade     int
	SignaturesVerified int
	FormulaVerified    int
	// The traitor run that sent the most messages: m traitors, with and
	// without the commander, every strategy that applies.
	WorstMessages int
	WorstStrategy byzantine.Strategy
	WorstTraitors []byzantine.ID
	WorstHeld     bool // IC1 and IC2 held in every traitor run of the point
}

// worstTraitorRun runs cfg with m traitors (the commander and m-1
// lieutenants, then m lieutenants) under every strategy of the algorithm,
// and fills the row with the run that sent the most messages.
func worstTraitorRun(ctx context.Context, cfg byzantine.Config, row *sweepRow) error {
	strategies := byzantine.Strategies()
	if cfg.Algorithm == byzantine.OM {
		strategies = byzantine.OralStrategies()
	}
	m := cfg.MaxTraitors
	var sets [][]byzantine.ID
	for _, first := range []int{0, 1} {
		var set []byzantine.ID
		for i := range m {
			set = append(set, byzantine.ID(first+i))
		}
		sets = append(sets, set)
	}
	row.WorstHeld = true
	for _, set := range sets {
		for _, st := range strategies {
			c := cfg
			c.Faulty = nil
			for _, id := range set {
				c.Faulty = append(c.Faulty, byzantine.Traitor{ID: id, Strategy: st})
			}
			res, err := byzantine.Run(ctx, c)
			if err != nil {
				return err
			}
			if res.Verify() != nil {
				row.WorstHeld = false
			}
			if res.Messages > row.WorstMessages {
				row.WorstMessages, row.WorstStrategy, row.WorstTraitors = res.Messages, st, set
			}
		}
	}
	return nil
}

// smVerifiedFormula is the number of signature checks of a loyal SM(m) run
// with n generals: each lieutenant checks the commander's signature once;
// for m >= 2 it also checks the signed link of each of the n-2 relays it
// receives (for m = 1 that link is the unsigned m-th one, B9).
func smVerifiedFormula(n, m int) int {
	if m <= 1 {
		return n - 1
	}
	return (n - 1) * (n - 1)
}

// sweep runs every loyal OM(m) and SM(m) with n <= maxN, m <= maxM within
// the bounds (OM: n >= 3m+1; SM: n >= m+2) and at most maxMessages
// messages, and returns the measurements beside the formulas.
func sweep(ctx context.Context, maxN, maxM, maxMessages int) ([]sweepRow, error) {
	var rows []sweepRow
	for _, alg := range []byzantine.Algorithm{byzantine.OM, byzantine.SM} {
		for m := 1; m <= maxM; m++ {
			for n := m + 2; n <= maxN; n++ {
				formula := byzantine.SMLoyalMessages(n, m)
				if alg == byzantine.OM {
					if n < 3*m+1 {
						continue
					}
					formula = byzantine.OMMessages(n, m)
				}
				if formula > maxMessages {
					continue
				}
				cfg := byzantine.DefaultConfig()
				cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = alg, n, m
				res, err := byzantine.Run(ctx, cfg)
				if err != nil {
					return nil, err
				}
				row := sweepRow{Algorithm: alg, N: n, M: m, Messages: res.Messages, FormulaMessages: formula, Bytes: res.Bytes,
					SignaturesMade: res.SignaturesMade, SignaturesVerified: res.SignaturesVerified}
				if alg == byzantine.SM {
					row.FormulaVerified = smVerifiedFormula(n, m)
				}
				if err := worstTraitorRun(ctx, cfg, &row); err != nil {
					return nil, err
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

func writeSweepCSV(w io.Writer, rows []sweepRow) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"algorithm", "n", "m", "messages", "messages_formula", "formula", "bytes", "signatures_made", "signatures_verified", "signatures_verified_formula",
		"worst_traitor_messages", "worst_strategy", "worst_traitors", "traitor_runs_ic"})
	for _, r := range rows {
		formula := "(n-1)+(n-1)(n-2)+...+(n-1)(n-2)...(n-m-1)"
		verified := ""
		if r.Algorithm == byzantine.SM {
			formula = "(n-1)^2"
			verified = strconv.Itoa(r.FormulaVerified)
		}
		cw.Write([]string{string(r.Algorithm), strconv.Itoa(r.N), strconv.Itoa(r.M), strconv.Itoa(r.Messages), strconv.Itoa(r.FormulaMessages), formula,
			strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.SignaturesMade), strconv.Itoa(r.SignaturesVerified), verified,
			strconv.Itoa(r.WorstMessages), string(r.WorstStrategy), idList(r.WorstTraitors), holdsWord(r.WorstHeld)})
	}
	cw.Flush()
	return cw.Error()
}

func idList(ids []byzantine.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, " ")
}

func holdsWord(ok bool) string {
	if ok {
		return "held"
	}
	return "violated"
}

// writeSweepSVG draws one panel per algorithm and m (small multiples, so
// that series with equal counts, such as every loyal SM(m) at (n-1)^2, do
// not hide each other), each with log10(messages) against n: the paper's
// formula as a line, the loyal runs as dots, and the worst traitor run of
// each point as a square. The legend has its own band above the panels.
func writeSweepSVG(w io.Writer, rows []sweepRow) error {
	type key struct {
		alg byzantine.Algorithm
		m   int
	}
	var order []key
	series := map[key][]sweepRow{}
	for _, r := range rows {
		k := key{r.Algorithm, r.M}
		if _, ok := series[k]; !ok {
			order = append(order, k)
		}
		series[k] = append(series[k], r)
	}
	const (
		cols           = 3
		panelW, panelH = 300, 220
		padL, padR     = 56, 16
		padT, padB     = 28, 36
		legendH        = 56
		margin         = 10
	)
	rowsN := max(1, (len(order)+cols-1)/cols)
	width := margin*2 + cols*panelW
	height := legendH + rowsN*panelH + margin
	maxN := 3
	for _, r := range rows {
		maxN = max(maxN, r.N)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Messages against generals n, one panel per algorithm and m (log scale, each panel its own)</text>`+"\n", margin)
	// The legend, in its own band: nothing is drawn under it.
	fmt.Fprintf(&b, `<g class="legend" data-y="%d" data-h="%d">`, 24, legendH-24)
	fmt.Fprintf(&b, `<line x1="%d" y1="40" x2="%d" y2="40" stroke="#1f77b4" stroke-width="2"/><text x="%d" y="44">the paper's formula, loyal run</text>`, margin, margin+24, margin+30)
	fmt.Fprintf(&b, `<circle cx="%d" cy="40" r="3.5" fill="#1f77b4"/><text x="%d" y="44">measured, loyal run</text>`, margin+230, margin+240)
	fmt.Fprintf(&b, `<rect x="%d" y="36" width="8" height="8" fill="none" stroke="#d62728" stroke-width="1.5"/><text x="%d" y="44">measured, worst traitor run (m traitors, worst strategy)</text>`, margin+390, margin+404)
	b.WriteString("</g>\n")
	for i, k := range order {
		pts := series[k]
		px := margin + (i%cols)*panelW
		py := legendH + (i/cols)*panelH
		name := fmt.Sprintf("%s(%d)", strings.ToUpper(string(k.alg)), k.m)
		maxLog, minN := 1.0, pts[0].N
		for _, r := range pts {
			maxLog = max(maxLog, math.Log10(float64(max(r.Messages, r.FormulaMessages, r.WorstMessages, 1))))
			minN = min(minN, r.N)
		}
		maxLog = math.Ceil(maxLog)
		// Half a step of room past the last n, so no point sits on the edge.
		lo, hi := minN-1, maxN
		x := func(n int) float64 {
			return float64(px+padL) + float64(n-lo)/(float64(hi-lo)+0.5)*float64(panelW-padL-padR)
		}
		y := func(v int) float64 {
			return float64(py+panelH-padB) - math.Log10(float64(max(v, 1)))/maxLog*float64(panelH-padT-padB)
		}
		fmt.Fprintf(&b, `<g class="panel" data-series="%s" data-x="%d" data-y="%d" data-w="%d" data-h="%d">`+"\n", name, px, py, panelW, panelH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", px+padL, py+padT-10, name)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", px+padL, py+panelH-padB, px+panelW-padR, py+panelH-padB)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", px+padL, py+padT, px+padL, py+panelH-padB)
		for n := lo + 1; n <= hi; n++ {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(n), py+panelH-padB+14, n)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">n</text>`+"\n", px+(panelW+padL-padR)/2, py+panelH-padB+28)
		for e := 0; e <= int(maxLog); e++ {
			yy := float64(py+panelH-padB) - float64(e)/maxLog*float64(panelH-padT-padB)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">1e%d</text>`+"\n", px+padL-4, yy+4, e)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", px+padL, yy, px+panelW-padR, yy)
		}
		var line []string
		for _, r := range pts {
			line = append(line, fmt.Sprintf("%.1f,%.1f", x(r.N), y(r.FormulaMessages)))
		}
		fmt.Fprintf(&b, `<polyline class="formula" data-series="%s" fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", name, strings.Join(line, " "))
		for _, r := range pts {
			fmt.Fprintf(&b, `<circle class="measured" data-series="%s" data-n="%d" data-messages="%d" cx="%.1f" cy="%.1f" r="3.5" fill="#1f77b4"><title>%s n=%d loyal: %d messages</title></circle>`+"\n",
				name, r.N, r.Messages, x(r.N), y(r.Messages), name, r.N, r.Messages)
			fmt.Fprintf(&b, `<rect class="traitor" data-series="%s" data-n="%d" data-messages="%d" x="%.1f" y="%.1f" width="8" height="8" fill="none" stroke="#d62728" stroke-width="1.5"><title>%s n=%d, traitors %s (%s): %d messages</title></rect>`+"\n",
				name, r.N, r.WorstMessages, x(r.N)-4, y(r.WorstMessages)-4, name, r.N, idList(r.WorstTraitors), r.WorstStrategy, r.WorstMessages)
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// newGeneralsSweepCmd builds "dlm generals sweep".
func newGeneralsSweepCmd() *cobra.Command {
	var (
		csvPath, svgPath string
		maxN, maxM       int
		maxMessages      int
	)
	cmd := &cobra.Command{
		Use:   "sweep --csv FILE [--svg FILE]",
		Short: "Measure messages, bytes and signature checks against (n, m), beside the paper's formulas",
		Long: `Run every loyal OM(m) and SM(m) with n up to --max-n and m up to --max-m
(within the bounds: OM n >= 3m+1, SM n >= m+2; at most --max-messages
messages per run) and write, per run, the measured messages, bytes and
signatures made and verified beside the paper's formulas: OM
(n-1)+(n-1)(n-2)+...+(n-1)(n-2)...(n-m-1) messages, SM (n-1)^2,
and for SM the expected signature checks (n-1 for m = 1, (n-1)^2 above).
Each point is also run with m traitors (the commander and m-1 lieutenants,
then m lieutenants) under every strategy, and the run that sent the most
messages is reported: what a traitor costs.
--svg draws one panel per algorithm and m, messages against n on a log
scale: the formula as a line, loyal runs as dots, the worst traitor run as
squares. "-" as --csv writes to standard output.`,
		Example: `  dlm generals sweep --csv sweep.csv --svg sweep.svg
  dlm generals sweep --csv - --max-n 8 --max-m 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if csvPath == "" && svgPath == "" {
				return usageErrorf("give --csv and/or --svg")
			}
			if maxN < 3 || maxN > 64 || maxM < 1 || maxM > 8 {
				return usageErrorf("--max-n must be 3..64 and --max-m 1..8")
			}
			rows, err := sweep(cmd.Context(), maxN, maxM, maxMessages)
			if err != nil {
				return withCode(exitCouldNotRun, err)
			}
			write := func(path string, fn func(io.Writer, []sweepRow) error) error {
				if path == "-" {
					return fn(cmd.OutOrStdout(), rows)
				}
				f, err := os.Create(path)
				if err != nil {
					return withCode(exitUsage, err)
				}
				if err := fn(f, rows); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}
			if csvPath != "" {
				if err := write(csvPath, writeSweepCSV); err != nil {
					return err
				}
			}
			if svgPath != "" {
				if err := write(svgPath, writeSweepSVG); err != nil {
					return err
				}
			}
			for _, r := range rows {
				if r.Messages != r.FormulaMessages {
					return withCode(exitFailure, fmt.Errorf("%s(%d) n=%d: %d messages measured, formula %d", strings.ToUpper(string(r.Algorithm)), r.M, r.N, r.Messages, r.FormulaMessages))
				}
				if !r.WorstHeld {
					return withCode(exitFailure, fmt.Errorf("%s(%d) n=%d: IC1 or IC2 violated by a traitor run within the bounds", strings.ToUpper(string(r.Algorithm)), r.M, r.N))
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&csvPath, "csv", "", "CSV file to write (- for standard output)")
	fl.StringVar(&svgPath, "svg", "", "SVG plot to write")
	fl.IntVar(&maxN, "max-n", 10, "largest number of generals")
	fl.IntVar(&maxM, "max-m", 3, "largest m")
	fl.IntVar(&maxMessages, "max-messages", 1_000_000, "skip runs that would send more messages")
	return cmd
}
