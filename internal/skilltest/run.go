package skilltest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/seqtest"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// session is the session id of every case: each case has an Assembler
// and an in-memory store of its own.
const session = "skillbus-test"

// LoadSkills loads the skill under test and the file's other skills with
// pkg/skill, as the registry does. The first error names the skill.
func LoadSkills(f *File) ([]skill.Skill, error) {
	var out []skill.Skill
	for _, p := range append([]string{f.Skill}, f.Skills...) {
		s, _, err := skill.Load(p)
		if err != nil {
			return nil, fmt.Errorf("the skill %s does not load: %v", p, err)
		}
		out = append(out, *s)
	}
	return out, nil
}

// RunFile runs the cases of f whose "file/case" matches filter (nil: all).
// A skill that does not load fails every case with its problem.
func RunFile(ctx context.Context, f *File, filter *regexp.Regexp) []seqtest.Result {
	var out []seqtest.Result
	skills, err := LoadSkills(f)
	for i := range f.Cases {
		c := &f.Cases[i]
		if filter != nil && !filter.MatchString(f.Path+"/"+c.Name) {
			continue
		}
		var r seqtest.Result
		if err != nil {
			r = seqtest.Result{Case: c.Name, Line: c.Line, Failures: []string{err.Error()}}
		} else {
			r = RunCase(ctx, skills, f.Budgets.over(c.Budgets), c)
		}
		r.File, r.Kind = f.Path, seqtest.KindSkill
		out = append(out, r)
	}
	return out
}

// Outcome is what one case's assembly gave: skillface's response, the
// listing and injected texts as the model sees them, and a verdict per
// skill (skillface's Explain).
type Outcome struct {
	Request  skillface.Request
	Response skillface.Response
	Listing  string
	Injected map[string]string // skill → its system message
	Removed  []string          // the caller's tools not on the surface
	Verdicts []skillface.Verdict
}

// Assemble runs c's turns against skills with the real Assembler: each
// history turn as rounds 1..N of one session, then the case's own turn.
func Assemble(ctx context.Context, skills []skill.Skill, b Budgets, c *Case) (*Outcome, error) {
	opts := []skillface.Option{skillface.WithSessionStore(skillface.NewMemoryStore(0))}
	if b.EntryChars != 0 {
		opts = append(opts, skillface.WithEntryChars(b.EntryChars))
	}
	if b.ListingEntries != 0 {
		opts = append(opts, skillface.WithListingEntries(b.ListingEntries))
	}
	if b.SessionBodies != 0 {
		opts = append(opts, skillface.WithSessionBodies(b.SessionBodies))
	}
	if b.BodyBytes != 0 {
		opts = append(opts, skillface.WithBodyBytes(b.BodyBytes))
	}
	asm, err := skillface.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("budgets: %v", err)
	}
	if err := asm.SetSkills(skills); err != nil {
		return nil, fmt.Errorf("skillface refuses the skills: %v", err)
	}
	var conv []skillface.Message
	if c.System != "" {
		conv = append(conv, skillface.Message{Role: skillface.RoleSystem, Content: c.System})
	}
	turn := func(round int64, t *Turn) (skillface.Request, skillface.Response, error) {
		conv = append(conv, skillface.Message{Role: skillface.RoleUser, Content: t.Message})
		tools := t.Tools
		if tools == nil {
			tools = c.Tools
		}
		req := skillface.Request{SessionID: session, Round: round, Restricted: c.Restricted,
			Messages: slices.Clone(conv), WorkFiles: t.WorkFiles, Tools: tools, Mounts: t.Mounts}
		resp, err := asm.Assemble(ctx, req)
		if t.Reply != "" {
			conv = append(conv, skillface.Message{Role: "assistant", Content: t.Reply})
		}
		return req, resp, err
	}
	for i := range c.History {
		if _, _, err := turn(int64(i+1), &c.History[i]); err != nil {
			return nil, fmt.Errorf("history turn %d (line %d): %v", i+1, c.History[i].Line, err)
		}
	}
	req, resp, err := turn(int64(len(c.History)+1), &c.Turn)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Request: req, Response: resp, Injected: map[string]string{}, Verdicts: asm.Explain(req, resp)}
	if !req.Restricted {
		// The inserted blocks follow the leading system messages: the
		// listing (when any skill is loaded), then one body per active skill.
		lead := 0
		for lead < len(req.Messages) && req.Messages[lead].Role == skillface.RoleSystem {
			lead++
		}
		blocks := resp.Messages[lead : lead+len(resp.Messages)-len(req.Messages)]
		if len(skills) > 0 && len(blocks) > 0 {
			o.Listing, blocks = blocks[0].Content, blocks[1:]
		}
		for i, m := range blocks {
			if i < len(resp.Active) {
				o.Injected[resp.Active[i]] = m.Content
			}
		}
	}
	for _, t := range req.Tools {
		if !slices.Contains(resp.Tools, t) {
			o.Removed = append(o.Removed, t)
		}
	}
	return o, nil
}

