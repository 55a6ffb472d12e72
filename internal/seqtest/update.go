package seqtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Update rewrites, in f's file, the expected slot values (expect.slots) of
// the cases marked `update: true` from the actual slots of their results
// (`skillbus test --update`, docs/testing.md). Only slots already listed
// under expect.slots are rewritten, and only those whose value differs;
// a slot the run did not write is left as it is. Only the lines of the
// rewritten values change, in their own style (a flow value {a: 1} stays
// on its line, with its comment; a block value stays a block); when that
// cannot be done, the file is re-encoded from its yaml.v3 node tree with
// two-space indentation, which keeps comments but not blank lines. It returns the
// number of values rewritten (0: the file is not written) and the write
// error, if any.
func Update(f *File, results []Result) (int, error) {
	byName := map[string]*Result{}
	for i := range results {
		if results[i].File == f.Path {
			byName[results[i].Case] = &results[i]
		}
	}
	var edits []slotEdit
	for i := range f.Cases {
		c := &f.Cases[i]
		r := byName[c.Name]
		if !c.Update || r == nil || r.Slots == nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(c.Expect.slotNodes)) {
			got, ok := r.Slots[k]
			if !ok || jsonEqual(c.Expect.Slots[k], got) {
				continue
			}
			edits = append(edits, slotEdit{c.Expect.slotNodes[k], got})
		}
	}
	if len(edits) == 0 {
		return 0, nil
	}
	src, err := os.ReadFile(f.Path)
	if err != nil {
		return 0, err
	}
	// First as text: each value's lines replaced, the rest of the file
	// byte for byte. When that cannot be done (a value sharing its line
	// with the next key) or does not read back as intended, the whole
	// document is re-encoded from the edited node tree.
	order := flatten(f.doc)
	out := src
	ok := true
	for i := len(edits) - 1; i >= 0 && ok; i-- { // bottom up: earlier lines stay put
		out, ok = splice(out, order, edits[i].old, edits[i].val)
	}
	ok = ok && readsBack(out, f, edits)
	for _, e := range edits {
		if err := replaceValue(e.old, e.val); err != nil {
			return 0, fmt.Errorf("%s:%d: %w", f.Path, e.old.Line, err)
		}
	}
	if !ok {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(f.doc); err != nil {
			return 0, fmt.Errorf("%s: %w", f.Path, err)
		}
		if err := enc.Close(); err != nil {
			return 0, fmt.Errorf("%s: %w", f.Path, err)
		}
		out = b.Bytes()
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return 0, err
	}
	return len(edits), os.WriteFile(f.Path, out, st.Mode().Perm())
}

// flatten lists every node of the document in document order.
func flatten(n *yaml.Node) []*yaml.Node {
	out := []*yaml.Node{n}
	for _, c := range n.Content {
		out = append(out, flatten(c)...)
	}
	return out
}

// splice replaces the text of node n in src (lines from n's start to the
// line before the next node, less trailing blank and comment lines) with
// v rendered in n's style: one flow line for a flow or scalar value, an
// indented block for a block value. ok is false when n's text cannot be
// told apart from its neighbours' (it sits in a flow mapping, or shares
// its last line with the next node).
func splice(src []byte, order []*yaml.Node, n *yaml.Node, v json.RawMessage) ([]byte, bool) {
	for _, p := range order {
		// In a flow mapping ({x: 1, y: 2}) the value's text ends
		// where the line does not: leave it to the re-encoding.
		if slices.Contains(p.Content, n) && p.Style&yaml.FlowStyle != 0 {
			return src, false
		}
	}
	sub := flatten(n)
	last := sub[len(sub)-1]
	end := -1 // the line of the next node after n's subtree (1-based), -1: none
	for i, x := range order {
		if x == last {
			for _, y := range order[i+1:] {
				if y.Line > 0 {
					end = y.Line
					break
				}
			}
			break
		}
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	maxLine := n.Line
	for _, x := range sub {
		maxLine = max(maxLine, x.Line)
	}
	if end == -1 {
		end = len(lines) + 1
	}
	if end <= maxLine || n.Line < 1 || n.Line > len(lines) {
		return src, false
	}
	stop := end - 1 // the span's last line
	for stop > maxLine {
		t := bytes.TrimSpace(lines[stop-1])
		if len(t) != 0 && t[0] != '#' {
			break
		}
		stop--
	}
	var x any
	if json.Unmarshal(orNull(v), &x) != nil {
		return src, false
	}
	var nn yaml.Node
	if nn.Encode(x) != nil {
		return src, false
	}
	block := n.Kind != yaml.ScalarNode && n.Style&yaml.FlowStyle == 0
	if block && (nn.Kind == yaml.ScalarNode || len(nn.Content) == 0) {
		return src, false // a block value cannot become a scalar or {} in place
	}
	if !block {
		setFlow(&nn)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if enc.Encode(&nn) != nil || enc.Close() != nil {
		return src, false
	}
	text := strings.TrimSuffix(b.String(), "\n")
	first := lines[n.Line-1]
	if n.Column < 1 || n.Column-1 > len(first) {
		return src, false
	}
	var repl string
	if block {
		pad := strings.Repeat(" ", n.Column-1)
		repl = pad + strings.ReplaceAll(text, "\n", "\n"+pad) + "\n"
	} else {
		if strings.Contains(text, "\n") {
			return src, false
		}
		repl = string(first[:n.Column-1]) + text
		if n.LineComment != "" {
			repl += " " + n.LineComment
		}
		repl += "\n"
	}
	var out bytes.Buffer
	for _, l := range lines[:n.Line-1] {
		out.Write(l)
	}
	out.WriteString(repl)
	for _, l := range lines[stop:] {
		out.Write(l)
	}
	return out.Bytes(), true
}

// slotEdit is one expected slot value to rewrite: its node and the value.
type slotEdit struct {
	old *yaml.Node
	val json.RawMessage
}

// readsBack reports whether the edited text parses as a test file with
// the same cases, each edited slot holding its new value.
func readsBack(text []byte, f *File, edits []slotEdit) bool {
	g, err := ParseFile(f.Path, text)
	if err != nil || len(g.Cases) != len(f.Cases) {
		return false
	}
	for i := range f.Cases {
		if f.Cases[i].Name != g.Cases[i].Name || len(f.Cases[i].Expect.Slots) != len(g.Cases[i].Expect.Slots) {
			return false
		}
	}
	for _, e := range edits {
		found := false
		for i := range f.Cases {
			for k, n := range f.Cases[i].Expect.slotNodes {
				if n == e.old {
					found = jsonEqual(g.Cases[i].Expect.Slots[k], e.val)
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// replaceValue puts the JSON value v in place of node n, keeping n's
// comments and, for a flow-style or scalar n, the flow style.
func replaceValue(n *yaml.Node, v json.RawMessage) error {
	var x any
	if err := json.Unmarshal(orNull(v), &x); err != nil {
		return err
	}
	var nn yaml.Node
	if err := nn.Encode(x); err != nil {
		return err
	}
	if n.Style&yaml.FlowStyle != 0 || n.Kind == yaml.ScalarNode {
		setFlow(&nn)
	}
	nn.HeadComment, nn.LineComment, nn.FootComment = n.HeadComment, n.LineComment, n.FootComment
	nn.Line, nn.Column = n.Line, n.Column
	*n = nn
	return nil
}

// setFlow makes n and its children flow style (a scalar keeps its own).
func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style |= yaml.FlowStyle
	}
	for _, c := range n.Content {
		setFlow(c)
	}
}
