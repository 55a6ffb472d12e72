package seqtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const schedSeq = `name: sc
schedule:
  - {name: berlin, cron: "0 0 9 * * MON-FRI", timezone: Europe/Berlin}
  - {name: often, every: 90m}
groups:
  - name: sc-g
    tools: [{tool: t.x}]
`

// schedFile writes the sequence and a test file, and parses the latter.
func schedFile(t *testing.T, tests string) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sc.seq.yaml"), []byte(schedSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sc.test.yaml")
	if err := os.WriteFile(p, []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

// TestScheduleChecks: a test file's schedules assert an entry's next fire
// times for a given now — across a change of the entry's clocks, and for
// an `every` entry from its last tick — and a wrong time, an unknown
// entry fail the check with what was expected and what fires.
func TestScheduleChecks(t *testing.T) {
	f, err := schedFile(t, `schedules:
  - entry: berlin
    now: "2026-03-26T12:00:00Z"
    next: ["2026-03-27T08:00:00Z", "2026-03-30T07:00:00Z"]
  - entry: often
    now: "2026-01-01T10:00:00Z"
    last_tick: "2026-01-01T09:00:00Z"
    next: ["2026-01-01T10:30:00Z", "2026-01-01T12:00:00Z"]
  - entry: berlin
    now: "2026-03-26T12:00:00Z"
    next: ["2026-03-27T08:00:00Z", "2026-03-30T08:00:00Z"]
`)
	if err != nil {
		t.Fatal(err)
	}
	rs := RunFile(context.Background(), f, nil)
	if len(rs) != 3 {
		t.Fatalf("%d results; want 3: %+v", len(rs), rs)
	}
	if !rs[0].Passed || !rs[1].Passed {
		t.Errorf("the right fire times failed: %v / %v", rs[0].Failures, rs[1].Failures)
	}
	if rs[2].Passed || !strings.Contains(strings.Join(rs[2].Failures, "\n"), "actual:   2026-03-27T08:00:00Z, 2026-03-30T07:00:00Z") {
		t.Errorf("a wrong fire time: %+v; want a failure with the actual times", rs[2])
	}
}

// TestScheduleCheckParseErrors: every mistake in a schedule check is a
// parse error at its line.
func TestScheduleCheckParseErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"schedules:\n  - entry: berlin\n    next: [\"2026-03-27T08:00:00Z\"]\n", "2: a schedule check needs now"},
		{"schedules:\n  - entry: berlin\n    now: \"2026-03-26 12:00\"\n    next: [\"2026-03-27T08:00:00Z\"]\n", `3: now: "2026-03-26 12:00" is not an RFC 3339 time`},
		{"schedules:\n  - entry: berlin\n    now: \"2026-03-26T12:00:00Z\"\n", "2: a schedule check needs next"},
		{"schedules:\n  - entry: berlin\n    now: \"2026-03-26T12:00:00Z\"\n    nxt: []\n", `4: unknown schedule check field "nxt"`},
		{"schedules: {entry: berlin}\n", "1: schedules must be a list"},
	} {
		_, err := schedFile(t, tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v; want %q", tt.text, err, tt.want)
		}
	}
}
