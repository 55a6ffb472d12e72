package seqtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// Result is the outcome of one case.
type Result struct {
	File string `json:"file"`
	// Kind is KindSequence (omitted) or KindSkill: the kind of test file.
	Kind     string        `json:"kind,omitempty"`
	Case     string        `json:"case"`
	Line     int           `json:"line"`
	Passed   bool          `json:"passed"`
	Failures []string      `json:"failures,omitempty"` // each an expectation with expected and actual
	Trace    []string      `json:"trace,omitempty"`    // groups and calls, in virtual time; a skill test's assembly
	Virtual  time.Duration `json:"virtual_ns"`         // the run's virtual duration
	Wall     time.Duration `json:"wall_ns"`            // the real time the case took
	// Slots are the run's slots (a sequence's case that ran), for Update.
	Slots map[string]json.RawMessage `json:"-"`
}

// Call is one call the engine made to the mock caller.
type Call struct {
	Tool    string
	Args    json.RawMessage
	Item    int           // the for_each item's index; -1 for another call
	At      time.Duration // virtual time since the start
	Outcome string
	// Pos is the call's place in the engine's order (seq.CallPositionOf):
	// the trace lists calls made at one virtual time in that order.
	Pos seq.CallPosition
}

// runMu makes cases run one at a time: the virtual clock tells that a run
// is blocked from the stacks of every goroutine in package seq.
var runMu sync.Mutex

// Options are how RunFileWith runs cases.
type Options struct {
	// Tools, when set, answers the calls of tools a case does not mock
	// (`skillbus test --cluster`: a pkg/tool client on NATS_URL), instead
	// of failing the case. Virtual time stands still while such a call is
	// in flight, so a group's timeout counts only virtual time.
	Tools seq.Caller
}

// RunFile runs the cases of f whose "file/case" matches filter (nil: all),
// every tool mocked. A sequence that does not parse fails every case with
// its problems.
func RunFile(ctx context.Context, f *File, filter *regexp.Regexp) []Result {
	return RunFileWith(ctx, f, filter, Options{})
}

// RunFileWith is RunFile with opt (real tools for unmocked calls).
func RunFileWith(ctx context.Context, f *File, filter *regexp.Regexp, opt Options) []Result {
	var out []Result
	data, err := os.ReadFile(f.Sequence)
	var s *seq.Sequence
	if err == nil {
		s, err = seq.ParseFile(f.Sequence, data)
	}
	for i := range f.Cases {
		c := &f.Cases[i]
		if filter != nil && !filter.MatchString(f.Path+"/"+c.Name) {
			continue
		}
		if err != nil {
			out = append(out, Result{File: f.Path, Case: c.Name, Line: c.Line, Failures: []string{fmt.Sprintf("the sequence under test: %v (%s)", err, f.Sequence)}})
			continue
		}
		if probs := signalProblems(s, c); len(probs) > 0 {
			// A signal the run can never take: the case fails before it
			// runs, each problem at its line.
			r := Result{File: f.Path, Case: c.Name, Line: c.Line}
			for _, p := range probs {
				r.Failures = append(r.Failures, fmt.Sprintf("%s:%d: %s", f.Path, p.Line, p.Message))
			}
			out = append(out, r)
			continue
		}
		r := runCase(ctx, s, c, opt)
		r.File = f.Path
		out = append(out, r)
	}
	for i := range f.Schedules {
		sc := &f.Schedules[i]
		if filter != nil && !filter.MatchString(f.Path+"/"+sc.name()) {
			continue
		}
		if err != nil {
			out = append(out, Result{File: f.Path, Case: sc.name(), Line: sc.Line, Failures: []string{fmt.Sprintf("the sequence under test: %v (%s)", err, f.Sequence)}})
			continue
		}
		out = append(out, runSchedule(f.Path, s, sc))
	}
	return out
}

// RunCase runs one case against s with the real engine in virtual time.
func RunCase(ctx context.Context, s *seq.Sequence, c *Case) Result {
	return runCase(ctx, s, c, Options{})
}

