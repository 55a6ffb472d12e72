package console_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestThrottle runs app.js's own throttle (cut out of the file) in Node
// with a virtual clock: under a call every 10 ms for 5 s (a burst of
// summaries) the runs list reloads about once a second — at most once per
// second, and not only after the burst — and once more for the last call.
// Skipped without node.
func TestThrottle(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	src, err := os.ReadFile("web/app.js")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)\n  function throttle\(fn, ms\) \{.*?\n  \}\n`).Find(src)
	if fn == nil {
		t.Fatal("no function throttle(fn, ms) in web/app.js")
	}
	script := `
let now = 0; const timers = [];
Date.now = () => now;
const setTimeout = (f, d) => { const x = { at: now + d, f }; timers.push(x); return x; };
const clearTimeout = (x) => { const i = timers.indexOf(x); if (i >= 0) timers.splice(i, 1); };
const page = { cleanup: [] };
` + string(fn) + `
const runs = [];
const reload = throttle(() => runs.push(now), 1000);
function advance(to) {
  for (;;) {
    timers.sort((a, b) => a.at - b.at);
    if (!timers.length || timers[0].at > to) break;
    const x = timers.shift(); now = x.at; x.f();
  }
  now = to;
}
for (let t = 0; t <= 5000; t += 10) { advance(t); reload(); }
advance(20000);
console.log(runs.join(","));
`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var at []int
	for _, f := range strings.Split(strings.TrimSpace(string(out)), ",") {
		var n int
		if _, err := fmtSscanInt(f, &n); err != nil {
			t.Fatalf("node printed %q", out)
		}
		at = append(at, n)
	}
	if len(at) < 5 || at[0] > 0 {
		t.Fatalf("reloads at %v ms; want the first at once and about one a second during the 5 s burst", at)
	}
	for i := 1; i < len(at); i++ {
		if d := at[i] - at[i-1]; d < 1000 || d > 1010 {
			t.Errorf("reloads at %v ms: %d ms between two; want 1 s", at, d)
		}
	}
	if last := at[len(at)-1]; last < 5000 {
		t.Errorf("reloads at %v ms: none after the burst's last call at 5000 ms", at)
	}
}

// appFunc cuts the top-level function name out of web/app.js.
func appFunc(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("web/app.js")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)\n  (?:async )?function ` + name + `\(.*?\n  \}\n`).Find(src)
	if fn == nil {
		t.Fatalf("no function %s in web/app.js", name)
	}
	return string(fn)
}

// TestVocabulary runs app.js's word and eventText in Node: a cancelled
// run's groups and calls say "cancelled" (the result's "interrupted" and
// "canceled"), an interrupted run's group still says "interrupted", and
// the timeline does not repeat the run's error shown above it. Skipped
// without node.
func TestVocabulary(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script := appFunc(t, "word") + appFunc(t, "eventText") + `
const runErr = 'group 2 "fetch": call http.get: 503 service unavailable';
console.log(JSON.stringify([
  word("interrupted", "cancelled"), word("canceled", "cancelled"), word("canceled", "failed"),
  word("interrupted", "interrupted"), word("succeeded", "cancelled"),
  eventText({ kind: "finished", status: "failed", error: runErr }, runErr),
  eventText({ kind: "group", group: 2, groups: 3, group_name: "fetch", status: "failed", error: "call http.get: 503 service unavailable" }, runErr),
  eventText({ kind: "finished", status: "failed", error: "other" }, runErr),
]));
`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q", out)
	}
	want := []string{"cancelled", "cancelled", "cancelled", "interrupted", "succeeded",
		"finished: failed", `group 2 of 3 "fetch" finished (the run's error, above)`, "finished: failed (other)"}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("case %d: got %q, want %q", i, got, want[i])
		}
	}
}