// RunCase runs one case against skills and checks its expectations.
func RunCase(ctx context.Context, skills []skill.Skill, b Budgets, c *Case) seqtest.Result {
	wall := time.Now()
	r := seqtest.Result{Case: c.Name, Line: c.Line, Kind: seqtest.KindSkill}
	o, err := Assemble(ctx, skills, b, c)
	switch {
	case err != nil && c.Expect.Error == "":
		r.Failures = append(r.Failures, "the assembly failed: "+err.Error())
	case err != nil && !strings.Contains(err.Error(), c.Expect.Error):
		r.Failures = append(r.Failures, diff("error", fmt.Sprintf("an error containing %q", c.Expect.Error), fmt.Sprintf("%q", err.Error())))
	case err == nil && c.Expect.Error != "":
		r.Failures = append(r.Failures, diff("error", fmt.Sprintf("an error containing %q", c.Expect.Error), "no error"))
	}
	if o != nil {
		r.Failures = append(r.Failures, check(&c.Expect, o)...)
		if len(r.Failures) > 0 {
			r.Trace = trace(o)
		}
	}
	r.Passed = len(r.Failures) == 0
	r.Wall = time.Since(wall)
	return r
}

func diff(what, want, got string) string {
	return fmt.Sprintf("%s\n    expected: %s\n    actual:   %s", what, want, got)
}

