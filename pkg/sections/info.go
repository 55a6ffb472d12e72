package sections

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrNoSection is returned (wrapped in a *NotFoundError) by Resolve and Info
// when no section title matches the query.
var ErrNoSection = errors.New("sections: no section matches")

// NotFoundError says which title was asked for and which titles exist. It
// matches ErrNoSection with errors.Is.
type NotFoundError struct {
	Query     string   // the title asked for, as given
	Available []string // every titled section, in document order
}

func (e *NotFoundError) Error() string {
	if len(e.Available) == 0 {
		return fmt.Sprintf("no section matches %q: the text has no headings; ask without a section to read it whole", e.Query)
	}
	q := make([]string, len(e.Available))
	for i, t := range e.Available {
		q[i] = fmt.Sprintf("%q", t)
	}
	return fmt.Sprintf("no section matches %q; available sections: %s", e.Query, strings.Join(q, ", "))
}

// Is makes errors.Is(err, ErrNoSection) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNoSection }

// Entry is one line of a table of contents.
type Entry struct {
	Section
	Lines int `json:"lines"` // End-Start of the section itself (not its subsections)
}

// TOC returns the table of contents of secs: the titled sections whose level
// is at most maxDepth (maxDepth <= 0 means every level), in document order,
// with their line counts. The leading untitled section is left out.
func TOC(secs []Section, maxDepth int) []Entry {
	var out []Entry
	for _, s := range secs {
		if s.Level == 0 || (maxDepth > 0 && s.Level > maxDepth) {
			continue
		}
		out = append(out, Entry{Section: s, Lines: s.End - s.Start})
	}
	return out
}

// FormatTOC renders a table of contents for people and models, one line per
// entry, indented two spaces per level below the shallowest, with 1-based
// inclusive line numbers:
//
//   - Title (lines 12–40, 29 lines)
func FormatTOC(toc []Entry) string {
	minLevel := 7
	for _, e := range toc {
		minLevel = min(minLevel, e.Level)
	}
	var b strings.Builder
	for _, e := range toc {
		fmt.Fprintf(&b, "%s- %s (lines %d–%d, %d %s)\n",
			strings.Repeat("  ", e.Level-minLevel), oneLine(e.Title), e.Start+1, e.End, e.Lines, plural(e.Lines, "line", "lines"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// oneLine joins a multi-line setext title with spaces.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// normTitle folds a title or query for matching: lower case, without
// whitespace and without the emphasis and code markers `*`, `_` and "`".
func normTitle(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsSpace(r) || r == '*' || r == '_' || r == '`' {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Resolve finds the section that title names and returns it extended over
// its subsections: End becomes the start of the next section of the same or
// a shallower level (or the end of the text). Matching (docs/skills.md), on
// titles folded by case, whitespace and `*`/`_`/"`" markers, and with
// leading `#`s of the query ignored: an exact match beats a title that
// contains the query, which beats a title contained in the query; ties go to
// the shallowest section, then the earliest. It returns a *NotFoundError
// (errors.Is ErrNoSection) when nothing matches or the query is empty.
func Resolve(secs []Section, title string) (Section, error) {
	q := normTitle(strings.TrimLeft(strings.TrimSpace(title), "#"))
	best, bestRank := -1, 0
	if q != "" {
		for i, s := range secs {
			if s.Level == 0 {
				continue
			}
			t := normTitle(s.Title)
			rank := 0
			switch {
			case t == q:
				rank = 3
			case t != "" && strings.Contains(t, q):
				rank = 2
			case t != "" && strings.Contains(q, t):
				rank = 1
			default:
				continue
			}
			if best < 0 || rank > bestRank || (rank == bestRank && s.Level < secs[best].Level) {
				best, bestRank = i, rank
			}
		}
	}
	if best < 0 {
		return Section{}, &NotFoundError{Query: title, Available: titles(secs)}
	}
	s := secs[best]
	for _, n := range secs[best+1:] {
		if n.Level <= s.Level {
			break
		}
		s.End = n.End
	}
	return s, nil
}

func titles(secs []Section) []string {
	var out []string
	for _, s := range secs {
		if s.Level > 0 {
			out = append(out, oneLine(s.Title))
		}
	}
	return out
}

// Limits are the budgets of Info (docs/skills.md). The zero value means the
// defaults.
type Limits struct {
	// WholeMaxLines: a text of at most this many lines is returned whole
	// when no section is asked for. Default 200.
	WholeMaxLines int
	// PreviewLines: how many first lines of a longer text are returned
	// before its table of contents. Default 30.
	PreviewLines int
	// TOCDepth: the deepest heading level listed in the table of contents;
	// 0 lists every level.
	TOCDepth int
}

func (l Limits) withDefaults() Limits {
	if l.WholeMaxLines <= 0 {
		l.WholeMaxLines = 200
	}
	if l.PreviewLines <= 0 {
		l.PreviewLines = 30
	}
	return l
}

// Info answers skill_info (docs/skills.md) for text, a Markdown body without
// front matter (a skill's Body), with the default Limits. See InfoWith.
func Info(text, section string) (string, error) {
	return InfoWith(text, SplitBody(text), section, Limits{})
}

// InfoWith answers skill_info for text whose sections are secs (as returned
// by SplitBody(text), or stored in a skill record):
//   - section == "": the whole text when it has at most lim.WholeMaxLines
//     lines; otherwise its first lim.PreviewLines lines, then a note with the
//     number of lines left out and the table of contents (FormatTOC);
//   - otherwise: the section that Resolve finds, with its subsections, as
//     is. An unknown title returns a *NotFoundError listing the available
//     titles (errors.Is ErrNoSection).
func InfoWith(text string, secs []Section, section string, lim Limits) (string, error) {
	lim = lim.withDefaults()
	if strings.TrimSpace(section) != "" {
		s, err := Resolve(secs, section)
		if err != nil {
			return "", err
		}
		return Text(text, s), nil
	}
	n := len(Lines(text))
	if n <= lim.WholeMaxLines {
		return text, nil
	}
	var b strings.Builder
	b.WriteString(Slice(text, 0, lim.PreviewLines))
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	toc := TOC(secs, lim.TOCDepth)
	fmt.Fprintf(&b, "\n[%d of %d lines shown.", lim.PreviewLines, n)
	if len(toc) == 0 {
		b.WriteString(" The text has no headings to read by section.]\n")
		return b.String(), nil
	}
	b.WriteString(" Ask for a section by title to read it with its subsections. Contents:]\n")
	b.WriteString(FormatTOC(toc))
	return b.String(), nil
}
