// Package skilltest runs the tests of skills: a skill.test.yaml in a
// skill's directory holds cases of a message (with work files, the
// caller's tools, mounts and the session's earlier turns) and the expected
// outcome per skill — activated or not and why, the tool surface, what is
// injected and whether it was cut, the listing under a budget. A case runs
// in process with the real pkg/skillface Assembler, as the skillface
// service does, with no NATS server. The format and every expectation are
// in docs/testing.md ("Skill tests").
package skilltest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/internal/seqtest"
)

// FileName is the name of a skill's test file, in the skill's directory
// beside its SKILL.md or skill.yaml (docs/testing.md).
const FileName = "skill.test.yaml"

// IsSkillTest reports whether path is a skill's test file: named
// skill.test.yaml in a directory holding SKILL.md or skill.yaml. Any other
// *.test.yaml is a sequence's test file (internal/seqtest).
func IsSkillTest(path string) bool {
	if filepath.Base(path) != FileName {
		return false
	}
	dir := filepath.Dir(path)
	for _, n := range []string{"SKILL.md", "skill.yaml"} {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// File is one parsed skill test file.
type File struct {
	Path string
	// Skill is the directory of the skill under test (the file's own).
	Skill string
	// Skills are more skills loaded beside it (directories or skill
	// files, joined to the test file's directory), with their lines.
	Skills     []string
	SkillLines []int
	Budgets    Budgets
	Cases      []Case
}

// Budgets are skillface's budgets for a case (docs/skills.md, "How
// skillface uses skills"); 0 keeps skillface's default.
type Budgets struct {
	EntryChars     int
	ListingEntries int
	SessionBodies  int
	BodyBytes      int
}

// over returns b with the fields set in o replacing its own.
func (b Budgets) over(o Budgets) Budgets {
	for _, p := range []struct{ dst, src *int }{{&b.EntryChars, &o.EntryChars}, {&b.ListingEntries, &o.ListingEntries}, {&b.SessionBodies, &o.SessionBodies}, {&b.BodyBytes, &o.BodyBytes}} {
		if *p.src != 0 {
			*p.dst = *p.src
		}
	}
	return b
}

// Turn is one model call of the session: the latest user message and what
// came with it.
type Turn struct {
	Line      int
	Message   string
	WorkFiles []string
	Tools     []string // nil: the case's tools
	Mounts    []string
	// Reply is the assistant's answer kept in the conversation after this
	// turn (history turns only); "" adds none.
	Reply string
}

// Case is one case of a skill test file.
type Case struct {
	Name string
	Line int
	Turn
	System     string // a leading system message; "" sends none
	Restricted bool
	History    []Turn // earlier turns of the session, rounds 1..N
	Budgets    Budgets
	Expect     Expect
}

// Expect is what a case checks; nil and unset fields are not checked
// (docs/testing.md, "Skill tests").
type Expect struct {
	Error      string // Assemble fails with an error containing this
	Skills     map[string]*SkillExpect
	SkillOrder []string // Skills' names in file order
	Activated  []string
	Active     []string
	Dropped    []string
	Tools      []string
	Removed    []string
	ToolLimits map[string]*ToolLimit // nil: unchecked; empty: none
	Listing    *ListingExpect
	lists      map[string]bool // which of the lists above were given
}

// SkillExpect is the expected outcome of one skill.
type SkillExpect struct {
	Line           int
	Outcome        string   // activated, active, dropped, not activated
	Why            []string // each the text of one reason, in order (substrings)
	Listed         *bool
	EntryTruncated *bool
	BodyTruncated  *bool
	Injected       []string // substrings of the injected body
	NotInjected    []string // substrings the injected body must not hold
}

// ToolLimit is the expected argument restrictions of one tool.
type ToolLimit struct {
	Allow []string
	Deny  []string
}

// ListingExpect checks the listing message.
type ListingExpect struct {
	Contains         []string
	Lacks            []string
	Entries          *int // "- " entries shown
	EntriesTruncated *int
	EntriesDropped   *int
}

// Load reads and parses one skill test file; a file that does not parse
// gives a *seqtest.ParseError with its line.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &seqtest.ParseError{Path: path, Message: err.Error()}
	}
	return ParseFile(path, data)
}

