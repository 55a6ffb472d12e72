package skillface

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// toolPattern is one parsed allowed-tools or disallowed-tools entry (see the
// package documentation, "Tool patterns").
type toolPattern struct {
	name string // tool name or path.Match pattern
	glob bool   // name holds *, ? or [
	mcp  bool   // name is "mcp__server": also matches "mcp__server__*"
	spec string // the specifier; "" = any call (no parentheses, or "(*)")
}

// parseToolPattern parses "Name" or "Name(specifier)".
func parseToolPattern(s string) (toolPattern, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return toolPattern{}, fmt.Errorf("empty tool pattern: write a tool name such as Read or a pattern such as Bash(git:*)")
	}
	var p toolPattern
	if i := strings.IndexByte(t, '('); i >= 0 {
		if !strings.HasSuffix(t, ")") {
			return toolPattern{}, fmt.Errorf("tool pattern %q opens a parenthesis it does not close: write Name(specifier), e.g. Bash(git:*)", s)
		}
		p.name = strings.TrimSpace(t[:i])
		p.spec = strings.TrimSpace(t[i+1 : len(t)-1])
		if p.spec == "" {
			return toolPattern{}, fmt.Errorf("tool pattern %q has empty parentheses: write the tool name alone to allow every call, or Name(*)", s)
		}
		if p.spec == "*" {
			p.spec = ""
		}
	} else {
		p.name = t
	}
	if p.name == "" {
		return toolPattern{}, fmt.Errorf("tool pattern %q has no tool name before the parenthesis", s)
	}
	if strings.ContainsAny(p.name, " \t()") {
		return toolPattern{}, fmt.Errorf("tool pattern %q: a tool name has no spaces or parentheses (list several tools as separate entries)", s)
	}
	if strings.ContainsAny(p.name, "*?[") {
		if _, err := path.Match(p.name, ""); err != nil {
			return toolPattern{}, fmt.Errorf("tool pattern %q: malformed wildcard in the tool name (use *, ? or a closed [...])", s)
		}
		p.glob = true
	}
	if rest, ok := strings.CutPrefix(p.name, "mcp__"); ok && rest != "" && !p.glob && !strings.Contains(rest, "__") {
		p.mcp = true
	}
	return p, nil
}

// matches reports whether the pattern's name part matches tool.
func (p toolPattern) matches(tool string) bool {
	switch {
	case p.glob:
		ok, _ := path.Match(p.name, tool)
		return ok
	case p.mcp:
		return tool == p.name || (strings.HasPrefix(tool, p.name) && strings.HasPrefix(tool[len(p.name):], "__"))
	default:
		return tool == p.name
	}
}

// toolSurface computes the surface for the skills that triggered in this
// call (docs/skills.md): (∪ allowed of those declaring it, else caller) ∩
// caller − ∪ disallowed, plus the argument limits of specifier patterns.
func toolSurface(caller []string, skills []*entry) ([]string, []ToolLimit) {
	anyAllow := false
	for _, e := range skills {
		if len(e.allowed) > 0 {
			anyAllow = true
			break
		}
	}
	tools := make([]string, 0, len(caller))
	var limits []ToolLimit
	for i, t := range caller {
		if slices.Contains(caller[:i], t) {
			continue
		}
		var allow, deny []string
		admitted, free := !anyAllow, !anyAllow
		removed := false
		for _, e := range skills {
			for _, p := range e.allowed {
				if !p.matches(t) {
					continue
				}
				admitted = true
				if p.spec == "" {
					free = true
				} else {
					allow = append(allow, p.spec)
				}
			}
			for _, p := range e.disallowed {
				if !p.matches(t) {
					continue
				}
				if p.spec == "" {
					removed = true
				} else {
					deny = append(deny, p.spec)
				}
			}
		}
		if !admitted || removed {
			continue
		}
		tools = append(tools, t)
		if free {
			allow = nil
		}
		if len(allow) > 0 || len(deny) > 0 {
			slices.Sort(allow)
			slices.Sort(deny)
			limits = append(limits, ToolLimit{Tool: t, Allow: slices.Compact(allow), Deny: slices.Compact(deny)})
		}
	}
	slices.SortFunc(limits, func(a, b ToolLimit) int { return strings.Compare(a.Tool, b.Tool) })
	return tools, limits
}
