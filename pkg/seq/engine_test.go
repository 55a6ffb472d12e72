package seq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// toolFunc is one in-memory tool.
type toolFunc func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// fakeTools is an in-memory Caller: tools not in the table are missing.
// It records every call and the highest number of calls in flight.
type fakeTools struct {
	tools    map[string]toolFunc
	mu       sync.Mutex // mu guards calls
	calls    []string   // "tool args", in call order
	inFlight atomic.Int32
	maxIn    atomic.Int32
}

func (f *fakeTools) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	f.calls = append(f.calls, tool+" "+string(args))
	f.mu.Unlock()
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxIn.Load()
		if n <= m || f.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	fn, ok := f.tools[tool]
	if !ok {
		return nil, fmt.Errorf("tool %q: %w", tool, ErrToolMissing)
	}
	return fn(ctx, args)
}

func (f *fakeTools) count(tool string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, tool+" ") {
			n++
		}
	}
	return n
}

func (f *fakeTools) argsOf(tool string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if a, ok := strings.CutPrefix(c, tool+" "); ok {
			out = append(out, a)
		}
	}
	return out
}

func ret(v string) toolFunc {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(v), nil }
}

func echo() toolFunc {
	return func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }
}

func fails(msg string) toolFunc {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &ToolError{Tool: "x", Code: "500", Description: msg}
	}
}

