package skill

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

func TestSplitComma(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "a, b ,c", []string{"a", "b", "c"}},
		{"braces keep their commas", "src/**/*.{ts,tsx}, docs/*.md", []string{"src/**/*.{ts,tsx}", "docs/*.md"}},
		{"nested braces", "{a,{b,c}}/x,y", []string{"{a,{b,c}}/x", "y"}},
		{"braces at the start and end", "{cmd,pkg}/**/*.go,*.{yaml,yml}", []string{"{cmd,pkg}/**/*.go", "*.{yaml,yml}"}},
		{"a class holding a comma", "data/[,;]*.csv, b", []string{"data/[,;]*.csv", "b"}},
		{"a class holding a brace", "a[{]b, c", []string{"a[{]b", "c"}},
		{"a class starting with ]", "x[]a]y, z", []string{"x[]a]y", "z"}},
		{"an escaped comma", `a\,b, c`, []string{`a\,b`, "c"}},
		{"an escaped brace does not open", `a\{b, c`, []string{`a\{b`, "c"}},
		{"an unclosed brace keeps the rest whole", "src/*.{ts, docs/*.md", []string{"src/*.{ts, docs/*.md"}},
		{"a stray closing brace is text", "a}, b", []string{"a}", "b"}},
		{"an unclosed class is text", "a[b, c", []string{"a[b", "c"}},
		{"empty items dropped", " , a,, ,b, ", []string{"a", "b"}},
		{"only separators", ",,, ", nil},
		{"empty", "", nil},
		{"non-ASCII", "文档/*.md, 源码/**/*.{go,rs}", []string{"文档/*.md", "源码/**/*.{go,rs}"}},
	}
	for _, tt := range tests {
		if got := splitComma(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: splitComma(%q) = %q; want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestSplitTools(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Read, Grep Bash(git add:*)", []string{"Read", "Grep", "Bash(git add:*)"}},
		{"Bash(git add:*),Bash(git commit:*)", []string{"Bash(git add:*)", "Bash(git commit:*)"}},
		{"mcp__{github,gitlab}__*, Read", []string{"mcp__{github,gitlab}__*", "Read"}},
		{"Bash(ls {a, b}), Write", []string{"Bash(ls {a, b})", "Write"}},
		{"Read\n\tWrite\r\nEdit", []string{"Read", "Write", "Edit"}},
	}
	for _, tt := range tests {
		if got := splitTools(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitTools(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestPathsWithBraces loads the skill of issue 12 item 3 and others of our
// own: a comma inside {…} never splits a glob, and each glob is valid.
func TestPathsWithBraces(t *testing.T) {
	tests := []struct {
		paths string
		want  []string
		match string // a path the globs must match
	}{
		{`"src/**/*.{ts,tsx}, docs/*.md"`, []string{"src/**/*.{ts,tsx}", "docs/*.md"}, "src/ui/app.tsx"},
		{`"{cmd,internal}/**/*.go"`, []string{"{cmd,internal}/**/*.go"}, "internal/registry/load.go"},
		{`"**/*.{yaml,yml},charts/**/{values,Chart}.yaml"`, []string{"**/*.{yaml,yml}", "charts/**/{values,Chart}.yaml"}, "charts/web/Chart.yaml"},
		{`["src/**/*.{ts,tsx}", "docs/*.md"]`, []string{"src/**/*.{ts,tsx}", "docs/*.md"}, "docs/a.md"},
	}
	for _, tt := range tests {
		src := "---\nname: x\ndescription: d\npaths: " + tt.paths + "\n---\nbody\n"
		s, _, err := Parse([]byte(src), FormatMarkdown, "x")
		if err != nil {
			t.Errorf("Parse(paths: %s) = %v; want it to load", tt.paths, err)
			continue
		}
		if !reflect.DeepEqual(s.Paths, tt.want) {
			t.Errorf("Parse(paths: %s).Paths = %q; want %q", tt.paths, s.Paths, tt.want)
		}
		matched := false
		for _, g := range s.Paths {
			if ok, _ := doublestar.Match(g, tt.match); ok {
				matched = true
			}
		}
		if !matched {
			t.Errorf("paths %q match no %q", s.Paths, tt.match)
		}
	}
	// A brace that is never closed is still reported, whole.
	_, _, err := Parse([]byte("---\nname: x\ndescription: d\npaths: \"src/*.{ts, docs/*.md\"\n---\nb\n"), FormatMarkdown, "x")
	if err == nil || !strings.Contains(err.Error(), `"src/*.{ts, docs/*.md" is not a valid glob`) {
		t.Errorf("Parse(unclosed brace) = %v; want the whole text reported as an invalid glob", err)
	}
}

// FuzzSplitList checks the splitter's invariants on any input: items are
// trimmed and non-empty, an item never splits again, joining the items
// with the separator and splitting gives them back when every item is
// balanced, and text free of brackets, braces, parentheses and
// backslashes splits exactly like strings.Split.
func FuzzSplitList(f *testing.F) {
	for _, s := range []string{"src/**/*.{ts,tsx}, docs/*.md", "a[,]b,c", `a\,b`, "{a,{b,c}},d", "x(y, z) w", "a}", "{", "[]]", ",,", "é,ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, split := range []struct {
			name string
			fn   func(string) []string
			sep  string
		}{{"splitComma", splitComma, ","}, {"splitTools", splitTools, ","}} {
			items := split.fn(s)
			for _, it := range items {
				if it == "" || strings.TrimSpace(it) != it {
					t.Fatalf("%s(%q) = %q: an empty or untrimmed item", split.name, s, items)
				}
				if again := split.fn(it); len(again) != 1 || again[0] != it {
					t.Fatalf("%s(%q) item %q splits again into %q", split.name, s, it, again)
				}
			}
			if len(items) > 0 && allBalanced(items) {
				joined := strings.Join(items, split.sep)
				if again := split.fn(joined); !reflect.DeepEqual(again, items) {
					t.Fatalf("%s(%q) = %q, but splitting their join %q gives %q", split.name, s, items, joined, again)
				}
			}
		}
		if !strings.ContainsAny(s, "[](){}\\") {
			var want []string
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					want = append(want, p)
				}
			}
			if got := splitComma(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("splitComma(%q) = %q; want %q (as strings.Split)", s, got, want)
			}
		}
	})
}

// allBalanced reports whether every item's end survives a join: no
// unclosed '(' or '{' and no trailing backslash, the cases where splitList
// deliberately keeps the rest of the text whole (or where trimming took
// an escaped space).
func allBalanced(items []string) bool {
	for _, it := range items {
		if !balanced(it) {
			return false
		}
	}
	return true
}

func balanced(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return false
			}
			i++
		case '[':
			if j := classEnd(s, i); j > 0 {
				i = j
			}
		case '(', '{':
			depth++
		case ')', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return depth == 0
}
