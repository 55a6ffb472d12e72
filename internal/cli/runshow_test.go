package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestPrintRunGroups: runs show agrees with its status line — the group
// after a running run's checkpoint is shown running, not pending, and a
// run with finished groups whose results were not stored does not say
// that no group has run.
func TestPrintRunGroups(t *testing.T) {
	var b strings.Builder
	res := &seq.Result{Groups: []seq.GroupResult{
		{Name: "a", Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: "t", Status: seq.CallSucceeded, Attempts: 1}}},
		{Name: "b", Status: seq.GroupPending, Calls: []seq.CallResult{{Tool: "t", Status: seq.CallPending}}},
		{Name: "c", Status: seq.GroupPending, Calls: []seq.CallResult{{Tool: "t", Status: seq.CallPending}}},
	}}
	printRunGroups(&b, &events.RunState{Status: events.StatusRunning, FinishedGroups: 1}, res)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[3], "2 b") || !strings.Contains(lines[3], "running") || !strings.Contains(lines[5], "pending") {
		t.Errorf("running run's table:\n%s\nwant group 2 running and group 3 pending", b.String())
	}
	b.Reset()
	printRunGroups(&b, &events.RunState{Status: events.StatusFailed, FinishedGroups: 2137}, &seq.Result{})
	if got := b.String(); strings.Contains(got, "No group has run yet") || !strings.Contains(got, "2137 groups finished") {
		t.Errorf("failed run with 2137 finished groups and no stored result: %q", got)
	}
	b.Reset()
	printRunGroups(&b, &events.RunState{Status: events.StatusQueued}, &seq.Result{})
	if got := b.String(); !strings.Contains(got, "No group has run yet") {
		t.Errorf("queued run: %q", got)
	}
}

// TestRunsListBeforeIsChecked: a --before that is not a page cursor is a
// usage error (exit 2) naming the flag and the cursor's form, before any
// connection is tried.
func TestRunsListBeforeIsChecked(t *testing.T) {
	t.Setenv("NATS_URL", "nats://127.0.0.1:1") // never dialled: the flag is refused first
	for _, bad := range []string{"GARBAGE", "2026-11-30|run-1", "2026-11-30T20:01:02.000000003Z|run 1"} {
		code, out, errOut := runCLI(t, "runs", "ls", "--before", bad)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != ExitUsage || out != "" || !strings.Contains(first, "--before") || !strings.Contains(first, "use the cursor a listing printed") {
			t.Errorf("runs ls --before %q: exit %d, stdout %q, stderr %q; want exit 2 naming --before and the cursor's form", bad, code, out, first)
		}
	}
}

// TestRunDuration: one duration, from the first claim to the final state,
// and none for a run that has not finished.
func TestRunDuration(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	st := &events.RunState{CreatedAt: t0.Add(-time.Minute), StartedAt: t0, FinishedAt: t0.Add(8100 * time.Millisecond)}
	if d := runDuration(st); d != 8100*time.Millisecond {
		t.Errorf("runDuration = %v; want 8.1s (started to finished, the queued minute left out)", d)
	}
	var b strings.Builder
	printRunDetails(&b, st)
	if !strings.Contains(b.String(), "Took:") || !strings.Contains(b.String(), "8.1s") {
		t.Errorf("runs show header lacks Took: 8.1s:\n%s", b.String())
	}
	for _, st := range []*events.RunState{{StartedAt: t0}, {FinishedAt: t0}, {StartedAt: t0, FinishedAt: t0.Add(-time.Second)}} {
		if d := runDuration(st); d != 0 {
			t.Errorf("runDuration(%+v) = %v; want 0", st, d)
		}
	}
}