// blocks waits until the call's context ends.
func blocks() toolFunc {
	return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// failsTimes fails n times, then returns v.
func failsTimes(n int32, v string) toolFunc {
	var c atomic.Int32
	return func(context.Context, json.RawMessage) (json.RawMessage, error) {
		if c.Add(1) <= n {
			return nil, errors.New("flaky")
		}
		return json.RawMessage(v), nil
	}
}

func mustParse(t testing.TB, yamlSrc string) *Sequence {
	t.Helper()
	s, err := ParseYAML([]byte(yamlSrc))
	if err != nil {
		t.Fatalf("ParseYAML: %v\n%s", err, yamlSrc)
	}
	return s
}

func args(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

var fast = WithRetryBackoff(time.Millisecond, 5*time.Millisecond)

// twoGroups is a group with the given policy lines and tools `a` (writes
// slot x) and `b` (writes slot y), followed by a group `next` reading both.
func twoGroups(policy string) string {
	return `name: s
groups:
  - name: first
    out: {x: object, y: object}
` + policy + `
    tools:
      - {tool: a, as: x, args: {n: 1}}
      - {tool: b, as: y}
  - name: next
    in: {x: object, y: object}
    out: {z: object}
    tools: [{tool: c, as: z, args: {x: $args.x, y: $args.y}}]
`
}

func TestRunPolicies(t *testing.T) {
	tests := []struct {
		name       string
		policy     string
		a, b       toolFunc // nil = missing
		wantStatus Status
		wantKind   error // nil: success
		wantErr    string
		wantGroups []GroupStatus
		wantCalls  []CallStatus // of group 1
		attempts   []int        // of group 1
		wantSlots  map[string]string
	}{
		{name: "all succeed", policy: "    missing: fail", a: ret(`{"a":1}`), b: ret(`{"b":2}`),
			wantStatus: StatusSucceeded, wantGroups: []GroupStatus{GroupSucceeded, GroupSucceeded}, wantCalls: []CallStatus{CallSucceeded, CallSucceeded}, attempts: []int{1, 1},
			wantSlots: map[string]string{"x": `{"a":1}`, "y": `{"b":2}`, "z": `{"x":{"a":1},"y":{"b":2}}`}},
		{name: "missing fail", policy: "    missing: fail\n    timeout: 30s", a: ret(`{}`), b: nil,
			wantStatus: StatusFailed, wantKind: ErrToolMissing, wantErr: `group 1 "first": tool 2 "b": no provider serves the tool "b"`,
			wantGroups: []GroupStatus{GroupFailed, GroupPending}, attempts: []int{1, 1}},
		{name: "missing skip", policy: "    missing: skip", a: ret(`{"a":1}`), b: nil,
			wantStatus: StatusSucceeded, wantGroups: []GroupStatus{GroupSucceeded, GroupSucceeded}, wantCalls: []CallStatus{CallSucceeded, CallSkipped}, attempts: []int{1, 1},
			wantSlots: map[string]string{"x": `{"a":1}`, "y": `null`, "z": `{"x":{"a":1},"y":null}`}},
		{name: "missing degrade", policy: "    missing: degrade", a: ret(`{"a":1}`), b: nil,
			wantStatus: StatusSucceeded, wantCalls: []CallStatus{CallSucceeded, CallDegraded},
			wantSlots: map[string]string{"y": `{"fallback":true}`, "z": `{"x":{"a":1},"y":{"fallback":true}}`}},
		{name: "missing never retried", policy: "    on_error: retry\n    retries: 5", a: ret(`{}`), b: nil,
			wantStatus: StatusFailed, wantKind: ErrToolMissing, attempts: []int{1, 1}},
		{name: "abort", policy: "    on_error: abort", a: fails("boom"), b: ret(`{}`),
			wantStatus: StatusFailed, wantKind: ErrToolFailed, wantErr: `group 1 "first": tool 1 "a": failed: tool "x" failed (code 500): boom`,
			wantGroups: []GroupStatus{GroupFailed, GroupPending}},
		{name: "abort cancels sibling", policy: "    on_error: abort", a: fails("boom"), b: blocks(),
			wantStatus: StatusFailed, wantKind: ErrToolFailed, wantCalls: []CallStatus{CallFailed, CallCanceled}},
		{name: "continue", policy: "    on_error: continue", a: fails("boom"), b: ret(`{"b":2}`),
			wantStatus: StatusSucceeded, wantGroups: []GroupStatus{GroupPartial, GroupSucceeded}, wantCalls: []CallStatus{CallFailed, CallSucceeded},
			wantSlots: map[string]string{"x": `null`, "z": `{"x":null,"y":{"b":2}}`}},
		{name: "retry recovers", policy: "    on_error: retry\n    retries: 3", a: failsTimes(2, `{"ok":1}`), b: ret(`{}`),
			wantStatus: StatusSucceeded, wantCalls: []CallStatus{CallSucceeded, CallSucceeded}, attempts: []int{3, 1}, wantSlots: map[string]string{"x": `{"ok":1}`}},
		{name: "retry exhausted", policy: "    on_error: retry\n    retries: 2", a: fails("boom"), b: ret(`{}`),
			wantStatus: StatusFailed, wantKind: ErrToolFailed, wantErr: "failed after 3 attempts (1 + retries: 2); last tool error: tool \"x\" failed (code 500): boom", attempts: []int{3, 1}},
		{name: "timeout abort", policy: "    timeout: 50ms", a: blocks(), b: ret(`{}`),
			wantStatus: StatusFailed, wantKind: ErrGroupTimeout, wantErr: "the group timeout of 50ms ended the attempts after 1 attempt(s); last tool error: context deadline exceeded"},
		{name: "timeout continue", policy: "    timeout: 50ms\n    on_error: continue", a: blocks(), b: ret(`{"b":2}`),
			wantStatus: StatusSucceeded, wantGroups: []GroupStatus{GroupPartial, GroupSucceeded}, wantSlots: map[string]string{"x": "null"}},
		{name: "timeout ends retries", policy: "    timeout: 150ms\n    on_error: retry\n    retries: 10", a: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
			time.Sleep(20 * time.Millisecond) // 11 attempts need more than the group's 150ms
			return fails("still down")(ctx, a)
		}, b: ret(`{}`),
			wantStatus: StatusFailed, wantKind: ErrGroupTimeout, wantErr: "last tool error: tool \"x\" failed (code 500): still down"},
		{name: "timed-out attempt retried", policy: "    timeout: 5s\n    on_error: retry\n    retries: 2",
			a: func() toolFunc {
				var n atomic.Int32
				return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					if n.Add(1) == 1 { // the provider's own request timeout
						return nil, fmt.Errorf("request: %w", context.DeadlineExceeded)
					}
					return json.RawMessage(`{"late":true}`), nil
				}
			}(), b: ret(`{}`),
			wantStatus: StatusSucceeded, attempts: []int{2, 1}, wantSlots: map[string]string{"x": `{"late":true}`}},
		{name: "invalid JSON reply", policy: "", a: ret(`not json`), b: ret(`{}`),
			wantStatus: StatusFailed, wantKind: ErrToolFailed, wantErr: "returned text that is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := tt.policy
			if strings.Contains(tt.name, "degrade") {
				policy += "\n"
			}
			src := twoGroups(policy)
			if strings.Contains(policy, "degrade") {
				src = strings.Replace(src, "{tool: b, as: y}", `{tool: b, as: y, fallback: '{"fallback": true}'}`, 1)
				src = strings.Replace(src, "{tool: a, as: x, args: {n: 1}}", `{tool: a, as: x, args: {n: 1}, fallback: "null"}`, 1)
			}
			s := mustParse(t, src)
			tools := &fakeTools{tools: map[string]toolFunc{"c": echo()}}
			if tt.a != nil {
				tools.tools["a"] = tt.a
			}
			if tt.b != nil {
				tools.tools["b"] = tt.b
			}
			start := time.Now()
			r, err := Run(context.Background(), s, tools, nil, fast)
			if time.Since(start) > 3*time.Second {
				t.Errorf("Run took %v", time.Since(start))
			}
			if r.Status != tt.wantStatus {
				t.Errorf("status = %s; want %s (error %v)", r.Status, tt.wantStatus, err)
			}
			if tt.wantKind == nil && err != nil {
				t.Errorf("Run error = %v; want nil", err)
			}
			if tt.wantKind != nil && !errors.Is(err, tt.wantKind) {
				t.Errorf("Run error = %v; want kind %v", err, tt.wantKind)
			}
			if err != nil && r.Error != err.Error() {
				t.Errorf("Result.Error = %q; want %q", r.Error, err.Error())
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Run error = %v; want it to contain %q", err, tt.wantErr)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Group != 1 || e.GroupName != "first" {
					t.Errorf("Run error %v is not an *Error naming group 1", err)
				}
			}
			for i, g := range tt.wantGroups {
				if r.Groups[i].Status != g {
					t.Errorf("group %d status = %s; want %s", i+1, r.Groups[i].Status, g)
				}
			}
			for i, c := range tt.wantCalls {
				if got := r.Groups[0].Calls[i].Status; got != c {
					t.Errorf("call %d status = %s; want %s (%s)", i+1, got, c, r.Groups[0].Calls[i].Error)
				}
			}
			for i, a := range tt.attempts {
				if got := r.Groups[0].Calls[i].Attempts; got != a {
					t.Errorf("call %d attempts = %d; want %d", i+1, got, a)
				}
			}
			for k, v := range tt.wantSlots {
				if got := string(r.Slots[k]); got != v {
					t.Errorf("slot %s = %s; want %s", k, got, v)
				}
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("Result is not JSON-serialisable: %v", err)
			}
		})
	}
}

