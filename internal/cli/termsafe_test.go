package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\twith tabs":               "plain text\n\twith tabs",
		"日本語 and é":                             "日本語 and é",
		"# H \x1b]0;pwned\x07 \x1b[2J":          `# H \x1b]0;pwned\x07 \x1b[2J`,
		"body \x1b[31mred\r\nnext\rover":        `body \x1b[31mred` + "\nnext" + `\x0dover`,
		"c1 \u009b31m and del \x7f":             `c1 \u009b31m and del \x7f`,
		"bad utf-8 \xff\xfe":                    `bad utf-8 \xff\xfe`,
		"osc 52 \x1b]52;c;aGk=\x1b\\ clipboard": `osc 52 \x1b]52;c;aGk=\x1b\ clipboard`,
		"bidi \u202eevil\u202c \u2066iso\u2069": `bidi \u202eevil\u202c \u2066iso\u2069`,
		"marks kept: \u200f\u05d0 \u2028":       "marks kept: \u200f\u05d0 \u2028",
		"escaped twice \\x1b":                   `escaped twice \x1b`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q; want %q", in, got, want)
		}
	}
}

// FuzzTermSafe: whatever the text, what is printed holds no control
// character but newline and tab, no C1 control, and is valid UTF-8.
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"a\x1b[2Jb", "\r\n", "\xc2\x9b", "\xff", "ok", "\u202e", "\r\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := termSafe(in)
		if again := termSafe(out); again != out {
			t.Fatalf("termSafe(%q) = %q, and again %q: not stable", in, out, again)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("termSafe(%q) = %q: not valid UTF-8", in, out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
				t.Fatalf("termSafe(%q) = %q holds the control character %U", in, out, r)
			}
		}
	})
}

// TestSectionsEscapesControlCharacters: a heading carrying terminal escape
// sequences (a title set, a screen clear) is listed with them escaped.
func TestSectionsEscapesControlCharacters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "SKILL.md")
	if err := os.WriteFile(p, []byte("---\nname: escb\ndescription: d\n---\n# H \x1b]0;pwned\x07 \x1b[2J\n\nbody \x1b[31mred\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runMain(t, "sections", p)
	if code != ExitOK || strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, 0x07) || !strings.Contains(out, `# H \x1b]0;pwned\x07 \x1b[2J`) {
		t.Errorf("sections = %d %q (stderr %q); want the heading with its escapes shown, not acted on", code, out, errb)
	}
}
