package seqtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simSeq has an hourly entry of each overlap policy, one that pauses
// after two failed runs and one bounded by start_at and end_at.
const simSeq = `name: sim
schedule:
  - {name: sk, every: 1h}
  - {name: b1, every: 1h, overlap: buffer_one}
  - {name: ba, every: 1h, overlap: buffer_all}
  - {name: co, every: 1h, overlap: cancel_other}
  - {name: aa, every: 1h, overlap: allow_all}
  - {name: pf, every: 1h, pause_on_failure: 2}
  - {name: win, every: 1h, start_at: "2026-01-01T12:30:00Z", end_at: "2026-01-01T14:30:00Z"}
groups:
  - name: sim-g
    tools: [{tool: t.x}]
`

// simFile writes simSeq and a test file, and parses the latter.
func simFile(t *testing.T, tests string) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sim.seq.yaml"), []byte(simSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sim.test.yaml")
	if err := os.WriteFile(p, []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

// TestScheduleTicks: each policy's outcomes for the five fire times after
// 10:00 (11:00 … 15:00) when runs take longer than the interval, with the
// buffered ticks' start times; pause_on_failure after failed runs;
// start_at/end_at. Every check passes as written.
func TestScheduleTicks(t *testing.T) {
	f, err := simFile(t, `schedules:
  - entry: sk
    now: "2026-01-01T10:00:00Z"
    run_takes: 90m
    ticks:
      - {at: "2026-01-01T11:00:00Z", outcome: started}
      - {at: "2026-01-01T12:00:00Z", outcome: skipped, why: "of the entry is still going (overlap skip)"}
      - started
      - skipped
      - started
  - entry: b1
    now: "2026-01-01T10:00:00Z"
    run_takes: 150m
    ticks:
      - started
      - {outcome: buffered, starts: "2026-01-01T13:30:00Z"}
      - {outcome: skipped, why: "1 tick(s) already wait (overlap buffer_one)"}
      - {outcome: buffered, starts: "2026-01-01T16:00:00Z"}
      - skipped
  - entry: ba
    now: "2026-01-01T10:00:00Z"
    run_takes: 150m
    ticks:
      - started
      - {outcome: buffered, starts: "2026-01-01T13:30:00Z"}
      - {outcome: buffered, starts: "2026-01-01T16:00:00Z"}
      - {outcome: buffered, starts: "2026-01-01T18:30:00Z"}
      - {outcome: buffered, starts: "2026-01-01T21:00:00Z"}
  - entry: co
    now: "2026-01-01T10:00:00Z"
    run_takes: 90m
    ticks:
      - started
      - {outcome: cancelled, starts: "2026-01-01T12:00:00Z", why: "cancelled for it"}
      - {outcome: cancelled, starts: "2026-01-01T13:00:00Z"}
  - entry: aa
    now: "2026-01-01T10:00:00Z"
    run_takes: 5h
    ticks: [started, started, started]
  - entry: pf
    now: "2026-01-01T10:00:00Z"
    run_takes: 30m
    run_status: [failed, failed, succeeded]
    ticks:
      - started
      - started
      - {outcome: paused, why: "paused after 2 consecutive failed runs (pause_on_failure: 2)"}
      - paused
  - entry: win
    now: "2026-01-01T10:00:00Z"
    run_takes: [30m]
    ticks:
      - {outcome: dropped, why: "before the entry's start_at 2026-01-01T12:30:00Z"}
      - dropped
      - {at: "2026-01-01T13:00:00Z", outcome: started}
      - started
      - {outcome: dropped, why: "after the entry's end_at"}
`)
	if err != nil {
		t.Fatal(err)
	}
	rs := RunFile(context.Background(), f, nil)
	if len(rs) != 7 {
		t.Fatalf("%d results; want 7: %+v", len(rs), rs)
	}
	for _, r := range rs {
		if !r.Passed {
			t.Errorf("%s failed:\n%s\n%s", r.Case, strings.Join(r.Failures, "\n"), strings.Join(r.Trace, "\n"))
		}
	}
	if rs[0].Case != "schedule sk ticks after 2026-01-01T10:00:00Z" {
		t.Errorf("name %q", rs[0].Case)
	}
}

// TestScheduleTicksFail: a wrong outcome, start time, reason or fire time
// fails the check, listing every tick expected against actual (the wrong
// ones marked) and the simulation's trace; an entry that fires fewer
// times than listed fails too.
func TestScheduleTicksFail(t *testing.T) {
	f, err := simFile(t, `schedules:
  - entry: b1
    now: "2026-01-01T10:00:00Z"
    run_takes: 90m
    ticks:
      - started
      - {outcome: buffered, starts: "2026-01-01T13:00:00Z"}
      - skipped
  - entry: sk
    now: "2026-01-01T10:00:00Z"
    run_takes: 90m
    ticks:
      - {at: "2026-01-01T10:30:00Z", outcome: started}
      - {outcome: skipped, why: "paused"}
`)
	if err != nil {
		t.Fatal(err)
	}
	rs := RunFile(context.Background(), f, nil)
	if len(rs) != 2 || rs[0].Passed || rs[1].Passed {
		t.Fatalf("results %+v; want 2 failures", rs)
	}
	got := strings.Join(rs[0].Failures, "\n")
	for _, want := range []string{
		"ticks of b1 (@every 1h0m0s in UTC, overlap buffer_one; runs take 1h30m0s) after 2026-01-01T10:00:00Z, expected vs actual:",
		"    1 (line 6)  expected: started\n        actual:   started at 2026-01-01T11:00:00Z",
		"  ✗ 2 (line 7)  expected: buffered, starts 2026-01-01T13:00:00Z\n        actual:   buffered at 2026-01-01T12:00:00Z, starts 2026-01-01T12:30:00Z: waits for run tick-sim-b1-20260101T110000000Z (overlap buffer_one)",
		"  ✗ 3 (line 8)  expected: skipped\n        actual:   buffered at 2026-01-01T13:00:00Z, starts 2026-01-01T14:00:00Z",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("failure\n%s\nwithout\n%s", got, want)
		}
	}
	if tr := strings.Join(rs[0].Trace, "\n"); !strings.Contains(tr, "2026-01-01T12:30:00Z  run tick-sim-b1-20260101T110000000Z ends succeeded") ||
		!strings.Contains(tr, "2026-01-01T12:30:00Z  run tick-sim-b1-20260101T120000000Z starts (takes 1h30m0s, ends succeeded)") {
		t.Errorf("trace:\n%s", tr)
	}
	got = strings.Join(rs[1].Failures, "\n")
	if !strings.Contains(got, `✗ 1 (line 13)  expected: started at 2026-01-01T10:30:00Z`) || !strings.Contains(got, `✗ 2 (line 14)  expected: skipped, why contains "paused"`) {
		t.Errorf("failure\n%s", got)
	}
}

