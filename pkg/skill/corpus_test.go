package skill

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/corpus"
	"github.com/skillbus/skillbus/pkg/sections"
)

// TestLoadCorpus loads every SKILL.md of the public skills corpus: each must
// load with zero errors (warnings are logged), its name must equal its
// directory, and its sections must tile its body.
func TestLoadCorpus(t *testing.T) {
	root := corpus.Skills(t)
	n, warned := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "SKILL.md" {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, p)
		s, warns, err := Load(p)
		if err != nil {
			t.Errorf("Load(%s): %v", rel, err)
			return nil
		}
		for _, w := range warns {
			warned++
			t.Logf("%s", w)
		}
		if s.Name != filepath.Base(filepath.Dir(p)) || s.Description == "" || s.Fingerprint == "" || s.Source != p {
			t.Errorf("Load(%s) = name %q, description %d chars, fingerprint %q, source %q", rel, s.Name, len(s.Description), s.Fingerprint, s.Source)
		}
		var b strings.Builder
		next := 0
		for _, sec := range s.Sections {
			if sec.Start != next {
				t.Errorf("Load(%s): section %+v does not start at line %d", rel, sec, next)
			}
			next = sec.End
			b.WriteString(sections.Text(s.Body, sec))
		}
		if b.String() != s.Body {
			t.Errorf("Load(%s): sections do not concatenate to the body", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no SKILL.md under %s", root)
	}
	t.Logf("%d SKILL.md files loaded with 0 errors, %d warnings", n, warned)
}
