package skillface

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/skillbus/skillbus/pkg/jsonenc"
	"github.com/skillbus/skillbus/pkg/skill"
)

// truncMark ends a listing entry that was cut; it is also the prefix of the
// lines that count what was cut (docs/skills.md).
const truncMark = ".truncated"

// entry is one compiled skill. It is immutable and shared by snapshots.
type entry struct {
	sk         skill.Skill
	allowed    []toolPattern
	disallowed []toolPattern
	triggers   []compiledTrigger
	line       string // the listing entry, already cut to the entry budget
	lineCut    bool
}

// modelInvocable reports whether triggers and paths may activate the skill.
func (e *entry) modelInvocable() bool { return e.sk.Invocation != skill.InvocationUserOnly }

// compile checks a skill record and prepares it. Errors wrap ErrInvalidSkill.
func compile(s skill.Skill, entryChars int) (*entry, error) {
	bad := func(format string, a ...any) error {
		name := s.Name
		if name == "" {
			name = "(no name)"
		}
		return fmt.Errorf("%w %q: %s", ErrInvalidSkill, name, fmt.Sprintf(format, a...))
	}
	if s.Name == "" {
		return nil, bad("the record has no name")
	}
	switch s.Invocation {
	case skill.InvocationBoth, skill.InvocationModelOnly, skill.InvocationUserOnly:
	default:
		return nil, bad("invocation %q is not one of both, model-only, user-only", s.Invocation)
	}
	for _, p := range s.Paths {
		if !doublestar.ValidatePattern(p) {
			return nil, bad("paths entry %q is not a valid glob (check brackets and braces)", p)
		}
	}
	e := &entry{sk: s}
	for _, t := range s.AllowedTools {
		p, err := parseToolPattern(t)
		if err != nil {
			return nil, bad("allowed-tools: %v", err)
		}
		e.allowed = append(e.allowed, p)
	}
	for _, t := range s.DisallowedTools {
		p, err := parseToolPattern(t)
		if err != nil {
			return nil, bad("disallowed-tools: %v", err)
		}
		e.disallowed = append(e.disallowed, p)
	}
	for _, t := range s.Triggers {
		if ct, ok := compileTrigger(t); ok {
			e.triggers = append(e.triggers, ct)
		}
	}
	e.line, e.lineCut = listingLine(&s, entryChars)
	return e, nil
}

// oneLine collapses every run of white space into one space.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// listingLine renders the listing entry of s, cut to max characters.
func listingLine(s *skill.Skill, max int) (string, bool) {
	var b strings.Builder
	b.WriteString("- ")
	b.WriteString(s.Name)
	switch s.Invocation {
	case skill.InvocationModelOnly:
		// Name only (docs/skills.md).
	default:
		if s.Invocation == skill.InvocationUserOnly {
			b.WriteString(" (only the user can start this skill)")
		}
		if d := oneLine(s.Description); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
		if w := oneLine(s.WhenToUse); w != "" {
			b.WriteString(" When to use: ")
			b.WriteString(w)
		}
	}
	line := b.String()
	if utf8.RuneCountInString(line) <= max {
		return line, false
	}
	keep := max - utf8.RuneCountInString(" "+truncMark)
	cut := 0
	for i := range line {
		if keep == 0 {
			cut = i
			break
		}
		keep--
	}
	return strings.TrimRight(line[:cut], " ") + " " + truncMark, true
}

// pathRef is one paths glob of one skill, with a literal prefix and suffix
// that every matching file must have (a cheap filter before the glob).
type pathRef struct {
	pattern, prefix, suffix string
	skill                   int
}

