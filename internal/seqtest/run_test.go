package seqtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
)

const testSeq = `
name: fetch-and-post
groups:
  - name: fetch
    in: {repo: string}
    out: {meta: object}
    timeout: 10m
    on_error: retry
    retries: 4
    tools:
      - tool: gh.info
        args: {repo: $args.repo, note: "about $args.repo"}
        as: meta
  - name: post
    in: {meta: object}
    out: {posted: object}
    when: $args.meta != null && $args.meta.stars > 10
    missing: degrade
    tools:
      - tool: chat.post
        args: {text: $args.meta}
        as: posted
        fallback: '{"posted": false}'
`

// runOne parses a test file of one case against testSeq and runs it.
func runOne(t *testing.T, tests string) Result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(testSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.test.yaml")
	if err := os.WriteFile(p, []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	rs := RunFile(context.Background(), f, nil)
	if len(rs) != 1 {
		t.Fatalf("%d results, want 1", len(rs))
	}
	return rs[0]
}

func TestPassingCase(t *testing.T) {
	r := runOne(t, `
cases:
  - name: posts a popular repo
    args: {repo: a/b}
    mocks:
      gh.info: {result: {stars: 50}}
      chat.post: {result: {posted: true}}
    expect:
      status: succeeded
      groups: {fetch: succeeded, post: ran}
      slots: {meta: {stars: 50}, posted: {posted: true}}
      calls:
        - tool: chat.post
          args: {text: {stars: 50}}
        - tool: gh.info
          args: {repo: a/b, note: about a/b}
      call_counts: {gh.info: 1}
      attempts: {fetch/gh.info: 1}
`)
	if !r.Passed {
		t.Fatalf("failed: %v\n%s", r.Failures, strings.Join(r.Trace, "\n"))
	}
}

func TestEveryExpectationFails(t *testing.T) {
	r := runOne(t, `
cases:
  - name: all wrong
    args: {repo: a/b}
    mocks:
      gh.info: {result: {stars: 5}}
    expect:
      status: failed
      error: boom
      groups: {post: succeeded}
      slots: {meta: {stars: 6}}
      slots_subset: {meta: {forks: 1}}
      calls: [{tool: gh.info, args: {repo: c/d}}]
      call_counts: {gh.info: 2}
      attempts: {gh.info: 3}
`)
	if r.Passed {
		t.Fatal("passed, want every expectation to fail")
	}
	all := strings.Join(r.Failures, "\n")
	for _, want := range []string{
		"status\n    expected: failed\n    actual:   succeeded",
		`error
    expected: an error containing "boom"`,
		"group post\n    expected: succeeded\n    actual:   skipped",
		"slot meta\n    expected: {\"stars\":6}\n    actual:   {\"stars\":5}",
		"slot meta (subset)",
		`gh.info {"note":"about a/b","repo":"a/b"}`,
		"calls of gh.info\n    expected: 2\n    actual:   1",
		"attempts of gh.info\n    expected: 3\n    actual:   1",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("failures lack %q:\n%s", want, all)
		}
	}
	if len(r.Failures) != 8 {
		t.Errorf("%d failures, want 8:\n%s", len(r.Failures), all)
	}
}

func TestRetriesInVirtualTime(t *testing.T) {
	r := runOne(t, `
cases:
  - name: flaky then fine
    args: {repo: a/b}
    mocks:
      gh.info:
        - {error: {code: "503", message: busy}, delay: 1m}
        - {error: {code: "503", message: busy}, delay: 1m}
        - {error: {code: "503", message: busy}, delay: 1m}
        - {result: {stars: 1}, delay: 1m}
    expect:
      status: succeeded
      attempts: {gh.info: 4}
      groups: {post: skipped}
`)
	if !r.Passed {
		t.Fatalf("failed: %v\n%s", r.Failures, strings.Join(r.Trace, "\n"))
	}
	if r.Virtual < 4*time.Minute {
		t.Errorf("virtual duration %s, want at least 4m (four delays of 1m plus backoff)", r.Virtual)
	}
	if r.Wall > 2*time.Second {
		t.Errorf("wall time %s: virtual time took real time", r.Wall)
	}
}