func list(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func lines(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return "\n      " + strings.Join(l, "\n      ")
}

// check compares the expectations with the assembly and returns one
// failure per expectation not met, each with the expected and the actual.
func check(e *Expect, o *Outcome) []string {
	var f []string
	verdicts := map[string]*skillface.Verdict{}
	for i := range o.Verdicts {
		verdicts[o.Verdicts[i].Name] = &o.Verdicts[i]
	}
	for _, name := range e.SkillOrder {
		se := e.Skills[name]
		v := verdicts[name]
		if v == nil {
			f = append(f, diff("skill "+name, "a loaded skill", "no skill of that name is loaded in this case (the skill under test and skills:)"))
			continue
		}
		if se.Outcome != "" && se.Outcome != v.Outcome {
			f = append(f, diff("skill "+name, se.Outcome, v.Outcome+" — "+strings.Join(v.Reasons, "; ")))
		}
		if se.Why != nil && !whyMatches(se.Why, v.Reasons) {
			f = append(f, diff("why "+name+" (each text in its reason, in order)", lines(se.Why), lines(v.Reasons)))
		}
		boolCheck := func(what string, want *bool, got bool) {
			if want != nil && *want != got {
				f = append(f, diff(what+" of "+name, fmt.Sprint(*want), fmt.Sprint(got)))
			}
		}
		boolCheck("listed", se.Listed, v.Listed)
		boolCheck("entry_truncated", se.EntryTruncated, v.EntryTruncated)
		boolCheck("body_truncated", se.BodyTruncated, v.BodyTruncated)
		text, injected := o.Injected[name]
		for _, s := range se.Injected {
			if !injected {
				f = append(f, diff("injected "+name, fmt.Sprintf("a body containing %q", s), "its body is not in the prompt ("+v.Outcome+")"))
				break
			}
			if !strings.Contains(text, s) {
				f = append(f, diff("injected "+name, fmt.Sprintf("a body containing %q", s), excerpt(text)))
			}
		}
		for _, s := range se.NotInjected {
			if injected && strings.Contains(text, s) {
				f = append(f, diff("not_injected "+name, fmt.Sprintf("a body without %q", s), excerpt(text)))
			}
		}
	}
	listCheck := func(key, what string, want, got []string) {
		if e.lists[key] && !slices.Equal(want, got) {
			f = append(f, diff(what, list(want), list(got)))
		}
	}
	listCheck("activated", "activated (in order)", e.Activated, o.Response.Activated)
	listCheck("active", "active (in injection order)", e.Active, o.Response.Active)
	listCheck("dropped", "dropped", e.Dropped, o.Response.Dropped)
	listCheck("tools", "tools (the surface, in the caller's order)", e.Tools, o.Response.Tools)
	listCheck("removed", "removed (the caller's tools not on the surface)", e.Removed, o.Removed)
	if e.ToolLimits != nil {
		var want, got []string
		for _, t := range sortedKeys(e.ToolLimits) {
			want = append(want, limitLine(t, e.ToolLimits[t].Allow, e.ToolLimits[t].Deny))
		}
		for _, l := range o.Response.ToolLimits {
			got = append(got, limitLine(l.Tool, l.Allow, l.Deny))
		}
		if !slices.Equal(want, got) {
			f = append(f, diff("tool_limits", lines(want), lines(got)))
		}
	}
	if l := e.Listing; l != nil {
		for _, s := range l.Contains {
			if !strings.Contains(o.Listing, s) {
				f = append(f, diff("listing", fmt.Sprintf("a listing containing %q", s), lines(strings.Split(o.Listing, "\n"))))
			}
		}
		for _, s := range l.Lacks {
			if strings.Contains(o.Listing, s) {
				f = append(f, diff("listing", fmt.Sprintf("a listing without %q", s), lines(strings.Split(o.Listing, "\n"))))
			}
		}
		n := 0
		for _, line := range strings.Split(o.Listing, "\n") {
			if strings.HasPrefix(line, "- ") {
				n++
			}
		}
		intCheck := func(what string, want *int, got int) {
			if want != nil && *want != got {
				f = append(f, diff("listing "+what, fmt.Sprint(*want), fmt.Sprint(got)))
			}
		}
		intCheck("entries", l.Entries, n)
		intCheck("entries_truncated", l.EntriesTruncated, o.Response.Counts.EntriesTruncated)
		intCheck("entries_dropped", l.EntriesDropped, o.Response.Counts.EntriesDropped)
	}
	return f
}

// whyMatches reports whether each expected text is in the reason at its
// position, with as many texts as reasons.
func whyMatches(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			return false
		}
	}
	return true
}

// limitLine renders a tool's limits; allow and deny are sets (skillface
// sorts them), so they are compared sorted.
func limitLine(tool string, allow, deny []string) string {
	allow, deny = slices.Sorted(slices.Values(allow)), slices.Sorted(slices.Values(deny))
	return fmt.Sprintf("%s allow %s deny %s", tool, list(allow), list(deny))
}

// excerpt returns the start of an injected body for a failure message.
func excerpt(s string) string {
	const max = 300
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// trace describes the assembly for a failing case: each skill's outcome
// and reasons, then the surface.
func trace(o *Outcome) []string {
	var t []string
	for _, v := range o.Verdicts {
		line := v.Name + ": " + v.Outcome
		if v.BodyTruncated {
			line += " (body truncated)"
		}
		if !v.Listed && !o.Request.Restricted {
			line += " (not listed)"
		}
		t = append(t, line+" — "+strings.Join(v.Reasons, "; "))
	}
	t = append(t, "tools: "+list(o.Response.Tools))
	for _, l := range o.Response.ToolLimits {
		t = append(t, "limits: "+limitLine(l.Tool, l.Allow, l.Deny))
	}
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	slices.Sort(k)
	return k
}
