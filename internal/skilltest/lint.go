package skilltest

import (
	"fmt"
	"slices"
	"sort"

	"github.com/skillbus/skillbus/internal/seqtest"
)

// Lint checks f against its skills: a skill name that no loaded skill has
// (in a mount or an expectation; a renamed skill or a typo) is a warning;
// a mount in a case that expects an error is not (the refusal of an
// unknown mount may be what it tests).
// A skill that does not load gives an error (skillbus validate reports it
// at the skill's own file too).
func Lint(f *File) ([]seqtest.Warning, error) {
	skills, err := LoadSkills(f)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range skills {
		names = append(names, s.Name)
	}
	var ws []seqtest.Warning
	unknown := func(line int, c *Case, where, name string) {
		if !slices.Contains(names, name) {
			ws = append(ws, seqtest.Warning{Line: line, Message: fmt.Sprintf("case %q names the skill %q in %s, but no such skill is loaded (loaded: %s); add it under skills: or fix the name", c.Name, name, where, list(names))})
		}
	}
	for i := range f.Cases {
		c := &f.Cases[i]
		// A case that expects an error may mount an unknown skill on
		// purpose: that refusal is what it tests.
		for _, t := range append(slices.Clone(c.History), c.Turn) {
			for _, m := range t.Mounts {
				if c.Expect.Error == "" {
					unknown(t.Line, c, "mounts", m)
				}
			}
		}
		for _, n := range c.Expect.SkillOrder {
			unknown(c.Expect.Skills[n].Line, c, "expect.skills", n)
		}
		for key, l := range map[string][]string{"expect.activated": c.Expect.Activated, "expect.active": c.Expect.Active, "expect.dropped": c.Expect.Dropped} {
			for _, n := range l {
				unknown(c.Line, c, key, n)
			}
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Line < ws[j].Line })
	return ws, nil
}
