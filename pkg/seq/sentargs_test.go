package seq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSentArgsSubstituted: each call's result records the arguments its
// tool received — $args.KEY of a run argument and of an earlier group's
// slot substituted, whole (keeping the JSON type) and inside text — the
// same bytes the tool was sent, and they survive a JSON round trip.
func TestSentArgsSubstituted(t *testing.T) {
	s := mustParse(t, `name: s
signature: {q: string, n: integer}
groups:
  - name: first
    in: {q: string, n: integer}
    out: {x: object}
    tools:
      - {tool: a, args: {q: $args.q, n: $args.n, note: "find $args.q (at most $args.n)", fixed: [1, "two"]}, as: x}
      - {tool: none}
  - name: second
    in: {x: object, q: string}
    out: {y: object}
    tools:
      - {tool: a, args: {prev: $args.x, text: "got $args.x for $args.q"}, as: y}
`)
	f := &fakeTools{tools: map[string]toolFunc{"a": ret(`{"hits":3,"top":"a.go"}`), "none": echo()}}
	r, err := Run(context.Background(), s, f, args("q", `"needle"`, "n", `5`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"fixed":[1,"two"],"n":5,"note":"find needle (at most 5)","q":"needle"}`,
		`{}`,
		`{"prev":{"hits":3,"top":"a.go"},"text":"got {\"hits\":3,\"top\":\"a.go\"} for needle"}`,
	}
	got := []CallResult{r.Groups[0].Calls[0], r.Groups[0].Calls[1], r.Groups[1].Calls[0]}
	sent := append(f.argsOf("a")[:1:1], append(f.argsOf("none"), f.argsOf("a")[1])...)
	for i, c := range got {
		if string(c.Args) != want[i] || c.ArgsClipped != nil {
			t.Errorf("call %d (%s): args %s (clipped %+v); want %s", i, c.Tool, c.Args, c.ArgsClipped, want[i])
		}
		if sent[i] != want[i] {
			t.Errorf("call %d (%s): the tool received %s; want %s", i, c.Tool, sent[i], want[i])
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if w := `"args":` + want[0]; !strings.Contains(string(b), w) {
		t.Errorf("the result's JSON lacks %s:\n%s", w, b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || string(back.Groups[1].Calls[0].Args) != want[2] {
		t.Errorf("after a JSON round trip: %s (%v); want %s", back.Groups[1].Calls[0].Args, err, want[2])
	}
}

// TestSentArgsNotSent: a call that was never sent — its group skipped by
// `when`, or its arguments failing to substitute — records no arguments.
func TestSentArgsNotSent(t *testing.T) {
	s := mustParse(t, `name: s
signature: {go: bool, list: array<object>}
groups:
  - name: skipped
    in: {go: bool}
    when: $args.go
    tools: [{tool: a, args: {v: 1}}]
  - name: bad
    in: {list: array<object>}
    on_error: continue
    tools: [{tool: a, for_each: $args.list, args: {v: $item.v}}]
`)
	f := &fakeTools{tools: map[string]toolFunc{"a": echo()}}
	r, _ := Run(context.Background(), s, f, args("go", `false`, "list", `[{"w":1},{"v":2}]`))
	if c := r.Groups[0].Calls[0]; c.Args != nil || c.ArgsClipped != nil {
		t.Errorf("skipped call: args %s; want none", c.Args)
	}
	fan := r.Groups[1].Calls[0].ForEach
	if fan == nil || len(fan.Details) != 1 || fan.Details[0].Index != 0 {
		t.Fatalf("for_each details %+v; want item 0 failed", fan)
	}
	if d := fan.Details[0]; d.Args != nil || d.ArgsClipped != nil || !strings.Contains(d.Error, `no field "v"`) {
		t.Errorf("item 0 whose $item.v failed: args %s, error %q; want no args and the substitution error", d.Args, d.Error)
	}
	// The call records its first item's arguments: item 0 was never sent.
	if c := r.Groups[1].Calls[0]; c.Args != nil {
		t.Errorf("for_each call: args %s; want none (its first item was not sent)", c.Args)
	}
}

// TestSentArgsForEach: a for_each call records its first item's arguments
// and each item in Details its own, with $item, $item.FIELD and $index
// substituted; the items that simply succeeded are not listed.
func TestSentArgsForEach(t *testing.T) {
	s := mustParse(t, fanOut("    on_error: continue", ""))
	f := &fakeTools{tools: map[string]toolFunc{
		"t": func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(a), `"i":3`) || strings.Contains(string(a), `"i":7`) {
				return nil, &ToolError{Tool: "t", Code: "500", Description: "no"}
			}
			return a, nil
		},
		"echo": echo(),
	}}
	r, _ := Run(context.Background(), s, f, args("files", items(10), "root", `"src"`))
	c := r.Groups[0].Calls[0]
	item := func(i int) string {
		return fmt.Sprintf(`{"i":%d,"item":{"path":"f%d","n":%d},"n":%d,"path":"src/f%d"}`, i, i, i, i, i)
	}
	if string(c.Args) != item(0) {
		t.Errorf("for_each call: args %s; want its first item's %s", c.Args, item(0))
	}
	if c.ForEach == nil || len(c.ForEach.Details) != 2 {
		t.Fatalf("details %+v; want items 3 and 7", c.ForEach)
	}
	for k, i := range []int{3, 7} {
		if d := c.ForEach.Details[k]; d.Index != i || string(d.Args) != item(i) {
			t.Errorf("detail %d: item %d args %s; want item %d's %s", k, d.Index, d.Args, i, item(i))
		}
	}
}

// TestSentArgsClipped: arguments longer than MaxCallArgs are clipped at
// a UTF-8 boundary with their full size; across a run they add at most
// MaxRunArgs bytes to its JSON, spent in group order, and the calls past
// that keep none and are counted; a resumed run goes on with what its
// checkpoint already holds.
func TestSentArgsClipped(t *testing.T) {
	const groups = 30
	var y strings.Builder
	y.WriteString("name: big\nsignature: {text: string}\ngroups:\n")
	for i := range groups {
		fmt.Fprintf(&y, "  - name: g%d\n    in: {text: string}\n    tools: [{tool: a, args: {text: $args.text}}]\n", i)
	}
	s := mustParse(t, y.String())
	// 1,500 two-byte runes: 3,000 bytes of text, 3,011 of arguments.
	text := strings.Repeat("é", 1500)
	sent := `{"text":"` + text + `"}`
	f := &fakeTools{tools: map[string]toolFunc{"a": ret(`true`)}}
	var checkpoint *Result
	r, err := Run(context.Background(), s, f, args("text", `"`+text+`"`), WithObserver(ObserverFuncs{Finished: func(_ context.Context, r *Result, g int) error {
		if g == 4 {
			checkpoint = r
		}
		return nil
	}}))
	if err != nil {
		t.Fatal(err)
	}
	notKept := 0
	for gi, g := range r.Groups {
		c := g.Calls[0]
		if c.Args != nil {
			t.Fatalf("group %d: args of %d bytes kept whole; want them clipped", gi, len(c.Args))
		}
		if c.ArgsClipped == nil {
			notKept++
			continue
		}
		if notKept > 0 {
			t.Fatalf("group %d keeps arguments after a group that kept none", gi)
		}
		head := c.ArgsClipped.Head
		if c.ArgsClipped.Size != len(sent) || !utf8.ValidString(head) || !strings.HasPrefix(sent, head) || len(head) > MaxCallArgs {
			t.Fatalf("group %d: clipped %d bytes of %d; want a valid prefix of at most %d bytes of the %d sent", gi, len(head), c.ArgsClipped.Size, MaxCallArgs, len(sent))
		}
		if gi == 0 && len(head) < MaxCallArgs-1 {
			t.Errorf("group 0: head of %d bytes; want %d (or one less at a rune boundary)", len(head), MaxCallArgs)
		}
	}
	if notKept == 0 || notKept == groups || r.ArgsNotKept != notKept {
		t.Errorf("%d groups kept no arguments, ArgsNotKept %d; want some of the last ones, counted", notKept, r.ArgsNotKept)
	}
	// What the arguments add to the run's JSON stays within MaxRunArgs.
	added := func(r *Result) int {
		with, _ := json.Marshal(r)
		c := r.Clone()
		c.ArgsNotKept = 0
		for gi := range c.Groups {
			c.Groups[gi].Calls[0].SentArgs = SentArgs{}
		}
		without, _ := json.Marshal(c)
		return len(with) - len(without)
	}
	if n := added(r); n > MaxRunArgs || n < MaxRunArgs-MaxCallArgs {
		t.Errorf("the arguments add %d bytes to the run's JSON; want at most MaxRunArgs (%d), most of it", n, MaxRunArgs)
	}

	// A resume from group 5's checkpoint (through its JSON, as a worker
	// reads it back) spends the same budget.
	if checkpoint == nil {
		t.Fatal("no checkpoint after group 5")
	}
	b, _ := json.Marshal(checkpoint)
	var cp Result
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	r2, err := Run(context.Background(), s, f, nil, WithResume(&cp))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := argsCost(r2.Groups), argsCost(r.Groups); a != b || r2.ArgsNotKept != r.ArgsNotKept {
		t.Errorf("the resumed run's arguments cost %d, %d not kept; want %d and %d as the run that was not interrupted", a, r2.ArgsNotKept, b, r.ArgsNotKept)
	}

	// Short arguments are kept whole; HTML characters cost their escapes.
	a := SentArgs{Args: json.RawMessage(`{"k":"<"}`)}
	left := argsMember + 9 + 5
	if !a.clip(&left) || string(a.Args) != `{"k":"<"}` || a.ArgsClipped != nil || left != 0 {
		t.Errorf("clip of 9 bytes (14 as JSON) with 14 left: %+v, %d left; want them whole and 0 left", a, left)
	}
	long := `{"k":"` + strings.Repeat("x", MaxCallArgs) + `"}`
	a = SentArgs{Args: json.RawMessage(long)}
	left = clippedMember + 3
	if !a.clip(&left) || a.Args != nil || a.ArgsClipped == nil || *a.ArgsClipped != (ClippedArgs{Size: len(long), Head: `{"`}) || left != 0 {
		t.Errorf("clip of %d bytes with room for 3 more: %+v, %d left; want clipped to `{\"` (3 bytes as JSON) and 0 left", len(long), a.ArgsClipped, left)
	}
	a = SentArgs{Args: json.RawMessage(`{"k":"v"}`)}
	left = argsMember + 8
	if a.clip(&left) || a.Args != nil || a.ArgsClipped != nil || left != argsMember+8 {
		t.Errorf("clip with no room: %+v, %d left; want nothing kept and the budget untouched", a, left)
	}
}