func runCase(ctx context.Context, s *seq.Sequence, c *Case, opt Options) Result {
	runMu.Lock()
	defer runMu.Unlock()
	wall := time.Now()
	clock := newClock()
	args := c.Args
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	m := &mockCaller{c: c, s: s, args: args, slots: map[string]json.RawMessage{}, clock: clock, scripts: map[string]int{}, real: opt.Tools}
	var trace []traceLine
	obs := seq.ObserverFuncs{Finished: func(_ context.Context, r *seq.Result, gi int) error {
		g := r.Groups[gi]
		line := fmt.Sprintf("group %q %s", g.Name, g.Status)
		if g.Reason != "" {
			line += " (" + g.Reason + ")"
		}
		if g.Error != "" {
			line += ": " + g.Error
		}
		trace = append(trace, traceLine{at: clock.Now().Sub(epoch), pos: seq.CallPosition{Group: gi}, rank: 1, text: line})
		m.mu.Lock()
		for k, v := range r.Slots { // the scope of the later groups' for_each lists
			m.slots[k] = v
		}
		m.mu.Unlock()
		return nil
	}}
	// run runs the engine until it returns, advancing the virtual clock
	// whenever the run is blocked; ok is false when it did not return
	// within 30 s of real time.
	buf := make([]byte, 64<<10)
	hung := time.NewTimer(30 * time.Second)
	defer hung.Stop()
	run := func(args map[string]json.RawMessage, opts ...seq.RunOption) (res *seq.Result, runErr error, ok bool) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, runErr = seq.Run(ctx, s, m, args, append([]seq.RunOption{seq.WithClock(clock), seq.WithObserver(obs)}, opts...)...)
		}()
		poll := 20 * time.Microsecond
		for {
			select {
			case <-done:
				return res, runErr, true
			default:
			}
			if clock.pending() && m.inReal.Load() == 0 && runBlocked(&buf) {
				clock.advance()
				poll = 20 * time.Microsecond
				continue
			}
			t := time.NewTimer(poll)
			select {
			case <-done:
				t.Stop()
				return res, runErr, true
			case <-clock.notify:
				t.Stop()
			case <-t.C:
				poll = min(2*poll, time.Millisecond)
			case <-hung.C:
				t.Stop()
				return nil, nil, false
			}
		}
	}
	res, runErr, ok := run(args)
	// A run that waits (wait_for) is resumed as the seqworker resumes it
	// (seq.WithResume, seq.WithWaitOutcome), at the virtual time of its
	// signal or timer (docs/testing.md, "Waits and signals").
	used := make([]bool, len(c.Signals))
	for ok && errors.Is(runErr, seq.ErrWaiting) {
		gi, w := res.WaitingAt()
		if w == nil {
			break
		}
		gname := s.Groups[gi].Name
		trace = append(trace, traceLine{at: w.Since.Sub(epoch), pos: seq.CallPosition{Group: gi, Call: -2}, text: waitingLine(gname, w)})
		o, at, line, stop := waitStep(c, used, gi, gname, w)
		if stop {
			trace = append(trace, traceLine{at: w.Since.Sub(epoch), pos: seq.CallPosition{Group: gi, Call: -1}, text: "the case sends no more signals and stops while the run waits (stop_when_waiting)"})
			break
		}
		trace = append(trace, traceLine{at: at.Sub(epoch), pos: seq.CallPosition{Group: gi, Call: -1}, text: line})
		clock.jump(at)
		res, runErr, ok = run(nil, seq.WithResume(res), seq.WithWaitOutcome(o))
	}
	if !ok {
		return Result{Case: c.Name, Line: c.Line, Failures: []string{"the run did not end within 30 s of real time"}, Wall: time.Since(wall)}
	}
	virtual := clock.Now().Sub(epoch)
	r := Result{Case: c.Name, Line: c.Line, Virtual: virtual, Wall: time.Since(wall)}
	m.mu.Lock()
	calls := append([]Call(nil), m.calls...)
	m.mu.Unlock()
	// In the engine's order rather than the goroutines' (the calls'
	// expectations are then checked the same way on every run).
	slices.SortStableFunc(calls, func(a, b Call) int {
		return traceLine{at: a.At, pos: a.Pos}.compare(traceLine{at: b.At, pos: b.Pos})
	})
	var unmocked []string // in the order of the calls that found them
	for _, c := range calls {
		if c.Outcome == "not mocked" && !slices.Contains(unmocked, c.Tool) {
			unmocked = append(unmocked, c.Tool)
		}
	}
	for _, call := range calls {
		trace = append(trace, traceLine{at: call.At, pos: call.Pos, text: fmt.Sprintf("call %s %s → %s", call.Tool, call.Args, call.Outcome)})
	}
	line := "run " + string(res.Status)
	if res.Error != "" {
		line += ": " + res.Error
	}
	trace = append(trace, traceLine{at: virtual, pos: seq.CallPosition{Group: len(s.Groups)}, rank: 2, text: line})
	slices.SortStableFunc(trace, traceLine.compare)
	for _, t := range trace {
		r.Trace = append(r.Trace, fmt.Sprintf("%10s  %s", t.at.Round(time.Millisecond), t.text))
	}
	for _, t := range unmocked {
		r.Failures = append(r.Failures, fmt.Sprintf("the tool %q is not mocked: add it under mocks: (a result, an error, missing, ...)", t))
	}
	for i, sg := range c.Signals {
		if !used[i] {
			r.Failures = append(r.Failures, fmt.Sprintf("the signal %q (line %d) was never sent: the run did not wait for it again", sg.Name, sg.Line))
		}
	}
	r.Failures = append(r.Failures, check(&c.Expect, res, calls)...)
	if e := &c.Expect; e.HasVirtualTime && virtual != e.VirtualTime {
		r.Failures = append(r.Failures, fmt.Sprintf("virtual_time\n    expected: %s\n    actual:   %s", e.VirtualTime, virtual))
	}
	r.Passed = len(r.Failures) == 0
	r.Slots = res.Slots // for --update (update.go)
	return r
}

