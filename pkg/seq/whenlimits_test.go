package seq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// litList returns the CEL list literal [0,1,...,n-1].
func litList(n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(p, ",") + "]"
}

// measure runs f and returns how long it took and how many bytes it
// allocated in all (an upper bound of its peak memory).
func measure(f func()) (time.Duration, uint64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	return d, after.TotalAlloc - before.TotalAlloc
}

// whenSeq is a one-group sequence with the given when, in keys and timeout.
func whenSeq(when, in, timeout string) string {
	return fmt.Sprintf(`{"name":"h","groups":[{"name":"g","in":%s,"when":%q,"timeout":%q,"tools":"{\"tool\":\"t\"};"}]}`, in, when, timeout)
}

// Hostile expressions whose cost comes from their own literals are refused
// when the sequence is stored, promptly and with little memory. (Before
// the limits, the first ran 18 s despite a 2 s group timeout, the second
// passed 4.5 GB and the third 2.1 GB.)
func TestWhenHostileRefusedWhenStored(t *testing.T) {
	l100, l300 := litList(100), litList(300)
	x := strings.Repeat("x", 1000)
	costly := map[string]string{
		"nested all over literal lists":    fmt.Sprintf("%s.all(a, %s.all(b, %s.all(c, %s.all(d, true))))", l100, l100, l100, l100),
		"nested map building lists":        fmt.Sprintf("size(%s.map(a, %s.map(b, %s.map(c, %s.map(d, 'x'))))) > 0", l100, l100, l100, l100),
		"string concatenation in a map":    fmt.Sprintf("size(%s.map(a, %s.map(b, %s.map(c, '%s' + '%s')))) > 0", l100, l100, l100, x, x),
		"exists_one over a product":        fmt.Sprintf("%s.exists_one(a, %s.exists(b, %s.exists(c, a + b + c == -1)))", l300, l300, l100),
		"filter of filter":                 fmt.Sprintf("size(%s.filter(a, %s.filter(b, %s.filter(c, true).size() > 0).size() > 0)) > 0", l300, l300, l300),
		"loop over input times a big list": fmt.Sprintf("$args.l.all(a, %s.all(b, %s.all(c, a != b + c)))", l300, l300),
	}
	for name, expr := range costly {
		t.Run(name, func(t *testing.T) {
			var err error
			d, alloc := measure(func() { _, err = ParseJSON([]byte(whenSeq(expr, `{"l":"array<integer>"}`, "2s"))) })
			if !errors.Is(err, ErrTooCostly) || !errors.Is(err, ErrExpression) {
				t.Fatalf("ParseJSON: %v; want ErrTooCostly and ErrExpression", err)
			}
			if !strings.Contains(err.Error(), "expression too costly") || !strings.Contains(err.Error(), "1000000") {
				t.Errorf("message %q does not say it is too costly and name the budget", err)
			}
			if d > 2*time.Second || alloc > 64<<20 {
				t.Errorf("refusing took %v and allocated %d MiB; want well under the 2 s timeout and 64 MiB", d, alloc>>20)
			}
			t.Logf("refused in %v, %d KiB allocated", d, alloc>>10)
		})
	}

	// Length and nesting are bounded too.
	deep := strings.Repeat("(", 400) + "true" + strings.Repeat(")", 400)
	long := strings.Repeat("true && ", 600) + "true"
	for name, expr := range map[string]string{"nesting 400 deep": deep, "4,808 characters": long, "not 5,000 times": strings.Repeat("!", 5000) + "true", "nested lists 300 deep": strings.Repeat("[", 300) + strings.Repeat("]", 300) + " == []"} {
		t.Run(name, func(t *testing.T) {
			var err error
			d, alloc := measure(func() { _, err = ParseJSON([]byte(whenSeq(expr, `{}`, "2s"))) })
			if !errors.Is(err, ErrExpression) {
				t.Fatalf("ParseJSON: %v; want ErrExpression", err)
			}
			if d > 2*time.Second || alloc > 64<<20 {
				t.Errorf("refusing took %v and allocated %d MiB", d, alloc>>20)
			}
			t.Logf("refused in %v, %d KiB allocated: %.160s", d, alloc>>10, err)
		})
	}
	if _, err := ParseJSON([]byte(whenSeq(long, `{}`, "2s"))); err == nil || !strings.Contains(err.Error(), "at most 4096 characters") {
		t.Errorf("a long expression: %v; want the length limit named", err)
	}

	// Ordinary expressions stay well inside the budget.
	for _, ok := range []string{
		`$args.l.all(a, $args.l.exists(b, a == b))`,
		`'urgent' in $args.s && size($args.l) > 3`,
		`$args.o.items.exists(i, i.status == 'open' && i.labels.exists(l, l.startsWith('p')))`,
		fmt.Sprintf("$args.l.exists(a, a in %s)", l100),
		`$args.l.map(x, x * 2).filter(y, y > 10).size() > 0`,
	} {
		if _, err := ParseJSON([]byte(whenSeq(ok, `{"l":"array<integer>","s":"array<string>","o":"object"}`, "2s"))); err != nil {
			t.Errorf("%s: %v; want it accepted", ok, err)
		}
	}
}

