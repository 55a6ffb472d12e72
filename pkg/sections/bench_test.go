package sections

import (
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/text"
)

// The two benchmarks parse the same documents (every Markdown file of the
// skills corpus, front matter removed); compare their MB/s, or their
// cpu-ns/op — the CPU time of the process per op, garbage collection
// included — which varies less than wall time on a busy machine. The goal
// is SplitBody ≥ 20× goldmark (BENCHMARKS.md):
//
//	go test -run '^$' -bench Corpus -count 10 ./pkg/sections

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
	cpu := processCPU()
	for b.Loop() {
		for _, s := range strs {
			SplitBody(s)
		}
	}
	reportCPU(b, cpu)
}

// reportCPU reports the process CPU time per op since cpu.
func reportCPU(b *testing.B, cpu time.Duration) {
	if used := processCPU() - cpu; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
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
	cpu := processCPU()
	for b.Loop() {
		for _, d := range docs {
			p.Parse(text.NewReader(d))
		}
	}
	reportCPU(b, cpu)
}