// TestFanOutShown: runs show, run's progress, watch and seqs graph show a
// for_each call's items: the counts, the items that failed with their
// errors (at most maxItemLines), and a stacked node.
func TestFanOutShown(t *testing.T) {
	fan := &seq.FanOut{Items: 100, Succeeded: 90, Failed: 8, Canceled: 2, FailedItems: []int{3, 5, 7, 9, 11, 13, 15, 17}}
	for _, i := range fan.FailedItems {
		fan.Details = append(fan.Details, seq.ItemResult{Index: i, Status: seq.CallFailed, Attempts: 1, Error: "boom " + string(rune('a'+i))})
	}
	fan.Details = append(fan.Details, seq.ItemResult{Index: 40, Status: seq.CallCanceled}, seq.ItemResult{Index: 41, Status: seq.CallCanceled})
	res := &seq.Result{Groups: []seq.GroupResult{{Name: "g", Status: seq.GroupPartial, Calls: []seq.CallResult{{Tool: "fs.stat", As: "r", Status: seq.CallFailed, Attempts: 98, ForEach: fan}}}}}
	var b strings.Builder
	printRunGroups(&b, &events.RunState{Status: events.StatusSucceeded, FinishedGroups: 1}, res)
	out := b.String()
	for _, want := range []string{"100 items: 90 ok, 8 failed, 2 canceled", "item 4 ($index 3)", "boom d", "item 12 ($index 11)", "(5 more items not shown; -o json lists them)"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "($index 13)") {
		t.Errorf("runs show prints more than %d items:\n%s", maxItemLines, out)
	}
	line := eventLine(&events.RunEvent{RunID: "r", Kind: events.RunGroup, Group: 1, GroupName: "g", Status: "partial", Result: mustJSONText(t, res.Groups[0])})
	if !strings.Contains(line, "(call 1 fs.stat for_each: 100 items: 90 ok, 8 failed, 2 canceled)") {
		t.Errorf("watch line: %s", line)
	}
	live := seq.GroupResult{Name: "g", Status: seq.GroupRunning, Calls: []seq.CallResult{{Tool: "fs.stat", Status: seq.CallPending, ForEach: &seq.FanOut{Items: 100, Succeeded: 97, Failed: 2, Running: 1}}}}
	line = eventLine(&events.RunEvent{RunID: "r", Kind: events.RunItems, Group: 1, GroupName: "g", Status: "running", Result: mustJSONText(t, live)})
	if line != "run r: group 1 g running (call 1 fs.stat for_each: 100 items: 97 ok, 2 failed, 1 running)" {
		t.Errorf("watch line of an items event: %s", line)
	}
	s, err := seq.ParseFile("x.seq.yaml", []byte("name: s\ngroups:\n  - name: g\n    in: {p: array<string>}\n    out: {r: array<object>}\n    tools: [{tool: fs.stat, for_each: $args.p, max_parallel: 4, args: {path: $item}, as: r}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m := GraphMermaid(s); !strings.Contains(m, `g1c1[["for each p: fs.stat (≤4 at once) → r"]]`) {
		t.Errorf("mermaid:\n%s", m)
	}
	if d := GraphDOT(s); !strings.Contains(d, `[label="for each p: fs.stat (≤4 at once) → r", shape=box3d`) {
		t.Errorf("dot:\n%s", d)
	}
}

func mustJSONText(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReusedGroupsShown: runs show of a retry marks the groups it took
// from the original (not called again) apart from the groups it ran, and
// names the run that ran them.
func TestReusedGroupsShown(t *testing.T) {
	res := &seq.Result{Groups: []seq.GroupResult{
		{Name: "fetch", Status: seq.GroupSucceeded, ReusedFrom: "run-orig", Calls: []seq.CallResult{{Tool: "gh.info", Status: seq.CallSucceeded, Attempts: 1}}},
		{Name: "post", Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: "chat.post", Status: seq.CallSucceeded, Attempts: 1}}},
	}}
	var b strings.Builder
	printRunGroups(&b, &events.RunState{Status: events.StatusSucceeded, FinishedGroups: 2, RetryOf: "run-orig"}, res)
	out := b.String()
	lines := strings.Split(out, "\n")
	var fetch, post string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "1 fetch"):
			fetch = l
		case strings.HasPrefix(l, "2 post"):
			post = l
		}
	}
	if !strings.Contains(fetch, "succeeded (reused)") || strings.Contains(post, "reused") || !strings.Contains(post, "succeeded") {
		t.Errorf("groups: fetch %q, post %q; want fetch marked reused and post not:\n%s", fetch, post, out)
	}
	if !strings.Contains(out, "(reused): the group finished in run run-orig; this retry did not call its tools again") {
		t.Errorf("runs show does not say where the reused group ran:\n%s", out)
	}
}

