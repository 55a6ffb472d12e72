package sections

import (
	"strings"
	"sync"
)

// Lines splits text into lines the way the splitter counts them: a line
// ends at "\n" (a "\r" before it is part of the line ending, so CRLF files
// count the same as LF files); a final line without a line ending counts; an
// empty text has no lines. A lone "\r" does not end a line (goldmark, the
// project's oracle, behaves the same; the CommonMark spec would count it).
// The returned lines have their line endings removed.
func Lines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// Slice returns lines [start, end) of text (0-based, end exclusive) with
// their original line endings, so that concatenating the slices of
// consecutive sections gives back the text byte for byte. Out-of-range
// bounds are clamped.
func Slice(text string, start, end int) string {
	if start < 0 {
		start = 0
	}
	if end <= start {
		return ""
	}
	pos, line := 0, 0
	for line < start && pos < len(text) {
		i := strings.IndexByte(text[pos:], '\n')
		if i < 0 {
			return ""
		}
		pos += i + 1
		line++
	}
	from := pos
	for line < end && pos < len(text) {
		i := strings.IndexByte(text[pos:], '\n')
		if i < 0 {
			pos = len(text)
			break
		}
		pos += i + 1
		line++
	}
	return text[from:pos]
}

// Text returns the text of section s of text, with its line endings.
func Text(text string, s Section) string { return Slice(text, s.Start, s.End) }

// FrontMatterEnd returns the number of lines taken by a YAML front matter
// block at the start of text: a first line that is exactly "---" (after an
// optional UTF-8 byte-order mark; trailing spaces, tabs and "\r" ignored) and
// the next line that is exactly "---", both included. It returns 0 when the
// text has no front matter or when it is never closed (then the text is
// Markdown from its first line: a "---" line is a thematic break).
func FrontMatterEnd(text string) int {
	if !strings.HasPrefix(strings.TrimPrefix(text, bom), "---") {
		return 0
	}
	n := 0
	for pos := 0; pos < len(text); n++ {
		ln := text[pos:]
		if i := strings.IndexByte(ln, '\n'); i >= 0 {
			ln = ln[:i]
			pos += i + 1
		} else {
			pos = len(text)
		}
		ln = strings.TrimRight(ln, " \t\r")
		if n == 0 {
			if strings.TrimPrefix(ln, bom) != "---" {
				return 0
			}
		} else if ln == "---" {
			return n + 1
		}
	}
	return 0
}

const bom = "\uFEFF"

// Split returns the sections of a Markdown file: its YAML front matter, if
// any (see FrontMatterEnd), is skipped, then the rest is split like
// SplitBody. The front matter lines belong to the leading untitled section.
func Split(text string) []Section {
	return split(text, FrontMatterEnd(text))
}

// SplitBody returns the sections of Markdown text that has no front matter
// (for example a skill's Body): one Section per top-level heading, from the
// heading's first line to the line before the next top-level heading, plus a
// leading untitled section (Level 0) for the lines before the first heading
// when there are any. The sections cover every line of the text in order
// with no gap or overlap, so concatenating them gives back the text. An empty
// text has no sections; a text without headings has one untitled section.
//
// Headings are found exactly where a CommonMark 0.31.2 parser finds them as
// direct children of the document (ATX and setext headings; never inside
// fenced or indented code, HTML blocks, block quotes or list items; a setext
// underline after link reference definitions only). A leading UTF-8 BOM is
// ignored; tabs expand to tab stops of 4 as the spec says.
func SplitBody(text string) []Section { return split(text, 0) }

func split(text string, skip int) []Section {
	// The parser lives on the stack (so its per-line writes need no GC
	// write barrier); its buffers come from a pool.
	bufs := bufPool.Get().(*parserBufs)
	var p blockParser
	p.stack, p.headings, p.para = bufs.stack, bufs.headings, bufs.para
	n := p.parse(text, skip)
	out := sectionsOf(p.headings, n)
	clear(p.headings) // the titles point into text
	if cap(p.stack) <= 64 && cap(p.headings) <= 1024 && cap(p.para) <= 1024 {
		bufs.stack, bufs.headings, bufs.para = p.stack, p.headings[:0], p.para[:0]
		bufPool.Put(bufs)
	}
	return out
}

// sectionsOf turns the top-level headings of a text of n lines into its
// sections.
func sectionsOf(hs []heading, n int) []Section {
	if n == 0 {
		return nil
	}
	k := len(hs)
	lead := k == 0 || hs[0].line > 0
	if lead {
		k++
	}
	out := make([]Section, k)
	i := 0
	if lead {
		end := n
		if len(hs) > 0 {
			end = hs[0].line
		}
		out[0] = Section{Level: 0, Title: "", Start: 0, End: end}
		i = 1
	}
	for j, h := range hs {
		end := n
		if j+1 < len(hs) {
			end = hs[j+1].line
		}
		out[i] = Section{Level: h.level, Title: h.title, Start: h.line, End: end}
		i++
	}
	return out
}

// parserBufs are the buffers of a blockParser, kept between calls.
type parserBufs struct {
	stack    []block
	headings []heading
	para     []paraLine
}

var bufPool = sync.Pool{New: func() any { return new(parserBufs) }}

// parseHeadings runs the block parser over the lines of text from line skip
// on and returns the top-level headings it finds and the number of lines of
// text (as Lines counts them).
func parseHeadings(text string, skip int) ([]heading, int) {
	var p blockParser
	n := p.parse(text, skip)
	return p.headings, n
}

// parse runs the block parser over the lines of text from line skip on,
// leaving the top-level headings in p.headings, and returns the number of
// lines of text (as Lines counts them). A NUL byte reads as U+FFFD
// (CommonMark §2.3); a BOM at the start of the first line is ignored.
func (p *blockParser) parse(text string, skip int) int {
	if strings.IndexByte(text, 0) >= 0 {
		// The replacement adds no line ending, so line numbers stay.
		text = strings.ReplaceAll(text, "\x00", "\uFFFD")
	}
	p.reset(text)
	n := 0
	for pos := 0; pos < len(text); n++ {
		start, end := pos, len(text)
		if i := strings.IndexByte(text[pos:], '\n'); i >= 0 {
			end = pos + i
			pos = end + 1
		} else {
			pos = len(text)
		}
		if n < skip {
			continue
		}
		if end > start && text[end-1] == '\r' {
			end--
		}
		if n == 0 && strings.HasPrefix(text[start:end], bom) {
			start += len(bom)
		}
		p.incorporate(start, end, n)
	}
	return n
}
