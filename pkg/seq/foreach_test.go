package seq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fanOut is a sequence whose group `each` calls tool t once per item of
// the run argument files (array<object>), with the extra group lines in
// policy and the call fields in call; the next group reads the results.
func fanOut(policy, call string) string {
	return `name: fan
groups:
  - name: each
    in: {files: array<object>, root: string}
    out: {sizes: array<object>}
` + policy + `
    tools:
      - tool: t
        for_each: $args.files
        args: {path: "$args.root/$item.path", item: $item, i: $index, n: $item.n}
        as: sizes
` + call + `
  - name: after
    in: {sizes: array<object>}
    out: {all: array<object>}
    tools: [{tool: echo, args: {s: $args.sizes}, as: all}]
`
}

func items(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"path":"f%d","n":%d}`, i, i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestForEachOrderAndArgs: every item is called once with $item, its
// field and $index substituted (keeping their JSON types), and the slot
// holds the results in item order although they finish in another order.
func TestForEachOrderAndArgs(t *testing.T) {
	s := mustParse(t, fanOut("", ""))
	f := &fakeTools{tools: map[string]toolFunc{
		"t": func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var v struct{ I int }
			_ = json.Unmarshal(a, &v)
			time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // finish out of order
			return a, nil
		},
		"echo": echo(),
	}}
	r, err := Run(context.Background(), s, f, args("files", items(20), "root", `"src"`))
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Path string
		I    json.Number
		N    json.Number
		Item map[string]any
	}
	if err := json.Unmarshal(r.Slots["sizes"], &got); err != nil || len(got) != 20 {
		t.Fatalf("sizes = %s (%v)", r.Slots["sizes"], err)
	}
	for i, g := range got {
		if g.Path != fmt.Sprintf("src/f%d", i) || g.I.String() != fmt.Sprint(i) || g.N.String() != fmt.Sprint(i) || g.Item["path"] != fmt.Sprintf("f%d", i) {
			t.Fatalf("result %d = %+v; want item %d in its place", i, g, i)
		}
	}
	c := r.Groups[0].Calls[0]
	if c.Status != CallSucceeded || c.Attempts != 20 || c.ForEach == nil || c.ForEach.Items != 20 || c.ForEach.Succeeded != 20 || len(c.ForEach.Details) != 0 {
		t.Fatalf("call = %+v, fan-out %+v", c, c.ForEach)
	}
	if f.count("t") != 20 {
		t.Fatalf("t called %d times; want 20", f.count("t"))
	}
	if !strings.HasPrefix(string(r.Slots["all"]), `{"s":[{`) {
		t.Fatalf("the next group read %s", r.Slots["all"])
	}
}

// TestForEachMaxParallel: max_parallel bounds the items in flight (the
// caller measures it); without it a parallel group runs every item at
// once and a parallel: false group one at a time.
func TestForEachMaxParallel(t *testing.T) {
	for _, tc := range []struct {
		policy, call string
		want         int32
	}{
		{"", "        max_parallel: 3", 3},
		{"", "", 12},
		{"    parallel: false", "", 1},
		{"    parallel: false", "        max_parallel: 4", 4},
	} {
		t.Run(tc.policy+tc.call, func(t *testing.T) {
			s := mustParse(t, fanOut(tc.policy, tc.call))
			var started atomic.Int32
			release := make(chan struct{})
			f := &fakeTools{tools: map[string]toolFunc{
				"t": func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
					if started.Add(1) == tc.want {
						close(release) // the most that may be in flight are
					}
					select {
					case <-release:
					case <-time.After(200 * time.Millisecond): // fewer can start: do not hang
					}
					return a, nil
				},
				"echo": echo(),
			}}
			if _, err := Run(context.Background(), s, f, args("files", items(12), "root", `"r"`)); err != nil {
				t.Fatal(err)
			}
			if got := f.maxIn.Load(); got != tc.want {
				t.Fatalf("at most %d items were in flight; want %d", got, tc.want)
			}
		})
	}
}

// TestForEachEmptyAndNull: an empty list (and null) makes no call and
// writes [].
func TestForEachEmptyAndNull(t *testing.T) {
	s := mustParse(t, fanOut("", ""))
	for _, list := range []string{`[]`, `null`} {
		f := &fakeTools{tools: map[string]toolFunc{"t": echo(), "echo": echo()}}
		r, err := Run(context.Background(), s, f, args("files", list, "root", `"r"`))
		if err != nil {
			t.Fatal(err)
		}
		if f.count("t") != 0 || string(r.Slots["sizes"]) != "[]" || r.Groups[0].Calls[0].ForEach.Items != 0 || r.Groups[0].Status != GroupSucceeded {
			t.Fatalf("%s: %d calls, slot %s, %+v", list, f.count("t"), r.Slots["sizes"], r.Groups[0])
		}
	}
}

// TestForEachContinue: under on_error: continue the failed items' results
// are null, the group is partial, and the fan-out names the failed items
// and why; a missing $item field fails only its item.
func TestForEachContinue(t *testing.T) {
	s := mustParse(t, fanOut("    on_error: continue", ""))
	f := &fakeTools{tools: map[string]toolFunc{
		"t": func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(a), `"i":3,`) || strings.Contains(string(a), `"i":7,`) {
				return nil, &ToolError{Tool: "t", Code: "500", Description: "boom"}
			}
			return json.RawMessage(`{"ok":true}`), nil
		},
		"echo": echo(),
	}}
	list := strings.Replace(items(10), `{"path":"f5","n":5}`, `{"pth":"f5","n":5}`, 1)
	r, err := Run(context.Background(), s, f, args("files", list, "root", `"r"`))
	if err != nil {
		t.Fatal(err)
	}
	var got []json.RawMessage
	_ = json.Unmarshal(r.Slots["sizes"], &got)
	for i, v := range got {
		want := `{"ok":true}`
		if i == 3 || i == 5 || i == 7 {
			want = "null"
		}
		if string(v) != want {
			t.Fatalf("result %d = %s; want %s (all: %s)", i, v, want, r.Slots["sizes"])
		}
	}
	g := r.Groups[0]
	fan := g.Calls[0].ForEach
	if g.Status != GroupPartial || g.Calls[0].Status != CallFailed || fan.Failed != 3 || fan.Succeeded != 7 || fmt.Sprint(fan.FailedItems) != "[3 5 7]" || len(fan.Details) != 3 {
		t.Fatalf("group %s, call %+v, fan-out %+v", g.Status, g.Calls[0], fan)
	}
	if !strings.Contains(fan.Details[0].Error, "boom") || !strings.Contains(fan.Details[1].Error, `no field "path"`) || !strings.Contains(fan.Details[1].Error, `Did you mean "pth"?`) {
		t.Fatalf("details = %+v", fan.Details)
	}
	if !strings.HasPrefix(g.Calls[0].Error, "item 4 of 10 ($index 3): ") || !strings.HasSuffix(g.Calls[0].Error, "(and 2 more failed)") {
		t.Fatalf("call error = %q", g.Calls[0].Error)
	}
}

// TestForEachRetriesPerItem: each item has its own attempts under
// on_error: retry; one failing for good aborts the group, names its item
// and cancels the rest.
func TestForEachRetriesPerItem(t *testing.T) {
	s := mustParse(t, fanOut("    on_error: retry\n    retries: 2", ""))
	var tries [6]atomic.Int32
	f := &fakeTools{tools: map[string]toolFunc{
		"t": func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var v struct{ I int }
			_ = json.Unmarshal(a, &v)
			if n := tries[v.I].Add(1); n <= int32(v.I%3) { // item i fails i%3 times
				return nil, errors.New("flaky")
			}
			return json.RawMessage(fmt.Sprintf(`{"i":%d}`, v.I)), nil
		},
		"echo": echo(),
	}}
	r, err := Run(context.Background(), s, f, args("files", items(6), "root", `"r"`), fast)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Slots["sizes"]) != `[{"i":0},{"i":1},{"i":2},{"i":3},{"i":4},{"i":5}]` {
		t.Fatalf("sizes = %s", r.Slots["sizes"])
	}
	c := r.Groups[0].Calls[0]
	if c.Attempts != 6+1+2+1+2 || len(c.ForEach.Details) != 4 || c.ForEach.Details[1].Index != 2 || c.ForEach.Details[1].Attempts != 3 {
		t.Fatalf("call %+v, details %+v", c, c.ForEach.Details)
	}

	// item 4 always fails: after 3 attempts the run fails naming it.
	f.tools["t"] = func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
		if strings.Contains(string(a), `"i":4,`) {
			return nil, errors.New("down")
		}
		return a, nil
	}
	r, err = Run(context.Background(), s, f, args("files", items(6), "root", `"r"`), fast)
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "item 5 of 6 ($index 4): failed after 3 attempts") {
		t.Fatalf("err = %v", err)
	}
	if fan := r.Groups[0].Calls[0].ForEach; fan.Failed != 1 || fmt.Sprint(fan.FailedItems) != "[4]" || r.Groups[1].Status != GroupPending {
		t.Fatalf("fan-out %+v, groups %+v", fan, r.Groups)
	}
}

// TestForEachMaxItems: a list over the bound fails the group before any
// item is called, naming the bound.
func TestForEachMaxItems(t *testing.T) {
	s := mustParse(t, fanOut("    on_error: continue", ""))
	f := &fakeTools{tools: map[string]toolFunc{"t": echo(), "echo": echo()}}
	_, err := Run(context.Background(), s, f, args("files", items(6), "root", `"r"`), WithMaxItems(5))
	if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), "holds 6 items, over the limit of 5 items per for_each call") {
		t.Fatalf("err = %v", err)
	}
	if f.count("t") != 0 {
		t.Fatalf("%d items called", f.count("t"))
	}
	if _, err := Run(context.Background(), s, f, args("files", items(5), "root", `"r"`), WithMaxItems(5)); err != nil {
		t.Fatal(err)
	}
}

// TestForEachMissingDegrade: a missing tool under degrade gives each item
// the fallback, typed against the slot's item type.
func TestForEachMissingDegrade(t *testing.T) {
	s := mustParse(t, `name: d
groups:
  - name: g
    in: {names: array<string>}
    out: {r: array<object>}
    missing: degrade
    tools:
      - {tool: nobody, for_each: $args.names, args: {n: "hello $item #$index"}, as: r, fallback: "{}"}
`)
	r, err := Run(context.Background(), s, &fakeTools{}, args("names", `["a","b"]`))
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Slots["r"]) != "[{},{}]" || r.Groups[0].Calls[0].Status != CallDegraded || r.Groups[0].Calls[0].ForEach.Degraded != 2 {
		t.Fatalf("slot %s, call %+v", r.Slots["r"], r.Groups[0].Calls[0])
	}
	f := &fakeTools{tools: map[string]toolFunc{"nobody": echo()}}
	if _, err := Run(context.Background(), s, f, args("names", `["a","b"]`)); err != nil {
		t.Fatal(err)
	}
	// The items run in parallel: the calls are recorded in the order they
	// came, which is any.
	if got := strings.Join(slices.Sorted(slices.Values(f.argsOf("nobody"))), " "); got != `{"n":"hello a #0"} {"n":"hello b #1"}` {
		t.Fatalf("args = %s", got)
	}
}

// TestForEachChecks: every for_each mistake is refused when the sequence
// is parsed, at the line of the field it is about, with a fix.
func TestForEachChecks(t *testing.T) {
	for _, tc := range []struct {
		name, in, out, call string
		want                string
		line                int
	}{
		{"over a non-array", "{n: integer}", "{r: array<object>}", "for_each: $args.n\n        as: r", `for_each: reads $args.n, which the group's ` + "`in`" + ` declares as integer; for_each needs a list: declare "n": array<TYPE>`, 8},
		{"over an untyped array", "{n: array}", "{r: array<object>}", "for_each: $args.n\n        as: r", `declared as array without an item type, so the type of $item is unknown; declare the items' type: "n": array<object>`, 8},
		{"over an undeclared key", "{n: array<string>}", "{r: array<object>}", "for_each: $args.m\n        as: r", `for_each: reads $args.m, but "m" is not declared in the group's ` + "`in`" + `; add "m": array<TYPE>`, 8},
		{"not a reference", "{n: array<string>}", "{r: array<object>}", "for_each: files\n        as: r", `for_each: got "files"; for_each is exactly $args.KEY`, 8},
		{"field of a non-object", "{n: array<string>}", "{r: array<object>}", "for_each: $args.n\n        args:\n          p: $item.path\n        as: r", `args: reads $item.path, but the items of $args.n are string, which has no fields; write $item for the whole item, or declare "n": array<object>`, 10},
		{"item outside for_each", "{n: array<string>}", "{r: object}", "args:\n          p: x/$item\n        as: r", `args: reads $item, but this call has no for_each, so there is no item; add for_each: $args.LIST`, 9},
		{"index outside for_each", "{n: array<string>}", "{r: object}", "args:\n          p: $index\n        as: r", `args: reads $index, but this call has no for_each`, 9},
		{"field of the index", "{n: array<string>}", "{r: array<object>}", "for_each: $args.n\n        args:\n          p: $index.x\n        as: r", `reads $index.x, but $index is an integer`, 10},
		{"bad field", "{n: array<object>}", "{r: array<object>}", "for_each: $args.n\n        args:\n          p: $item.9\n        as: r", `"$item.9" is not a valid reference`, 10},
		{"non-array slot", "{n: array<string>}", "{r: object}", "for_each: $args.n\n        as: r", `as: writes the slot "r", declared as object, but a for_each call writes the list of its items' results; declare "r": array<object> in ` + "`out`", 9},
		{"max_parallel without for_each", "{n: array<string>}", "{r: object}", "max_parallel: 2\n        as: r", `max_parallel: max_parallel bounds the items of a for_each call in flight, and this call has no for_each`, 8},
		{"max_parallel 0", "{n: array<string>}", "{r: array<object>}", "for_each: $args.n\n        max_parallel: 0\n        as: r", `max_parallel: got 0; max_parallel must be from 1 to 10000`, 9},
		{"max_parallel text", "{n: array<string>}", "{r: array<object>}", "for_each: $args.n\n        max_parallel: many\n        as: r", `max_parallel: got the string "many"; max_parallel must be a whole number`, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `name: s
groups:
  - name: g
    in: ` + tc.in + `
    out: ` + tc.out + `
    tools:
      - tool: t
        ` + tc.call + "\n"
			errs := problemsOf(t, src)
			e := findProblem(t, errs, tc.want)
			if e.Line != tc.line {
				t.Fatalf("line %d; want %d: %v\n%s", e.Line, tc.line, e, src)
			}
		})
	}
	// A for_each slot has no second writer.
	errs := problemsOf(t, `name: s
groups:
  - name: g
    in: {n: array<string>}
    out: {r: array<object>}
    tools:
      - {tool: t, for_each: $args.n, as: r}
      - {tool: u, as: r}
`)
	findProblem(t, errs, `tool 2 "u": as: writes the slot "r", which tool 1 also writes; a for_each call's slot holds the results of its items and has no other writer`)
	// A fallback is one item's result.
	errs = problemsOf(t, `name: s
groups:
  - name: g
    in: {n: array<string>}
    out: {r: array<object>}
    missing: degrade
    tools:
      - {tool: t, for_each: $args.n, as: r, fallback: "[]"}
`)
	findProblem(t, errs, `the fallback [] is array, but the slot "r" receives object`)
	// $items and $indexes are text, not references.
	if _, err := ParseYAML([]byte("name: s\ngroups:\n  - name: g\n    tools: [{tool: t, args: {p: \"$items and $indexes\"}}]\n")); err != nil {
		t.Fatal(err)
	}
}

