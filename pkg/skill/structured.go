package skill

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/internal/suggest"
)

// items reads a list of mappings (steps, refs, guardrails), checking every
// key against allowed; it calls fn for each item with its fields by key.
// Unknown keys inside these items are errors: the structure is skillbus's own
// and a misspelt key (e.g. "depend") would otherwise change the skill's
// meaning silently.
func (p *parser) items(n *yaml.Node, field string, allowed []string, fn func(i int, item *yaml.Node, f map[string]*yaml.Node)) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n.Line, field, ErrWrongType, "%s must be a list of mappings, not %s", field, kindName(n))
		return
	}
	for i, it := range n.Content {
		it = deref(it)
		path := fmt.Sprintf("%s[%d]", field, i+1)
		if it.Kind != yaml.MappingNode {
			p.errf(it.Line, path, ErrWrongType, "%s item %d must be a mapping (%s), not %s", field, i+1, strings.Join(allowed, ", "), kindName(it))
			continue
		}
		f := map[string]*yaml.Node{}
		for j := 0; j+1 < len(it.Content); j += 2 {
			k, v := deref(it.Content[j]), deref(it.Content[j+1])
			if !slices.Contains(allowed, k.Value) {
				hint := ""
				if s := suggest.Closest(k.Value, allowed); s != "" {
					hint = fmt.Sprintf("; did you mean %q?", s)
				}
				p.errf(k.Line, path+"."+k.Value, ErrUnknownField, "%s item %d: unknown field %q (allowed: %s)%s", field, i+1, k.Value, strings.Join(allowed, ", "), hint)
				continue
			}
			if _, dup := f[k.Value]; dup {
				p.errf(k.Line, path+"."+k.Value, ErrDuplicate, "%s item %d: field %q is given twice", field, i+1, k.Value)
				continue
			}
			f[k.Value] = v
		}
		fn(i, it, f)
	}
}

// required reads the text field key of an item and reports it when absent
// or empty.
func (p *parser) required(f map[string]*yaml.Node, item *yaml.Node, path, key string) string {
	v, ok := f[key]
	if !ok {
		p.errf(item.Line, path+"."+key, ErrMissingField, "%s: %q is missing", path, key)
		return ""
	}
	s, ok := p.str(v, path+"."+key)
	if ok && s == "" {
		p.errf(v.Line, path+"."+key, ErrMissingField, "%s: %q is empty", path, key)
	}
	return s
}

// stepPos remembers where each step and its depends are, for errors found
// after reading (unknown dependencies, cycles).
type stepPos struct{ line, dependsLine int }

func (p *parser) steps(n *yaml.Node) []Step {
	var out []Step
	p.stepPos = nil
	p.items(n, "steps", []string{"name", "prompt", "depends"}, func(i int, item *yaml.Node, f map[string]*yaml.Node) {
		path := fmt.Sprintf("steps[%d]", i+1)
		st := Step{Name: p.required(f, item, path, "name"), Prompt: p.required(f, item, path, "prompt")}
		pos := stepPos{line: item.Line}
		if d, ok := f["depends"]; ok {
			st.Depends = p.list(d, path+".depends", splitComma)
			pos.dependsLine = d.Line
		}
		out = append(out, st)
		p.stepPos = append(p.stepPos, pos)
	})
	return out
}

func (p *parser) refs(n *yaml.Node) []Ref {
	var out []Ref
	seen := map[string]bool{}
	p.items(n, "refs", []string{"name", "type", "value", "optional"}, func(i int, item *yaml.Node, f map[string]*yaml.Node) {
		path := fmt.Sprintf("refs[%d]", i+1)
		r := Ref{Name: p.required(f, item, path, "name"), Value: p.required(f, item, path, "value")}
		if r.Name != "" {
			if seen[r.Name] {
				p.errf(item.Line, path+".name", ErrDuplicate, "%s: ref name %q is used twice; ref names must be unique", path, r.Name)
			}
			seen[r.Name] = true
		}
		r.line = item.Line
		if v, ok := f["value"]; ok {
			r.line = v.Line
		}
		if t := p.required(f, item, path, "type"); t != "" {
			switch RefType(t) {
			case RefFile:
				r.Type = RefFile
				if msg := fileRefProblem(r.Value); r.Value != "" && msg != "" {
					p.errf(r.line, path+".value", ErrBadValue, "%s: %s", path, msg)
				}
			case RefSkill, RefTool, RefSequence:
				r.Type = RefType(t)
			case RefURL:
				r.Type = RefURL
				if u, err := url.Parse(r.Value); r.Value != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
					p.errf(f["value"].Line, path+".value", ErrBadValue, "%s: %q is not an absolute http(s) URL", path, r.Value)
				}
			default:
				p.errf(f["type"].Line, path+".type", ErrBadValue, "%s: type %q is not allowed; use file, url, skill, tool or sequence", path, t)
			}
		}
		if o, ok := f["optional"]; ok {
			r.Optional, _ = p.boolean(o, path+".optional")
		}
		out = append(out, r)
	})
	return out
}

