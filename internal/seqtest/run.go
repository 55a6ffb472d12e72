package seqtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// Result is the outcome of one case.
type Result struct {
	File     string        `json:"file"`
	Case     string        `json:"case"`
	Line     int           `json:"line"`
	Passed   bool          `json:"passed"`
	Failures []string      `json:"failures,omitempty"` // each an expectation with expected and actual
	Trace    []string      `json:"trace,omitempty"`    // groups and calls, in virtual time
	Virtual  time.Duration `json:"virtual_ns"`         // the run's virtual duration
	Wall     time.Duration `json:"wall_ns"`            // the real time the case took
}

// Call is one call the engine made to the mock caller.
type Call struct {
	Tool    string
	Args    json.RawMessage
	At      time.Duration // virtual time since the start
	Outcome string
}

// runMu makes cases run one at a time: the virtual clock tells that a run
// is blocked from the stacks of every goroutine in package seq.
var runMu sync.Mutex

// RunFile runs the cases of f whose "file/case" matches filter (nil: all).
// A sequence that does not parse fails every case with its problems.
func RunFile(ctx context.Context, f *File, filter *regexp.Regexp) []Result {
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
		r := RunCase(ctx, s, c)
		r.File = f.Path
		out = append(out, r)
	}
	return out
}

// RunCase runs one case against s with the real engine in virtual time.
func RunCase(ctx context.Context, s *seq.Sequence, c *Case) Result {
	runMu.Lock()
	defer runMu.Unlock()
	wall := time.Now()
	clock := newClock()
	m := &mockCaller{c: c, clock: clock, scripts: map[string]int{}}
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
		trace = append(trace, traceLine{at: clock.Now().Sub(epoch), rank: 1, text: line})
		return nil
	}}
	args := c.Args
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	var res *seq.Result
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, runErr = seq.Run(ctx, s, m, args, seq.WithClock(clock), seq.WithObserver(obs))
	}()
	buf := make([]byte, 64<<10)
	hung := time.NewTimer(30 * time.Second)
	defer hung.Stop()
	poll := 20 * time.Microsecond
wait:
	for {
		select {
		case <-done:
			break wait
		default:
		}
		if clock.pending() && runBlocked(&buf) {
			clock.advance()
			poll = 20 * time.Microsecond
			continue
		}
		t := time.NewTimer(poll)
		select {
		case <-done:
			t.Stop()
			break wait
		case <-clock.notify:
			t.Stop()
		case <-t.C:
			poll = min(2*poll, time.Millisecond)
		case <-hung.C:
			t.Stop()
			return Result{Case: c.Name, Line: c.Line, Failures: []string{"the run did not end within 30 s of real time"}, Wall: time.Since(wall)}
		}
	}
	_ = runErr
	r := Result{Case: c.Name, Line: c.Line, Virtual: time.Duration(res.Duration), Wall: time.Since(wall)}
	m.mu.Lock()
	calls := append([]Call(nil), m.calls...)
	unmocked := append([]string(nil), m.unmocked...)
	m.mu.Unlock()
	for _, call := range calls {
		trace = append(trace, traceLine{at: call.At, text: fmt.Sprintf("call %s %s → %s", call.Tool, call.Args, call.Outcome)})
	}
	line := "run " + string(res.Status)
	if res.Error != "" {
		line += ": " + res.Error
	}
	trace = append(trace, traceLine{at: time.Duration(res.Duration), rank: 2, text: line})
	sort.SliceStable(trace, func(i, j int) bool {
		if trace[i].at != trace[j].at {
			return trace[i].at < trace[j].at
		}
		return trace[i].rank < trace[j].rank
	})
	for _, t := range trace {
		r.Trace = append(r.Trace, fmt.Sprintf("%10s  %s", t.at.Round(time.Millisecond), t.text))
	}
	for _, t := range unmocked {
		r.Failures = append(r.Failures, fmt.Sprintf("the tool %q is not mocked: add it under mocks: (a result, an error, missing, ...)", t))
	}
	r.Failures = append(r.Failures, check(&c.Expect, res, calls)...)
	r.Passed = len(r.Failures) == 0
	return r
}

// traceLine is one line of a case's trace: calls (rank 0) before the
// group that made them (1) before the run's end (2) at the same time.
type traceLine struct {
	at   time.Duration
	rank int
	text string
}

// mockCaller serves a case's mocks (seq.Caller).
type mockCaller struct {
	c        *Case
	clock    *vclock
	mu       sync.Mutex
	scripts  map[string]int // "tool\x00match" → responses used
	calls    []Call
	unmocked []string
}

// Call answers one call from the mocks, after the mock's delay in virtual time.
func (m *mockCaller) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	m.mu.Lock()
	at := m.clock.Now().Sub(epoch)
	mock, ok := m.c.Mocks[tool]
	if !ok {
		if !contains(m.unmocked, tool) {
			m.unmocked = append(m.unmocked, tool)
		}
		m.calls = append(m.calls, Call{Tool: tool, Args: args, At: at, Outcome: "not mocked"})
		m.mu.Unlock()
		return nil, &toolcall.Error{Tool: tool, Code: "500", Description: "the tool is not mocked in this case"}
	}
	idx := len(m.calls)
	m.calls = append(m.calls, Call{Tool: tool, Args: args, At: at})
	var resp *Response
	if mock.Missing {
		resp = &Response{Missing: true}
	} else {
		resp = m.pick(tool, mock, args)
	}
	m.mu.Unlock()
	outcome := func(s string) {
		m.mu.Lock()
		m.calls[idx].Outcome = s
		m.mu.Unlock()
	}
	if resp == nil {
		outcome("no mock matches the arguments")
		return nil, &toolcall.Error{Tool: tool, Code: "500", Description: "no mock of this tool matches the arguments " + string(args)}
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
// response whose match fits the arguments, advanced by one.
func (m *mockCaller) pick(tool string, mock *Mock, args json.RawMessage) *Response {
	var a any
	_ = json.Unmarshal(args, &a)
	for i := range mock.Responses {
		r := &mock.Responses[i]
		if r.Match != nil && !subset(r.Match, a) {
			continue
		}
		key := tool + "\x00" + string(r.Match)
		var script []*Response
		for j := range mock.Responses {
			if string(mock.Responses[j].Match) == string(r.Match) {
				script = append(script, &mock.Responses[j])
			}
		}
		n := m.scripts[key]
		m.scripts[key] = n + 1
		return script[min(n, len(script)-1)]
	}
	return nil
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

func contains(a []string, s string) bool {
	for _, x := range a {
		if x == s {
			return true
		}
	}
	return false
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
	if e.Status != "" && string(res.Status) != e.Status {
		diff("status", e.Status, string(res.Status)+errSuffix(res.Error))
	}
	if e.Error != "" && !strings.Contains(res.Error, e.Error) {
		diff("error", "an error containing "+fmt.Sprintf("%q", e.Error), fmt.Sprintf("%q", res.Error))
	}
	for _, name := range sortedKeys(e.Groups) {
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
	for _, k := range sortedKeys(e.Slots) {
		got, ok := res.Slots[k]
		if !ok {
			diff("slot "+k, compact(e.Slots[k]), "not written")
		} else if !jsonEqual(e.Slots[k], got) {
			diff("slot "+k, compact(e.Slots[k]), compact(got))
		}
	}
	for _, k := range sortedKeys(e.SlotsSubset) {
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
	for _, t := range sortedKeys(e.CallCounts) {
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
	for _, k := range sortedKeys(e.Attempts) {
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

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}
