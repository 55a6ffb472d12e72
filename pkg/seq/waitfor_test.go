package seq

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// approval: check, wait for an approval bringing {ok: bool, note: string},
// then a group that reads the approval.
const approval = `name: approve
groups:
  - name: check
    in: {svc: string}
    out: {health: object}
    tools: [{tool: echo, args: {svc: $args.svc}, as: health}]
  - name: approval
    out: {ok: bool, note: string}
    wait_for: {signal: approve, timeout: 24h}
%s
  - name: act
    in: {ok: bool, note: string}
    out: {done: object}
    tools: [{tool: echo, args: {ok: $args.ok, note: $args.note}, as: done}]
`

func approvalSeq(t *testing.T, policy string) *Sequence {
	t.Helper()
	return mustParse(t, strings.Replace(approval, "%s\n", policy, 1))
}

// TestWaitForRoundTrip: both forms parse a wait group into the same AST,
// and Encode/Decode keep it (no tools, wait_for as written).
func TestWaitForRoundTrip(t *testing.T) {
	y := approvalSeq(t, "")
	g := y.Groups[1]
	if g.WaitFor == nil || g.WaitFor.Signal != "approve" || time.Duration(g.WaitFor.Timeout) != 24*time.Hour || len(g.Tools) != 0 {
		t.Fatalf("wait group = %+v, wait_for %+v", g, g.WaitFor)
	}
	b, err := Encode(y)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"wait_for":{"signal":"approve","timeout":"24h0m0s"},"tools":[]`) {
		t.Fatalf("Encode = %s", b)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(Encode) = %v\n%s", err, b)
	}
	b2, _ := Encode(back)
	if string(b) != string(b2) {
		t.Fatalf("Encode(Decode(Encode(s))) differs:\n%s\n%s", b, b2)
	}
	j, err := ParseJSON([]byte(`{"name":"approve","groups":[
		{"name":"check","in":{"svc":"string"},"out":{"health":"object"},"tools":"{\"tool\":\"echo\",\"args\":{\"svc\":\"$args.svc\"},\"as\":\"health\"};"},
		{"name":"approval","out":{"ok":"bool","note":"string"},"wait_for":{"signal":"approve","timeout":"24h"}},
		{"name":"act","in":{"ok":"bool","note":"string"},"out":{"done":"object"},"tools":"{\"tool\":\"echo\",\"args\":{\"ok\":\"$args.ok\",\"note\":\"$args.note\"},\"as\":\"done\"};"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	bj, _ := Encode(j)
	if string(bj) != string(b) {
		t.Fatalf("the JSON form encodes differently:\n%s\n%s", bj, b)
	}
	for _, src := range []string{
		"name: t\ngroups:\n  - name: w\n    wait_for: {duration: 90m}\n",
		"name: t\ngroups:\n  - name: w\n    in: {at: string}\n    wait_for: {until: $args.at}\n    on_error: continue\n",
	} {
		s := mustParse(t, src)
		b, _ := Encode(s)
		if back, err := Decode(b); err != nil {
			t.Fatalf("Decode(%s) = %v", b, err)
		} else if b2, _ := Encode(back); string(b2) != string(b) {
			t.Fatalf("round trip of %s gave %s", b, b2)
		}
	}
}

// TestWaitForErrors: every mistake in a wait group is refused when
// stored, at its line, with a fix.
func TestWaitForErrors(t *testing.T) {
	head := "name: t\ngroups:\n  - name: w\n"
	for _, tc := range []struct {
		name, body string
		line       int
		want       string
	}{
		{"with tools", "    wait_for: {signal: ok, timeout: 1h}\n    tools: [{tool: t}]\n", 5, "also has tools"},
		{"unknown key", "    wait_for: {signal: ok, timout: 1h}\n", 4, `unknown field "timout" in wait_for`},
		{"not an object", "    wait_for: approve\n", 4, "wait_for is an object"},
		{"nothing", "    wait_for: {}\n", 4, "says nothing to wait for"},
		{"two things", "    wait_for: {signal: ok, timeout: 1h, duration: 1h}\n", 4, "a group waits for one thing"},
		{"no timeout", "    wait_for: {signal: ok}\n", 4, "needs a timeout"},
		{"timeout on a timer", "    wait_for: {duration: 1h, timeout: 1h}\n", 4, "timeout bounds a signal wait"},
		{"bad duration", "    wait_for: {duration: soon}\n", 4, "not a duration"},
		{"too long", "    wait_for: {signal: ok, timeout: 200h}\n", 4, "a wait lasts from 1s to"},
		{"too short", "    wait_for: {duration: 10ms}\n", 4, "a wait lasts from 1s to"},
		{"bad signal name", "    wait_for: {signal: \"a b\", timeout: 1h}\n", 4, "the signal name"},
		{"until not a ref", "    wait_for: {until: tomorrow}\n", 4, "until is exactly $args.KEY"},
		{"until not in in", "    wait_for: {until: $args.at}\n", 4, `"at" is not declared in the group's ` + "`in`"},
		{"until not a string", "    in: {at: integer}\n    wait_for: {until: $args.at}\n", 5, "declare \"at\": string"},
		{"timer with out", "    out: {x: string}\n    wait_for: {duration: 1h}\n", 4, "brings no values"},
		{"retry", "    on_error: retry\n    retries: 2\n    wait_for: {signal: ok, timeout: 1h}\n", 4, "a wait cannot be retried"},
		{"group timeout", "    timeout: 5m\n    wait_for: {signal: ok, timeout: 1h}\n", 4, "remove the group's timeout"},
		{"missing", "    missing: skip\n    wait_for: {signal: ok, timeout: 1h}\n", 4, "a wait group has none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseYAML([]byte(head + tc.body))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("ParseYAML = %v; want Errors", err)
			}
			for _, e := range es {
				if strings.Contains(e.Message, tc.want) {
					if e.Line != tc.line {
						t.Fatalf("%q at line %d; want line %d", e.Message, e.Line, tc.line)
					}
					return
				}
			}
			t.Fatalf("ParseYAML errors = %v; want one saying %q", err, tc.want)
		})
	}
}

// TestWaitForRun: a run stops at the wait (ErrWaiting, the group waiting
// with its signal and deadline, no later group run), and resumes with
// the signal's values as slots; a rejection and a timeout fail the group
// under abort and leave its slots null under continue.
func TestWaitForRun(t *testing.T) {
	ctx := context.Background()
	f := &fakeTools{tools: map[string]toolFunc{"echo": echo()}}
	s := approvalSeq(t, "")
	r, err := Run(ctx, s, f, args("svc", `"db"`))
	if !errors.Is(err, ErrWaiting) || r.Status != StatusWaiting {
		t.Fatalf("Run = %v, %v; want waiting", r.Status, err)
	}
	gi, w := r.WaitingAt()
	if gi != 1 || w == nil || w.Signal != "approve" || w.Deadline.Sub(w.Since) != 24*time.Hour || w.Out["ok"] != "bool" {
		t.Fatalf("WaitingAt = %d, %+v", gi, w)
	}
	if r.Groups[2].Status != GroupPending {
		t.Fatalf("group after the wait = %s; want pending", r.Groups[2].Status)
	}
	resume := func(s *Sequence, o WaitOutcome) (*Result, error) {
		o.Group, o.Since, o.Deadline = 2, w.Since, w.Deadline
		return Run(ctx, s, f, nil, WithResume(r), WithWaitOutcome(o))
	}
	ok, err := resume(s, WaitOutcome{Cause: CauseSignal, Values: map[string]json.RawMessage{"ok": json.RawMessage(`true`), "note": json.RawMessage(`"go"`)}, By: "ann"})
	if err != nil || ok.Status != StatusSucceeded || string(ok.Slots["done"]) != `{"note":"go","ok":true}` {
		t.Fatalf("resumed = %v, %v, %s", ok.Status, err, ok.Slots["done"])
	}
	if gw := ok.Groups[1].Wait; gw.Outcome != WaitSignalled || gw.By != "ann" || !gw.Since.Equal(w.Since) {
		t.Fatalf("wait after the signal = %+v", gw)
	}
	no, err := resume(s, WaitOutcome{Cause: CauseSignal, Reject: true, Reason: "not now", By: "bob"})
	if !errors.Is(err, ErrRejected) || no.Status != StatusFailed || !strings.Contains(no.Error, "(by bob): not now") || no.Groups[2].Status != GroupPending {
		t.Fatalf("rejected = %v, %v", no.Status, err)
	}
	_, err = resume(s, WaitOutcome{Cause: CauseTimer})
	if !errors.Is(err, ErrWaitTimeout) || !strings.Contains(err.Error(), "within the wait's timeout of 24h0m0s") {
		t.Fatalf("timed out = %v", err)
	}
	bad, err := resume(s, WaitOutcome{Cause: CauseSignal, Values: map[string]json.RawMessage{"ok": json.RawMessage(`"yes"`), "note": json.RawMessage(`null`)}})
	if !errors.Is(err, ErrArgument) || bad.Status != StatusFailed || !strings.Contains(err.Error(), `"ok" must be bool, got string`) {
		t.Fatalf("mistyped signal = %v", err)
	}
	cs := approvalSeq(t, "    on_error: continue\n")
	r, _ = Run(ctx, cs, f, args("svc", `"db"`))
	cont, err := Run(ctx, cs, f, nil, WithResume(r), WithWaitOutcome(WaitOutcome{Group: 2, Cause: CauseTimer}))
	if err != nil || cont.Status != StatusSucceeded || cont.Groups[1].Status != GroupPartial || string(cont.Slots["ok"]) != "null" {
		t.Fatalf("continue after a timeout = %v, %v, group %s, ok %s", cont.Status, err, cont.Groups[1].Status, cont.Slots["ok"])
	}
}

// TestWaitForTimers: a duration waits and then succeeds on its timer; an
// until in the past does not wait; a bad until fails the group.
func TestWaitForTimers(t *testing.T) {
	ctx := context.Background()
	f := &fakeTools{tools: map[string]toolFunc{"echo": echo()}}
	d := mustParse(t, "name: t\ngroups:\n  - name: w\n    wait_for: {duration: 2h}\n  - name: after\n    out: {x: object}\n    tools: [{tool: echo, as: x}]\n")
	r, err := Run(ctx, d, f, nil)
	if !errors.Is(err, ErrWaiting) || r.Groups[0].Wait.Deadline.Sub(r.Groups[0].Wait.Since) != 2*time.Hour {
		t.Fatalf("duration wait = %v, %+v", err, r.Groups[0].Wait)
	}
	done, err := Run(ctx, d, f, nil, WithResume(r), WithWaitOutcome(WaitOutcome{Group: 1, Cause: CauseTimer}))
	if err != nil || done.Groups[0].Wait.Outcome != WaitElapsed || done.Groups[1].Status != GroupSucceeded {
		t.Fatalf("after the timer = %v, %+v", err, done.Groups[0].Wait)
	}
	u := mustParse(t, "name: t\ngroups:\n  - name: w\n    in: {at: string}\n    wait_for: {until: $args.at}\n")
	past, err := Run(ctx, u, f, args("at", `"2020-01-01T00:00:00Z"`))
	if err != nil || past.Groups[0].Wait.Outcome != WaitElapsed {
		t.Fatalf("until in the past = %v, %+v", err, past.Groups[0].Wait)
	}
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if r, err := Run(ctx, u, f, args("at", `"`+soon+`"`)); !errors.Is(err, ErrWaiting) || r.Groups[0].Wait.Deadline.Format(time.RFC3339) != soon {
		t.Fatalf("until in an hour = %v", err)
	}
	for _, v := range []string{`"tomorrow"`, `null`, `"2099-01-01T00:00:00Z"`} {
		if _, err := Run(ctx, u, f, args("at", v)); !errors.Is(err, ErrArgument) {
			t.Errorf("until %s = %v; want ErrArgument", v, err)
		}
	}
}

// TestCheckSignal: the values of a signal are checked like run arguments.
func TestCheckSignal(t *testing.T) {
	out := Signature{"ok": "bool", "n": "integer"}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`{"ok":true,"n":3}`, ""},
		{`{"ok":null,"n":null}`, ""},
		{`{"ok":true}`, `the signal value "n" (integer) is missing`},
		{`{"ok":1,"n":1}`, `"ok" must be bool, got integer`},
		{`{"ok":true,"n":1,"okk":1}`, `unknown signal value "okk"`},
	} {
		var v map[string]json.RawMessage
		_ = json.Unmarshal([]byte(tc.in), &v)
		err := CheckSignal(out, v)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckSignal(%s) = %v; want %q", tc.in, err, tc.want)
		}
	}
}
