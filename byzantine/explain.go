package byzantine

import (
	"fmt"
	"slices"
	"strings"
)

// Explanation says how one loyal lieutenant reached its decision: for OM
// the tree of values it held, path by path, and the majority taken at each
// level (B6 step 3); for SM its set V and the first chain that brought
// each order (B9).
type Explanation struct {
	// Algorithm is the run's algorithm.
	Algorithm Algorithm `json:"algorithm"`
	// Decision is the lieutenant's decision.
	Decision Order `json:"decision"`
	// Tree is the OM decision tree, rooted at the commander's order.
	Tree *ExplainNode `json:"tree,omitempty"`
	// Values are V for SM, in the order the orders were first accepted.
	Values []ExplainValue `json:"values,omitempty"`
}

// ExplainNode is one node of an OM lieutenant's decision tree: the value
// it received along one relay path, and the value of the sub-execution
// OM(m-d) rooted there.
type ExplainNode struct {
	// Path is the relay path, starting with the commander (0).
	Path []ID `json:"path"`
	// Value is the value received along Path, or RETREAT when the message
	// never came (then Missing is set).
	Value Order `json:"value"`
	// Missing is true when no message came along Path (A3): Value is the
	// default RETREAT.
	Missing bool `json:"missing,omitempty"`
	// Majority is the value of the sub-execution: majority(Value, the
	// children's Majority) for inner nodes, Value for leaves (OM(0)).
	Majority Order `json:"majority"`
	// Children are the paths relayed one step further by the other
	// lieutenants, in id order.
	Children []*ExplainNode `json:"children,omitempty"`
}

// ExplainValue is one order of an SM lieutenant's set V.
type ExplainValue struct {
	// Order is the value.
	Order Order `json:"order"`
	// Chain is the first accepted chain that carried it ("attack:0:2").
	Chain string `json:"chain"`
	// Path is that chain's signers, in order (0 first, the commander).
	Path []ID `json:"path,omitempty"`
	// Round is the round in which that chain arrived.
	Round int `json:"round"`
}

// MaxExplainNodes bounds the size of an OM decision tree that Explain
// builds (a tree has 1 + (n-2) + (n-2)(n-3) + ... nodes).
const MaxExplainNodes = 100_000

// explainNodes returns the size of an OM lieutenant's tree for n and m.
func explainNodes(n, m int) int {
	total, term := 1, 1
	for d := 1; d <= m; d++ {
		term *= n - 1 - d
		total += term
		if total > MaxExplainNodes {
			return total
		}
	}
	return total
}

// Explain returns how the general decided; call it after the last round.
// A commander's explanation holds only its decision.
func (g *General) Explain() *Explanation {
	e := &Explanation{Algorithm: g.cfg.Algorithm, Decision: g.Decide()}
	if g.id == 0 {
		return e
	}
	switch g.cfg.Algorithm {
	case OM:
		clear(g.om.used)
		e.Tree = g.omExplain(0, 0, []ID{0})
	case SM:
		e.Values = slices.Clone(g.sm.firsts)
	}
	return e
}

// omExplain mirrors omResolve and records every node.
func (g *General) omExplain(d, idx int, path []ID) *ExplainNode {
	o := &g.om
	node := &ExplainNode{Path: slices.Clone(path), Value: o.levels[d][idx]}
	if node.Value == "" {
		node.Value, node.Missing = Retreat, true
	}
	if d == g.m {
		node.Majority = node.Value
		return node
	}
	r := o.radix[d+1]
	var rank int
	vs := []Order{node.Value}
	for q := 1; q < g.n; q++ {
		if o.used[q] || ID(q) == g.id {
			continue
		}
		o.used[q] = true
		child := g.omExplain(d+1, idx*r+rank, append(path, ID(q)))
		o.used[q] = false
		node.Children = append(node.Children, child)
		vs = append(vs, child.Majority)
		rank++
	}
	node.Majority = Majority(g.cfg.Majority, vs)
	return node
}

// Relabel returns a copy of e with every general renamed by rename: the
// paths of an OM tree and the chains of SM's V. An interactive run uses it
// to show an instance's explanation in the generals' own ids (rename is
// then InstanceID of the instance).
func (e *Explanation) Relabel(rename func(ID) ID) *Explanation {
	if e == nil {
		return nil
	}
	out := &Explanation{Algorithm: e.Algorithm, Decision: e.Decision}
	var walk func(n *ExplainNode) *ExplainNode
	walk = func(n *ExplainNode) *ExplainNode {
		c := &ExplainNode{Value: n.Value, Missing: n.Missing, Majority: n.Majority, Path: make([]ID, len(n.Path))}
		for k, id := range n.Path {
			c.Path[k] = rename(id)
		}
		for _, ch := range n.Children {
			c.Children = append(c.Children, walk(ch))
		}
		return c
	}
	if e.Tree != nil {
		out.Tree = walk(e.Tree)
	}
	for _, v := range e.Values {
		m := Message{Order: v.Order, Path: make([]ID, len(v.Path))}
		for k, id := range v.Path {
			m.Path[k] = rename(id)
		}
		v.Path, v.Chain = m.Path, m.Chain()
		out.Values = append(out.Values, v)
	}
	return out
}