func TestMissingFailIsImmediate(t *testing.T) {
	s := mustParse(t, "name: s\ngroups:\n  - name: g\n    timeout: 1h\n    tools: [{tool: gone}, {tool: slow}]\n")
	tools := &fakeTools{tools: map[string]toolFunc{"slow": blocks()}}
	start := time.Now()
	_, err := Run(context.Background(), s, tools, nil)
	if !errors.Is(err, ErrToolMissing) {
		t.Fatalf("Run error = %v; want ErrToolMissing", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("missing: fail took %v; want it immediate", d)
	}
}

func TestParallelAndSequential(t *testing.T) {
	const src = `name: s
groups:
  - name: g
    parallel: %v
    on_error: %s
    tools: [{tool: a}, {tool: b}, {tool: c}]
`
	barrier := func(n int) toolFunc { // returns once n calls are in flight (or after 2s)
		var wg sync.WaitGroup
		wg.Add(n)
		return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			wg.Done()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
			}
			return json.RawMessage(`{}`), nil
		}
	}
	t.Run("parallel starts together", func(t *testing.T) {
		b := barrier(3)
		tools := &fakeTools{tools: map[string]toolFunc{"a": b, "b": b, "c": b}}
		r, err := Run(context.Background(), mustParse(t, fmt.Sprintf(src, true, "abort")), tools, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tools.maxIn.Load() != 3 {
			t.Errorf("max calls in flight = %d; want 3", tools.maxIn.Load())
		}
		if time.Duration(r.Duration) > time.Second {
			t.Errorf("parallel run took %v; the calls did not overlap", r.Duration)
		}
	})
	t.Run("sequential in order", func(t *testing.T) {
		tools := &fakeTools{tools: map[string]toolFunc{"a": ret(`1`), "b": ret(`2`), "c": ret(`3`)}}
		if _, err := Run(context.Background(), mustParse(t, fmt.Sprintf(src, false, "abort")), tools, nil); err != nil {
			t.Fatal(err)
		}
		if tools.maxIn.Load() != 1 {
			t.Errorf("max calls in flight = %d; want 1", tools.maxIn.Load())
		}
		if got := strings.Join(tools.calls, ","); got != "a {},b {},c {}" {
			t.Errorf("calls = %s; want a, b, c in order", got)
		}
	})
	t.Run("sequential abort stops", func(t *testing.T) {
		tools := &fakeTools{tools: map[string]toolFunc{"a": ret(`1`), "b": fails("no"), "c": ret(`3`)}}
		r, err := Run(context.Background(), mustParse(t, fmt.Sprintf(src, false, "abort")), tools, nil)
		if !errors.Is(err, ErrToolFailed) {
			t.Fatalf("err = %v; want ErrToolFailed", err)
		}
		if tools.count("c") != 0 || r.Groups[0].Calls[2].Status != CallNotRun {
			t.Errorf("c called %d times, status %s; want 0, not_run", tools.count("c"), r.Groups[0].Calls[2].Status)
		}
	})
	t.Run("sequential continue goes on", func(t *testing.T) {
		tools := &fakeTools{tools: map[string]toolFunc{"a": ret(`1`), "b": fails("no"), "c": ret(`3`)}}
		r, err := Run(context.Background(), mustParse(t, fmt.Sprintf(src, false, "continue")), tools, nil)
		if err != nil || tools.count("c") != 1 || r.Groups[0].Status != GroupPartial {
			t.Errorf("err %v, c calls %d, group %s; want nil, 1, partial", err, tools.count("c"), r.Groups[0].Status)
		}
	})
}

