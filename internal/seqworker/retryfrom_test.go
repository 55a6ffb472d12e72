package seqworker

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestRetryStart: seq.retry's from resolves a group's name or its 1-based
// number (docs/runs.md, "Retry from a group"), up to the first group that
// did not finish; a wrong name gets the closest one, a group past it or
// a number out of range is refused — every refusal lists the groups
// allowed.
func TestRetryStart(t *testing.T) {
	names := []string{"fetch", "build", "deploy", "notify"}
	for _, tc := range []struct {
		name, from string
		first      int
		want       int
		code       string
		says       []string
	}{
		{name: "by name", from: "build", first: 2, want: 1},
		{name: "by number", from: "2", first: 2, want: 1},
		{name: "the first unfinished", from: "deploy", first: 2, want: 2},
		{name: "every group of a succeeded run", from: "4", first: 4, want: 3},
		{name: "first group", from: "1", first: 0, want: 0},
		{name: "typo", from: "biuld", first: 2, code: "400", says: []string{`from "biuld": the run has no such group (did you mean "build"?)`, `it may be retried from group 1 "fetch", 2 "build" or 3 "deploy"`}},
		{name: "unknown", from: "zzzzzzzz", first: 1, code: "400", says: []string{`no such group;`, `it may be retried from group 1 "fetch" or 2 "build"`}},
		{name: "zero", from: "0", first: 0, code: "400", says: []string{`from "0": groups are numbered from 1`, `it may be retried from group 1 "fetch" only`}},
		{name: "negative", from: "-1", first: 1, code: "400", says: []string{`numbered from 1`}},
		{name: "too big", from: "9", first: 4, code: "400", says: []string{`from 9: the run has 4 groups`, `3 "deploy" or 4 "notify"`}},
		{name: "huge", from: "99999999999999999999999", first: 4, code: "400", says: []string{`numbered from 1`}},
		{name: "never reached", from: "notify", first: 1, code: "409", says: []string{`from 4 "notify": the run never reached this group — it did not finish group 2 "build"`, `1 "fetch" or 2 "build"`}},
		{name: "never reached by number", from: "3", first: 1, code: "409", says: []string{`from 3 "deploy": the run never reached`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg, code := retryStart(tc.from, names, tc.first)
			if code != tc.code {
				t.Fatalf("retryStart(%q, first %d) = %d, %q, code %q; want code %q", tc.from, tc.first, got, msg, code, tc.code)
			}
			if tc.code == "" && got != tc.want {
				t.Errorf("retryStart(%q, first %d) = %d; want %d", tc.from, tc.first, got, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("retryStart(%q) says %q; want it to say %q", tc.from, msg, s)
				}
			}
		})
	}
}

// TestLaterSlots: the slots a retry from a group drops are those of that
// group and the ones after it — their calls' `as`, a wait's values, and
// (read from the definition the run ran) the `out` of a wait group that
// was skipped, whose nulls its result does not name — and none of the
// groups before it.
func TestLaterSlots(t *testing.T) {
	s, err := seq.ParseYAML([]byte(`
name: ls
groups:
  - name: ls-fetch
    out: {x: object}
    tools: [{tool: t.fetch, as: x}]
  - name: ls-approve
    in: {x: object}
    out: {ok: bool}
    when: $args.x == null
    wait_for: {signal: approve, timeout: 1h}
  - name: ls-use
    in: {x: object}
    out: {y: object}
    tools: [{tool: t.use, args: {x: $args.x}, as: y}]
`))
	if err != nil {
		t.Fatal(err)
	}
	inline, err := seq.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	res := &seq.Result{Groups: []seq.GroupResult{
		{Name: "ls-fetch", Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: "t.fetch", As: "x"}}},
		{Name: "ls-approve", Status: seq.GroupSkipped},
		{Name: "ls-use", Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: "t.use", As: "y"}}},
	}}
	w := &Worker{}
	orig := &events.RunState{Inline: inline}
	for _, tc := range []struct {
		from  int
		byDef bool
		want  string
	}{
		{1, true, "ok,y"},
		{1, false, "y"},
		{2, true, "y"},
		{0, true, "ok,x,y"},
	} {
		got := slices.Sorted(maps.Keys(w.laterSlots(context.Background(), orig, res, tc.from, tc.byDef)))
		if strings.Join(got, ",") != tc.want {
			t.Errorf("laterSlots(from %d, byDef %v) = %v; want %s", tc.from, tc.byDef, got, tc.want)
		}
	}
}
