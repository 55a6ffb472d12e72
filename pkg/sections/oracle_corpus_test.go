package sections

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/corpus"
)

// corpusDocs returns every Markdown file of the skills corpus with its front
// matter removed, keyed by path relative to the corpus.
func corpusDocs(tb testing.TB) (names []string, docs [][]byte) {
	tb.Helper()
	root := corpus.Skills(tb)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := string(b)
		body := text[len(Slice(text, 0, FrontMatterEnd(text))):]
		rel, _ := filepath.Rel(root, p)
		names = append(names, rel)
		docs = append(docs, []byte(body))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(docs) == 0 {
		tb.Fatalf("no Markdown file under %s", root)
	}
	return names, docs
}

// TestSkillsCorpusAgainstGoldmark runs goldmark as an oracle over every
// Markdown file of the skills corpus (front matter removed): the top-level
// headings must be identical (level, text, line) in both directions.
func TestSkillsCorpusAgainstGoldmark(t *testing.T) {
	names, docs := corpusDocs(t)
	total := 0
	for i, doc := range docs {
		want := topLevel(oracleHeadings(doc))
		got := topLevel(ours(string(doc)))
		total += len(want)
		if !sameHeadings(got, want) {
			t.Errorf("%s: top-level headings = %s;\nwant %s", names[i], fmtHeadings(got), fmtHeadings(want))
		}
	}
	t.Logf("%d files, %d top-level headings, all agree with goldmark", len(docs), total)
}