// TestNATSIndicator runs app.js's showNats and applyNats in Node on
// stand-ins for the header and the action buttons: while the console's
// NATS connection is down the header says "reconnecting to NATS (since
// …)" and the actions are disabled with that reason (a button disabled
// for another reason stays so), and once it is back the header says live
// and the actions are enabled again. Skipped without node.
func TestNATSIndicator(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script := `
const pad = (n) => String(n).padStart(2, "0");
const conn = { className: "" }, connText = { textContent: "" };
const button = (id, disabled) => ({ id, disabled, dataset: {}, title: "", removeAttribute(a) { this[a] = ""; } });
const buttons = [button("rerun-run", false), button("call-tool", true)];
const document = { querySelectorAll: () => buttons };
const ACTIONS = "";
let natsDown = "", liveText = "live";
const timeMode = () => "local";
` + appFunc(t, "fmtTime") + appFunc(t, "fmtZone") + appFunc(t, "fmtAgo") + appFunc(t, "fmtWhen") + appFunc(t, "setConn") + appFunc(t, "showNats") + appFunc(t, "applyNats") + `
const out = [];
const snap = () => out.push([conn.className, connText.textContent, buttons[0].disabled, buttons[0].title, buttons[1].disabled]);
showNats({ connected: true }); snap();
showNats({ connected: false, since: "2026-12-01T21:34:05Z", error: "connection refused" }); snap();
showNats({ connected: true }); snap();
console.log(JSON.stringify(out));
`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got [][]any
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 3 {
		t.Fatalf("node printed %q", out)
	}
	if got[0][0] != "conn live" || got[0][1] != "live" || got[0][2] != false {
		t.Errorf("connected: %v; want live and the actions enabled", got[0])
	}
	down := got[1]
	if down[0] != "conn down" || !strings.HasPrefix(down[1].(string), "reconnecting to NATS (since ") || down[2] != true ||
		!strings.Contains(down[3].(string), "NATS server is down") || down[4] != true {
		t.Errorf("down: %v; want the header to say reconnecting to NATS and the actions disabled with the reason", down)
	}
	if got[2][0] != "conn live" || got[2][2] != false || got[2][3] != "" || got[2][4] != true {
		t.Errorf("back: %v; want live, the action enabled again, the other button still disabled", got[2])
	}
}

// node runs script in Node and decodes what it prints as JSON into out;
// the test is skipped without node.
func node(t *testing.T, script string, out any) {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	b, err := exec.Command(bin, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node printed %q: %v", b, err)
	}
}

// TestTimelineModel runs app.js's timelineModel in Node on a run that
// waited in the queue, was interrupted and resumed, ran a parallel group
// (one call retried), a sequential group (its calls one after another), a
// for_each call with a failed item, and a skipped group: each is a row
// with its bar where it happened.
func TestTimelineModel(t *testing.T) {
	script := appFunc(t, "fmtMs") + appFunc(t, "timelineModel") + `
const T = (s) => new Date(Date.UTC(2026, 11, 1, 12, 0, 0) + s * 1000).toISOString();
const st = { status: "succeeded", created_at: T(0), started_at: T(2), finished_at: T(20), trigger: "manual" };
const events = [
  { kind: "started", at: T(2), worker: "w1" },
  { kind: "interrupted", at: T(5), worker: "w1", group: 1 },
  { kind: "resumed", at: T(8), worker: "w2", group: 1 },
  { kind: "cancelling", at: T(19), by: "ann" },
  { kind: "finished", at: T(20), status: "succeeded" },
];
const groups = [
  { name: "fetch", parallel: true, status: "succeeded", result: { started: T(2), duration: "3s" }, calls: [
    { tool: "http.get", status: "succeeded", result: { status: "succeeded", attempts: 3, duration: "2.5s" } },
    { tool: "fs.list", status: "succeeded", result: { status: "succeeded", attempts: 1, duration: "1s" } } ] },
  { name: "steps", parallel: false, status: "succeeded", result: { started: T(8), duration: "4s" }, calls: [
    { tool: "a", status: "succeeded", result: { status: "succeeded", attempts: 1, duration: "1s" } },
    { tool: "b", status: "succeeded", result: { status: "succeeded", attempts: 1, duration: "3s" } },
    { tool: "c", for_each: "$args.paths", status: "failed", result: { status: "failed", attempts: 4, duration: "500ms",
      for_each: { items: 3, succeeded: 2, failed: 1, details: [{ index: 1, status: "failed", attempts: 2, duration: "400ms", error: "404" }] } } } ] },
  { name: "never", status: "skipped", when: "false", result: { started: T(12), duration: "1ms" }, calls: [{ tool: "x", status: "skipped" }] },
];
const m = timelineModel(st, events, groups, Date.parse(T(30)));
const rel = (x) => x === null ? null : (x - m.t0) / 1000;
console.log(JSON.stringify({ t: [rel(m.t0), rel(m.t1)], rows: m.rows.map((r) => ({ kind: r.kind, label: r.label, text: r.text,
  segs: r.segs.map((s) => [s.kind, rel(s.from), rel(s.to)]), marks: r.marks.map((k) => [k.text, rel(k.at)]) })) }));
`
	type row struct {
		Kind, Label, Text string
		Segs              [][]any
		Marks             [][]any
	}
	var got struct {
		T    []float64
		Rows []row
	}
	node(t, script, &got)
	if len(got.T) != 2 || got.T[0] != 0 || got.T[1] != 20 {
		t.Errorf("axis %v; want 0 to 20 s (created to finished)", got.T)
	}
	want := []struct {
		label, text string
		segs        string
		marks       string
	}{
		{"run", "succeeded", "[[queued 0 2] [succeeded 2 20] [wait 5 8]]", "[[resumed by w2 8] [cancel asked by ann 19]]"},
		{"1. fetch", "succeeded · 3.00 s", "[[succeeded 2 5]]", "[]"},
		{"http.get", "succeeded · 3 attempts · 2.50 s", "[[succeeded retried 2 4.5]]", "[]"},
		{"fs.list", "succeeded · 1.00 s", "[[succeeded 2 3]]", "[]"},
		{"2. steps", "succeeded · 4.00 s", "[[succeeded 8 12]]", "[]"},
		{"a", "succeeded · 1.00 s", "[[succeeded 8 9]]", "[]"},
		{"b", "succeeded · 3.00 s", "[[succeeded 9 12]]", "[]"},
		{"each paths: c", "failed · 3 items · 4 attempts · 500 ms", "[[failed 12 12.5]]", "[]"},
		{"item 1", "failed · 2 attempts · 400 ms", "[[failed retried 12 12.4]]", "[]"},
		{"3. never", "skipped", "[]", "[[skipped: its when was false 12]]"},
		{"x", "skipped", "[]", "[]"},
	}
	if len(got.Rows) != len(want) {
		t.Fatalf("%d rows: %+v; want %d", len(got.Rows), got.Rows, len(want))
	}
	for i, w := range want {
		r := got.Rows[i]
		if r.Label != w.label || r.Text != w.text || fmt.Sprint(r.Segs) != w.segs || fmt.Sprint(r.Marks) != w.marks {
			t.Errorf("row %d: %q %q %v %v; want %q %q %s %s", i, r.Label, r.Text, r.Segs, r.Marks, w.label, w.text, w.segs, w.marks)
		}
	}
}

