// Package corpus locates the shared test corpus — public SKILL.md files and
// the CommonMark spec examples — that lives beside the repository at
// ../shared/corpus and is never copied into it.
//
// A user's clone has no ../shared: tests that need it call Dir(t), which
// skips the test with a clear message when the corpus is absent. CI always
// has it. SKILLBUS_CORPUS overrides the location.
package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvVar names the environment variable that overrides the corpus location.
const EnvVar = "SKILLBUS_CORPUS"

// Find returns the corpus directory (an absolute path ending in
// shared/corpus) and whether it exists. It looks at $SKILLBUS_CORPUS, then
// walks up from the working directory to the module root (the directory
// holding go.mod) and takes ../shared/corpus beside it.
func Find() (string, bool) {
	if d := os.Getenv(EnvVar); d != "" {
		st, err := os.Stat(d)
		return d, err == nil && st.IsDir()
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			c := filepath.Join(filepath.Dir(dir), "shared", "corpus")
			st, err := os.Stat(c)
			return c, err == nil && st.IsDir()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Dir returns the corpus directory, or skips the test when it is absent.
func Dir(tb testing.TB) string {
	tb.Helper()
	d, ok := Find()
	if !ok {
		tb.Skipf("shared corpus not found (looked for ../shared/corpus beside the module root, or $%s): "+
			"this test needs the public SKILL.md files and CommonMark examples; it runs in CI", EnvVar)
	}
	return d
}

// Skills returns the directory of public SKILL.md files (corpus/skills), or
// skips the test when it is absent.
func Skills(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Dir(tb), "skills")
}

// CommonMark returns the directory holding spec.json and headings.json
// (corpus/commonmark), or skips the test when it is absent.
func CommonMark(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Dir(tb), "commonmark")
}