func (p *parser) guardrails(n *yaml.Node) []Guardrail {
	var out []Guardrail
	seen := map[string]bool{}
	p.items(n, "guardrails", []string{"id", "message", "enforced"}, func(i int, item *yaml.Node, f map[string]*yaml.Node) {
		path := fmt.Sprintf("guardrails[%d]", i+1)
		g := Guardrail{ID: p.required(f, item, path, "id"), Message: p.required(f, item, path, "message")}
		if g.ID != "" {
			if seen[g.ID] {
				p.errf(item.Line, path+".id", ErrDuplicate, "%s: guardrail id %q is used twice; ids must be unique", path, g.ID)
			}
			seen[g.ID] = true
		}
		if e, ok := f["enforced"]; ok {
			g.Enforced, _ = p.boolean(e, path+".enforced")
		}
		out = append(out, g)
	})
	return out
}

// checkSteps checks step names (unique), dependencies (existing, acyclic)
// and returns the steps' indexes in dependency order: a step comes after
// every step it depends on; among steps that are ready together, the one
// declared first comes first.
func (p *parser) checkSteps(steps []Step) ([]int, bool) {
	ok := true
	index := map[string]int{}
	for i, st := range steps {
		if st.Name == "" {
			ok = false
			continue
		}
		if j, dup := index[st.Name]; dup {
			p.errf(p.stepPos[i].line, fmt.Sprintf("steps[%d].name", i+1), ErrDuplicate,
				"steps[%d]: step name %q is already used by steps[%d]; step names must be unique", i+1, st.Name, j+1)
			ok = false
			continue
		}
		index[st.Name] = i
	}
	for i, st := range steps {
		for _, d := range st.Depends {
			if _, found := index[d]; !found {
				p.errf(p.stepPos[i].dependsLine, fmt.Sprintf("steps[%d].depends", i+1), ErrUnknownStep,
					"steps[%d] %q depends on %q, which is not a step (steps: %s)", i+1, st.Name, d, stepNames(steps))
				ok = false
			} else if d == st.Name {
				p.errf(p.stepPos[i].dependsLine, fmt.Sprintf("steps[%d].depends", i+1), ErrCycle,
					"steps[%d] %q depends on itself; remove it from its depends", i+1, st.Name)
				ok = false
			}
		}
	}
	if !ok {
		return nil, false
	}
	// Cycle detection by depth-first search, reporting the first cycle.
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(steps))
	var stack []int
	var cycle []int
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, d := range steps[i].Depends {
			j := index[d]
			if color[j] == grey {
				for k := len(stack) - 1; k >= 0; k-- {
					if stack[k] == j {
						cycle = append(append([]int{}, stack[k:]...), j)
						break
					}
				}
				return false
			}
			if color[j] == white && !visit(j) {
				return false
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return true
	}
	for i := range steps {
		if color[i] == white && !visit(i) {
			names := make([]string, len(cycle))
			for k, j := range cycle {
				names[k] = steps[j].Name
			}
			// The cycle was found following depends edges: a depends on b
			// depends on c …; print it in that direction.
			p.errf(p.stepPos[cycle[0]].dependsLine, fmt.Sprintf("steps[%d].depends", cycle[0]+1), ErrCycle,
				"steps form a dependency cycle: %s (each depends on the next); remove one of these depends", strings.Join(names, " → "))
			return nil, false
		}
	}
	// Kahn's algorithm, ready steps taken in declaration order.
	indeg := make([]int, len(steps))
	users := make([][]int, len(steps))
	for i, st := range steps {
		for _, d := range st.Depends {
			indeg[i]++
			users[index[d]] = append(users[index[d]], i)
		}
	}
	order := make([]int, 0, len(steps))
	done := make([]bool, len(steps))
	for len(order) < len(steps) {
		for i := range steps {
			if !done[i] && indeg[i] == 0 {
				done[i] = true
				order = append(order, i)
				for _, u := range users[i] {
					indeg[u]--
				}
				break
			}
		}
	}
	return order, true
}

func stepNames(steps []Step) string {
	q := make([]string, 0, len(steps))
	for _, s := range steps {
		q = append(q, fmt.Sprintf("%q", s.Name))
	}
	return strings.Join(q, ", ")
}