// traceLine is one line of a case's trace. Lines at the same virtual
// time are in the engine's order (docs/testing.md): by group, a group's
// calls (rank 0, by call, item and attempt) before its end (1), the run's
// end (2) last.
type traceLine struct {
	at   time.Duration
	pos  seq.CallPosition // for a group's end, its Group; for the run's end, len(Groups)
	rank int
	text string
}

// compare orders trace lines by virtual time, then in the engine's order.
func (a traceLine) compare(b traceLine) int {
	return cmp.Or(
		cmp.Compare(a.at, b.at),
		cmp.Compare(a.pos.Group, b.pos.Group),
		cmp.Compare(a.rank, b.rank),
		cmp.Compare(a.pos.Call, b.pos.Call),
		cmp.Compare(a.pos.Item, b.pos.Item),
		cmp.Compare(a.pos.Attempt, b.pos.Attempt),
	)
}

// mockCaller serves a case's mocks (seq.Caller).
type mockCaller struct {
	c     *Case
	s     *seq.Sequence
	args  map[string]json.RawMessage
	clock *vclock
	// mu guards slots (written by the groups that ended), scripts and calls.
	mu      sync.Mutex
	slots   map[string]json.RawMessage
	scripts map[string]int // "tool\x00match" → responses used
	calls   []Call
	// real answers unmocked tools (Options.Tools); inReal counts its calls
	// in flight, during which the virtual clock does not advance.
	real   seq.Caller
	inReal atomic.Int32
}

// Call answers one call from the mocks, after the mock's delay in virtual
// time (seq.Caller). The call's place (seq.CallPositionOf) lets a response
// choose it by group, position and for_each item.
func (m *mockCaller) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	pos, ok := seq.CallPositionOf(ctx)
	if !ok {
		pos = seq.CallPosition{Group: -1, Call: -1, Item: -1}
	}
	m.mu.Lock()
	at := m.clock.Now().Sub(epoch)
	mock, ok := m.c.Mocks[tool]
	if !ok && m.real != nil {
		m.mu.Unlock()
		m.inReal.Add(1)
		res, err := m.real.Call(ctx, tool, args)
		m.inReal.Add(-1)
		outcome := "real: " + string(orNull(res))
		if err != nil {
			outcome = "real: error: " + err.Error()
		}
		m.mu.Lock()
		m.calls = append(m.calls, Call{Tool: tool, Args: args, At: at, Outcome: outcome, Pos: pos})
		m.mu.Unlock()
		return res, err
	}
	if !ok {
		m.calls = append(m.calls, Call{Tool: tool, Args: args, At: at, Outcome: "not mocked", Pos: pos})
		m.mu.Unlock()
		return nil, &toolcall.Error{Tool: tool, Code: "500", Description: "the tool is not mocked in this case"}
	}
	idx := len(m.calls)
	m.calls = append(m.calls, Call{Tool: tool, Args: args, At: at, Pos: pos})
	var resp *Response
	place := m.where(pos)
	if mock.Missing {
		resp = &Response{Missing: true}
	} else {
		resp = m.pick(tool, mock, place, args)
	}
	m.mu.Unlock()
	outcome := func(s string) {
		m.mu.Lock()
		m.calls[idx].Outcome = s
		m.mu.Unlock()
	}
	if resp == nil {
		outcome("no mock matches the call")
		return nil, &toolcall.Error{Tool: tool, Code: "500", Description: fmt.Sprintf("no mock of this tool matches the call (group %q, position %d, index %d) with the arguments %s", place.group, place.position, place.index, args)}
	}
	if resp.Delay > 0 {
		if err := m.clock.sleep(ctx, resp.Delay); err != nil {
			if context.Cause(ctx) == context.DeadlineExceeded {
				err = context.DeadlineExceeded
			}
			outcome("canceled after " + (m.clock.Now().Sub(epoch) - at).String() + ": " + err.Error())
			return nil, err
		}
	}
	switch {
	case resp.Missing:
		outcome("missing")
		return nil, fmt.Errorf("tool %q: %w", tool, seq.ErrToolMissing)
	case resp.Error != nil:
		outcome("error " + resp.Error.Code + " " + resp.Error.Message)
		return nil, &toolcall.Error{Tool: tool, Code: resp.Error.Code, Description: resp.Error.Message}
	}
	outcome(string(orNull(resp.Result)))
	return orNull(resp.Result), nil
}