func perr(line int, format string, a ...any) error {
	return &seqtest.ParseError{Line: line, Message: fmt.Sprintf(format, a...)}
}

// ParseFile parses the text of the skill test file at path.
func ParseFile(path string, data []byte) (*File, error) {
	f, err := parseFile(path, data)
	if err != nil {
		var pe *seqtest.ParseError
		if errors.As(err, &pe) {
			pe.Path = path
		}
		return nil, err
	}
	return f, nil
}

func parseFile(path string, data []byte) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 0
		fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line)
		return nil, perr(line, "not YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, perr(1, "a skill test file is a mapping: {skills: [DIR...] (optional), budgets: {...} (optional), cases: [...]}")
	}
	f := &File{Path: path, Skill: filepath.Dir(path)}
	var cases *yaml.Node
	err := fields(doc.Content[0], "a skill test file", func(k, v *yaml.Node) error {
		switch k.Value {
		case "skills":
			items, err := strs(v, "skills")
			if err != nil {
				return err
			}
			for i, s := range items {
				line := v.Content[i].Line
				// Only skills named relative to the test file: a test
				// file from someone else's repository cannot have the
				// runner read (and quote) files elsewhere.
				if s == "" || filepath.IsAbs(s) {
					return perr(line, "skills: %q must be a skill directory (or its SKILL.md or skill.yaml) named relative to the test file", s)
				}
				if b := filepath.Base(s); strings.Contains(b, ".") && b != "SKILL.md" && b != "skill.yaml" && b != ".." && b != "." {
					return perr(line, "skills: %q must be a skill directory, SKILL.md or skill.yaml", s)
				}
				f.Skills = append(f.Skills, filepath.Join(filepath.Dir(path), s))
				f.SkillLines = append(f.SkillLines, line)
			}
			return nil
		case "budgets":
			return parseBudgets(v, &f.Budgets)
		case "cases":
			cases = v
			return nil
		}
		return perr(k.Line, "unknown field %q; a skill test file has skills, budgets and cases", k.Value)
	})
	if err != nil {
		return nil, err
	}
	if cases == nil || cases.Kind != yaml.SequenceNode || len(cases.Content) == 0 {
		line := 1
		if cases != nil {
			line = cases.Line
		}
		return nil, perr(line, "cases: must be a list of at least one case")
	}
	names := map[string]int{}
	for _, cn := range cases.Content {
		c, err := parseCase(cn)
		if err != nil {
			return nil, err
		}
		if l, dup := names[c.Name]; dup {
			return nil, perr(cn.Line, "two cases are named %q (the other at line %d); give each case its own name", c.Name, l)
		}
		names[c.Name] = cn.Line
		f.Cases = append(f.Cases, *c)
	}
	return f, nil
}

// fields iterates a mapping node, failing on a non-mapping.
func fields(n *yaml.Node, what string, f func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return perr(n.Line, "%s must be a mapping", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if err := f(n.Content[i], n.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// str reads a scalar string.
func str(v *yaml.Node, what string) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", perr(v.Line, "%s must be text", what)
	}
	return v.Value, nil
}

// strs reads a list of scalar strings (a lone scalar is a list of one).
func strs(v *yaml.Node, what string) ([]string, error) {
	if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
		return []string{v.Value}, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, perr(v.Line, "%s must be a list of text", what)
	}
	out := []string{}
	for _, it := range v.Content {
		if it.Kind != yaml.ScalarNode {
			return nil, perr(it.Line, "%s must be a list of text", what)
		}
		out = append(out, it.Value)
	}
	return out, nil
}

func boolean(v *yaml.Node, what string) (bool, error) {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		return false, perr(v.Line, "%s: %q is not true or false", what, v.Value)
	}
	return b, nil
}

func count(v *yaml.Node, what string) (int, error) {
	var n int
	if v.Kind != yaml.ScalarNode || v.Decode(&n) != nil || n < 0 {
		return 0, perr(v.Line, "%s: %q is not a whole number, 0 or more", what, v.Value)
	}
	return n, nil
}

