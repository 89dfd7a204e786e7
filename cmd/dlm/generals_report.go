package main

import (
	"fmt"
	"html/template"
	"os"
	"strings"

	"dlm/byzantine"
)

// reportPage is what the --report template shows.
type reportPage struct {
	Title    string
	Summary  string
	RunID    string
	Generals []reportGeneral
	Rounds   []reportRound
	Trees    []reportTree
	IC1, IC2 bool
	Verdict  string
	Messages int
	Bytes    int64
	Rejected string
}

type reportGeneral struct {
	ID       int
	Role     string
	Status   string
	Class    string
	Decision string
}

type reportRound struct {
	Round int
	IDs   []int
	Rows  []reportRow
}

type reportRow struct {
	From  int
	Class string
	Cells []reportCell
}

type reportCell struct {
	To       int
	Count    int
	Rejected int
}

type reportTree struct {
	ID     int
	Title  string
	Root   *reportNode // OM
	Values []byzantine.ExplainValue
	Choice string
}

type reportNode struct {
	Path     string
	Value    string
	Missing  bool
	Majority string
	Inner    bool
	Children []*reportNode
}

// reportTemplate is a self-contained page (inline style, no script, no
// external resource) that is also well-formed XML, so tests parse it.
const reportTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: center; }
tr.traitor th, tr.traitor td.decision, tr.traitor td.status { background: #fde2e2; }
tr.crashed td.status { background: #eee; }
td.zero { color: #bbb; }
span.rejected { color: #b00; }
ul.tree { list-style: none; font-family: monospace; }
li.missing > span.value { color: #b00; }
p.ok { color: #070; font-weight: bold; }
p.violated { color: #b00; font-weight: bold; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p id="summary">{{.Summary}}</p>
<p>run id <code id="run-id">{{.RunID}}</code>; {{.Messages}} messages, {{.Bytes}} bytes{{if .Rejected}}; rejected: {{.Rejected}}{{end}}</p>
<h2>Generals</h2>
<table id="generals">
<tr><th>id</th><th>role</th><th>status</th><th>decision</th></tr>
{{range .Generals}}<tr class="{{.Class}}" data-id="{{.ID}}"><th>{{.ID}}</th><td>{{.Role}}</td><td class="status">{{.Status}}</td><td class="decision">{{.Decision}}</td></tr>
{{end}}</table>
<h2>Messages per round</h2>
<p>Rows are senders, columns receivers; a cell counts the messages delivered, with those the receiver refused in red. Traitors' rows are shaded.</p>
{{range .Rounds}}<h3>Round {{.Round}}</h3>
<table class="round" id="round-{{.Round}}" data-round="{{.Round}}">
<tr><th>from \ to</th>{{range .IDs}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr class="{{.Class}}" data-from="{{.From}}"><th>{{.From}}</th>{{range .Cells}}<td data-to="{{.To}}" data-count="{{.Count}}" data-rejected="{{.Rejected}}"{{if eq .Count 0}} class="zero"{{end}}>{{.Count}}{{if .Rejected}} <span class="rejected">({{.Rejected}} refused)</span>{{end}}</td>{{end}}</tr>
{{end}}</table>
{{end}}<h2>Decisions of the loyal lieutenants</h2>
{{range .Trees}}<section class="explain" id="explain-{{.ID}}" data-id="{{.ID}}">
<h3>{{.Title}}</h3>
{{if .Root}}<ul class="tree">{{template "node" .Root}}</ul>
{{else}}<p>V = { {{range $i, $v := .Values}}{{if $i}}, {{end}}{{$v.Order}}{{end}} }, choice(V) = <b>{{.Choice}}</b></p>
<ul class="values">{{range .Values}}<li class="value" data-order="{{.Order}}" data-chain="{{.Chain}}">{{.Order}}: first by <code>{{.Chain}}</code> in round {{.Round}}</li>{{end}}</ul>
{{end}}</section>
{{end}}<h2>Verdict</h2>
<p id="verdict" data-ic1="{{.IC1}}" data-ic2="{{.IC2}}" class="{{if and .IC1 .IC2}}ok{{else}}violated{{end}}">{{.Verdict}}</p>
</body>
</html>
{{define "node"}}<li class="node{{if .Missing}} missing{{end}}" data-path="{{.Path}}" data-value="{{.Value}}" data-majority="{{.Majority}}"><code>{{.Path}}</code> <span class="value">{{if .Missing}}missing, RETREAT by default{{else}}{{.Value}}{{end}}</span>{{if .Inner}} &#8594; majority <b>{{.Majority}}</b>{{end}}{{if .Children}}<ul>{{range .Children}}{{template "node" .}}{{end}}</ul>{{end}}</li>{{end}}
`

// writeGeneralsReport writes the run as a self-contained HTML page. res
// must come from a run with a trace and with every lieutenant explained.
func writeGeneralsReport(path, transport string, res *byzantine.Result) error {
	page := buildReport(transport, res)
	t, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--report: %w", err))
	}
	if err := t.Execute(f, page); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func buildReport(transport string, res *byzantine.Result) reportPage {
	cfg := res.Config
	n := cfg.Generals
	p := reportPage{
		Title:    fmt.Sprintf("%s(%d) with %d generals", strings.ToUpper(string(cfg.Algorithm)), cfg.MaxTraitors, n),
		Summary:  fmt.Sprintf("order %s, majority %s, transport %s, seed %d, seq %d", cfg.Order, cfg.Majority, transport, cfg.Seed, cfg.Seq),
		RunID:    cfg.Run().String(),
		IC1:      res.IC1(),
		IC2:      res.IC2(),
		Messages: res.Messages,
		Bytes:    res.Bytes,
		Verdict:  "IC1 and IC2 hold",
	}
	if err := res.Verify(); err != nil {
		p.Verdict = err.Error()
	} else if !res.CommanderLoyal() {
		p.Verdict += " (IC2 vacuously: the commander is a traitor or crashed)"
	}
	var rej []string
	for r, c := range res.Rejected {
		rej = append(rej, fmt.Sprintf("%s %d", r, c))
	}
	p.Rejected = strings.Join(rej, ", ")
	for _, g := range res.Generals {
		rg := reportGeneral{ID: int(g.ID), Role: "lieutenant", Status: loyalLabel(g), Decision: string(g.Decision)}
		if g.ID == 0 {
			rg.Role = "commander"
		}
		if !g.Loyal {
			rg.Class, rg.Decision = "traitor", "-"
		}
		if g.Crashed {
			rg.Class, rg.Decision = strings.TrimSpace(rg.Class+" crashed"), "-"
			rg.Status += ", crashed"
		}
		p.Generals = append(p.Generals, rg)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	for r := 0; r <= cfg.MaxTraitors+1; r++ {
		counts := make([][]reportCell, n)
		for i := range counts {
			counts[i] = make([]reportCell, n)
			for j := range counts[i] {
				counts[i][j].To = j
			}
		}
		any := false
		for _, ev := range res.Trace {
			from, to := int(ev.Message.From), int(ev.Message.To)
			if ev.Round != r || from < 0 || from >= n || to < 0 || to >= n || ev.Fault == byzantine.Missing {
				continue
			}
			any = true
			counts[from][to].Count++
			if ev.Rejected != "" {
				counts[from][to].Rejected++
			}
		}
		if !any && r > cfg.MaxTraitors {
			continue // no stragglers
		}
		rr := reportRound{Round: r, IDs: ids}
		for i := range n {
			row := reportRow{From: i, Cells: counts[i]}
			if !res.Generals[i].Loyal {
				row.Class = "traitor"
			}
			rr.Rows = append(rr.Rows, row)
		}
		p.Rounds = append(p.Rounds, rr)
	}
	for _, g := range res.Generals {
		if g.ID == 0 || !g.Loyal || g.Explanation == nil {
			continue
		}
		e := g.Explanation
		tr := reportTree{ID: int(g.ID), Title: fmt.Sprintf("Lieutenant %d decides %s", g.ID, e.Decision), Values: e.Values, Choice: string(e.Decision)}
		if e.Tree != nil {
			tr.Root = reportTreeNode(e.Tree)
		}
		p.Trees = append(p.Trees, tr)
	}
	return p
}

func reportTreeNode(n *byzantine.ExplainNode) *reportNode {
	out := &reportNode{Path: byzantine.Message{Path: n.Path}.Chain()[1:], Value: string(n.Value), Missing: n.Missing, Majority: string(n.Majority), Inner: len(n.Children) > 0}
	for _, c := range n.Children {
		out.Children = append(out.Children, reportTreeNode(c))
	}
	return out
}