func newPathRef(pattern string, skill int) pathRef {
	const meta = `*?[]{}\`
	r := pathRef{pattern: pattern, skill: skill}
	i := strings.IndexAny(pattern, meta)
	if i < 0 {
		r.prefix = pattern
		return r
	}
	r.prefix = pattern[:i]
	r.suffix = pattern[strings.LastIndexAny(pattern, meta)+1:]
	return r
}

// snapshot is an immutable view of the skill set, rebuilt after a change.
type snapshot struct {
	entries  []*entry // sorted by name
	byName   map[string]int
	triggers triggerIndex
	paths    pathIndex
	listing  string // the listing text without the per-session ".dropped:" line
	// listingJSON is listing as a JSON string (AppendResponseJSON).
	listingJSON []byte
	counts      Counts // EntriesTruncated and EntriesDropped
}

func buildSnapshot(skills map[string]*entry, listingEntries, entryChars int) *snapshot {
	sn := &snapshot{byName: make(map[string]int, len(skills)), entries: make([]*entry, 0, len(skills))}
	sn.triggers.byToken = make(map[string][]trigger, 2*len(skills))
	for _, e := range skills {
		sn.entries = append(sn.entries, e)
	}
	slices.SortFunc(sn.entries, func(a, b *entry) int { return strings.Compare(a.sk.Name, b.sk.Name) })
	for i, e := range sn.entries {
		sn.byName[e.sk.Name] = i
		if !e.modelInvocable() {
			continue
		}
		for _, ct := range e.triggers {
			sn.triggers.addCompiled(ct, i)
		}
		for _, p := range e.sk.Paths {
			sn.paths.add(newPathRef(p, i))
		}
	}
	if len(sn.entries) == 0 {
		return sn
	}
	shown := sn.entries
	if len(shown) > listingEntries {
		shown = shown[:listingEntries]
		sn.counts.EntriesDropped = len(sn.entries) - listingEntries
	}
	var b strings.Builder
	b.WriteString("Skills available in this session (")
	b.WriteString(strconv.Itoa(len(sn.entries)))
	b.WriteString("), by name. A skill's instructions are added to the conversation when it activates: " +
		"when a trigger word appears in the user's message, a work file matches its paths, or the user mounts it.\n")
	for _, e := range shown {
		b.WriteString(e.line)
		b.WriteByte('\n')
		if e.lineCut {
			sn.counts.EntriesTruncated++
		}
	}
	if c := sn.counts; c.EntriesTruncated > 0 || c.EntriesDropped > 0 {
		b.WriteString(truncMark + ":")
		if c.EntriesTruncated > 0 {
			fmt.Fprintf(&b, " %s cut to %d characters.", plural(c.EntriesTruncated, "entry was", "entries were"), entryChars)
		}
		if c.EntriesDropped > 0 {
			fmt.Fprintf(&b, " %s not listed (the listing shows at most %d); they can still be mounted by name.",
				plural(c.EntriesDropped, "more skill is", "more skills are"), listingEntries)
		}
		b.WriteByte('\n')
	}
	sn.listing = strings.TrimSuffix(b.String(), "\n")
	sn.listingJSON = jsonenc.AppendString(nil, sn.listing)
	return sn
}

// plural renders "1 entry was" / "3 entries were".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// pathIndex groups the paths globs by the first directory of their literal
// prefix ("svc/" in "svc/**/*.go"), so a work file is only tested against the
// globs that can match its first directory, plus those without one.
type pathIndex struct {
	byDir map[string][]pathRef
	other []pathRef
}

func (x *pathIndex) add(r pathRef) {
	dir, _, ok := strings.Cut(r.prefix, "/")
	if !ok {
		x.other = append(x.other, r)
		return
	}
	if x.byDir == nil {
		x.byDir = make(map[string][]pathRef)
	}
	x.byDir[dir] = append(x.byDir[dir], r)
}

// matchFiles calls hit for every skill whose paths match a work file.
func (sn *snapshot) matchFiles(files []string, hit func(skill int)) {
	if len(sn.paths.byDir) == 0 && len(sn.paths.other) == 0 {
		return
	}
	try := func(f string, refs []pathRef) {
		for _, p := range refs {
			if len(f) >= len(p.prefix)+len(p.suffix) && strings.HasPrefix(f, p.prefix) &&
				strings.HasSuffix(f, p.suffix) && doublestar.MatchUnvalidated(p.pattern, f) {
				hit(p.skill)
			}
		}
	}
	for _, f := range files {
		f = strings.TrimPrefix(f, "./")
		if f == "" {
			continue
		}
		if dir, _, ok := strings.Cut(f, "/"); ok {
			try(f, sn.paths.byDir[dir])
		}
		try(f, sn.paths.other)
	}
}
