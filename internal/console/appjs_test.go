package console_test

import (
	"encoding/json"
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
	fn := regexp.MustCompile(`(?s)\n  function ` + name + `\(.*?\n  \}\n`).Find(src)
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
` + appFunc(t, "fmtTime") + appFunc(t, "fmtZone") + appFunc(t, "setConn") + appFunc(t, "showNats") + appFunc(t, "applyNats") + `
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