func TestTimeoutFiresInVirtualTime(t *testing.T) {
	r := runOne(t, `
cases:
  - name: slow tool
    args: {repo: a/b}
    mocks:
      gh.info: {result: {}, delay: 1h}
    expect:
      status: failed
      error: group timeout of 10m0s
      groups: {fetch: failed}
`)
	if !r.Passed {
		t.Fatalf("failed: %v\n%s", r.Failures, strings.Join(r.Trace, "\n"))
	}
	if r.Virtual != 10*time.Minute {
		t.Errorf("virtual duration %s, want exactly 10m", r.Virtual)
	}
	if r.Wall > 2*time.Second {
		t.Errorf("wall time %s", r.Wall)
	}
}

func TestUnmockedToolFailsTheCase(t *testing.T) {
	r := runOne(t, `
cases:
  - name: forgot chat
    args: {repo: a/b}
    mocks:
      gh.info: {result: {stars: 50}}
`)
	if r.Passed || !strings.Contains(strings.Join(r.Failures, "\n"), `the tool "chat.post" is not mocked`) {
		t.Fatalf("want an unmocked failure, got %v", r.Failures)
	}
}

func TestMissingDegrades(t *testing.T) {
	r := runOne(t, `
cases:
  - name: no chat deployed
    args: {repo: a/b}
    mocks:
      gh.info: {result: {stars: 50}}
      chat.post: missing
    expect:
      status: succeeded
      slots: {posted: {posted: false}}
`)
	if !r.Passed {
		t.Fatalf("failed: %v\n%s", r.Failures, strings.Join(r.Trace, "\n"))
	}
}

func TestMatchByArguments(t *testing.T) {
	r := runOne(t, `
cases:
  - name: per repo
    args: {repo: x/y}
    mocks:
      gh.info:
        - {match: {repo: a/b}, error: nope}
        - {match: {repo: x/y}, result: {stars: 1}}
    expect:
      status: succeeded
      slots: {meta: {stars: 1}}
`)
	if !r.Passed {
		t.Fatalf("failed: %v\n%s", r.Failures, strings.Join(r.Trace, "\n"))
	}
}

func TestParseErrorHasLine(t *testing.T) {
	_, err := ParseFile("t.test.yaml", []byte("sequence: x.seq.yaml\ncases:\n  - name: a\n    mocks:\n      t: {delay: soon}\n"))
	pe, ok := err.(*ParseError)
	if !ok || pe.Line != 5 || !strings.Contains(pe.Message, "delay") {
		t.Fatalf("got %#v, want a ParseError at line 5 about delay", err)
	}
}

// TestSequencePathIsASequenceFile: a test file names only a sequence file,
// relative to itself, so it cannot have the runner read and quote another
// file (/etc/passwd).
func TestSequencePathIsASequenceFile(t *testing.T) {
	for _, bad := range []string{"/etc/passwd", "../../../../etc/passwd", "/abs/x.seq.yaml", "notes.txt"} {
		_, err := ParseFile("t.test.yaml", []byte("sequence: "+bad+"\ncases: []\n"))
		pe, ok := err.(*ParseError)
		if !ok || pe.Line != 1 || !strings.Contains(pe.Message, "must be a sequence file") {
			t.Errorf("sequence: %s = %v; want a ParseError at line 1 saying it must be a sequence file", bad, err)
		}
	}
	if _, err := ParseFile("dir/t.test.yaml", []byte("sequence: ../seqs/x.seq.yaml\ncases:\n  - name: a\n")); err != nil {
		t.Errorf("a relative sequence file elsewhere in the repository: %v; want it accepted", err)
	}
}

