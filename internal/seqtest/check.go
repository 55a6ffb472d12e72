package seqtest

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/seq"
)

// checkAgainstSequence checks the names and run arguments of f against its
// sequence when the file is read (docs/testing.md, "A test file"): each
// case's args fit the sequence's signature (the rules of `run --arg`,
// runargs.Problems); each mocked tool is one the sequence calls; each
// group, wait group, tool and slot named under expect is one the sequence
// has; each schedule check's entry is one of its schedule. Every problem
// has its line and, for a misspelt name, the name it most likely means.
// A sequence that cannot be read or parsed gives no problem here: every
// case then fails with the sequence's own problems (RunFileWith).
func checkAgainstSequence(f *File) []*ParseError {
	data, err := os.ReadFile(f.Sequence)
	if err != nil {
		return nil
	}
	s, err := seq.ParseFile(f.Sequence, data)
	if err != nil {
		return nil
	}
	var out []*ParseError
	add := func(line int, format string, a ...any) {
		out = append(out, &ParseError{Line: line, Message: fmt.Sprintf(format, a...)})
	}
	var tools, groups, waits, slots []string
	groupTools := map[string][]string{}
	for _, g := range s.Groups {
		groups = append(groups, g.Name)
		if g.WaitFor != nil {
			waits = append(waits, g.Name)
		}
		for _, c := range g.Tools {
			if !slices.Contains(tools, c.Tool) {
				tools = append(tools, c.Tool)
			}
			if c.As != "" && !slices.Contains(slots, c.As) {
				slots = append(slots, c.As)
			}
			if !slices.Contains(groupTools[g.Name], c.Tool) {
				groupTools[g.Name] = append(groupTools[g.Name], c.Tool)
			}
		}
		for k := range g.Out {
			if !slices.Contains(slots, k) {
				slots = append(slots, k)
			}
		}
	}
	sort.Strings(slots)
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	for ci := range f.Cases {
		c := &f.Cases[ci]
		probs := runargs.Problems(s.Signature, c.Args)
		for _, k := range slices.Sorted(maps.Keys(probs)) {
			line := c.ArgLines[k]
			if line == 0 {
				line = c.ArgsLine
			}
			if line == 0 {
				line = c.Line
			}
			msg := probs[k]
			if _, known := s.Signature[k]; !known {
				msg = fmt.Sprintf("unknown argument %q%s; the sequence takes %s", k, didYouMean(k, s.Signature.Keys()), runargs.SignatureText(s.Signature))
			}
			add(line, "case %q: args: %s (the run would fail before its first group; fix the case's args)", c.Name, msg)
		}
		for _, tool := range slices.Sorted(maps.Keys(c.Mocks)) {
			if m := c.Mocks[tool]; !slices.Contains(tools, tool) {
				line := c.Line
				if m != nil {
					line = m.Line
				}
				add(line, "case %q mocks the tool %q%s, which the sequence %s never calls; its tools are %s: fix the name or remove the mock", c.Name, tool, didYouMean(tool, tools), s.Name, list(tools))
			}
		}
		for _, n := range c.Expect.names {
			switch n.field {
			case "groups":
				if !slices.Contains(groups, n.name) {
					add(n.line, "case %q: expect.groups: the sequence %s has no group %q%s; its groups are %s", c.Name, s.Name, n.name, didYouMean(n.name, groups), list(groups))
				}
			case "waits":
				if !slices.Contains(waits, n.name) {
					have := "it has no wait_for group"
					if len(waits) > 0 {
						have = "its wait groups are " + list(waits)
					}
					add(n.line, "case %q: expect.waits: the sequence %s has no wait_for group %q%s; %s", c.Name, s.Name, n.name, didYouMean(n.name, waits), have)
				}
			case "calls", "call_counts":
				if !slices.Contains(tools, n.name) {
					add(n.line, "case %q: expect.%s: the sequence %s never calls the tool %q%s; its tools are %s", c.Name, n.field, s.Name, n.name, didYouMean(n.name, tools), list(tools))
				}
			case "attempts":
				g, tool, inGroup := strings.Cut(n.name, "/")
				switch {
				case !inGroup && !slices.Contains(tools, n.name):
					add(n.line, "case %q: expect.attempts: the sequence %s never calls the tool %q%s; its tools are %s (or name GROUP/TOOL)", c.Name, s.Name, n.name, didYouMean(n.name, tools), list(tools))
				case inGroup && !slices.Contains(groups, g):
					add(n.line, "case %q: expect.attempts: %q: the sequence %s has no group %q%s; its groups are %s", c.Name, n.name, s.Name, g, didYouMean(g, groups), list(groups))
				case inGroup && !slices.Contains(groupTools[g], tool):
					add(n.line, "case %q: expect.attempts: %q: the group %q never calls the tool %q%s; its tools are %s", c.Name, n.name, g, tool, didYouMean(tool, groupTools[g]), list(groupTools[g]))
				}
			case "slots":
				if !slices.Contains(slots, n.name) {
					add(n.line, "case %q: expect: the sequence %s has no slot %q%s (a group's out); its slots are %s", c.Name, s.Name, n.name, didYouMean(n.name, slots), list(slots))
				}
			}
		}
	}
	var entries []string
	for _, e := range s.ScheduleEntries() {
		entries = append(entries, e.Name)
	}
	for _, sc := range f.Schedules {
		if s.Entry(sc.Entry) != nil {
			continue
		}
		line := sc.EntryLine
		if line == 0 {
			line = sc.Line
		}
		have := "it has no schedule"
		if len(entries) > 0 {
			have = "its entries are " + strings.Join(entries, ", ")
		}
		add(line, "the sequence %s has no schedule entry %q%s (%s)", s.Name, sc.Entry, didYouMean(sc.Entry, entries), have)
	}
	return out
}