// TestRunsAddress runs app.js's runsHash and runsPager in Node: the runs
// page's filter, search and page are in its address in a fixed order (so
// Back and a pasted link restore them), and its pager says where the page
// is and offers the newer and older pages the answer names.
func TestRunsAddress(t *testing.T) {
	script := appFunc(t, "runsHash") + appFunc(t, "runsPager") + `
const runs = (n) => Array.from({ length: n }, (_, i) => ({ run_id: "r" + i }));
console.log(JSON.stringify([
  runsHash({}),
  runsHash({ status: "failed", q: " run-abc  ", before: "2026-12-01T00:00:00.000000000Z|run-x", trigger: "", since: "1h" }),
  runsHash({ sequence: "a&b", status: "waiting" }),
  runsPager({ runs: runs(50), total: 120, first: 0, next: "c50", live: true }, ""),
  runsPager({ runs: runs(50), total: 120, first: 50, has_prev: true, prev: "", next: "c100", live: true }, "c50"),
  runsPager({ runs: runs(20), total: 120, first: 100, has_prev: true, prev: "c50", live: true }, "c100"),
  runsPager({ runs: runs(3), total: 900, next: "n", live: false }, "c"),
  runsPager({ runs: [], total: 0, live: true }, ""),
]));
`
	var got []any
	node(t, script, &got)
	want := []string{
		`"#/runs"`,
		`"#/runs?q=run-abc&status=failed&since=1h&before=2026-12-01T00%3A00%3A00.000000000Z%7Crun-x"`,
		`"#/runs?status=waiting&sequence=a%26b"`,
		`{"buttons":[{"before":"c50","id":"page-older","label":"Older runs"}],"text":"1–50 of 120 runs"}`,
		`{"buttons":[{"before":"","id":"page-newest","label":"Newest"},{"before":"c100","id":"page-older","label":"Older runs"}],"text":"51–100 of 120 runs"}`,
		`{"buttons":[{"before":"","id":"page-newest","label":"Newest"},{"before":"c50","id":"page-newer","label":"Newer runs"}],"text":"101–120 of 120 runs"}`,
		`{"buttons":[{"before":"","id":"page-newest","label":"Newest"},{"before":"n","id":"page-older","label":"Older runs"}],"text":"3 runs (an older page)"}`,
		`{"buttons":[],"text":"0 of 0 runs"}`,
	}
	for i, w := range want {
		if i >= len(got) {
			t.Fatalf("only %d results: %v", len(got), got)
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(got[i])
		if b := strings.TrimSpace(buf.String()); b != w {
			t.Errorf("case %d: %s; want %s", i, b, w)
		}
	}
}

// TestTimeDisplay runs app.js's fmtWhen and timeMode in Node, in the zone
// Europe/Berlin: a time in UTC, in local time with its zone, in another
// zone (a schedule's), relative to now; the mode kept in localStorage, and
// local time for a mode it does not know or when storage is off.
func TestTimeDisplay(t *testing.T) {
	script := `process.env.TZ = "Europe/Berlin";
const store = {};
let storageOff = false;
const localStorage = { getItem: (k) => { if (storageOff) throw new Error("denied"); return store[k] ?? null; } };
const TIME_MODES = ["local", "utc", "relative"];
const TIME_KEY = "skillbus.times";
const real = Date.now;
` + appFunc(t, "fmtZone") + appFunc(t, "fmtAgo") + appFunc(t, "fmtWhen") + appFunc(t, "timeMode") + `
const at = "2026-12-01T21:34:05Z";
Date.now = () => Date.parse(at) + 300000;
const out = [fmtWhen(at, "utc"), fmtWhen(at, "local"), fmtWhen(at, "local", "America/New_York"), fmtWhen(at, "relative"), fmtWhen("", "utc"), fmtWhen("0001-01-01T00:00:00Z", "local"), fmtWhen("2026-07-01T12:00:00Z", "local")];
out.push(timeMode()); store[TIME_KEY] = "utc"; out.push(timeMode()); store[TIME_KEY] = "martian"; out.push(timeMode());
store[TIME_KEY] = "relative"; out.push(timeMode()); storageOff = true; out.push(timeMode());
console.log(JSON.stringify(out));
`
	var got []string
	node(t, script, &got)
	want := []string{"2026-12-01 21:34:05 UTC", "2026-12-01 22:34:05 CET", "2026-12-01 16:34:05 GMT-5", "5 min ago", "", "", "2026-07-01 14:00:00 CEST",
		"local", "utc", "local", "relative", "local"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestCopyText runs app.js's copyText in Node: it uses the Clipboard API
// where the page has it, falls back to a text area and the copy command
// when the API is missing or refuses, and says when nothing was copied.
func TestCopyText(t *testing.T) {
	script := `
const log = [];
const body = { appendChild: (e) => log.push("append " + e.value), removeChild: (e) => log.push("remove") };
let execOK = true;
const document = { body, createElement: () => ({ setAttribute() {}, select() { log.push("select") } }), execCommand: (c) => { log.push("exec " + c); return execOK; } };
let navigator = { clipboard: { writeText: async (t) => { log.push("api " + t); } } };
` + appFunc(t, "copyText") + `
(async () => {
  const out = [];
  out.push(await copyText("run-1"));
  navigator.clipboard.writeText = async () => { throw new Error("denied"); };
  out.push(await copyText("run-2"));
  navigator = {};
  execOK = false;
  out.push(await copyText("run-3"));
  console.log(JSON.stringify({ out, log }));
})();
`
	var got struct {
		Out []bool
		Log []string
	}
	node(t, script, &got)
	if fmt.Sprint(got.Out) != "[true true false]" {
		t.Errorf("copied %v; want true (the API), true (the fallback), false (both refused)", got.Out)
	}
	want := "api run-1|append run-2|select|exec copy|remove|append run-3|select|exec copy|remove"
	if strings.Join(got.Log, "|") != want {
		t.Errorf("steps %q; want %q", strings.Join(got.Log, "|"), want)
	}
}

// TestArgText runs app.js's argText in Node: a run's arguments as the
// edit-and-rerun form's fields hold them, each by its declared type, so
// that the form gives the same values back.
func TestArgText(t *testing.T) {
	script := appFunc(t, "argText") + `
console.log(JSON.stringify([
  argText("string", "a b"), argText("string", ""), argText("string", null), argText("string", 5), argText("string", undefined),
  argText("integer", 10), argText("number", 2.5), argText("integer", null), argText("bool", true), argText("bool", false), argText("bool", null),
  argText("object", { k: [1, "x"] }), argText("array<string>", ["a", "b"]), argText("array", null),
]));
`
	var got []string
	node(t, script, &got)
	want := []string{"a b", "", "", "5", "", "10", "2.5", "null", "true", "false", "null", "{\n  \"k\": [\n    1,\n    \"x\"\n  ]\n}", "[\n  \"a\",\n  \"b\"\n]", "null"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: %q; want %q", i, got[i], want[i])
		}
	}
}

// TestShortID runs app.js's shortId in Node: a long run id is cut in the
// middle, keeping the end that tells ids made together apart.
func TestShortID(t *testing.T) {
	var got []string
	node(t, appFunc(t, "shortId")+`console.log(JSON.stringify([shortId("run-s1iLptPBVxyz0123uVjA"), shortId("run-short"), shortId("run-0123456789ab")]))`, &got)
	if want := []string{"run-s1iL…3uVjA", "run-short", "run-0123456789ab"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shortId = %q; want %q", got, want)
	}
}
