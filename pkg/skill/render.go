package skill

import (
	"fmt"
	"strings"
)

// Render returns the text injected when s activates (docs/skills.md, "What is injected"): for
// a SKILL.md its Body as is; for a skill.yaml the deterministic Markdown
// rendering of its prompt, then its steps in dependency order, then its
// guardrails and refs (the same text as Body). It never fails: a record
// whose steps were not validated (a dependency cycle) renders its steps in
// file order.
func Render(s *Skill) string {
	if s.Format != FormatYAML {
		return s.Body
	}
	p := &parser{}
	p.stepPos = make([]stepPos, len(s.Steps))
	order, ok := p.checkSteps(s.Steps)
	if !ok {
		order = make([]int, len(s.Steps))
		for i := range order {
			order[i] = i
		}
	}
	return render(s, order)
}

// render writes a skill.yaml as Markdown:
//
//	PROMPT
//
//	## Steps
//
//	### 1. NAME
//
//	(after: DEP, DEP)
//
//	STEP PROMPT
//
//	## Guardrails
//
//	- **ID** (enforced): MESSAGE
//
//	## References
//
//	- **NAME** (TYPE, optional): VALUE
func render(s *Skill, order []int) string {
	var b strings.Builder
	if s.Prompt != "" {
		b.WriteString(s.Prompt)
		b.WriteString("\n")
	}
	section := func(title string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## " + title + "\n")
	}
	if len(order) > 0 {
		section("Steps")
		for n, i := range order {
			st := s.Steps[i]
			fmt.Fprintf(&b, "\n### %d. %s\n\n", n+1, oneLine(st.Name))
			if len(st.Depends) > 0 {
				fmt.Fprintf(&b, "(after: %s)\n\n", strings.Join(st.Depends, ", "))
			}
			b.WriteString(strings.TrimSpace(st.Prompt) + "\n")
		}
	}
	if len(s.Guardrails) > 0 {
		section("Guardrails")
		b.WriteString("\n")
		for _, g := range s.Guardrails {
			tag := ""
			if g.Enforced {
				tag = " (enforced)"
			}
			fmt.Fprintf(&b, "- **%s**%s: %s\n", oneLine(g.ID), tag, indentCont(g.Message))
		}
	}
	if len(s.Refs) > 0 {
		section("References")
		b.WriteString("\n")
		for _, r := range s.Refs {
			opt := ""
			if r.Optional {
				opt = ", optional"
			}
			fmt.Fprintf(&b, "- **%s** (%s%s): %s\n", oneLine(r.Name), r.Type, opt, oneLine(r.Value))
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// indentCont indents the continuation lines of a list item's text so that
// they stay inside the item.
func indentCont(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