// TestScheduleTicksWithNext: a check with both next and ticks checks
// both: a wrong fire time fails it though its ticks pass.
func TestScheduleTicksWithNext(t *testing.T) {
	f, err := schedFile(t, `schedules:
  - entry: berlin
    now: "2026-01-01T10:00:00Z"
    next: ["2026-01-01T08:00:00Z"]
    run_takes: 1m
    ticks: [started]
`)
	if err != nil {
		t.Fatal(err)
	}
	rs := RunFile(context.Background(), f, nil)
	// Both next and ticks are checked: next fails, ticks passes.
	if len(rs) != 1 || rs[0].Passed || len(rs[0].Failures) != 1 || !strings.Contains(rs[0].Failures[0], "next fire times of berlin") {
		t.Errorf("%+v; want the next fire times' failure only", rs)
	}
}

// TestScheduleTickParseErrors: every mistake in a simulated check is a
// parse error at its line, a misspelt field or outcome with the word meant.
func TestScheduleTickParseErrors(t *testing.T) {
	head := "schedules:\n  - entry: sk\n    now: \"2026-01-01T10:00:00Z\"\n"
	for _, tt := range []struct{ text, want string }{
		{head + "    run_take: 90m\n    ticks: [started]\n", `4: unknown schedule check field "run_take" (did you mean "run_takes"?)`},
		{head + "    ticks: [started]\n", "2: a schedule check with ticks needs run_takes"},
		{head + "    run_takes: 90m\n    next: [\"2026-01-01T11:00:00Z\"]\n", "4: run_takes: only with ticks"},
		{head + "    run_status: failed\n    next: [\"2026-01-01T11:00:00Z\"]\n", "4: run_status: only with ticks"},
		{head + "    run_takes: 90\n    ticks: [started]\n", `4: run_takes: "90" is not a duration above 0`},
		{head + "    run_takes: [90m, 0s]\n    ticks: [started]\n", `4: run_takes: "0s" is not a duration above 0`},
		{head + "    run_takes: []\n    ticks: [started]\n", "4: run_takes: must be a duration such as 90m or 26h, or a list of 1 to 100"},
		{head + "    run_takes: 1h\n    run_status: [failed, faild]\n    ticks: [started]\n", `5: run_status: "faild"; a simulated run ends succeeded or failed (did you mean "failed"?)`},
		{head + "    run_takes: 1h\n    ticks: [started, skiped]\n", `5: ticks: outcome "skiped" (did you mean "skipped"?); a tick is started, buffered, skipped, cancelled, paused, dropped`},
		{head + "    run_takes: 1h\n    ticks: []\n", "5: ticks: must be a list of 1 to 100 ticks"},
		{head + "    run_takes: 1h\n    ticks:\n      - {outcome: started, start: \"2026-01-01T11:00:00Z\"}\n", `6: unknown tick field "start" (did you mean "starts"?)`},
		{head + "    run_takes: 1h\n    ticks:\n      - {at: \"2026-01-01T11:00:00Z\"}\n", "6: a tick needs outcome"},
		{head + "    run_takes: 1h\n    ticks:\n      - {outcome: buffered, starts: later}\n", `6: starts: "later" is neither an RFC 3339 time`},
		{head + "    run_takes: 1h\n    ticks:\n      - {outcome: started, at: \"11:00\"}\n", `6: at: "11:00" is not an RFC 3339 time`},
		{head + "    run_takes: 1h\n    ticks: [" + strings.Repeat("started, ", 100) + "started]\n", "5: ticks: must be a list of 1 to 100"},
		{"schedules:\n  - entry: sk\n    now: \"2026-01-01T10:00:00Z\"\n", "2: a schedule check needs next: the fire times expected after now, or ticks"},
	} {
		_, err := simFile(t, tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v; want %q", tt.text, err, tt.want)
		}
	}
}
