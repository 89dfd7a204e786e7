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
	// Inconclusive: the run was out of time or had more than m faulty
	// generals, so its decisions prove nothing.
	Inconclusive bool
	PathHelp     string
	Messages     int
	Bytes        int64
	Rejected     string
}

type reportGeneral struct {
	ID       int
	Role     string
	Status   string
	Class    string
	Decision string
}

type reportRound struct {
	Round    int
	IDs      []int
	Rows     []reportRow
	Messages []reportMsg
	Lies     int
	Refused  int
	Omitted  int // messages beyond maxReportMessages, not listed
}

// reportMsg is one message of a round as the page lists it: what was
// sent, what a loyal general in the sender's place would have sent, and
// what the receiver did with it.
type reportMsg struct {
	From, To int
	Path     string
	Sent     string
	Loyal    string
	Lie      bool
	Traitor  bool
	Fault    string
	Refused  string
	Why      string
}

// maxReportMessages bounds the messages listed per round.
const maxReportMessages = 2000

// pathHelp says how to read a relay path; --explain prints it too.
const pathHelp = "A path such as 0:2:5 names who carried a value, left to right: the commander (0) sent it to lieutenant 2, who relayed it to lieutenant 5, who relayed it to the general reading it. In OM each such value is one input of a vote; in SM the chain attack:0:2:5 carries the signatures of 0, 2 and 5, in that order."

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
	Inputs   string // majority(own value, the children's values), inner nodes only
	Inner    bool
	Children []*reportNode
}

