package sections

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Section
	}{
		{"empty", "", nil},
		{"no headings", "just text\nmore\n", []Section{{0, "", 0, 2}}},
		{"leading text", "intro\n# A\nx\n## B\ny\n", []Section{{0, "", 0, 1}, {1, "A", 1, 3}, {2, "B", 3, 5}}},
		{"heading first", "# A\n", []Section{{1, "A", 0, 1}}},
		{"no final newline", "# A\nx", []Section{{1, "A", 0, 2}}},
		{"setext", "Title\n=====\ntext\n\nSub\n---\n", []Section{{1, "Title", 0, 4}, {2, "Sub", 4, 6}}},
		{"setext takes the whole paragraph", "text\nSub\n---\n", []Section{{2, "text\nSub", 0, 3}}},
		{"multi-line setext", "a\n  b  \n===\n", []Section{{1, "a\nb", 0, 3}}},
		{"closing sequence", "## A ##\n### B#\n", []Section{{2, "A", 0, 1}, {3, "B#", 1, 2}}},
		{"fenced code", "```sh\n# comment\n```\n# A\n", []Section{{0, "", 0, 3}, {1, "A", 3, 4}}},
		{"unclosed fence", "~~~\n# x\n", []Section{{0, "", 0, 2}}},
		{"shorter closing fence", "````\n```\n# x\n````\n# y\n", []Section{{0, "", 0, 4}, {1, "y", 4, 5}}},
		{"indented code", "    # x\n\n# y\n", []Section{{0, "", 0, 2}, {1, "y", 2, 3}}},
		{"paragraph continuation", "text\n    # x\n", []Section{{0, "", 0, 2}}},
		{"html block", "<div>\n# x\n\n# y\n", []Section{{0, "", 0, 3}, {1, "y", 3, 4}}},
		{"html comment", "<!--\n# x\n-->\n# y\n", []Section{{0, "", 0, 3}, {1, "y", 3, 4}}},
		{"block quote", "> # x\n# y\n", []Section{{0, "", 0, 1}, {1, "y", 1, 2}}},
		{"list item", "- a\n\n  # x\n# y\n", []Section{{0, "", 0, 3}, {1, "y", 3, 4}}},
		{"thematic break is not setext", "- - -\n# y\n", []Section{{0, "", 0, 1}, {1, "y", 1, 2}}},
		{"setext beats thematic break", "a\n---\n", []Section{{2, "a", 0, 2}}},
		{"list item then dash", "- a\n---\n", []Section{{0, "", 0, 2}}},
		{"ref def before underline", "[a]: /u\nb\n===\n", []Section{{0, "", 0, 1}, {1, "b", 1, 3}}},
		{"only ref def", "[a]: /u\n===\n", []Section{{0, "", 0, 2}}},
		{"tabs", "#\tA\n\t# code\n", []Section{{1, "A", 0, 2}}},
		{"crlf", "# A\r\nx\r\n\r\nB\r\n-\r\n", []Section{{1, "A", 0, 3}, {2, "B", 3, 5}}},
		{"bom", "\uFEFF# A\n", []Section{{1, "A", 0, 1}}},
		{"front matter", "---\nname: x\n# not a heading\n---\n# A\n", []Section{{0, "", 0, 4}, {1, "A", 4, 5}}},
		{"front matter crlf bom", "\uFEFF---\r\na: b\r\n---\r\nT\r\n=\r\n", []Section{{0, "", 0, 3}, {1, "T", 3, 5}}},
		{"unclosed front matter", "---\n# A\n", []Section{{0, "", 0, 1}, {1, "A", 1, 2}}},
		{"seven hashes", "####### no\n", []Section{{0, "", 0, 1}}},
		{"no space after hash", "#hashtag\n", []Section{{0, "", 0, 1}}},
		{"empty heading", "#\n", []Section{{1, "", 0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q) = %v; want %v", tt.text, got, tt.want)
			}
			checkTiling(t, tt.text, got)
		})
	}
}

func TestSplitBodyKeepsLeadingRule(t *testing.T) {
	// A body never has front matter: a leading "---" pair is Markdown.
	text := "---\nA\n---\n"
	got := SplitBody(text)
	want := []Section{{0, "", 0, 1}, {2, "A", 1, 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SplitBody(%q) = %v; want %v", text, got, want)
	}
}

const doc = `intro
# Setup
## Install the CLI
### On macOS
## Configure
# Usage
## Install hooks
# Troubleshooting
`

func TestResolve(t *testing.T) {
	secs := SplitBody(doc)
	tests := []struct {
		query string
		want  Section
	}{
		{"Setup", Section{1, "Setup", 1, 5}},
		{"  setup ", Section{1, "Setup", 1, 5}},
		{"## SETUP", Section{1, "Setup", 1, 5}},
		{"install the cli", Section{2, "Install the CLI", 2, 4}},
		{"install", Section{2, "Install the CLI", 2, 4}},         // substring, tie at level 2 goes to the earliest
		{"macos", Section{3, "On macOS", 3, 4}},                  // substring
		{"usage guide for teams", Section{1, "Usage", 5, 7}},     // reverse substring
		{"Troubleshooting", Section{1, "Troubleshooting", 7, 8}}, // last section runs to the end
		{"InstallHooks", Section{2, "Install hooks", 6, 7}},      // spaces ignored
	}
	for _, tt := range tests {
		got, err := Resolve(secs, tt.query)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %v, %v; want %v", tt.query, got, err, tt.want)
		}
	}
}

