package seqtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitSeq checks, waits for an approval bringing {ok, note} (24h), cools
// off for 2h, waits for a confirmation (1h, on_error: continue), then acts
// when approved.
const waitSeq = `
name: waits
groups:
  - name: check
    out: {h: object}
    tools: [{tool: t.check, as: h}]
  - name: approval
    out: {ok: bool, note: string}
    wait_for: {signal: approve, timeout: 24h}
  - name: cool-off
    wait_for: {duration: 2h}
  - name: confirm
    out: {sure: bool}
    on_error: continue
    wait_for: {signal: confirm, timeout: 1h}
  - name: act
    in: {ok: bool, sure: bool}
    out: {done: object}
    when: $args.ok == true
    tools: [{tool: t.act, args: {ok: $args.ok, sure: $args.sure}, as: done}]
`

// TestWaitsInCases: a case drives the real engine through its waits —
// signals taken by name in order at their `after`, timers elapsed, a
// missing or late signal timing the wait out at its deadline,
// stop_when_waiting leaving the run waiting — and the waits' outcomes,
// the statuses and the virtual time are checked; a signal the sequence
// cannot take fails the case at its line.
func TestWaitsInCases(t *testing.T) {
	const mocks = "    mocks: {t.check: {result: {up: true}}, t.act: {result: {done: true}}}\n"
	for _, tc := range []struct {
		name, body string
		passed     bool
		want       []string // in the failures (a failing case) or the trace
	}{
		{"approved and confirmed", mocks + `    signals:
      - {name: confirm, after: 10m, values: {sure: true}}
      - {name: approve, after: 2h, by: ann, values: {ok: true, note: go}}
    expect:
      status: succeeded
      groups: {approval: succeeded, cool-off: succeeded, confirm: succeeded, act: succeeded}
      waits: {approval: signalled, cool-off: elapsed, confirm: signalled}
      slots: {done: {done: true}, note: go}
      calls: [{tool: t.check}, {tool: t.act, args: {ok: true, sure: true}}]
      virtual_time: 4h10m
`, true, []string{
			`0s  group "approval" waiting for the signal "approve" (timeout 24h0m0s, until 2026-01-02T00:00:00Z)`,
			`2h0m0s  signal "approve" (line 6) {"note":"go","ok":true} by ann`,
			`2h0m0s  group "cool-off" waiting until 2026-01-01T04:00:00Z (duration)`,
			`4h0m0s  timer: group "cool-off" waited 2h0m0s (duration)`,
			`4h10m0s  signal "confirm" (line 5) {"sure":true}`,
			`4h10m0s  run succeeded`,
		}},
		{"rejected", mocks + `    signals: [{name: approve, after: 30m, reject: too risky}]
    expect: {status: failed, error: "rejected the group: too risky", groups: {approval: failed, act: pending}, waits: {approval: rejected}, virtual_time: 30m}
`, true, []string{`30m0s  signal "approve" (line 4) rejects: too risky`}},
		{"rejected without a reason", mocks + `    signals: [{name: approve, reject: true}]
    expect: {status: failed, waits: {approval: rejected}, virtual_time: 0s}
`, true, nil},
		{"no signal times out at the deadline", mocks + `    expect: {status: failed, error: within the wait's timeout of 24h0m0s, waits: {approval: timed_out}, call_counts: {t.act: 0}, virtual_time: 24h}
`, true, []string{`24h0m0s  no signal "approve" left in the case: the wait timed out at its deadline`}},
		{"a signal past the timeout is too late", mocks + `    signals: [{name: approve, after: 25h, values: {ok: true, note: late}}]
    expect: {status: failed, waits: {approval: timed_out}, virtual_time: 24h}
`, true, []string{`24h0m0s  signal "approve" (line 4) comes 25h0m0s after the wait began, past its timeout of 24h0m0s: the wait timed out`}},
		{"an unconfirmed run goes on under continue", mocks + `    signals: [{name: approve, after: 1h, values: {ok: true, note: go}}]
    expect:
      status: succeeded
      groups: {confirm: partial, act: succeeded}
      waits: {confirm: timed_out}
      slots: {sure: null}
      calls: [{tool: t.check}, {tool: t.act, args: {ok: true, sure: null}}]
      virtual_time: 4h
`, true, nil},
		{"stop when waiting at the first wait", mocks + `    stop_when_waiting: true
    expect: {status: waiting, groups: {check: succeeded, approval: waiting, act: pending}, waits: {approval: waiting}, virtual_time: 0s}
`, true, []string{"the case sends no more signals and stops while the run waits (stop_when_waiting)", "run waiting"}},
		{"stop when waiting after a timer", mocks + `    stop_when_waiting: true
    signals: [{name: approve, after: 1h, values: {ok: true, note: go}}]
    expect: {status: waiting, waits: {approval: signalled, cool-off: elapsed, confirm: waiting}, virtual_time: 3h}
`, true, nil},
		{"expectations that do not hold", mocks + `    signals: [{name: approve, after: 1h, values: {ok: true, note: go}}]
    expect: {waits: {approval: rejected}, virtual_time: 1h}
`, false, []string{
			"wait of approval\n    expected: rejected\n    actual:   signalled",
			"virtual_time\n    expected: 1h0m0s\n    actual:   4h0m0s",
		}},
		{"a signal sent twice is not taken twice", mocks + `    signals:
      - {name: approve, values: {ok: false, note: no}}
      - {name: approve, values: {ok: true, note: yes}}
`, false, []string{`the signal "approve" (line 6) was never sent: the run did not wait for it again`}},
		{"a signal no group waits for", mocks + `    signals: [{name: aprove, values: {ok: true}}]
`, false, []string{`x.test.yaml:4: case "c": the signal "aprove": no group of the sequence waits waits for it (its groups wait for approve, confirm); fix the name`}},
		{"values that do not fit the wait's out", mocks + `    signals: [{name: approve, values: {ok: "yes", note: go}}]
`, false, []string{`x.test.yaml:4: case "c": the signal "approve": the signal value "ok" must be bool, got string`}},
		{"a missing value", mocks + `    signals: [{name: approve, values: {ok: true}}]
`, false, []string{`x.test.yaml:4: case "c": the signal "approve": the signal value "note" (string) is missing`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, waitSeq, "cases:\n  - name: c\n"+tc.body)
			all := strings.Join(r.Failures, "\n") + "\n" + strings.Join(r.Trace, "\n")
			if r.Passed != tc.passed {
				t.Fatalf("passed = %v, want %v:\n%s", r.Passed, tc.passed, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestWaitsTakeNoRealTime: a day of waiting runs in well under a second.
func TestWaitsTakeNoRealTime(t *testing.T) {
	start := time.Now()
	r := runWith(t, waitSeq, "cases:\n  - name: c\n    mocks: {t.check: {result: {}}, t.act: {result: {}}}\n    expect: {status: failed, virtual_time: 24h}\n")
	if !r.Passed || r.Virtual != 24*time.Hour {
		t.Fatalf("passed %v, virtual %s: %q", r.Passed, r.Virtual, r.Failures)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 24h wait took %s of real time", d)
	}
}

// TestSignalParseErrors: every field of a signal, stop_when_waiting and
// the wait expectations are checked when the file is read, at their line.
func TestSignalParseErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"    signals: {name: approve}\n", "x.test.yaml:3: signals must be a list"},
		{"    signals: [{after: 1h}]\n", "x.test.yaml:3: a signal needs a name"},
		{"    signals: [{name: approve, after: soon}]\n", `x.test.yaml:3: after: "soon" is not a duration`},
		{"    signals: [{name: approve, after: -1h}]\n", `x.test.yaml:3: after: "-1h" is not a duration`},
		{"    signals: [{name: approve, values: [1]}]\n", "x.test.yaml:3: values: must be a mapping"},
		{"    signals: [{name: approve, values: {ok: true}, reject: no}]\n", "x.test.yaml:3: a signal has either values or reject, not both"},
		{"    signals: [{name: approve, reject: false}]\n", "x.test.yaml:3: reject: false sends no rejection"},
		{"    signals: [{name: approve, when: 1h}]\n", `x.test.yaml:3: unknown signal field "when"`},
		{"    signals:\n      - name: approve\n        by: [a]\n", "x.test.yaml:5: by: must be who signals"},
		{"    stop_when_waiting: maybe\n", `x.test.yaml:3: stop_when_waiting: "maybe" is not true or false`},
		{"    expect: {status: waiting}\n", `x.test.yaml:2: case "c" expects status: waiting, but without stop_when_waiting: true`},
		{"    expect: {groups: {approval: waiting}}\n", `x.test.yaml:2: case "c" expects groups: {approval: waiting}`},
		{"    expect: {waits: {approval: done}}\n", `x.test.yaml:3: waits: group "approval": "done"; expect signalled, rejected, timed_out, elapsed or waiting`},
		{"    expect: {virtual_time: a day}\n", `x.test.yaml:3: virtual_time: "a day" is not a duration`},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(waitSeq), 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "x.test.yaml")
		if err := os.WriteFile(p, []byte("cases:\n  - name: c\n"+tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: Load = %v; want %q", tc.body, err, tc.want)
		}
	}
}

// TestLintWarnsOfSignals: validate warns of a signal no wait takes and of
// values that do not fit the wait's out.
func TestLintWarnsOfSignals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(waitSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.test.yaml")
	body := "cases:\n  - name: c\n    signals:\n      - {name: confrim, values: {sure: true}}\n      - {name: approve, values: {ok: 1, note: x}}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Lint(f)
	if err != nil || len(ws) != 2 || ws[0].Line != 4 || !strings.Contains(ws[0].Message, `"confrim": no group`) || ws[1].Line != 5 || !strings.Contains(ws[1].Message, `"ok" must be bool, got integer`) {
		t.Fatalf("Lint = %+v, %v", ws, err)
	}
}

// TestUntilWaitInCase: an until wait elapses at its time on the virtual
// clock (which starts at 2026-01-01T00:00:00Z); one in the past does not
// wait.
func TestUntilWaitInCase(t *testing.T) {
	const untilSeq = "name: u\ngroups:\n  - name: hold\n    in: {at: string}\n    wait_for: {until: $args.at}\n  - name: go\n    out: {x: object}\n    tools: [{tool: t.go, as: x}]\n"
	for _, tc := range []struct {
		at, outcome, virtual string
	}{
		{"2026-01-01T06:30:00Z", "elapsed", "6h30m"},
		{"2026-01-01T07:30:00+01:00", "elapsed", "6h30m"},
		{"2025-12-31T00:00:00Z", "elapsed", "0s"},
	} {
		r := runWith(t, untilSeq, "cases:\n  - name: c\n    args: {at: \""+tc.at+"\"}\n    mocks: {t.go: {result: {}}}\n    expect: {status: succeeded, waits: {hold: "+tc.outcome+"}, virtual_time: "+tc.virtual+"}\n")
		if !r.Passed {
			t.Errorf("until %s: %q\n%s", tc.at, r.Failures, strings.Join(r.Trace, "\n"))
		}
	}
}