// Why says in one line, for a lieutenant, why it decided as it did: for
// OM the majority at the root of its tree, of the value it received from
// the commander and of what each other lieutenant's sub-execution gave
// ("majority(attack from 0, retreat via 2, attack via 3) = attack"); for
// SM the set V of signed orders it accepted and choice(V).
func (e *Explanation) Why() string {
	switch {
	case e.Tree != nil:
		n := e.Tree
		from := fmt.Sprintf("%s from %d", n.Value, n.Path[0])
		if n.Missing {
			from = fmt.Sprintf("nothing from %d (%s by default)", n.Path[0], n.Value)
		}
		if len(n.Children) == 0 {
			return from
		}
		vs := []string{from}
		for _, c := range n.Children {
			vs = append(vs, fmt.Sprintf("%s via %d", c.Majority, c.Path[len(c.Path)-1]))
		}
		return fmt.Sprintf("majority(%s) = %s", joinOrders(vs), n.Majority)
	case e.Algorithm == SM:
		var vs []string
		for _, v := range e.Values {
			vs = append(vs, v.Order.String())
		}
		if len(vs) == 0 {
			return fmt.Sprintf("it accepted no signed order: V = {}, choice(V) = %s", e.Decision)
		}
		return fmt.Sprintf("the signed orders it accepted are V = {%s}, choice(V) = %s", joinOrders(vs), e.Decision)
	}
	return "the commander obeys its own order"
}

// String formats a path as the spec writes it: 0:2:3.
func pathString(p []ID) string {
	s := ""
	for i, id := range p {
		if i > 0 {
			s += ":"
		}
		s += fmt.Sprint(int(id))
	}
	return s
}

// Lines formats the explanation for people, one line per tree node or
// value of V.
func (e *Explanation) Lines() []string {
	var out []string
	if e.Tree != nil {
		width := 0
		var measure func(n *ExplainNode, depth int)
		measure = func(n *ExplainNode, depth int) {
			width = max(width, 2*depth+len(pathString(n.Path)))
			for _, c := range n.Children {
				measure(c, depth+1)
			}
		}
		measure(e.Tree, 0)
		var walk func(n *ExplainNode, depth int)
		walk = func(n *ExplainNode, depth int) {
			v := string(n.Value)
			if n.Missing {
				v = "missing -> " + string(Retreat) + " (default)"
			}
			line := fmt.Sprintf("%-*s %s", width, strings.Repeat("  ", depth)+pathString(n.Path), v)
			if len(n.Children) > 0 {
				vs := []string{string(n.Value)}
				for _, c := range n.Children {
					vs = append(vs, string(c.Majority))
				}
				line += fmt.Sprintf("   majority(%s) = %s", joinOrders(vs), n.Majority)
			}
			out = append(out, line)
			for _, c := range n.Children {
				walk(c, depth+1)
			}
		}
		walk(e.Tree, 0)
	}
	if e.Algorithm == SM {
		var vs []string
		for _, v := range e.Values {
			vs = append(vs, v.Order.String())
		}
		out = append(out, fmt.Sprintf("V = {%s}, choice(V) = %s", joinOrders(vs), e.Decision))
		for _, v := range e.Values {
			out = append(out, fmt.Sprintf("  %-10s first by %s in round %d", v.Order, v.Chain, v.Round))
		}
	}
	return out
}

func joinOrders(vs []string) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += v
	}
	return s
}

// Missing returns the messages an OM lieutenant expected and never
// received, one per relay path (From is the path's last general, Round
// its length minus one); it counted each as the default RETREAT (B6, A3).
// It is nil for the commander and for SM, where a loyal lieutenant relays
// only new values and absence is not an error.
func (g *General) Missing() []Message {
	if g.id == 0 || g.cfg.Algorithm != OM {
		return nil
	}
	var out []Message
	var walk func(n *ExplainNode)
	walk = func(n *ExplainNode) {
		if n.Missing {
			out = append(out, Message{From: n.Path[len(n.Path)-1], To: g.id, Round: len(n.Path) - 1, Seq: g.cfg.Seq, Run: g.run, Path: n.Path})
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	clear(g.om.used)
	walk(g.omExplain(0, 0, []ID{0}))
	return out
}
