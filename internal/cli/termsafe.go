package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe returns text fit to print on a terminal: control characters
// other than newline and tab — ESC above all, which starts the sequences
// that set a terminal's title, clear its screen or write its clipboard —
// are shown as escapes (\x1b, \u009b) instead of acted on, and so are the
// bytes of invalid UTF-8. A CR before a newline is dropped (CRLF files
// print as lines). The text of a skill or a Markdown file may come from
// anyone's repository; `skills info` and `sections` print it through this.
// Structured output (-o json/yaml) needs none of it: its encoders escape.
func termSafe(text string) string {
	clean := true
	for i := 0; i < len(text); i++ {
		if c := text[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, text[i])
		case r == '\r' && strings.HasPrefix(text[i+1:], "\n"):
			// CRLF: the LF alone.
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String()
}