func TestArraySlotDeclarationOrder(t *testing.T) {
	s := mustParse(t, `name: s
groups:
  - name: g
    out: {all: array<integer>}
    tools: [{tool: slow, as: all}, {tool: mid, as: all}, {tool: fast, as: all}]
`)
	delay := func(d time.Duration, v string) toolFunc {
		return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			time.Sleep(d)
			return json.RawMessage(v), nil
		}
	}
	tools := &fakeTools{tools: map[string]toolFunc{"slow": delay(60*time.Millisecond, "1"), "mid": delay(30*time.Millisecond, "2"), "fast": ret("3")}}
	r, err := Run(context.Background(), s, tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Slots["all"]); got != "[1,2,3]" {
		t.Errorf("slot all = %s; want [1,2,3] (declaration order)", got)
	}
}

func TestArgumentSubstitution(t *testing.T) {
	s := mustParse(t, `name: s
groups:
  - name: g
    in: {n: integer, r: number, s: string, o: object, l: array<string>, b: bool, z: string}
    tools:
      - tool: t
        args:
          n: $args.n
          r: $args.r
          o: $args.o
          l: $args.l
          b: $args.b
          z: $args.z
          text: "n=$args.n s=$args.s o=$args.o l=$args.l z=$args.z."
          nested: [{deep: $args.s}]
          plain: "<no refs & here>"
`)
	tools := &fakeTools{tools: map[string]toolFunc{"t": ret("{}")}}
	a := args("n", "42", "r", "1.5", "s", `"héllo \"q\""`, "o", `{"k": [1, 2]}`, "l", `["x","y"]`, "b", "true", "z", "null")
	if _, err := Run(context.Background(), s, tools, a); err != nil {
		t.Fatal(err)
	}
	got := tools.argsOf("t")[0]
	want := `{"b":true,"l":["x","y"],"n":42,"nested":[{"deep":"héllo \"q\""}],"o":{"k":[1,2]},"plain":"<no refs & here>","r":1.5,"text":"n=42 s=héllo \"q\" o={\"k\":[1,2]} l=[\"x\",\"y\"] z=null.","z":null}`
	if got != want {
		t.Errorf("args sent =\n%s\nwant\n%s", got, want)
	}
}