// reportTemplate is a self-contained page (inline style and script, no
// external resource or network access) that is also well-formed XML, so
// tests parse it (the script therefore uses neither "<" nor "&"). Without JavaScript every round is shown; with it, the
// rounds are stepped through one at a time.
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
table.msgs td { text-align: left; }
tr.lie td { background: #ffd2d2; font-weight: bold; }
tr.lie td.sent::after { content: " \2190 lie"; color: #b00; }
tr.refused td.status { color: #b00; }
tr.from-traitor td:first-child { background: #fde2e2; }
ul.tree { list-style: none; font-family: monospace; }
li.missing > span.value { color: #b00; }
span.inputs { color: #555; }
p.ok { color: #070; font-weight: bold; }
p.violated { color: #b00; font-weight: bold; }
#stepper { position: sticky; top: 0; background: #f4f4f4; padding: 0.5em; border: 1px solid #ccc; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p id="summary">{{.Summary}}</p>
<p>run id <code id="run-id">{{.RunID}}</code>; {{.Messages}} messages, {{.Bytes}} bytes{{if .Rejected}}; rejected: {{.Rejected}}{{end}}</p>
<p id="path-help">{{.PathHelp}}</p>
<h2>Generals</h2>
<table id="generals">
<tr><th>id</th><th>role</th><th>status</th><th>decision</th></tr>
{{range .Generals}}<tr class="{{.Class}}" data-id="{{.ID}}"><th>{{.ID}}</th><td>{{.Role}}</td><td class="status">{{.Status}}</td><td class="decision">{{.Decision}}</td></tr>
{{end}}</table>
<h2>Rounds</h2>
<div id="stepper"><button type="button" id="step-prev">previous round</button> <input type="range" id="step-slider" min="0" max="0" value="0" /> <button type="button" id="step-next">next round</button> <span id="step-label">all rounds shown</span> <span id="script-status" data-ready="no"></span></div>
<p>In each round: the count of messages from each sender (rows) to each receiver (columns), with those refused in red, then every message with what was sent beside what a loyal general in the sender's place would have sent. A lie is highlighted; a refused message says why.</p>
{{range .Rounds}}<section class="step" id="step-{{.Round}}" data-round="{{.Round}}">
<h3>Round {{.Round}}: messages {{len .Messages}}, lies {{.Lies}}, refused {{.Refused}}</h3>
<table class="round" id="round-{{.Round}}" data-round="{{.Round}}">
<tr><th>from \ to</th>{{range .IDs}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr class="{{.Class}}" data-from="{{.From}}"><th>{{.From}}</th>{{range .Cells}}<td data-to="{{.To}}" data-count="{{.Count}}" data-rejected="{{.Rejected}}"{{if eq .Count 0}} class="zero"{{end}}>{{.Count}}{{if .Rejected}} <span class="rejected">({{.Rejected}} refused)</span>{{end}}</td>{{end}}</tr>
{{end}}</table>
<table class="msgs" id="msgs-{{.Round}}">
<tr><th>from</th><th>to</th><th>path</th><th>sent</th><th>a loyal general would send</th><th>receiver</th></tr>
{{range .Messages}}<tr class="msg{{if .Lie}} lie{{end}}{{if .Refused}} refused{{end}}{{if .Traitor}} from-traitor{{end}}" data-from="{{.From}}" data-to="{{.To}}" data-path="{{.Path}}" data-sent="{{.Sent}}" data-loyal="{{.Loyal}}" data-lie="{{.Lie}}"><td>{{.From}}</td><td>{{.To}}</td><td><code>{{.Path}}</code></td><td class="sent">{{.Sent}}</td><td class="loyal">{{.Loyal}}</td><td class="status">{{if .Refused}}refused ({{.Refused}}): {{.Why}}{{else}}accepted{{end}}{{if .Fault}}; transport: {{.Fault}}{{end}}</td></tr>
{{end}}</table>
{{if .Omitted}}<p>{{.Omitted}} more messages of this round are not listed.</p>{{end}}
</section>
{{end}}<h2>Decisions of the loyal lieutenants</h2>
<p>For OM, each line is the value received along one path and, for inner nodes, the vote majority(own value, the votes below) with its inputs: OM's recursion, level by level: each relayed value is replaced by the majority of what the others said it was. For SM, the set V and choice(V).</p>
{{range .Trees}}<section class="explain" id="explain-{{.ID}}" data-id="{{.ID}}">
<h3>{{.Title}}</h3>
{{if .Root}}<ul class="tree">{{template "node" .Root}}</ul>
{{else}}<p>V = { {{range $i, $v := .Values}}{{if $i}}, {{end}}{{$v.Order}}{{end}} }, choice(V) = <b>{{.Choice}}</b> (one order: that order; none or two: RETREAT)</p>
<ul class="values">{{range .Values}}<li class="value" data-order="{{.Order}}" data-chain="{{.Chain}}">{{.Order}}: first by <code>{{.Chain}}</code> in round {{.Round}}</li>{{end}}</ul>
{{end}}</section>
{{end}}<h2>Verdict</h2>
<p id="verdict" data-ic1="{{.IC1}}" data-ic2="{{.IC2}}" class="{{if .Inconclusive}}inconclusive{{else if and .IC1 .IC2}}ok{{else}}violated{{end}}">{{.Verdict}}</p>
<script>
(function () {
  var steps = document.querySelectorAll("section.step");
  var slider = document.getElementById("step-slider");
  var label = document.getElementById("step-label");
  var cur = 0;
  function show(i) {
    cur = Math.max(0, Math.min(steps.length - 1, i));
    for (var k = 0; k !== steps.length; k++) {
      steps[k].hidden = k !== cur;
    }
    slider.value = String(cur);
    label.textContent = "round " + steps[cur].getAttribute("data-round") + " (" + (cur + 1) + " of " + steps.length + ")";
  }
  if (steps.length > 0) {
    slider.max = String(steps.length - 1);
    document.getElementById("step-prev").addEventListener("click", function () { show(cur - 1); });
    document.getElementById("step-next").addEventListener("click", function () { show(cur + 1); });
    slider.addEventListener("input", function () { show(parseInt(slider.value, 10)); });
    show(0);
  }
  var st = document.getElementById("script-status");
  st.setAttribute("data-ready", "yes");
  st.textContent = "step-through ready: rounds " + steps.length + ", lies " + document.querySelectorAll("tr.lie").length;
})();
</script>
</body>
</html>
{{define "node"}}<li class="node{{if .Missing}} missing{{end}}" data-path="{{.Path}}" data-value="{{.Value}}" data-majority="{{.Majority}}"><code>{{.Path}}</code> <span class="value">{{if .Missing}}missing, RETREAT by default{{else}}{{.Value}}{{end}}</span>{{if .Inner}} &#8594; <span class="inputs">{{.Inputs}}</span> = <b>{{.Majority}}</b>{{end}}{{if .Children}}<ul>{{range .Children}}{{template "node" .}}{{end}}</ul>{{end}}</li>{{end}}
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
		PathHelp: pathHelp,
	}
	switch err := res.Verify(); {
	case len(res.OutOfTime()) > 0:
		p.Verdict, p.Inconclusive = outOfTimeText(res.OutOfTime()), true
	case res.TooManyFaults():
		p.Verdict, p.Inconclusive = tooManyFaultsText(res), true
	case err != nil:
		p.Verdict = err.Error()
	case !res.CommanderLoyal():
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
	// What each general received along each path: a loyal general relays
	// exactly that, so it is what a traitor in its place should have sent.
	received := make(map[string]byzantine.Order)
	for _, ev := range res.Trace {
		if ev.Fault != byzantine.Missing && ev.Fault != byzantine.Drop && ev.Rejected == "" {
			received[recvKey(ev.Message.To, ev.Message.Path)] = ev.Message.Order
		}
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
		for _, ev := range res.Trace {
			if ev.Round != r {
				continue
			}
			if len(rr.Messages) == maxReportMessages {
				rr.Omitted++
				continue
			}
			rm := reportLine(res, received, ev)
			if rm.Lie {
				rr.Lies++
			}
			if rm.Refused != "" {
				rr.Refused++
			}
			rr.Messages = append(rr.Messages, rm)
		}
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
	if out.Inner {
		in := []string{string(n.Value)}
		for _, c := range n.Children {
			in = append(in, string(c.Majority))
		}
		out.Inputs = "majority(" + strings.Join(in, ", ") + ")"
	}
	for _, c := range n.Children {
		out.Children = append(out.Children, reportTreeNode(c))
	}
	return out
}

func recvKey(to byzantine.ID, path []byzantine.ID) string {
	return fmt.Sprint(to, path)
}

// reportLine describes one trace event: what was sent, what a loyal
// general in the sender's place would have sent (the commander's order,
// or the value the sender itself received along the path's prefix), and
// why the receiver refused it, if it did.
func reportLine(res *byzantine.Result, received map[string]byzantine.Order, ev byzantine.TraceEvent) reportMsg {
	msg := ev.Message
	from := int(msg.From)
	rm := reportMsg{From: from, To: int(msg.To), Path: byzantine.Message{Path: msg.Path}.Chain(), Sent: string(msg.Order)}
	if len(rm.Path) > 0 && rm.Path[0] == ':' {
		rm.Path = rm.Path[1:]
	}
	traitor := from >= 0 && from < len(res.Generals) && !res.Generals[from].Loyal
	rm.Traitor = traitor
	loyal, known := byzantine.Order(""), false
	switch {
	case len(msg.Path) == 1:
		loyal, known = res.Config.Order, true
	case len(msg.Path) > 1:
		loyal, known = received[recvKey(msg.From, msg.Path[:len(msg.Path)-1])]
		if !known && res.Config.Algorithm == byzantine.OM {
			loyal, known = byzantine.Retreat, true // B6: RETREAT for what never came
		}
	}
	switch {
	case !traitor:
		rm.Loyal = rm.Sent
	case known:
		rm.Loyal = string(loyal)
	default:
		rm.Loyal = "nothing (it never received this chain)"
	}
	if ev.Fault == byzantine.Missing {
		rm.Sent = "nothing"
		rm.Refused, rm.Why = "", ""
		if !known {
			rm.Loyal = string(byzantine.Retreat)
		}
		rm.Lie = traitor
		rm.Fault = "missing: the receiver counts RETREAT"
		return rm
	}
	rm.Lie = traitor && rm.Sent != rm.Loyal
	if ev.Fault != byzantine.Deliver {
		rm.Fault = ev.Fault.String()
	}
	if ev.Rejected != "" {
		rm.Refused, rm.Why = string(ev.Rejected), ev.Rejected.Describe()
	}
	return rm
}
