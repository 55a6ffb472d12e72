package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/skillbus/skillbus/pkg/seq"
)

// flowEdge is one slot dataflow edge: the call (group gi, call ci; gi -1 for
// the run arguments) that provides slot to group to.
type flowEdge struct {
	from, call, to int
	slot           string
}

// dataflow lists the slot edges of s: for every `in` key of every group,
// an edge from each earlier call that writes it (`as`), or from the run
// arguments when no earlier group provides it (docs/sequences.md, Dataflow).
func dataflow(s *seq.Sequence) []flowEdge {
	var edges []flowEdge
	for j, g := range s.Groups {
		keys := make([]string, 0, len(g.In))
		for k := range g.In {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			found := false
			for i := j - 1; i >= 0 && !found; i-- {
				if _, ok := s.Groups[i].Out[k]; !ok {
					continue
				}
				found = true
				if s.Groups[i].WaitFor != nil { // the signal writes a wait group's slots
					edges = append(edges, flowEdge{from: i, call: 0, to: j, slot: k})
				}
				for ci, c := range s.Groups[i].Tools {
					if c.As == k {
						edges = append(edges, flowEdge{from: i, call: ci, to: j, slot: k})
					}
				}
			}
			if !found {
				edges = append(edges, flowEdge{from: -1, to: j, slot: k})
			}
		}
	}
	return edges
}

func callText(c seq.Call) string {
	t := c.Tool
	if c.ForEach != "" { // a fan-out: one call per item (docs/sequences.md, "for_each")
		t = "for each " + c.ForEachKey() + ": " + t
		if c.MaxParallel > 0 {
			t += fmt.Sprintf(" (≤%d at once)", c.MaxParallel)
		}
	}
	if c.As != "" {
		return t + " → " + c.As
	}
	return t
}

// mermaidText escapes text for a quoted Mermaid label: quotes and the HTML
// that Mermaid would render (a `<br>` in a when expression) become entity
// codes, "#" too so that literal entity text stays literal; newlines become
// spaces.
var mermaidText = strings.NewReplacer("#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ")

// GraphMermaid draws s as a Mermaid flowchart: one subgraph per group (in
// order, joined by thick arrows), its calls inside (side by side when the
// group is parallel, chained when not), the run arguments as a node, and a
// dotted arrow labelled with the slot from each call writing a slot to each
// later group reading it.
func GraphMermaid(s *seq.Sequence) string {
	q := mermaidText.Replace
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s\n---\nflowchart LR\n", q(s.Name+" "+s.Signature.String()))
	if len(s.Signature) > 0 {
		b.WriteString("  args([\"run arguments\"])\n")
	}
	for i, g := range s.Groups {
		label := fmt.Sprintf("%d. %s", i+1, g.Name)
		if g.When != "" {
			label += " — when " + g.When
		}
		fmt.Fprintf(&b, "  subgraph g%d[\"%s\"]\n    direction TB\n", i+1, q(label))
		if g.WaitFor != nil { // a hexagon: the run waits here, held by no worker
			fmt.Fprintf(&b, "    g%dc1{{\"%s\"}}\n", i+1, q(waitGraphText(g)))
		}
		for ci, c := range g.Tools {
			if c.ForEach != "" { // a stacked shape: many calls
				fmt.Fprintf(&b, "    g%dc%d[[\"%s\"]]\n", i+1, ci+1, q(callText(c)))
				continue
			}
			fmt.Fprintf(&b, "    g%dc%d[\"%s\"]\n", i+1, ci+1, q(callText(c)))
		}
		if !g.Parallel {
			for ci := 1; ci < len(g.Tools); ci++ {
				fmt.Fprintf(&b, "    g%dc%d --> g%dc%d\n", i+1, ci, i+1, ci+1)
			}
		}
		b.WriteString("  end\n")
	}
	for i := 1; i < len(s.Groups); i++ {
		fmt.Fprintf(&b, "  g%d ==> g%d\n", i, i+1)
	}
	for _, e := range dataflow(s) {
		if e.from < 0 {
			fmt.Fprintf(&b, "  args -. %s .-> g%d\n", q(e.slot), e.to+1)
		} else {
			fmt.Fprintf(&b, "  g%dc%d -. %s .-> g%d\n", e.from+1, e.call+1, q(e.slot), e.to+1)
		}
	}
	return b.String()
}

// GraphDOT draws s as a Graphviz digraph with the same content as
// GraphMermaid: a cluster per group, bold edges between consecutive groups,
// dashed slot edges (compound edges ending at the reading group's cluster).
func GraphDOT(s *seq.Sequence) string {
	q := func(t string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(t) + `"`
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n  compound=true;\n  label=%s;\n  labelloc=t;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n", q(s.Name), q(s.Name+" "+s.Signature.String()))
	if len(s.Signature) > 0 {
		b.WriteString("  args [label=\"run arguments\", shape=ellipse];\n")
	}
	for i, g := range s.Groups {
		label := fmt.Sprintf("%d. %s", i+1, g.Name)
		if g.When != "" {
			label += "\nwhen " + g.When
		}
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n    style=rounded;\n", i+1, q(label))
		if g.WaitFor != nil { // a hexagon: the run waits here, held by no worker
			fmt.Fprintf(&b, "    g%dc1 [label=%s, shape=hexagon, style=\"\"];\n", i+1, q(waitGraphText(g)))
		}
		for ci, c := range g.Tools {
			if c.ForEach != "" { // a stacked shape: many calls
				fmt.Fprintf(&b, "    g%dc%d [label=%s, shape=box3d, style=\"\"];\n", i+1, ci+1, q(callText(c)))
				continue
			}
			fmt.Fprintf(&b, "    g%dc%d [label=%s];\n", i+1, ci+1, q(callText(c)))
		}
		if !g.Parallel {
			for ci := 1; ci < len(g.Tools); ci++ {
				fmt.Fprintf(&b, "    g%dc%d -> g%dc%d;\n", i+1, ci, i+1, ci+1)
			}
		}
		b.WriteString("  }\n")
	}
	for i := 1; i < len(s.Groups); i++ {
		fmt.Fprintf(&b, "  g%dc1 -> g%dc1 [ltail=cluster_%d, lhead=cluster_%d, style=bold];\n", i, i+1, i, i+1)
	}
	for _, e := range dataflow(s) {
		if e.from < 0 {
			fmt.Fprintf(&b, "  args -> g%dc1 [lhead=cluster_%d, style=dashed, label=%s];\n", e.to+1, e.to+1, q(e.slot))
		} else {
			fmt.Fprintf(&b, "  g%dc%d -> g%dc1 [lhead=cluster_%d, style=dashed, label=%s];\n", e.from+1, e.call+1, e.to+1, e.to+1, q(e.slot))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// waitGraphText is the label of a wait group's node: what it waits for
// and what the signal brings (docs/sequences.md, "wait_for").
func waitGraphText(g seq.Group) string {
	w := g.WaitFor
	switch w.Kind() {
	case seq.WaitSignal:
		t := fmt.Sprintf("wait for signal %s (timeout %s)", w.Signal, w.Timeout)
		if len(g.Out) > 0 {
			t += " → " + seq.Signature(g.Out).String()
		}
		return t
	case seq.WaitUntil:
		return "wait until " + w.UntilKey()
	}
	return "wait " + w.Duration.String()
}
