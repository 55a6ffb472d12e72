package sections

import (
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/text"
)

// The two benchmarks parse the same documents (every Markdown file of the
// skills corpus, front matter removed); compare their MB/s.

func BenchmarkSplitBodyCorpus(b *testing.B) {
	_, docs := corpusDocs(b)
	strs := make([]string, len(docs))
	n := 0
	for i, d := range docs {
		strs[i] = string(d)
		n += len(d)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range strs {
			SplitBody(s)
		}
	}
}

func BenchmarkGoldmarkParseCorpus(b *testing.B) {
	_, docs := corpusDocs(b)
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	p := goldmark.New().Parser()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			p.Parse(text.NewReader(d))
		}
	}
}
