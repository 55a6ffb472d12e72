package sections

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillbus/skillbus/internal/corpus"
)

type specExample struct {
	Markdown string `json:"markdown"`
	Example  int    `json:"example"`
	Section  string `json:"section"`
}

type truthExample struct {
	Example  int `json:"example"`
	Headings []struct {
		Level     int    `json:"level"`
		Text      string `json:"text"`
		Line      int    `json:"line"`
		Container string `json:"container"`
		TopLevel  bool   `json:"top_level"`
	} `json:"headings"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func fmtHeadings(hs []heading) string {
	s := "["
	for i, h := range hs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("{%d %q line %d}", h.level, h.title, h.line)
	}
	return s + "]"
}

func sameHeadings(a, b []heading) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].level != b[i].level || a[i].title != b[i].title || a[i].line != b[i].line {
			return false
		}
	}
	return true
}

// TestCommonMarkConformance checks the splitter against the top-level
// headings that goldmark finds in every CommonMark 0.31.2 spec example
// (corpus/commonmark/headings.json), in both directions: every top-level
// heading of the truth is found with the same level, text and line, and no
// other top-level heading is reported.
func TestCommonMarkConformance(t *testing.T) {
	dir := corpus.CommonMark(t)
	var spec []specExample
	var truth []truthExample
	readJSON(t, filepath.Join(dir, "spec.json"), &spec)
	readJSON(t, filepath.Join(dir, "headings.json"), &truth)
	if len(spec) != len(truth) {
		t.Fatalf("spec.json has %d examples, headings.json %d", len(spec), len(truth))
	}
	agree, wantTotal, gotTotal, found, extra, nestedTruth := 0, 0, 0, 0, 0, 0
	for i, ex := range spec {
		tr := truth[i]
		if tr.Example != ex.Example {
			t.Fatalf("example order differs: %d vs %d", tr.Example, ex.Example)
		}
		var want []heading
		for _, h := range tr.Headings {
			if h.TopLevel {
				want = append(want, heading{level: h.Level, title: h.Text, line: h.Line, topLevel: true})
			} else {
				nestedTruth++
			}
		}
		got := topLevel(ours(ex.Markdown))
		wantTotal += len(want)
		gotTotal += len(got)
		for _, w := range want {
			for _, g := range got {
				if g == w {
					found++
					break
				}
			}
		}
		for _, g := range got {
			ok := false
			for _, w := range want {
				if g == w {
					ok = true
				}
			}
			if !ok {
				extra++
			}
		}
		if sameHeadings(got, want) {
			agree++
		} else {
			t.Errorf("example %d (%s): top-level headings of %q = %s; want %s",
				ex.Example, ex.Section, ex.Markdown, fmtHeadings(got), fmtHeadings(want))
		}
	}
	t.Logf("CommonMark 0.31.2: %d/%d examples agree; %d/%d top-level headings found; %d reported that goldmark does not have at top level (%d reported in total); %d nested truth headings correctly left out",
		agree, len(spec), found, wantTotal, extra, gotTotal, nestedTruth)
}