// Expressions that are cheap with small inputs but costly with the inputs
// they get at run time are stopped by the cost budget — not by the group's
// deadline, which is 60 s here — promptly and with bounded memory; the run
// fails with "expression too costly" and the group's calls are not run.
// "Promptly" is measured against the same machine in the same run: an
// ordinary expression that uses a known part of the budget gives the time
// per cost unit, and a hostile one may take at most a few times the time
// the whole budget is worth.
func TestWhenHostileStoppedWhenRun(t *testing.T) {
	big := litList(3000) // a run argument of 3,000 items
	in := map[string]Type{"l": "array<integer>"}
	scope := map[string]json.RawMessage{"l": json.RawMessage(big)}

	// Baseline: an expression that does real work within the budget.
	base, msg, _ := compileWhen(`$args.l.all(a, $args.l.exists(b, b == a))`, in)
	if msg != "" {
		t.Fatal(msg)
	}
	var used int64
	var err error
	baseTime, _ := measure(func() { _, used, err = base.evalCost(context.Background(), scope) })
	if err == nil || used < WhenCostLimit/4 {
		// all(exists) over 3,000 items is ~9 million units: it stops too,
		// which is the point of measuring it; it used the whole budget.
		t.Logf("baseline: %v after %d units", err, used)
	}
	perUnit := baseTime / time.Duration(max(used, 1))
	budgetTime := perUnit * WhenCostLimit
	t.Logf("baseline: %d units in %v (%v per unit; the budget is worth %v here)", used, baseTime, perUnit, budgetTime)

	tests := map[string]string{
		"triple loop over the input":  `$args.l.all(a, $args.l.all(b, $args.l.all(c, a + b != c - 1000000)))`,
		"map of maps over the input":  `size($args.l.map(a, $args.l.map(b, $args.l.map(c, 'x')))) > 0`,
		"string growth over input":    `$args.l.all(a, $args.l.all(b, (string(a) + string(b) + 'xxxxxxxxxxxxxxxxxxxxxxxxxxxx').size() > 0))`,
		"membership in a loop":        `$args.l.all(a, a in $args.l)`,
		"filter chains over an input": `$args.l.filter(a, $args.l.filter(b, b > a).size() > 0).size() > 0`,
	}
	for name, expr := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := ParseJSON([]byte(whenSeq(expr, `{"l":"array<integer>"}`, "60s")))
			if err != nil {
				t.Fatalf("ParseJSON: %v", err)
			}
			tools := &fakeTools{tools: map[string]toolFunc{"t": ret("1")}}
			var r *Result
			d, alloc := measure(func() { r, err = Run(context.Background(), s, tools, scope) })
			if !errors.Is(err, ErrTooCostly) || !errors.Is(err, ErrExpression) || errors.Is(err, ErrGroupTimeout) {
				t.Fatalf("Run: %v; want ErrTooCostly from the budget, not the deadline", err)
			}
			if r.Status != StatusFailed || r.Groups[0].Status != GroupFailed || r.Groups[0].Calls[0].Status != CallNotRun || tools.count("t") != 0 {
				t.Errorf("result %+v; want a failed run whose call did not run", r)
			}
			if !strings.Contains(r.Error, "expression too costly") || !strings.Contains(r.Error, "budget of 1000000") {
				t.Errorf("run error %q does not say expression too costly and name the budget", r.Error)
			}
			// 10 × the budget's worth: string building costs more per unit
			// than the baseline's comparisons, and a loaded CI machine
			// (race detector, other packages' tests) adds more; an
			// unbounded evaluation of these runs for minutes.
			if limit := 10*budgetTime + time.Second; d > limit || alloc > 256<<20 {
				t.Errorf("stopping took %v and allocated %d MiB; want under %v (10 × the budget's worth here + 1 s) and 256 MiB", d, alloc>>20, limit)
			}
			t.Logf("stopped in %v, %d MiB allocated", d, alloc>>20)
		})
	}
}