func parseBudgets(n *yaml.Node, b *Budgets) error {
	return fields(n, "budgets", func(k, v *yaml.Node) error {
		var dst *int
		switch k.Value {
		case "entry_chars":
			dst = &b.EntryChars
		case "listing_entries":
			dst = &b.ListingEntries
		case "session_bodies":
			dst = &b.SessionBodies
		case "body_bytes":
			dst = &b.BodyBytes
		default:
			return perr(k.Line, "unknown budget %q; budgets are entry_chars, listing_entries, session_bodies and body_bytes", k.Value)
		}
		x, err := count(v, k.Value)
		if err == nil && x < 1 {
			err = perr(v.Line, "%s: must be 1 or more", k.Value)
		}
		*dst = x
		return err
	})
}

// turnField reads one field shared by a case and a history turn; ok is
// false for a field that is not one of them.
func turnField(t *Turn, k, v *yaml.Node) (ok bool, err error) {
	switch k.Value {
	case "message":
		t.Message, err = str(v, "message")
	case "work_files":
		t.WorkFiles, err = strs(v, "work_files")
	case "tools":
		t.Tools, err = strs(v, "tools")
	case "mounts":
		t.Mounts, err = strs(v, "mounts")
	default:
		return false, nil
	}
	return true, err
}

func parseCase(n *yaml.Node) (*Case, error) {
	c := &Case{Line: n.Line}
	c.Turn.Line = n.Line
	hasMessage := false
	err := fields(n, "a case", func(k, v *yaml.Node) error {
		if k.Value == "message" {
			hasMessage = true
		}
		if ok, err := turnField(&c.Turn, k, v); ok {
			return err
		}
		var err error
		switch k.Value {
		case "name":
			c.Name, err = str(v, "name")
		case "system":
			c.System, err = str(v, "system")
		case "restricted":
			c.Restricted, err = boolean(v, "restricted")
		case "budgets":
			err = parseBudgets(v, &c.Budgets)
		case "history":
			if v.Kind != yaml.SequenceNode {
				return perr(v.Line, "history must be a list of earlier turns ({message, work_files, tools, mounts, reply})")
			}
			for _, hn := range v.Content {
				t := Turn{Line: hn.Line}
				had := false
				err := fields(hn, "a history turn", func(hk, hv *yaml.Node) error {
					if hk.Value == "message" {
						had = true
					}
					if ok, err := turnField(&t, hk, hv); ok {
						return err
					}
					if hk.Value == "reply" {
						var err error
						t.Reply, err = str(hv, "reply")
						return err
					}
					return perr(hk.Line, "unknown history field %q; a turn has message, work_files, tools, mounts and reply", hk.Value)
				})
				if err != nil {
					return err
				}
				if !had {
					return perr(hn.Line, "a history turn needs a message (the user's message of that turn)")
				}
				c.History = append(c.History, t)
			}
		case "expect":
			err = parseExpect(v, &c.Expect)
		default:
			return perr(k.Line, "unknown case field %q; a case has name, message, system, work_files, tools, mounts, history, restricted, budgets and expect", k.Value)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if c.Name == "" {
		return nil, perr(n.Line, "a case needs a name")
	}
	if !hasMessage {
		return nil, perr(n.Line, "case %q needs a message (the latest user message)", c.Name)
	}
	return c, nil
}

// outcomes are the values of a skill's outcome (skillface.Outcome*).
var outcomes = []string{"activated", "active", "dropped", "not activated"}

func parseExpect(n *yaml.Node, e *Expect) error {
	e.lists = map[string]bool{}
	return fields(n, "expect", func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "error":
			e.Error, err = str(v, "error")
		case "skills":
			e.Skills = map[string]*SkillExpect{}
			err = fields(v, "skills", func(sk, sv *yaml.Node) error {
				if _, dup := e.Skills[sk.Value]; dup {
					return perr(sk.Line, "skill %q is given twice", sk.Value)
				}
				se, err := parseSkillExpect(sk.Value, sv)
				if se != nil {
					se.Line = sk.Line
				}
				e.Skills[sk.Value] = se
				e.SkillOrder = append(e.SkillOrder, sk.Value)
				return err
			})
		case "activated", "active", "dropped", "tools", "removed":
			var l []string
			l, err = strs(v, k.Value)
			e.lists[k.Value] = true
			switch k.Value {
			case "activated":
				e.Activated = l
			case "active":
				e.Active = l
			case "dropped":
				e.Dropped = l
			case "tools":
				e.Tools = l
			case "removed":
				e.Removed = l
			}
		case "tool_limits":
			e.ToolLimits = map[string]*ToolLimit{}
			err = fields(v, "tool_limits", func(tk, tv *yaml.Node) error {
				tl := &ToolLimit{}
				e.ToolLimits[tk.Value] = tl
				return fields(tv, "a tool's limits", func(lk, lv *yaml.Node) error {
					var err error
					switch lk.Value {
					case "allow":
						tl.Allow, err = strs(lv, "allow")
					case "deny":
						tl.Deny, err = strs(lv, "deny")
					default:
						return perr(lk.Line, "unknown tool limit field %q; a tool's limits are allow and deny", lk.Value)
					}
					return err
				})
			})
		case "listing":
			e.Listing = &ListingExpect{}
			err = fields(v, "listing", func(lk, lv *yaml.Node) error {
				var err error
				var x int
				switch lk.Value {
				case "contains":
					e.Listing.Contains, err = strs(lv, "contains")
				case "lacks":
					e.Listing.Lacks, err = strs(lv, "lacks")
				case "entries":
					x, err = count(lv, "entries")
					e.Listing.Entries = &x
				case "entries_truncated":
					x, err = count(lv, "entries_truncated")
					e.Listing.EntriesTruncated = &x
				case "entries_dropped":
					x, err = count(lv, "entries_dropped")
					e.Listing.EntriesDropped = &x
				default:
					return perr(lk.Line, "unknown listing expectation %q; listing has contains, lacks, entries, entries_truncated and entries_dropped", lk.Value)
				}
				return err
			})
		default:
			return perr(k.Line, "unknown expectation %q; expect has error, skills, activated, active, dropped, tools, removed, tool_limits and listing", k.Value)
		}
		return err
	})
}

// parseSkillExpect reads one skill's expectation: an outcome alone, or a
// mapping of outcome, why, listed, entry_truncated, body_truncated,
// injected and not_injected.
func parseSkillExpect(name string, n *yaml.Node) (*SkillExpect, error) {
	se := &SkillExpect{}
	outcome := func(v *yaml.Node) error {
		for _, o := range outcomes {
			if v.Kind == yaml.ScalarNode && v.Value == o {
				se.Outcome = o
				return nil
			}
		}
		return perr(v.Line, "skill %q: outcome %q; expect activated, active (retained from an earlier turn), dropped or not activated", name, v.Value)
	}
	if n.Kind == yaml.ScalarNode {
		return se, outcome(n)
	}
	err := fields(n, fmt.Sprintf("skill %q's expectation (an outcome, or a mapping of outcome, why, ...)", name), func(k, v *yaml.Node) error {
		var err error
		var b bool
		switch k.Value {
		case "outcome":
			err = outcome(v)
		case "why":
			se.Why, err = strs(v, "why")
		case "listed":
			b, err = boolean(v, "listed")
			se.Listed = &b
		case "entry_truncated":
			b, err = boolean(v, "entry_truncated")
			se.EntryTruncated = &b
		case "body_truncated":
			b, err = boolean(v, "body_truncated")
			se.BodyTruncated = &b
		case "injected":
			se.Injected, err = strs(v, "injected")
		case "not_injected":
			se.NotInjected, err = strs(v, "not_injected")
		default:
			return perr(k.Line, "unknown skill expectation %q; a skill has outcome, why, listed, entry_truncated, body_truncated, injected and not_injected", k.Value)
		}
		return err
	})
	return se, err
}