// pick returns the response for a call (m.mu held): the script of the first
// response whose selectors fit the call, advanced by one.
func (m *mockCaller) pick(tool string, mock *Mock, info callPlace, args json.RawMessage) *Response {
	var a, item any
	_ = json.Unmarshal(args, &a)
	if info.item != nil {
		_ = json.Unmarshal(info.item, &item)
	}
	for i := range mock.Responses {
		r := &mock.Responses[i]
		switch {
		case r.Match != nil && !subset(r.Match, a),
			r.Group != "" && r.Group != info.group,
			r.Position != 0 && r.Position != info.position,
			r.Item != nil && (info.item == nil || !subset(r.Item, item)),
			r.Index != nil && *r.Index != info.index:
			continue
		}
		key := tool + "\x00" + r.selectors()
		var script []*Response
		for j := range mock.Responses {
			if mock.Responses[j].selectors() == r.selectors() {
				script = append(script, &mock.Responses[j])
			}
		}
		n := m.scripts[key]
		m.scripts[key] = n + 1
		return script[min(n, len(script)-1)]
	}
	return nil
}

// callPlace is where a call is, in the terms of a response's selectors:
// its group's name, its 1-based position in the group's tools, and for a
// for_each call the item and its index (-1 and nil otherwise).
type callPlace struct {
	group    string
	position int
	index    int
	item     json.RawMessage
}

// where turns the engine's position of a call into its place (m.mu held):
// the item is read from the for_each list, a run argument or a slot of an
// ended group, as the engine reads it.
func (m *mockCaller) where(pos seq.CallPosition) callPlace {
	p := callPlace{position: pos.Call + 1, index: pos.Item}
	if pos.Group < 0 || pos.Group >= len(m.s.Groups) {
		return callPlace{index: -1}
	}
	g := &m.s.Groups[pos.Group]
	p.group = g.Name
	if pos.Item < 0 || pos.Call < 0 || pos.Call >= len(g.Tools) {
		return p
	}
	key := strings.TrimPrefix(g.Tools[pos.Call].ForEach, "$args.")
	list, ok := m.slots[key]
	if !ok {
		list = m.args[key]
	}
	var items []json.RawMessage
	if json.Unmarshal(list, &items) == nil && pos.Item < len(items) {
		p.item = items[pos.Item]
	}
	return p
}

