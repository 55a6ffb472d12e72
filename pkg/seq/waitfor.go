package seq

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/suggest"
)

// WaitFor is a wait group's `wait_for` (docs/sequences.md, "wait_for"):
// exactly one of Signal (with its Timeout), Duration and Until is set.
type WaitFor struct {
	// Signal is the name of the signal the group waits for (`skillbus
	// runs signal RUN NAME`), a name by the rule of group names. The
	// group's `out` declares the values it brings.
	Signal string `json:"signal,omitempty"`
	// Timeout bounds a signal wait, MinWait to MaxWait: when it ends
	// without a signal, the group fails (ErrWaitTimeout) under its
	// on_error. Required with Signal, not allowed otherwise.
	Timeout Duration `json:"timeout,omitempty"`
	// Duration is a durable timer: the group succeeds after it, MinWait
	// to MaxWait.
	Duration Duration `json:"duration,omitempty"`
	// Until is "$args.KEY", an `in` value of type string holding an RFC
	// 3339 time: the group succeeds at that time (at once when it is
	// past; a time over MaxWait away fails the group).
	Until string `json:"until,omitempty"`
}

// UntilKey returns KEY of `until: $args.KEY`, or "".
func (w *WaitFor) UntilKey() string { return strings.TrimPrefix(w.Until, refPrefix) }

// Kind returns "signal", "duration" or "until".
func (w *WaitFor) Kind() string {
	switch {
	case w.Signal != "":
		return WaitSignal
	case w.Until != "":
		return WaitUntil
	}
	return WaitDuration
}

// The kinds of wait (Wait.Kind, WaitFor.Kind).
const (
	WaitSignal   = "signal"
	WaitDuration = "duration"
	WaitUntil    = "until"
)

// Bounds of a wait (docs/sequences.md, "wait_for"). MaxWait stays under
// the RUNS bucket's default retention of 7 days, so that a waiting run's
// state outlives its wait.
const (
	MinWait = time.Second
	MaxWait = 6 * 24 * time.Hour
)

// The outcomes of a wait (Wait.Outcome).
const (
	WaitSignalled = "signalled" // the signal came: its values are the group's slots
	WaitRejected  = "rejected"  // the signal came with a rejection: the group failed
	WaitTimedOut  = "timed_out" // no signal within the timeout: the group failed
	WaitElapsed   = "elapsed"   // a duration or until wait reached its time
)

// Wait is what a wait_for group waits for and, once it ended, how
// (GroupResult.Wait). Times are UTC.
type Wait struct {
	Kind   string `json:"kind"`             // WaitSignal, WaitDuration or WaitUntil
	Signal string `json:"signal,omitempty"` // the signal's name (Kind signal)
	// Out are the values the signal brings, with their types (the
	// group's `out`).
	Out Signature `json:"out,omitempty"`
	// Since is when the wait began; Deadline when its timer fires (the
	// timeout of a signal wait, the time of a duration or until wait).
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Outcome is "" while waiting, then one of the Wait outcomes; Ended is
	// when, By who signalled, Reason why it was rejected.
	Outcome string    `json:"outcome,omitempty"`
	Ended   time.Time `json:"ended,omitzero"`
	By      string    `json:"by,omitempty"`
	Reason  string    `json:"reason,omitempty"`
}

// WaitOutcome is how a wait ended, given to Run to resume a run that
// returned ErrWaiting (WithWaitOutcome).
type WaitOutcome struct {
	// Group is the 1-based group that waited.
	Group int
	// Cause is "signal" (Values are the signal's values, or Reject is
	// set) or "timer" (the wait's deadline came: a duration or until wait
	// succeeds, a signal wait times out).
	Cause  string
	Values map[string]json.RawMessage
	Reject bool
	Reason string
	By     string
	// At is when the wait ended (zero: now); Since and Deadline are the
	// wait's own, as Run reported them (zero: unknown).
	At, Since, Deadline time.Time
}

// Causes of a WaitOutcome.
const (
	CauseSignal = "signal"
	CauseTimer  = "timer"
)

// WithWaitOutcome resumes a waiting run (WithResume of its checkpoint)
// with how its wait ended.
func WithWaitOutcome(o WaitOutcome) RunOption { return func(c *runConfig) { c.outcome = &o } }

// WaitingAt returns the 0-based index of the group r waits at and its
// Wait, or -1, nil when r is not waiting.
func (r *Result) WaitingAt() (int, *Wait) {
	for i := range r.Groups {
		if r.Groups[i].Status == GroupWaiting {
			return i, r.Groups[i].Wait
		}
	}
	return -1, nil
}

