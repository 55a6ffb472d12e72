package seqtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runWith runs the one case of tests against the sequence seqText.
func runWith(t *testing.T, seqText, tests string) Result {
	t.Helper()
	f, err := loadWith(t, seqText, tests)
	if err != nil {
		t.Fatal(err)
	}
	rs := RunFile(context.Background(), f, nil)
	if len(rs) != 1 {
		t.Fatalf("%d results, want 1", len(rs))
	}
	return rs[0]
}

// twice calls fs.read twice in one parallel group, with the same
// arguments, and then once per item of $args.files.
const twice = `
name: twice
groups:
  - name: both
    parallel: true
    out: {a: object, b: object}
    tools:
      - {tool: fs.read, args: {path: x}, as: a}
      - {tool: fs.read, args: {path: x}, as: b}
  - name: each
    in: {files: array<object>}
    out: {sizes: array}
    on_error: continue
    tools:
      - {tool: fs.stat, for_each: $args.files, args: {path: $item.path}, as: sizes}
`

// A mock chooses its calls by position in the group and by for_each item
// or index; each selector forms its own script.
func TestMockSelectors(t *testing.T) {
	cases := []struct {
		name, mocks, expect string
		pass                bool
	}{
		{"by position", `
      fs.read:
        - {position: 1, result: {n: 1}}
        - {position: 2, result: {n: 2}}
      fs.stat: {result: 0}`, `{slots: {a: {n: 1}, b: {n: 2}}}`, true},
		{"by group and position, wrong way round", `
      fs.read:
        - {group: both, position: 2, result: {n: 1}}
        - {group: both, position: 1, result: {n: 2}}
      fs.stat: {result: 0}`, `{slots: {a: {n: 1}}}`, false},
		{"by item and index", `
      fs.read: {result: {}}
      fs.stat:
        - {item: {path: b}, error: {code: "404", message: gone}}
        - {index: 0, result: 10}
        - {result: 30}`, `{groups: {each: partial}, slots: {sizes: [10, null, 30]}}`, true},
		{"index is 0-based", `
      fs.read: {result: {}}
      fs.stat:
        - {index: 1, result: 20}
        - {result: 0}`, `{slots: {sizes: [0, 20, 0]}}`, true},
		{"an item selector never matches a plain call", `
      fs.read: [{item: {path: x}, result: {}}]
      fs.stat: {result: 0}`, `{status: failed, error: "no mock of this tool matches the call"}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, twice, `
cases:
  - name: one
    args: {files: [{path: a}, {path: b}, {path: c}]}
    mocks:`+c.mocks+`
    expect: `+c.expect+"\n")
			if r.Passed != c.pass {
				t.Errorf("passed = %v; want %v: %v\n%s", r.Passed, c.pass, r.Failures, strings.Join(r.Trace, "\n"))
			}
		})
	}
}

// Slot expectations of the form {cel: EXPR} are CEL predicates over the
// slot (value) and the run's slots.
func TestSlotPredicates(t *testing.T) {
	cases := []struct {
		name, slots string
		want        string // "" passes; else a failure containing it
	}{
		{"holds", `{a: {cel: "value.n == 1 && value.tags.exists(t, t == 'x')"}, b: {cel: "size(slots) == 3"}}`, ""},
		{"numbers are whole or not", `{a: {cel: "value.n % 2 == 1 && value.r > 0.4"}}`, ""},
		{"is false", `{a: {cel: "value.n > 1"}}`, "slot a (cel)\n    expected: a value for which value.n > 1 is true\n    actual:   {\"n\":1,\"r\":0.5,\"tags\":[\"x\"]}"},
		{"cannot be decided", `{a: {cel: "value.missing > 1"}}`, "the predicate fails on it: no such key: missing"},
		{"not a bool", `{a: {cel: "value.n"}}`, "not true or false"},
		{"beside an exact value", `{a: {cel: "value.n == 1"}, b: {n: 3}}`, "slot b\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, twice, `
cases:
  - name: one
    args: {files: [{path: a}]}
    mocks: {fs.read: {result: {n: 1, r: 0.5, tags: [x]}}, fs.stat: {result: 1}}
    expect:
      slots: `+c.slots+"\n")
			got := strings.Join(r.Failures, "\n")
			if c.want == "" && !r.Passed || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("failures %q; want %q", got, c.want)
			}
		})
	}
}

// A mock list without a response, and a predicate that does not compile
// or is not a condition, are refused with their line.
func TestSelectorParseErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"cases:\n  - name: a\n    mocks:\n      fs.read: []\n", ":4: a mock list needs at least one response"},
		{"cases:\n  - name: a\n    mocks:\n      fs.read: {position: 0}\n", `:4: position: "0" is not a call's position`},
		{"cases:\n  - name: a\n    mocks:\n      fs.read: {index: -1}\n", `:4: index: "-1" is not a for_each item's index`},
		{"cases:\n  - name: a\n    expect:\n      slots:\n        a: {cel: \"value >\"}\n", `:5: slot a: cel: "value >" does not compile`},
		{"cases:\n  - name: a\n    expect:\n      slots:\n        a: {cel: \"'x'\"}\n", `:5: slot a: cel: "'x'" yields string, not true or false`},
	} {
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(twice), 0o644)
		p := filepath.Join(dir, "x.test.yaml")
		_ = os.WriteFile(p, []byte(c.text), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%q) = %v; want %q", c.text, err, c.want)
		}
	}
}

// Lint warns of a response whose selectors no call of the sequence fits.
func TestLintWarnsOfDeadSelectors(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(twice), 0o644)
	p := filepath.Join(dir, "x.test.yaml")
	_ = os.WriteFile(p, []byte(`cases:
  - name: a
    args: {files: []}
    mocks:
      fs.read:
        - {group: bothh, result: {}}
        - {position: 3, result: {}}
        - {item: x, result: {}}
        - {group: both, position: 2, result: {}}
      fs.stat:
        - {index: 4, result: {}}
        - {group: both, result: {}}
`), 0o644)
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Lint(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("%d %s", w.Line, w.Message))
	}
	want := []string{
		`6 case "a": a response of the mock of "fs.read" names the group "bothh", which the sequence twice does not have, so it never answers`,
		`7 case "a": a response of the mock of "fs.read" names position 3, where no group calls the tool, so it never answers`,
		`8 case "a": a response of the mock of "fs.read" chooses a for_each item (item or index), but no for_each call of the tool fits its group and position, so it never answers`,
		`12 case "a": a response of the mock of "fs.stat" names the group "both", which does not call the tool, so it never answers`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