// The group's deadline stops a `when` (the evaluation counts inside the
// group timeout), and so does the run's cancellation.
func TestWhenStopsAtTheGroupDeadline(t *testing.T) {
	prog, msg, _ := compileWhen(`$args.l.all(a, $args.l.all(b, a != b - 100000))`, map[string]Type{"l": "array<integer>"})
	if msg != "" {
		t.Fatal(msg)
	}
	scope := map[string]json.RawMessage{"l": json.RawMessage(litList(3000))}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	time.Sleep(2 * time.Millisecond)
	_, err := prog.eval(ctx, scope)
	if !errors.Is(err, ErrTooCostly) || !errors.Is(err, ErrGroupTimeout) || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("eval after the deadline: %v; want ErrTooCostly and ErrGroupTimeout naming the deadline", err)
	}

	// Through Run: a 1 ms group timeout ends the evaluation (whichever of
	// deadline and budget comes first, the error says too costly).
	s, err := ParseJSON([]byte(whenSeq(`$args.l.all(a, $args.l.all(b, a != b - 100000))`, `{"l":"array<integer>"}`, "1ms")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), s, &fakeTools{tools: map[string]toolFunc{"t": ret("1")}}, scope)
	if !errors.Is(err, ErrTooCostly) || r.Status != StatusFailed {
		t.Errorf("Run with a 1ms timeout: %v (status %s); want too costly", err, r.Status)
	}

	// The run's own cancellation interrupts instead of failing.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := prog.eval(cctx, scope); !errors.Is(err, ErrTooCostly) || errors.Is(err, ErrGroupTimeout) {
		t.Errorf("eval after cancellation: %v", err)
	}
}

// Numbers keep their exact value in `when`: whole numbers that fit are
// CEL int (or uint), others double; a value CEL cannot hold is an error
// that names it.
func TestWhenExactNumbers(t *testing.T) {
	in := map[string]Type{"n": "integer", "r": "number", "o": "object", "l": "array"}
	tests := []struct {
		expr, key, val string
		want           bool
		err            string
	}{
		{`$args.n == 9007199254740993`, "n", `9007199254740993`, true, ""},
		{`$args.n == 9007199254740993`, "n", `9007199254740992`, false, ""},
		{`$args.n == 9223372036854775807`, "n", `9223372036854775807`, true, ""},
		{`$args.n == -9223372036854775807 - 1`, "n", `-9223372036854775808`, true, ""},
		{`$args.n == 1000`, "n", `1e3`, true, ""},
		{`$args.n == 9007199254740993`, "n", `9.007199254740993e15`, true, ""},
		{`$args.n == 5`, "n", `5.0`, true, ""},
		{`$args.r == 0.1`, "r", `0.1`, true, ""},
		{`$args.r == 2.0`, "r", `2`, true, ""},
		{`$args.r > 1e300`, "r", `1e301`, true, ""},
		{`$args.r > 1.0`, "r", `9007199254740993`, false, "cannot be represented exactly as a CEL double"},
		{`$args.r > 1.0`, "r", `1e400`, false, "out of the range of a CEL double"},
		{`$args.o.id == 9007199254740993`, "o", `{"id": 9007199254740993}`, true, ""},
		{`$args.o.id == 12345678901234567`, "o", `{"id": 1.2345678901234567e16}`, true, ""},
		{`$args.o.big == 18446744073709551615u`, "o", `{"big": 18446744073709551615}`, true, ""},
		{`$args.o.big > 1`, "o", `{"big": 18446744073709551615}`, true, ""},
		{`$args.o.x == 2.5`, "o", `{"x": 2.5}`, true, ""},
		{`$args.o.small == 1`, "o", `{"small": 1, "huge": 123456789012345678901234567890}`, true, ""},
		{`$args.o.huge > 1`, "o", `{"small": 1, "huge": 123456789012345678901234567890}`, false, "does not fit in 64 bits"},
		{`$args.l[1] == 9007199254740993`, "l", `[1, 9007199254740993]`, true, ""},
		{`$args.l[0] > 0`, "l", `[1e999]`, false, "out of the range"},
	}
	for _, tt := range tests {
		prog, msg, _ := compileWhen(tt.expr, in)
		if msg != "" {
			t.Errorf("compileWhen(%q): %s", tt.expr, msg)
			continue
		}
		got, err := prog.eval(context.Background(), map[string]json.RawMessage{tt.key: json.RawMessage(tt.val)})
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s with %s = %s: %v, %v; want an error containing %q", tt.expr, tt.key, tt.val, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%s with %s = %s: %v, %v; want %v", tt.expr, tt.key, tt.val, got, err, tt.want)
		}
	}
}

