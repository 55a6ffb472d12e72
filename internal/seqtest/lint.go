package seqtest

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Warning is a problem of a test file that does not stop it from running.
type Warning struct {
	Line    int
	Message string
}

// Lint checks f against its sequence for what does not stop it from
// running: a mock response whose selectors no call fits, a signal that no
// wait group of the sequence takes or whose values do not fit its out (a
// case with such a signal fails before it runs). A mocked tool that the
// sequence never calls is refused by Load already (docs/testing.md, "A
// test file"); Lint warns of it too for a File that did not come from Load. A sequence that does not parse gives an
// error (skillbus validate reports it at the sequence file too).
func Lint(f *File) ([]Warning, error) {
	data, err := os.ReadFile(f.Sequence)
	if err != nil {
		return nil, err
	}
	s, err := seq.ParseFile(f.Sequence, data)
	if err != nil {
		return nil, fmt.Errorf("the sequence under test %s does not parse", f.Sequence)
	}
	calls := map[string]bool{}
	for _, g := range s.Groups {
		for _, c := range g.Tools {
			calls[c.Tool] = true
		}
	}
	var ws []Warning
	for _, c := range f.Cases {
		ws = append(ws, signalProblems(s, &c)...)
		for _, tool := range slices.Sorted(maps.Keys(c.Mocks)) {
			if !calls[tool] {
				ws = append(ws, Warning{Line: c.Mocks[tool].Line, Message: fmt.Sprintf("case %q mocks the tool %q, which the sequence %s never calls", c.Name, tool, s.Name)})
				continue
			}
			for _, r := range c.Mocks[tool].Responses {
				if msg := deadSelector(s, tool, &r); msg != "" {
					ws = append(ws, Warning{Line: r.Line, Message: fmt.Sprintf("case %q: a response of the mock of %q %s, so it never answers", c.Name, tool, msg)})
				}
			}
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Line < ws[j].Line })
	return ws, nil
}

// deadSelector says why no call of s can fit r's group, position, item and
// index selectors ("" when some call can): a group the sequence does not
// have, a position where the group does not call the tool, an item or
// index on a tool that no for_each call makes.
func deadSelector(s *seq.Sequence, tool string, r *Response) string {
	if r.Group == "" && r.Position == 0 && r.Item == nil && r.Index == nil {
		return ""
	}
	hasGroup := false
	for _, g := range s.Groups {
		if r.Group != "" && g.Name != r.Group {
			continue
		}
		hasGroup = true
		for ci, c := range g.Tools {
			if c.Tool != tool || r.Position != 0 && r.Position != ci+1 {
				continue
			}
			if (r.Item != nil || r.Index != nil) && c.ForEach == "" {
				continue
			}
			return ""
		}
	}
	switch {
	case !hasGroup:
		return fmt.Sprintf("names the group %q, which the sequence %s does not have", r.Group, s.Name)
	case r.Item != nil || r.Index != nil:
		return "chooses a for_each item (item or index), but no for_each call of the tool fits its group and position"
	}
	where := "no group"
	if r.Group != "" {
		where = fmt.Sprintf("the group %q", r.Group)
	}
	if r.Position == 0 {
		return fmt.Sprintf("names the group %q, which does not call the tool", r.Group)
	}
	return fmt.Sprintf("names position %d, where %s calls the tool", r.Position, where)
}