// TestForEachForms: the YAML form, the JSON form with a tools string and
// the canonical JSON parse into the same sequence, with signature
// (files: array<object>).
func TestForEachForms(t *testing.T) {
	y := mustParse(t, `name: s
groups:
  - name: g
    in: {files: array<object>}
    out: {r: array<object>}
    tools:
      - {tool: fs.stat, for_each: $args.files, max_parallel: 4, args: {path: $item.path, n: $index}, as: r}
`)
	j, err := ParseJSON([]byte(`{"name":"s","groups":[{"name":"g","in":{"files":"array<object>"},"out":{"r":"array<object>"},
	 "tools":"{\"tool\":\"fs.stat\",\"for_each\":\"$args.files\",\"max_parallel\":4,\"args\":{\"path\":\"$item.path\",\"n\":\"$index\"},\"as\":\"r\"};"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !equalSeq(y, j) {
		t.Fatalf("YAML %+v\nJSON %+v", y.Groups[0].Tools, j.Groups[0].Tools)
	}
	if c := y.Groups[0].Tools[0]; c.ForEach != "$args.files" || c.MaxParallel != 4 || y.Signature.String() != "(files: array<object>)" {
		t.Fatalf("call %+v, signature %s", c, y.Signature)
	}
	roundTrip(t, y)
	if !strings.Contains(string(mustEncode(t, y)), `"for_each":"$args.files","max_parallel":4`) {
		t.Fatalf("canonical form %s", mustEncode(t, y))
	}
}

// TestForEachTimeout: the group's timeout bounds every item: under
// continue the items it ended are failed and null, the others keep their
// results; under abort the run fails with ErrGroupTimeout naming an item.
func TestForEachTimeout(t *testing.T) {
	tools := func() *fakeTools {
		return &fakeTools{tools: map[string]toolFunc{
			"t": func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
				if strings.Contains(string(a), `"i":2,`) {
					<-ctx.Done() // item 2 never answers
					return nil, ctx.Err()
				}
				return json.RawMessage(`{"ok":1}`), nil
			},
			"echo": echo(),
		}}
	}
	s := mustParse(t, fanOut("    on_error: continue\n    timeout: 200ms", ""))
	r, err := Run(context.Background(), s, tools(), args("files", items(4), "root", `"r"`))
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Slots["sizes"]) != `[{"ok":1},{"ok":1},null,{"ok":1}]` || fmt.Sprint(r.Groups[0].Calls[0].ForEach.FailedItems) != "[2]" || !strings.Contains(r.Groups[0].Calls[0].ForEach.Details[0].Error, "group timeout of 200ms") {
		t.Fatalf("slot %s, fan-out %+v", r.Slots["sizes"], r.Groups[0].Calls[0].ForEach)
	}
	s = mustParse(t, fanOut("    timeout: 200ms", ""))
	_, err = Run(context.Background(), s, tools(), args("files", items(4), "root", `"r"`))
	if !errors.Is(err, ErrGroupTimeout) || !strings.Contains(err.Error(), "item 3 of 4 ($index 2): the group timeout of 200ms ended the attempts") {
		t.Fatalf("err = %v", err)
	}
}

// TestForEachRunGroup: seq_call (RunGroup) fans out as Run does.
func TestForEachRunGroup(t *testing.T) {
	s := mustParse(t, fanOut("", ""))
	f := &fakeTools{tools: map[string]toolFunc{"t": echo(), "echo": echo()}}
	slots, gr, err := RunGroup(context.Background(), s, "each", f, args("files", items(3), "root", `"r"`))
	if err != nil || gr.Calls[0].ForEach.Succeeded != 3 || !strings.HasPrefix(string(slots["sizes"]), `[{"i":0,`) {
		t.Fatalf("slots %s, group %+v, err %v", slots["sizes"], gr, err)
	}
}

// TestForEachProgress: WithItemProgress reports the items in flight while
// a for_each call runs, and nothing after its group ended.
func TestForEachProgress(t *testing.T) {
	s := mustParse(t, fanOut("", "        max_parallel: 2"))
	release := make(chan struct{})
	f := &fakeTools{tools: map[string]toolFunc{
		"t": func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(a), `"i":0,`) {
				return a, nil
			}
			<-release
			return a, nil
		},
		"echo": echo(),
	}}
	seen := make(chan FanOut, 100)
	var ended atomic.Bool
	prog := WithItemProgress(10*time.Millisecond, func(g, c int, fan FanOut) {
		if ended.Load() {
			t.Errorf("progress after the run ended: %+v", fan)
		}
		if g == 0 && c == 0 {
			select {
			case seen <- fan:
			default:
			}
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), s, f, args("files", items(5), "root", `"r"`), prog)
		ended.Store(true)
		done <- err
	}()
	for fan := range seen {
		if fan.Running == 2 && fan.Succeeded == 1 && fan.Items == 5 {
			break // item 0 done, two blocked in flight
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err) // (a report after Run returned fails the test above)
	}
}

// TestFindItemRefMatchesItemRE: the hand-written scanner finds what itemRE
// finds, at the same positions, on written cases and on random strings
// built of the pieces that matter ($, item, index, ., word and other
// characters).
func TestFindItemRefMatchesItemRE(t *testing.T) {
	cases := []string{"", "$", "$item", "$index", "$items", "$indexes", "$item.", "$item.path", "$item.a_b9-c", "x $index y", "$$item", "$ite", "$itemé",
		"$item.é", "$args.x $item", "$item$index", "$index.x", "$in$item.q", "a$item_b $item", "é$index", "$itemx $item.x.y"}
	pieces := []string{"$", "item", "index", ".", "a", "_", "9", "-", " ", "é", "$args.k", "s"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, x := range cases {
		want := itemRE.FindStringSubmatchIndex(x)
		loc, ok := findItemRef(x)
		var got []int
		if ok {
			got = loc[:]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("findItemRef(%q) = %v, itemRE gives %v", x, got, want)
		}
	}
}