// CheckSignal checks a signal's values against the types a wait group
// declares in `out` (docs/sequences.md, "wait_for"), with the rules and
// words of run arguments: every key given (null allowed), no other key,
// each of its type. The error wraps ErrArgument.
func CheckSignal(out Signature, values map[string]json.RawMessage) error {
	if out == nil {
		out = Signature{}
	}
	for _, k := range out.Keys() {
		t := out[k]
		raw, ok := values[k]
		if !ok {
			return &Error{Kind: ErrArgument, Field: k, Message: fmt.Sprintf("the signal value %q (%s) is missing; the signal brings %s — pass every value (null is allowed)", k, t, out)}
		}
		if !json.Valid(raw) {
			return &Error{Kind: ErrArgument, Field: k, Message: fmt.Sprintf("the signal value %q is not valid JSON (%q); pass a JSON value of type %s", k, clip(string(raw), 40), t)}
		}
		if ok, got := checkType(t, raw); !ok {
			return &Error{Kind: ErrArgument, Field: k, Message: fmt.Sprintf("the signal value %q must be %s, got %s (%s); pass a value of type %s", k, t, got, clip(string(raw), 40), t)}
		}
	}
	for _, k := range sortedRawKeys(values) {
		if _, ok := out[k]; !ok {
			hint := ""
			if sg := suggest.Closest(k, out.Keys()); sg != "" {
				hint = fmt.Sprintf(" Did you mean %q?", sg)
			}
			return &Error{Kind: ErrArgument, Field: k, Message: fmt.Sprintf("unknown signal value %q; the signal brings %s.%s", k, out, hint)}
		}
	}
	return nil
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var waitFields = []string{"signal", "timeout", "duration", "until"}

// waitFor decodes a group's wait_for (node wn) into g; the group must
// have no tools and none of the call policies.
func (d *decoder) waitFor(g *Group, a at, gn, wn *node) {
	if wn.kind != kindObject {
		d.errf(ErrInvalidValue, a, "wait_for", wn, "got %s; wait_for is an object: {signal: NAME, timeout: DURATION}, {duration: DURATION} or {until: $args.KEY}", wn.describe())
		return
	}
	d.noteFields(wn, a, "wait_for.")
	d.fields(wn, waitFields, "wait_for", a)
	w := &WaitFor{}
	set := 0
	if v, ok := d.str(wn.get("signal"), a, "wait_for.signal", `"approve"`); ok {
		v = NormalizeName(v)
		if msg := checkName(v); msg != "" {
			d.errf(ErrInvalidValue, a, "wait_for.signal", wn.get("signal"), "the signal name %q is not allowed: %s", clip(v, 80), msg)
		}
		w.Signal = v
		set++
	}
	dur := func(field string) (Duration, bool) {
		v, ok := d.str(wn.get(field), a, "wait_for."+field, `"24h" or "30m"`)
		if !ok {
			return 0, false
		}
		t, err := time.ParseDuration(v)
		switch {
		case err != nil:
			d.errf(ErrInvalidValue, a, "wait_for."+field, wn.get(field), "got %q, which is not a duration; write a number with a unit (s, m, h), for example \"30m\" or \"24h\"", clip(v, 40))
			return 0, true
		case t < MinWait || t > MaxWait:
			d.errf(ErrInvalidValue, a, "wait_for."+field, wn.get(field), "got %q; a wait lasts from 1s to 144h (6 days): a waiting run's state must outlive its wait in RUNS, kept 7 days by default", v)
			return 0, true
		}
		return Duration(t), true
	}
	if t, ok := dur("duration"); ok {
		w.Duration = t
		set++
	}
	if v, ok := d.str(wn.get("until"), a, "wait_for.until", `"$args.deadline"`); ok {
		if k := strings.TrimPrefix(v, refPrefix); !strings.HasPrefix(v, refPrefix) || !keyRE.MatchString(k) {
			d.errf(ErrInvalidValue, a, "wait_for.until", wn.get("until"), "got %q; until is exactly $args.KEY, a string holding an RFC 3339 time (for example 2026-12-24T18:00:00Z) that the group declares in `in`, for example \"$args.deadline\" with in: {deadline: string}", clip(v, 60))
		}
		w.Until = v
		set++
	}
	t, hasTimeout := dur("timeout")
	w.Timeout = t
	switch {
	case set == 0 && !hasTimeout:
		d.errf(ErrMissingField, a, "wait_for", wn, "wait_for says nothing to wait for; write {signal: NAME, timeout: DURATION}, {duration: DURATION} or {until: $args.KEY}")
	case set == 0:
		d.errf(ErrMissingField, a, "wait_for", wn, "wait_for has a timeout but nothing to wait for; add signal: NAME (the timeout bounds a signal wait), or write {duration: %s} for a timer", wn.get("timeout").str)
	case set > 1:
		d.errf(ErrInvalidValue, a, "wait_for", wn, "wait_for sets %d of signal, duration and until; a group waits for one thing: keep one (use separate groups to wait twice)", set)
	case w.Signal != "" && !hasTimeout:
		d.errf(ErrMissingField, a, "wait_for.timeout", wn, "a wait for the signal %q needs a timeout: how long to wait before the group fails under its on_error, from %s to %s; add for example timeout: 24h", w.Signal, MinWait, "144h")
	case w.Signal == "" && hasTimeout:
		d.errf(ErrInvalidValue, a, "wait_for.timeout", wn.get("timeout"), "timeout bounds a signal wait, and this wait is a timer (%s); remove timeout", w.Kind())
	}
	g.WaitFor, g.Tools = w, []Call{}
	if tn := gn.get("tools"); tn != nil && tn.kind != kindNull && !(tn.kind == kindArray && len(tn.vals) == 0) {
		d.errf(ErrInvalidValue, a, "tools", tn, "a group with wait_for waits instead of calling tools, and this one also has tools; move the tools to a group of their own before or after the wait")
	}
	// The call policies mean nothing to a wait; their defaults (as Encode
	// writes them) are accepted.
	if v := gn.get("parallel"); v != nil && !g.Parallel {
		d.errf(ErrInvalidValue, a, "parallel", v, "parallel is about the calls of a group, and a wait group has none; remove it")
	}
	if v := gn.get("missing"); v != nil && g.Missing != MissingFail {
		d.errf(ErrInvalidValue, a, "missing", v, "missing is about the tools of a group, and a wait group has none; remove it")
	}
	if v := gn.get("timeout"); v != nil && g.Timeout != Duration(DefaultTimeout) {
		d.errf(ErrInvalidValue, a, "timeout", v, "a wait group's time limit is wait_for's own (wait_for: {signal: NAME, timeout: %s}); remove the group's timeout", g.Timeout)
	}
	if g.OnError == OnErrorRetry {
		d.errf(ErrInvalidValue, a, "on_error", gn.get("on_error"), "a wait cannot be retried; on_error of a wait group is abort (the default: a timeout or a rejection fails the run) or continue (its slots are null and the run goes on)")
	}
}

// checkWait checks wait group gi (0-based) after its `in` and `out` are
// known: until names a string of `in`, a timer brings no values.
func (d *decoder) checkWait(g *Group, gi int, provided map[string]int, provType map[string]Type) {
	w := g.WaitFor
	a := at{group: gi + 1, gname: g.Name}
	if k := w.UntilKey(); w.Until != "" && keyRE.MatchString(k) {
		t, ok := g.In[k]
		switch {
		case !ok:
			d.errf(ErrDataflow, a, "wait_for.until", nil, "reads $args.%s, but %q is not declared in the group's `in`; add \"%s\": string to `in` (%s)", k, k, k, scopeHint(gi, provided, provType))
		case t != "string":
			d.errf(ErrDataflow, a, "wait_for.until", nil, "reads $args.%s, which the group's `in` declares as %s; until needs an RFC 3339 time in a string: declare \"%s\": string", k, t, k)
		}
	}
	if w.Signal == "" && len(g.Out) > 0 {
		d.errf(ErrDataflow, a, "out", nil, "a timer wait (%s) brings no values, but the group declares out slots %s; remove `out`, or wait for a signal (wait_for: {signal: NAME, timeout: DURATION}) whose values fill them", w.Kind(), keyList(g.Out))
	}
}

// waitGroup runs wait group gi after its `when` (gr is its result so
// far): with the outcome of this wait (WithWaitOutcome) it ends the
// group as the outcome says; without, it starts the wait and returns the
// group waiting, with an error wrapping ErrWaiting. A past `until` ends
// the group at once.
func (e *engine) waitGroup(gi int, scope, slots map[string]json.RawMessage, gr GroupResult) (GroupResult, error) {
	g := &e.s.Groups[gi]
	wf := g.WaitFor
	now := e.cfg.clock.Now().UTC()
	w := &Wait{Kind: wf.Kind(), Signal: wf.Signal, Since: now}
	if wf.Signal != "" && len(g.Out) > 0 {
		w.Out = Signature(maps.Clone(g.Out))
	}
	gr.Wait = w
	failAt := func(kind error, field, msg string) (GroupResult, error) {
		gr.Status, gr.Error = GroupFailed, msg
		return gr, &Error{Kind: kind, Group: gi + 1, GroupName: g.Name, Field: field, Message: msg}
	}
	switch {
	case wf.Signal != "":
		w.Deadline = now.Add(time.Duration(wf.Timeout))
	case wf.Until != "":
		k := wf.UntilKey()
		var s string
		if err := json.Unmarshal(orNull(scope[k]), &s); err != nil || s == "" {
			return failAt(ErrArgument, "wait_for.until", fmt.Sprintf("$args.%s is %s, not an RFC 3339 time; until needs a time such as \"2026-12-24T18:00:00Z\"", k, JSONKind(orNull(scope[k]))))
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return failAt(ErrArgument, "wait_for.until", fmt.Sprintf("$args.%s is %q, not an RFC 3339 time; write it as \"2026-12-24T18:00:00Z\" or with an offset, \"2026-12-24T18:00:00+01:00\"", k, clip(s, 60)))
		}
		if t.Sub(now) > MaxWait {
			return failAt(ErrArgument, "wait_for.until", fmt.Sprintf("$args.%s is %s, %s from now; a wait lasts at most %s (144h)", k, s, t.Sub(now).Round(time.Second), MaxWait))
		}
		w.Deadline = t.UTC()
	default:
		w.Deadline = now.Add(time.Duration(wf.Duration))
	}
	o := e.cfg.outcome
	if o == nil || o.Group != gi+1 {
		if wf.Signal == "" && !w.Deadline.After(now) { // an until in the past
			w.Outcome, w.Ended = WaitElapsed, now
			gr.Status = GroupSucceeded
			return gr, nil
		}
		gr.Status = GroupWaiting
		what := fmt.Sprintf("the signal %q until %s", wf.Signal, w.Deadline.Format(time.RFC3339))
		if wf.Signal == "" {
			what = "its time, " + w.Deadline.Format(time.RFC3339)
		}
		return gr, &Error{Kind: ErrWaiting, Group: gi + 1, GroupName: g.Name, Message: "the run waits for " + what}
	}
	// The wait ended.
	if !o.Since.IsZero() {
		w.Since = o.Since.UTC()
	}
	if !o.Deadline.IsZero() {
		w.Deadline = o.Deadline.UTC()
	}
	w.Ended, w.By, w.Reason = now, o.By, o.Reason
	if !o.At.IsZero() {
		w.Ended = o.At.UTC()
	}
	var werr *Error
	switch {
	case o.Cause == CauseTimer && wf.Signal == "":
		w.Outcome = WaitElapsed
		gr.Status = GroupSucceeded
		return gr, nil
	case o.Cause == CauseTimer:
		w.Outcome = WaitTimedOut
		werr = &Error{Kind: ErrWaitTimeout, Group: gi + 1, GroupName: g.Name, Field: "wait_for.timeout", Message: fmt.Sprintf("no signal %q came within the wait's timeout of %s (waited since %s)", wf.Signal, wf.Timeout, w.Since.Format(time.RFC3339))}
	case o.Reject:
		w.Outcome = WaitRejected
		msg := fmt.Sprintf("the signal %q rejected the group", wf.Signal)
		if o.By != "" {
			msg += " (by " + o.By + ")"
		}
		if o.Reason != "" {
			msg += ": " + o.Reason
		}
		werr = &Error{Kind: ErrRejected, Group: gi + 1, GroupName: g.Name, Field: "wait_for.signal", Message: msg}
	default:
		if err := CheckSignal(Signature(g.Out), o.Values); err != nil {
			return failAt(ErrArgument, "out", err.(*Error).Message)
		}
		w.Outcome = WaitSignalled
		for k := range g.Out {
			slots[k] = orNull(o.Values[k])
		}
		gr.Status = GroupSucceeded
		return gr, nil
	}
	gr.Error = werr.Message
	if g.OnError == OnErrorContinue {
		for k := range g.Out {
			slots[k] = json.RawMessage("null")
		}
		gr.Status = GroupPartial
		return gr, nil
	}
	gr.Status = GroupFailed
	return gr, werr
}