func TestExactInt(t *testing.T) {
	for s, want := range map[string]string{
		"0": "0", "-0": "0", "5": "5", "5.0": "5", "5.000": "5", "1e3": "1000", "1E+3": "1000", "12.5e1": "125",
		"9007199254740993": "9007199254740993", "9.007199254740993e15": "9007199254740993", "-1.5e1": "-15",
		"0e999999999": "0", "0.0e-5": "0", "1500e-2": "15", "123456789012345678901234567890": "123456789012345678901234567890",
	} {
		if i, ok := exactInt(s); !ok || i.String() != want {
			t.Errorf("exactInt(%q) = %v, %v; want %s", s, i, ok, want)
		}
	}
	for _, s := range []string{"0.5", "1e-3", "1.25", "1e999999999", "1e41", "-1e9999999999999", "12345678901234567890123456789012345678901"} {
		if i, ok := exactInt(s); ok {
			t.Errorf("exactInt(%q) = %v; want not a (small) whole number", s, i)
		}
	}
}

// Inside longer text an integer prints as its digits, however the JSON
// wrote it; other numbers as written.
func TestInterpolatedNumbers(t *testing.T) {
	s := mustParse(t, `
name: interp
groups:
  - name: g
    in: {n: integer, r: number}
    tools:
      - {tool: echo, args: {text: "n=$args.n r=$args.r", exact: $args.n}}
`)
	for _, tt := range []struct{ n, r, want string }{
		{`9007199254740993`, `1.5`, `{"exact":9007199254740993,"text":"n=9007199254740993 r=1.5"}`},
		{`9.007199254740993e15`, `2.50`, `{"exact":9.007199254740993e15,"text":"n=9007199254740993 r=2.50"}`},
		{`-1e3`, `1e400`, `{"exact":-1e3,"text":"n=-1000 r=1e400"}`},
		{`5.0`, `1E2`, `{"exact":5.0,"text":"n=5.0 r=100"}`},
	} {
		tools := &fakeTools{tools: map[string]toolFunc{"echo": echo()}}
		if _, err := Run(context.Background(), s, tools, map[string]json.RawMessage{"n": json.RawMessage(tt.n), "r": json.RawMessage(tt.r)}); err != nil {
			t.Fatalf("n=%s r=%s: %v", tt.n, tt.r, err)
		}
		if got := tools.argsOf("echo"); len(got) != 1 || got[0] != tt.want {
			t.Errorf("n=%s r=%s: sent %v; want %s", tt.n, tt.r, got, tt.want)
		}
	}
}

// YAML keeps a number's exact text when it is written as JSON writes it.
func TestYAMLNumbersExact(t *testing.T) {
	s := mustParse(t, `
name: nums
groups:
  - name: g
    tools:
      - {tool: echo, args: {a: 9007199254740993, b: 9007199254740993.0, c: 1e3, d: 0x1F, e: 123456789012345678901234567890, f: .5}}
`)
	tools := &fakeTools{tools: map[string]toolFunc{"echo": echo()}}
	if _, err := Run(context.Background(), s, tools, nil); err != nil {
		t.Fatal(err)
	}
	want := `{"a":9007199254740993,"b":9007199254740993.0,"c":1e3,"d":31,"e":123456789012345678901234567890,"f":0.5}`
	if got := tools.argsOf("echo"); len(got) != 1 || got[0] != want {
		t.Errorf("sent %v; want %s", got, want)
	}
}