// Hundreds of cases with retries and timeouts run in well under a second each.
func TestManyCasesAreFast(t *testing.T) {
	s, err := seq.ParseYAML([]byte(testSeq))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile("x.test.yaml", []byte(`
sequence: x.seq.yaml
cases:
  - name: retry
    args: {repo: a/b}
    mocks:
      gh.info: [{error: {code: "503"}}, {error: {code: "503"}}, {result: {stars: 1}}]
    expect: {status: succeeded}
`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 200 {
		if r := RunCase(context.Background(), s, &f.Cases[0]); !r.Passed {
			t.Fatal(r.Failures)
		}
	}
	t.Logf("200 cases in %s", time.Since(start))
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("200 cases took %s", d)
	}
}

// A parallel group: the run goroutine waits on a wait group while the calls
// wait on virtual time; the slow call's delay ends the group at 2h.
func TestParallelDelays(t *testing.T) {
	s, err := seq.ParseYAML([]byte(`
name: par
groups:
  - name: both
    in: {}
    out: {a: object, b: object}
    timeout: 3h
    on_error: retry
    retries: 2
    tools:
      - {tool: t.a, as: a}
      - {tool: t.b, as: b}
`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile("p.test.yaml", []byte(`
sequence: p.seq.yaml
cases:
  - name: two delays
    mocks:
      t.a: {result: {x: 1}, delay: 1h}
      t.b: [{error: {code: "503"}, delay: 30m}, {result: {y: 2}, delay: 2h}]
    expect:
      status: succeeded
      slots: {a: {x: 1}, b: {y: 2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		r := RunCase(context.Background(), s, &f.Cases[0])
		if !r.Passed {
			t.Fatalf("%v\n%s", r.Failures, strings.Join(r.Trace, "\n"))
		}
	}
}

// TestTraceInEngineOrder: the trace of a failing case lists what happened
// at one virtual time in the engine's order, the same every run: a
// group's calls by their place in the group (a for_each call's items by
// $index), then the group's end, then the next group's calls.
func TestTraceInEngineOrder(t *testing.T) {
	s, err := seq.ParseYAML([]byte(`
name: order
groups:
  - name: first
    in: {}
    out: {a: object, b: object, c: object, d: object}
    parallel: true
    tools:
      - {tool: t.d, as: d}
      - {tool: t.c, as: c}
      - {tool: t.b, as: b}
      - {tool: t.a, as: a}
  - name: second
    in: {ns: array<integer>}
    out: {each: array}
    tools:
      - tool: t.each
        for_each: $args.ns
        max_parallel: 12
        args: {n: $item}
        as: each
`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile("o.test.yaml", []byte(`
sequence: o.seq.yaml
cases:
  - name: fails on purpose
    args: {ns: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}
    mocks:
      t.a: {result: 1}
      t.b: {result: 2}
      t.c: {result: 3}
      t.d: {result: 4}
      t.each: {result: 0}
    expect:
      status: failed
`))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tl := range []string{"t.d", "t.c", "t.b", "t.a"} {
		want = append(want, "call "+tl+" {} → ")
	}
	want = append(want, `group "first" succeeded`)
	for i := 1; i <= 12; i++ {
		want = append(want, fmt.Sprintf(`call t.each {"n":%d} → 0`, i))
	}
	want = append(want, `group "second" succeeded`, "run succeeded")
	// The run that fails on purpose: its t.a..t.d calls and the items are
	// made at once (virtual time 0), so only the engine's order decides.
	for n := range 30 {
		r := RunCase(context.Background(), s, &f.Cases[0])
		if r.Passed || len(r.Trace) != len(want) {
			t.Fatalf("run %d: passed %v, trace\n%s\nwant %d lines", n, r.Passed, strings.Join(r.Trace, "\n"), len(want))
		}
		for i, line := range r.Trace {
			if !strings.Contains(line, want[i]) {
				t.Fatalf("run %d: trace line %d = %q; want it to hold %q; trace\n%s", n, i+1, line, want[i], strings.Join(r.Trace, "\n"))
			}
		}
	}
}