// selectors is the key of a response's script: its match, group,
// position, item and index.
func (r *Response) selectors() string {
	idx := "-"
	if r.Index != nil {
		idx = fmt.Sprint(*r.Index)
	}
	return fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s", r.Match, r.Group, r.Position, r.Item, idx)
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// subset reports whether want (JSON) is contained in got: objects by their
// keys, recursively; arrays element by element, of the same length; other
// values equal.
func subset(want json.RawMessage, got any) bool {
	var w any
	if json.Unmarshal(want, &w) != nil {
		return false
	}
	return sub(w, got)
}

func sub(w, g any) bool {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return false
		}
		for k, x := range wv {
			y, ok := gv[k]
			if !ok || !sub(x, y) {
				return false
			}
		}
		return true
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			return false
		}
		for i := range wv {
			if !sub(wv[i], gv[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(w, g)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(orNull(a), &x) != nil || json.Unmarshal(orNull(b), &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, orNull(v)) != nil {
		return string(v)
	}
	return b.String()
}

// check compares the expectations with the run and returns one failure per
// expectation not met, each with the expected and the actual value.
func check(e *Expect, res *seq.Result, calls []Call) []string {
	var f []string
	diff := func(what, want, got string) {
		f = append(f, fmt.Sprintf("%s\n    expected: %s\n    actual:   %s", what, want, got))
	}
	switch {
	case e.Status != "":
		if string(res.Status) != e.Status {
			diff("status", e.Status, string(res.Status)+errSuffix(res.Error))
		}
	case e.Error == "" && res.Status == seq.StatusFailed:
		// No status and no error expected: the run must not fail, as an
		// error fails a go test or pytest test (docs/testing.md,
		// "Expectations"); a case that means to fail says status: failed.
		diff("status (a case without status: expects the run not to fail)", "succeeded", string(res.Status)+errSuffix(res.Error))
	}
	if e.Error != "" && !strings.Contains(res.Error, e.Error) {
		diff("error", "an error containing "+fmt.Sprintf("%q", e.Error), fmt.Sprintf("%q", res.Error))
	}
	for _, name := range slices.Sorted(maps.Keys(e.Groups)) {
		want := e.Groups[name]
		var g *seq.GroupResult
		for i := range res.Groups {
			if res.Groups[i].Name == name {
				g = &res.Groups[i]
			}
		}
		if g == nil {
			diff("group "+name, want, "no such group in the sequence")
			continue
		}
		got := string(g.Status)
		ok := got == want || want == "ran" && (got == "succeeded" || got == "partial")
		if !ok {
			diff("group "+name, want, got+errSuffix(g.Error))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Waits)) {
		want, got := e.Waits[name], "no such wait group in the sequence"
		for i := range res.Groups {
			if g := &res.Groups[i]; g.Name == name {
				switch {
				case g.Wait == nil:
					got = "no wait (" + string(g.Status) + ")"
				case g.Wait.Outcome == "":
					got = "waiting"
				default:
					got = g.Wait.Outcome
				}
			}
		}
		if got != want {
			diff("wait of "+name, want, got)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Slots)) {
		got, ok := res.Slots[k]
		if !ok {
			diff("slot "+k, compact(e.Slots[k]), "not written")
		} else if !jsonEqual(e.Slots[k], got) {
			diff("slot "+k, compact(e.Slots[k]), compact(got))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.SlotPredicates)) {
		p := e.SlotPredicates[k]
		got, ok := res.Slots[k]
		if !ok {
			diff("slot "+k+" (cel)", "a value for which "+p.expr+" is true", "not written")
			continue
		}
		if holds, err := p.eval(got, res.Slots); err != nil {
			diff("slot "+k+" (cel)", "a value for which "+p.expr+" is true", compact(got)+" (the predicate fails on it: "+err.Error()+")")
		} else if !holds {
			diff("slot "+k+" (cel)", "a value for which "+p.expr+" is true", compact(got))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.SlotsSubset)) {
		var g any
		got, ok := res.Slots[k]
		_ = json.Unmarshal(orNull(got), &g)
		if !ok || !subset(e.SlotsSubset[k], g) {
			diff("slot "+k+" (subset)", "a value containing "+compact(e.SlotsSubset[k]), compact(got))
		}
	}
	if e.Calls != nil {
		var want, got []string
		for _, c := range e.Calls {
			s := c.Tool
			if c.Args != nil {
				s += " " + compact(c.Args)
			}
			want = append(want, s)
		}
		for _, c := range calls {
			s := c.Tool + " " + compact(c.Args)
			got = append(got, s)
		}
		// An expected call without args matches any arguments.
		left := append([]string(nil), got...)
		okAll := len(want) == len(got)
		for _, w := range want {
			found := -1
			for i, g := range left {
				if g == w || !strings.Contains(w, " ") && strings.SplitN(g, " ", 2)[0] == w {
					found = i
					break
				}
			}
			if found < 0 {
				okAll = false
				break
			}
			left = append(left[:found], left[found+1:]...)
		}
		if !okAll {
			sort.Strings(want)
			sort.Strings(got)
			diff("calls (in any order)", "\n      "+strings.Join(want, "\n      "), "\n      "+strings.Join(got, "\n      "))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(e.CallCounts)) {
		n := 0
		for _, c := range calls {
			if c.Tool == t {
				n++
			}
		}
		if n != e.CallCounts[t] {
			diff("calls of "+t, fmt.Sprint(e.CallCounts[t]), fmt.Sprint(n))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Attempts)) {
		group, tool, scoped := strings.Cut(k, "/")
		if !scoped {
			tool, group = k, ""
		}
		n := 0
		for _, g := range res.Groups {
			if group != "" && g.Name != group {
				continue
			}
			for _, c := range g.Calls {
				if c.Tool == tool {
					n += c.Attempts
				}
			}
		}
		if n != e.Attempts[k] {
			diff("attempts of "+k, fmt.Sprint(e.Attempts[k]), fmt.Sprint(n))
		}
	}
	return f
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