func TestRunArgumentChecks(t *testing.T) {
	s := mustParse(t, `name: s
groups:
  - name: first
    in: {repo: string, limit: integer}
    out: {x: integer}
    tools: [{tool: t, as: x}]
  - name: second
    in: {x: integer, ratio: number}
    tools: [{tool: u}]
`)
	tests := []struct {
		name string
		args map[string]json.RawMessage
		ret  string
		want []string
	}{
		{"missing", args("repo", `"a"`, "ratio", "1"), "1", []string{`group 1 "first": in.limit`, `"limit" (integer) is missing`, "(limit: integer, ratio: number, repo: string)"}},
		{"wrong type", args("repo", `"a"`, "limit", `"ten"`, "ratio", "1"), "1", []string{`group 1 "first": in.limit`, "must be integer, got string"}},
		{"fraction for integer", args("repo", `"a"`, "limit", `2.5`, "ratio", "1"), "1", []string{"must be integer, got number"}},
		{"unknown", args("repo", `"a"`, "limit", "1", "ratio", "1", "lmit", "2"), "1", []string{`unknown run argument "lmit"`}},
		{"invalid json", args("repo", `"a"`, "limit", "1", "ratio", "{"), "1", []string{"not valid JSON"}},
		{"slot of wrong type", args("repo", `"a"`, "limit", "1", "ratio", "1"), `"one"`, []string{`group 2 "second": in.x`, "must be integer, got string", "did not start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools := &fakeTools{tools: map[string]toolFunc{"t": ret(tt.ret), "u": ret("{}")}}
			r, err := Run(context.Background(), s, tools, tt.args)
			if !errors.Is(err, ErrArgument) {
				t.Fatalf("Run error = %v; want ErrArgument", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run error = %v; want it to contain %q", err, w)
				}
			}
			if tools.count("u") != 0 {
				t.Errorf("tool u was called although its group's input was bad")
			}
			if r.Status != StatusFailed {
				t.Errorf("status = %s; want failed", r.Status)
			}
		})
	}
	t.Run("null passes every type", func(t *testing.T) {
		tools := &fakeTools{tools: map[string]toolFunc{"t": ret("null"), "u": ret("{}")}}
		if _, err := Run(context.Background(), s, tools, args("repo", "null", "limit", "null", "ratio", "null")); err != nil {
			t.Errorf("Run with nulls = %v; want nil", err)
		}
	})
}

