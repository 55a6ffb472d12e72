package seqtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadWith writes seqText and tests as x.seq.yaml and x.test.yaml and
// loads the latter.
func loadWith(t *testing.T, seqText, tests string) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(seqText), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.test.yaml")
	if err := os.WriteFile(p, []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

// TestEveryProblemOfAFile: a test file with many mistakes gives every one
// of them when it is read, each at its line, in line order, with "did you
// mean" for a misspelt field, value, tool, group or argument; args that do
// not fit the signature, a mock of a tool the sequence never calls, names
// under expect the sequence lacks and negative counts are among them
// (issue 23).
func TestEveryProblemOfAFile(t *testing.T) {
	_, err := loadWith(t, testSeq, `cases:
  - name: a
    args: {repo: [a], extra: 1}
    mocks:
      gh.info: {result: {}, delay: -1s}
      gh.infos: {result: {}}
      chat.post: {reslt: 1}
    expect:
      status: succeded
      groups: {fech: ran, post: skiped}
      attempts: {fetch/gh.inf: 1, nope/gh.info: 1, gh.inf: 2}
      call_counts: {gh.info: -1, chat.pots: 1}
      calls: [{tool: gh.inf}]
      waits: {fetch: elapsed}
      slots: {meta: {}, mta: {}}
  - name: b
    mocks: {gh.info: {result: {}}, chat.post: {result: {}}}
`)
	if err == nil {
		t.Fatal("Load passed a file full of mistakes")
	}
	got := err.Error()
	for _, want := range []string{
		`x.test.yaml:3: case "a": args: unknown argument "extra"; the sequence takes (repo: string)`,
		`x.test.yaml:3: case "a": args: repo is declared string`,
		`x.test.yaml:5: delay: "-1s" is negative; a delay is the virtual time before the answer, 0s or more`,
		`x.test.yaml:6: case "a" mocks the tool "gh.infos" (did you mean "gh.info"?), which the sequence fetch-and-post never calls; its tools are gh.info, chat.post`,
		`x.test.yaml:7: unknown mock field "reslt" (did you mean "result"?)`,
		`x.test.yaml:9: status: "succeded" (did you mean "succeeded"?)`,
		`x.test.yaml:10: case "a": expect.groups: the sequence fetch-and-post has no group "fech" (did you mean "fetch"?); its groups are fetch, post`,
		`x.test.yaml:10: group "post": "skiped" (did you mean "skipped"?)`,
		`x.test.yaml:11: case "a": expect.attempts: "fetch/gh.inf": the group "fetch" never calls the tool "gh.inf" (did you mean "gh.info"?)`,
		`x.test.yaml:11: case "a": expect.attempts: "nope/gh.info": the sequence fetch-and-post has no group "nope"`,
		`x.test.yaml:11: case "a": expect.attempts: the sequence fetch-and-post never calls the tool "gh.inf" (did you mean "gh.info"?)`,
		`x.test.yaml:12: call_counts: gh.info: -1 is negative`,
		`x.test.yaml:12: case "a": expect.call_counts: the sequence fetch-and-post never calls the tool "chat.pots" (did you mean "chat.post"?)`,
		`x.test.yaml:13: case "a": expect.calls: the sequence fetch-and-post never calls the tool "gh.inf" (did you mean "gh.info"?)`,
		`x.test.yaml:14: case "a": expect.waits: the sequence fetch-and-post has no wait_for group "fetch"; it has no wait_for group`,
		`x.test.yaml:15: case "a": expect: the sequence fetch-and-post has no slot "mta" (did you mean "meta"?)`,
		`x.test.yaml:16: case "b": args: missing: repo is a run argument of type string`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q", want)
		}
	}
	if strings.Contains(got, `"meta"`+" (a group") || strings.Contains(got, `slot "meta"`) {
		t.Errorf("a slot the sequence has is reported:\n%s", got)
	}
	// One problem a line, in line order.
	lines := strings.Split(got, "\n")
	if len(lines) != 17 {
		t.Errorf("%d problems, want 17:\n%s", len(lines), got)
	}
	if t.Failed() {
		t.Logf("all:\n%s", got)
	}
	var pe *ParseError
	if pe, _ = err.(*ParseError); pe == nil || pe.Line != 3 || len(pe.All()) != len(lines) {
		t.Errorf("err = %#v; want a *ParseError at line 3 with every problem in All", err)
	}
}

// TestScheduleEntryDidYouMean: a schedule check of an entry the sequence
// lacks is refused when the file is read, with the entry it likely means.
func TestScheduleEntryDidYouMean(t *testing.T) {
	_, err := schedFile(t, "schedules:\n  - entry: berln\n    now: \"2026-03-26T12:00:00Z\"\n    next: [\"2026-03-27T08:00:00Z\"]\n")
	want := `sc.test.yaml:2: the sequence sc has no schedule entry "berln" (did you mean "berlin"?) (its entries are berlin, often)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want %q", err, want)
	}
}

// TestNoStatusExpectsSuccess: a case that sets no status expects the run
// not to fail, as an error fails a go test; one that expects an error
// text, or says status: failed, may fail.
func TestNoStatusExpectsSuccess(t *testing.T) {
	const mocks = "    args: {repo: a/b}\n    mocks: {gh.info: {error: {code: \"404\", message: no such repo}}, chat.post: {result: {}}}\n"
	r := runOne(t, "cases:\n  - name: a\n"+mocks)
	if r.Passed || !strings.Contains(strings.Join(r.Failures, "\n"), "expected: succeeded\n    actual:   failed") {
		t.Errorf("a failed run with no expect passed: %+v", r)
	}
	r = runOne(t, "cases:\n  - name: a\n"+mocks+"    expect: {calls: [{tool: gh.info}]}\n")
	if r.Passed {
		t.Errorf("a failed run with no status expected passed: %+v", r)
	}
	for _, e := range []string{"{error: no such repo}", "{status: failed}"} {
		if r := runOne(t, "cases:\n  - name: a\n"+mocks+"    expect: "+e+"\n"); !r.Passed {
			t.Errorf("expect %s: %v", e, r.Failures)
		}
	}
}
