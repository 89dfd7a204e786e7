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
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

func writeSweepCSV(w io.Writer, rows []sweepRow) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"algorithm", "n", "m", "messages", "messages_formula", "formula", "bytes", "signatures_made", "signatures_verified", "signatures_verified_formula"})
	for _, r := range rows {
		formula := "(n-1)+(n-1)(n-2)+...+(n-1)(n-2)...(n-m-1)"
		verified := ""
		if r.Algorithm == byzantine.SM {
			formula = "(n-1)^2"
			verified = strconv.Itoa(r.FormulaVerified)
		}
		cw.Write([]string{string(r.Algorithm), strconv.Itoa(r.N), strconv.Itoa(r.M), strconv.Itoa(r.Messages), strconv.Itoa(r.FormulaMessages), formula,
			strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.SignaturesMade), strconv.Itoa(r.SignaturesVerified), verified})
	}
	cw.Flush()
	return cw.Error()
}

// writeSweepSVG plots log10(messages) against n: one series per algorithm
// and m, the paper's formula as a line and the measured counts as dots.
func writeSweepSVG(w io.Writer, rows []sweepRow) error {
	const (
		width, height = 720, 480
		left, right   = 70, 170
		top, bottom   = 30, 50
	)
	maxN, maxLog := 2, 1.0
	for _, r := range rows {
		maxN = max(maxN, r.N)
		maxLog = max(maxLog, math.Log10(float64(max(r.Messages, r.FormulaMessages))))
	}
	maxLog = math.Ceil(maxLog)
	x := func(n int) float64 { return left + float64(n-2)/float64(maxN-2)*float64(width-left-right) }
	y := func(v int) float64 {
		return float64(height-bottom) - math.Log10(float64(max(v, 1)))/maxLog*float64(height-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Messages of loyal OM(m) and SM(m) runs: measured (dots) and the paper's formula (lines)</text>`+"\n", left)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-bottom)
	for n := 2; n <= maxN; n++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(n), height-bottom+16, n)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">generals n</text>`+"\n", (left+width-right)/2, height-10)
	for e := 0; e <= int(maxLog); e++ {
		yy := float64(height-bottom) - float64(e)/maxLog*float64(height-top-bottom)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">1e%d</text>`+"\n", left-6, yy+4, e)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, yy, width-right, yy)
	}
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
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
	for i, k := range order {
		c := colors[i%len(colors)]
		dash := ""
		if k.alg == byzantine.SM {
			dash = ` stroke-dasharray="6 3"`
		}
		var pts []string
		for _, r := range series[k] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.N), y(r.FormulaMessages)))
		}
		fmt.Fprintf(&b, `<polyline class="formula" data-series="%s(%d)" fill="none" stroke="%s"%s points="%s"/>`+"\n", strings.ToUpper(string(k.alg)), k.m, c, dash, strings.Join(pts, " "))
		for _, r := range series[k] {
			fmt.Fprintf(&b, `<circle class="measured" data-series="%s(%d)" data-n="%d" data-messages="%d" cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n",
				strings.ToUpper(string(k.alg)), k.m, r.N, r.Messages, x(r.N), y(r.Messages), c)
		}
		ly := top + 16*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"%s/>`+"\n", width-right+10, ly, width-right+34, ly, c, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s(%d)</text>`+"\n", width-right+40, ly+4, strings.ToUpper(string(k.alg)), k.m)
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
(n-1)+(n-1)(n-2)+...+(n-1)(n-2)...(n-m-1) messages (B6), SM (n-1)^2 (B9),
and for SM the expected signature checks (n-1 for m = 1, (n-1)^2 above).
--svg plots the messages against n on a log scale, formula as lines,
measurements as dots. "-" as --csv writes to standard output.`,
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