func TestWhen(t *testing.T) {
	s := mustParse(t, `name: s
groups:
  - name: probe
    in: {mode: string}
    out: {found: object}
    when: $args.mode == "full"
    tools: [{tool: probe, as: found}]
  - name: use
    in: {found: object, count: integer}
    out: {used: string}
    when: $args.found == null || $args.count > 2
    tools: [{tool: use, as: used}]
  - name: never
    in: {count: integer}
    when: $args.count > 100
    tools: [{tool: never}]
`)
	tools := &fakeTools{tools: map[string]toolFunc{"probe": ret(`{"a":1}`), "use": ret(`"u"`), "never": ret("1")}}
	r, err := Run(context.Background(), s, tools, args("mode", `"quick"`, "count", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Groups[0].Status != GroupSkipped || r.Groups[0].Reason != "when is false" || string(r.Slots["found"]) != "null" {
		t.Errorf("group 1 = %s (%s), slot found = %s; want skipped, null", r.Groups[0].Status, r.Groups[0].Reason, r.Slots["found"])
	}
	if r.Groups[1].Status != GroupSucceeded || string(r.Slots["used"]) != `"u"` {
		t.Errorf("group 2 = %s, used = %s; want succeeded (found is null)", r.Groups[1].Status, r.Slots["used"])
	}
	if r.Groups[2].Status != GroupSkipped || tools.count("probe")+tools.count("never") != 0 {
		t.Errorf("skipped groups called tools")
	}

	t.Run("evaluation error", func(t *testing.T) {
		s := mustParse(t, "name: s\ngroups:\n  - name: g\n    in: {n: integer}\n    when: $args.n > 1\n    tools: [{tool: t}, {tool: u}]\n")
		tools := &fakeTools{tools: map[string]toolFunc{"t": ret("1"), "u": ret("2")}}
		r, err := Run(context.Background(), s, tools, args("n", "null"))
		if !errors.Is(err, ErrExpression) || !strings.Contains(err.Error(), `group 1 "g": when`) || !strings.Contains(err.Error(), "$args.x != null") {
			t.Errorf("Run error = %v; want ErrExpression naming the group with a hint", err)
		}
		if g := r.Groups[0]; g.Status != GroupFailed {
			t.Errorf("group status = %s; want %s", g.Status, GroupFailed)
		}
		for i, c := range r.Groups[0].Calls {
			if c.Status != CallNotRun || c.Attempts != 0 {
				t.Errorf("call %d (%s) = %s with %d attempts; want %s with 0", i+1, c.Tool, c.Status, c.Attempts, CallNotRun)
			}
		}
		if n := tools.count("t") + tools.count("u"); n != 0 {
			t.Errorf("tools called %d times; want 0 (the when failed)", n)
		}
	})
	t.Run("number compares", func(t *testing.T) {
		s := mustParse(t, "name: s\ngroups:\n  - name: g\n    in: {r: number}\n    when: $args.r + 0.5 > 2\n    tools: [{tool: t}]\n")
		tools := &fakeTools{tools: map[string]toolFunc{"t": ret("1")}}
		r, err := Run(context.Background(), s, tools, args("r", "2"))
		if err != nil || r.Groups[0].Status != GroupSucceeded {
			t.Errorf("Run = %v, %v; want group succeeded (2 is a number)", err, r.Groups[0].Status)
		}
	})
}

func TestCancellation(t *testing.T) {
	s := mustParse(t, "name: s\ngroups:\n  - name: g\n    timeout: 1h\n    on_error: retry\n    retries: 10\n    tools: [{tool: slow}]\n  - name: h\n    tools: [{tool: t}]\n")
	tools := &fakeTools{tools: map[string]toolFunc{"slow": blocks(), "t": ret("1")}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	r, err := Run(ctx, s, tools, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v; want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("cancellation took %v", time.Since(start))
	}
	if r.Status != StatusInterrupted || r.Groups[0].Status != GroupInterrupted || r.Groups[1].Status != GroupPending {
		t.Errorf("status %s, groups %s %s; want interrupted, interrupted, pending", r.Status, r.Groups[0].Status, r.Groups[1].Status)
	}
	if tools.count("slow") != 1 {
		t.Errorf("slow called %d times; an interrupted call must not be retried", tools.count("slow"))
	}
}

const threeGroups = `name: s
groups:
  - name: one
    in: {seed: integer}
    out: {a: integer}
    tools: [{tool: inc, as: a, args: {v: $args.seed}}]
  - name: two
    in: {a: integer}
    out: {b: integer}
    tools: [{tool: inc, as: b, args: {v: $args.a}}]
  - name: three
    in: {b: integer}
    out: {c: integer}
    tools: [{tool: inc, as: c, args: {v: $args.b}}]
`

func inc() toolFunc {
	return func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
		var in struct{ V int }
		if err := json.Unmarshal(a, &in); err != nil {
			return nil, err
		}
		return json.RawMessage(fmt.Sprint(in.V + 1)), nil
	}
}

func TestObserverCheckpointAndResume(t *testing.T) {
	s := mustParse(t, threeGroups)
	var events []string
	var checkpoints [][]byte
	obs := ObserverFuncs{
		Started: func(_ context.Context, r *Result, g int) {
			events = append(events, fmt.Sprintf("start %s %s", r.Groups[g].Name, r.Groups[g].Status))
		},
		Finished: func(_ context.Context, r *Result, g int) error {
			events = append(events, fmt.Sprintf("done %s %s", r.Groups[g].Name, r.Groups[g].Status))
			b, err := json.Marshal(r)
			checkpoints = append(checkpoints, b)
			if g == 1 {
				return errors.New("kv unavailable") // the worker "crashes" after group 2's checkpoint
			}
			return err
		},
	}
	tools := &fakeTools{tools: map[string]toolFunc{"inc": inc()}}
	r, err := Run(context.Background(), s, tools, args("seed", "1"), WithObserver(obs))
	if !errors.Is(err, ErrObserver) || r.Status != StatusInterrupted {
		t.Fatalf("Run = %s, %v; want interrupted with ErrObserver", r.Status, err)
	}
	wantEvents := "start one running,done one succeeded,start two running,done two succeeded"
	if got := strings.Join(events, ","); got != wantEvents {
		t.Errorf("observer events = %s; want %s", got, wantEvents)
	}
	// Resume from the first checkpoint (only group one finished), decoded from JSON as the worker would.
	var cp Result
	if err := json.Unmarshal(checkpoints[0], &cp); err != nil {
		t.Fatal(err)
	}
	tools2 := &fakeTools{tools: map[string]toolFunc{"inc": inc()}}
	r2, err := Run(context.Background(), s, tools2, nil, WithResume(&cp))
	if err != nil {
		t.Fatalf("resumed Run: %v", err)
	}
	if got := strings.Join(tools2.calls, ","); got != `inc {"v":2},inc {"v":3}` {
		t.Errorf("resumed calls = %s; want groups two and three only", got)
	}
	if string(r2.Slots["c"]) != "4" || r2.Groups[0].Status != GroupSucceeded || r2.Groups[0].Calls[0].Attempts != 1 {
		t.Errorf("resumed result slots %v, group one %+v", r2.Slots, r2.Groups[0])
	}

	t.Run("mismatched checkpoint", func(t *testing.T) {
		other := mustParse(t, strings.Replace(threeGroups, "name: two", "name: deux", 1))
		_, err := Run(context.Background(), other, tools2, nil, WithResume(&cp))
		if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), `group 2 is "two" in the checkpoint but "deux"`) {
			t.Errorf("Run = %v; want ErrCheckpoint naming group 2", err)
		}
	})
}