func TestResolvePriority(t *testing.T) {
	secs := SplitBody("# Deploy notes\n## Deploy\n# Rollback\n### Deploy\n")
	got, err := Resolve(secs, "deploy")
	if want := (Section{2, "Deploy", 1, 2}); err != nil || got != want {
		t.Errorf("Resolve(deploy) = %v, %v; want the exact match %v over the shallower substring", got, err, want)
	}
	secs = SplitBody("### Run tests\n## Run\n## Tests\n")
	got, err = Resolve(secs, "Run")
	if want := (Section{2, "Run", 1, 2}); err != nil || got != want {
		t.Errorf("Resolve(Run) = %v, %v; want %v", got, err, want)
	}
	got, err = Resolve(secs, "run the tests") // reverse substring: "run" and "tests" tie at level 2: earliest
	if want := (Section{2, "Run", 1, 2}); err != nil || got != want {
		t.Errorf("Resolve(run the tests) = %v, %v; want %v", got, err, want)
	}
}

func TestResolveUnknown(t *testing.T) {
	secs := SplitBody(doc)
	for _, q := range []string{"deploy", "", "##"} {
		_, err := Resolve(secs, q)
		var nf *NotFoundError
		if !errors.Is(err, ErrNoSection) || !errors.As(err, &nf) {
			t.Fatalf("Resolve(%q) error = %v; want a NotFoundError", q, err)
		}
		if !strings.Contains(err.Error(), `"Install the CLI"`) || len(nf.Available) != 7 {
			t.Errorf("Resolve(%q) error = %q; want it to list the 7 titles", q, err)
		}
	}
}

func TestInfo(t *testing.T) {
	short := "# A\nshort\n"
	if got, err := Info(short, ""); err != nil || got != short {
		t.Errorf("Info(short) = %q, %v; want the whole text", got, err)
	}
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, "# Part %d\n", i+1)
		for j := range 59 {
			fmt.Fprintf(&b, "line %d.%d\n", i+1, j)
		}
	}
	long := b.String() // 300 lines
	got, err := Info(long, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, Slice(long, 0, 30)+"\n[30 of 300 lines shown.") {
		t.Errorf("Info(long) does not start with the first 30 lines and the note:\n%s", got)
	}
	if !strings.Contains(got, "- Part 3 (lines 121–180, 60 lines)\n") {
		t.Errorf("Info(long) TOC lacks Part 3 with its line count:\n%s", got)
	}
	got, err = Info(long, "part 2")
	if want := Slice(long, 60, 120); err != nil || got != want {
		t.Errorf("Info(long, part 2) = %d bytes, %v; want lines 60–120", len(got), err)
	}
	if _, err := Info(long, "Part 9"); !errors.Is(err, ErrNoSection) {
		t.Errorf("Info(long, Part 9) error = %v; want ErrNoSection", err)
	}
	got, _ = InfoWith(long, SplitBody(long), "", Limits{WholeMaxLines: 400})
	if got != long {
		t.Errorf("InfoWith(WholeMaxLines 400) did not return the whole text")
	}
}

func TestTOCDepth(t *testing.T) {
	toc := TOC(SplitBody(doc), 2)
	var got []string
	for _, e := range toc {
		got = append(got, e.Title)
	}
	want := []string{"Setup", "Install the CLI", "Configure", "Usage", "Install hooks", "Troubleshooting"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TOC(depth 2) titles = %q; want %q", got, want)
	}
}

func ExampleSplit() {
	text := "---\nname: demo\n---\nIntro.\n\n# Setup\n```sh\n# not a heading\n```\nUsage\n-----\nRun it.\n"
	for _, s := range Split(text) {
		fmt.Printf("%d %q [%d,%d)\n", s.Level, s.Title, s.Start, s.End)
	}
	// Output:
	// 0 "" [0,5)
	// 1 "Setup" [5,9)
	// 2 "Usage" [9,12)
}

func ExampleInfo() {
	body := "# Deploy\nsteps\n## Rollback\nundo\n# FAQ\n"
	out, _ := Info(body, "rollback")
	fmt.Print(out)
	_, err := Info(body, "monitoring")
	fmt.Println(err)
	// Output:
	// ## Rollback
	// undo
	// no section matches "monitoring"; available sections: "Deploy", "Rollback", "FAQ"
}

func ExampleFormatTOC() {
	fmt.Print(FormatTOC(TOC(SplitBody("# Guide\ntext\n## Step one\na\nb\n## Step two\nc\n"), 0)))
	// Output:
	// - Guide (lines 1–2, 2 lines)
	//   - Step one (lines 3–5, 3 lines)
	//   - Step two (lines 6–7, 2 lines)
}
