package sections

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// oracleHeadings parses src with goldmark (CommonMark, no extensions) and
// returns its headings the way headings.json describes them: level, raw text
// (each line trimmed, joined by "\n"), 0-based first line, and whether the
// heading is a direct child of the document.
func oracleHeadings(src []byte) []heading {
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var out []heading
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		h, ok := n.(*ast.Heading)
		if !ok {
			return ast.WalkContinue, nil
		}
		lines := h.Lines()
		parts := make([]string, lines.Len())
		off := h.Pos()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			if i == 0 {
				off = seg.Start
			}
			parts[i] = strings.Trim(string(seg.Value(src)), " \t\r\n")
		}
		if off < 0 {
			off = 0
		}
		out = append(out, heading{
			level:    h.Level,
			title:    strings.Join(parts, "\n"),
			line:     bytes.Count(src[:min(off, len(src))], []byte("\n")),
			topLevel: h.Parent() != nil && h.Parent().Kind() == ast.KindDocument,
		})
		return ast.WalkSkipChildren, nil
	})
	return out
}

// topLevel keeps the top-level headings of hs.
func topLevel(hs []heading) []heading {
	var out []heading
	for _, h := range hs {
		if h.topLevel {
			out = append(out, h)
		}
	}
	return out
}

// ours returns the headings our splitter finds in src (no front matter).
func ours(src string) []heading {
	hs, _ := parseHeadings(src, 0)
	return hs
}