func TestRunGroup(t *testing.T) {
	s := mustParse(t, threeGroups)
	tools := &fakeTools{tools: map[string]toolFunc{"inc": inc()}}
	out, gr, err := RunGroup(context.Background(), s, "two", tools, args("a", "10"))
	if err != nil {
		t.Fatal(err)
	}
	if string(out["b"]) != "11" || len(out) != 1 || gr.Status != GroupSucceeded {
		t.Errorf("RunGroup = %v, %s; want {b: 11}, succeeded", out, gr.Status)
	}
	if _, _, err := RunGroup(context.Background(), s, "four", tools, nil); !errors.Is(err, ErrNoGroup) || !strings.Contains(err.Error(), "one, two, three") {
		t.Errorf("RunGroup(four) = %v; want ErrNoGroup listing the groups", err)
	}
	if _, _, err := RunGroup(context.Background(), s, "two", tools, nil); !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), `group 2 "two"`) {
		t.Errorf("RunGroup without args = %v; want ErrArgument naming group 2", err)
	}
}

// TestRenderMatchesEncodingJSON checks the engine's own JSON writer against
// encoding/json (without HTML escaping) on awkward values.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", "quote \" backslash \\ slash /", "ctl \x00\x01\x1f\t\n\r", "html <a href='x'>&amp;</a>", "uni é 日本 🎉", "bad utf8 \xff\xfe", "sep \u2028 \u2029", "$args", "$args.", "cost $5"}
	for _, s := range strs {
		args := map[string]any{"s": s, "l": []any{s, json.Number("1.50"), nil, true}, "m": map[string]any{"z": s, "a": false}}
		got, err := (&argScope{}).render(args)
		if err != nil {
			t.Fatalf("render(%q): %v", s, err)
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(args); err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(b.String(), "\n"); string(got) != want {
			t.Errorf("render(%q) =\n%s\nwant\n%s", s, got, want)
		}
	}
}