// TestRunsShowSentArgs: runs show prints the arguments each call was
// sent after substitution, on a real stack: $args.root substituted in the
// line of the call, whole and indented with --args, and in -o json as the
// call's "args".
func TestRunsShowSentArgs(t *testing.T) {
	readStack(t)
	if code, out, errb := runMain(t, "run", nfcSeq, "--arg", "root=.", "--quiet", "--run-id", "args-run-1"); code != ExitOK {
		t.Fatalf("run = %d\n%s\n%s", code, out, errb)
	}
	code, out, errb := runMain(t, "runs", "show", "args-run-1")
	if code != ExitOK {
		t.Fatalf("runs show = %d\n%s", code, errb)
	}
	want := "Arguments sent (after substitution; --args prints them whole):\n  1 " + nfcGroup + ` / fs.list → top  {"path":"."}` + "\n"
	if !strings.Contains(out, want) {
		t.Errorf("runs show:\n%s\nwant it to contain\n%s", out, want)
	}
	if i, j := strings.Index(out, "GROUP / CALL"), strings.Index(out, "Arguments sent"); i < 0 || j < i {
		t.Errorf("runs show: the arguments come at %d, the table at %d; want them after the table", j, i)
	}
	_, out, _ = runMain(t, "runs", "show", "args-run-1", "--args")
	if want := "  1 " + nfcGroup + " / fs.list → top\n    {\n      \"path\": \".\"\n    }\n"; !strings.Contains(out, want) {
		t.Errorf("runs show --args:\n%s\nwant it to contain\n%s", out, want)
	}
	_, out, _ = runMain(t, "runs", "show", "args-run-1", "-o", "json")
	var st events.RunState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	var res seq.Result
	var sent bytes.Buffer
	if err := json.Unmarshal(st.Result, &res); err != nil || len(res.Groups) != 1 || json.Compact(&sent, res.Groups[0].Calls[0].Args) != nil || sent.String() != `{"path":"."}` {
		t.Errorf("runs show -o json: result %s (%v); want the call's args {\"path\":\".\"}", st.Result, err)
	}
}

// TestPrintSentArgs: a for_each call's line holds its first item's
// arguments and its items in details follow; clipped arguments say their
// size and what was kept; calls never sent have no line, those past the
// run's bound are counted; an old state without arguments prints nothing.
func TestPrintSentArgs(t *testing.T) {
	args := func(s string) seq.SentArgs { return seq.SentArgs{Args: json.RawMessage(s)} }
	groups := []seq.GroupResult{
		{Name: "list", Status: seq.GroupSucceeded, Calls: []seq.CallResult{
			{Tool: "fs.list", As: "top", Status: seq.CallSucceeded, Attempts: 1, SentArgs: args(`{"path":"src","tag":"\u003cb\u003e"}`)},
			{Tool: "fs.big", Status: seq.CallSucceeded, Attempts: 1, SentArgs: seq.SentArgs{ArgsClipped: &seq.ClippedArgs{Size: 10240, Head: `{"text":"aaaa`}}},
			{Tool: "fs.never", Status: seq.CallNotRun},
		}},
		{Name: "stat", Status: seq.GroupPartial, Calls: []seq.CallResult{
			{Tool: "fs.stat", Status: seq.CallFailed, Attempts: 3, SentArgs: args(`{"path":"src/a.go"}`), ForEach: &seq.FanOut{Items: 3, Succeeded: 2, Failed: 1, FailedItems: []int{2},
				Details: []seq.ItemResult{{Index: 2, Status: seq.CallFailed, Attempts: 1, SentArgs: args(`{"path":"src/c.go"}`)}}}},
		}},
	}
	var b strings.Builder
	printSentArgs(&b, groups, 7, false)
	want := `
Arguments sent (after substitution; --args prints them whole):
  1 list / 1 fs.list → top           {"path":"src","tag":"<b>"}
  1 list / 2 fs.big                  (10.0 KiB (10240 bytes) sent; the first 13 bytes kept) {"text":"aaaa…
  2 stat / fs.stat (its first item)  {"path":"src/a.go"}
      item 3 ($index 2)              {"path":"src/c.go"}
  (the arguments of 7 more calls or items are not kept: a run's state keeps at most 32.0 KiB (32768 bytes) of arguments)
`
	if got := b.String(); got != want {
		t.Errorf("printSentArgs:\n%s\nwant\n%s", got, want)
	}
	b.Reset()
	printSentArgs(&b, []seq.GroupResult{{Name: "old", Calls: []seq.CallResult{{Tool: "t", Status: seq.CallSucceeded, Attempts: 1}}}}, 0, false)
	if b.Len() != 0 {
		t.Errorf("a state without arguments: %q; want nothing", b.String())
	}
}
