package seq

import (
	"fmt"
	"strings"
)

// ToolSpan is one tool call's JSON text inside a tools string, with its
// 0-based byte offset in that string.
type ToolSpan struct {
	Text   string
	Offset int
}

// SplitTools splits the `tools` string of the JSON form (docs/sequences.md) into
// one JSON object text per tool call. The string is a list of JSON objects,
// each followed by `;`; a `;` separates only outside strings and at brace and
// bracket depth 0. Whitespace between items is ignored.
//
// It checks the shape only (the objects themselves are parsed afterwards)
// and returns an error wrapping ErrSyntax, with the tool number and the
// character position, for: an empty string, a missing `;` after an object,
// a doubled `;`, text that is not an object at depth 0, an unclosed string,
// an unclosed or unbalanced brace or bracket.
func SplitTools(s string) ([]ToolSpan, error) {
	var spans []ToolSpan
	depth := 0
	start := -1       // offset of the current object's '{'
	needSemi := false // an object ended; the next non-space must be ';'
	lastSemi := -1    // offset of the previous ';' (for the doubled-';' message)
	var stack []byte  // open braces/brackets
	toolNo := func() int { return len(spans) + 1 }
	fail := func(format string, a ...any) ([]ToolSpan, error) {
		return nil, fmt.Errorf("%w: %s", ErrSyntax, fmt.Sprintf(format, a...))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if depth == 0 {
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				continue
			case needSemi && c == ';':
				needSemi, lastSemi = false, i
				continue
			case needSemi:
				return fail("tool %d (the object ending at character %d) is not followed by `;`; found %q at character %d. End every tool call with `;`, e.g. {\"tool\":\"a\"};{\"tool\":\"b\"};", toolNo()-1, i, c, i+1)
			case c == ';':
				if lastSemi >= 0 {
					return fail("a doubled `;` at character %d (after tool %d); write exactly one `;` after each tool object", i+1, toolNo()-1)
				}
				return fail("`;` at character %d comes before any tool object; the string must start with {\"tool\": ...}", i+1)
			case c == '{':
				start, depth, stack = i, 1, append(stack[:0], '{')
				continue
			default:
				return fail("tool %d: expected `{` to start a tool object at character %d, found %q; the tools string is a list of JSON objects each followed by `;`", toolNo(), i+1, c)
			}
		}
		switch c {
		case '"':
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '"' {
					break
				}
			}
			if j >= len(s) {
				return fail("tool %d: the string starting at character %d is never closed; add the closing `\"`", toolNo(), i+1)
			}
			i = j
		case '{', '[':
			depth++
			if depth > maxDepth {
				return fail("tool %d: nested deeper than %d levels", toolNo(), maxDepth)
			}
			stack = append(stack, c)
		case '}', ']':
			open := stack[len(stack)-1]
			if (c == '}') != (open == '{') {
				return fail("tool %d: %q at character %d does not match the %q before it; balance the braces and brackets", toolNo(), c, i+1, open)
			}
			stack = stack[:len(stack)-1]
			depth--
			if depth == 0 {
				spans = append(spans, ToolSpan{Text: s[start : i+1], Offset: start})
				needSemi = true
			}
		}
	}
	if depth > 0 {
		return fail("tool %d: the object starting at character %d is never closed; add `%s` where it should end, then `;`", toolNo(), start+1, closers(stack))
	}
	if needSemi {
		return fail("tool %d (the last one) is not followed by `;`; end every tool call with `;`, e.g. {\"tool\":\"a\"};", toolNo()-1)
	}
	if len(spans) == 0 {
		return fail("the tools string holds no tool call; write at least one, e.g. {\"tool\":\"fs.read\",\"args\":{\"path\":\"$args.path\"}};")
	}
	return spans, nil
}

func closers(stack []byte) string {
	var b strings.Builder
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}
