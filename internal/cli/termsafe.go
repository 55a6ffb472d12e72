package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// termSafe returns text fit to print on a terminal: control characters
// other than newline and tab — ESC above all, which starts the sequences
// that set a terminal's title, clear its screen or write its clipboard —
// are shown as escapes (\x1b, \u009b) instead of acted on, and so are the
// bytes of invalid UTF-8 and the bidirectional embeddings, overrides and
// isolates (U+202A–U+202E, U+2066–U+2069: \u202e), which reorder what
// follows them on screen. A CR before a newline is dropped (CRLF files
// print as lines). Every command's stdout and stderr pass through it
// (termWriter); docs/security.md, "Terminal output".
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
		case r >= 0x80 && r <= 0x9f, isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isBidiControl reports whether r is a bidirectional embedding, override
// or isolate (U+202A–U+202E, U+2066–U+2069).
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// termWriter is the command line's stdout and stderr (Main): the one
// terminal-safety step every command's text passes, so that a
// description, a run's output, a tool's error or a server's reply cannot
// drive the terminal from inside a table, a progress line or an error
// message. Each Write is passed through termSafe (the command line writes
// whole strings, so a write never splits a character). What must reach the
// writer exactly — -o json and -o yaml, the MCP stdio transport, the
// live-line redraw of run's progress — goes to rawWriter(w) instead.
type termWriter struct{ w io.Writer }

// Write writes termSafe(p) and reports len(p) written, or the underlying
// writer's error.
func (t *termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawWriter returns the writer beneath w's terminal-safety step, or w.
func rawWriter(w io.Writer) io.Writer {
	if t, ok := w.(*termWriter); ok {
		return t.w
	}
	return w
}
