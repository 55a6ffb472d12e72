package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// approveSeq is a sequence that waits for a signal "approve" bringing
// three values, between two groups of calls (created through seq.create,
// JSON form: docs/sequences.md, wait_for).
const approveSeq = `{"name":"console-approve","description":"Stat, wait for approval, report.","groups":[
 {"name":"ap-prep","out":{"st":"object"},"tools":"{\"tool\":\"fs.stat\",\"args\":{\"path\":\".\"},\"as\":\"st\"};"},
 {"name":"ap-approve","out":{"approved":"bool","count":"integer","note":"string"},"wait_for":{"signal":"approve","timeout":"1h"}},
 {"name":"ap-report","in":{"count":"integer","note":"string"},"out":{"report":"string"},
  "tools":"{\"tool\":\"text.render\",\"args\":{\"template\":\"{{.count}} approved: {{.note}}\",\"data\":{\"count\":\"$args.count\",\"note\":\"$args.note\"}},\"as\":\"report\"};"}]}`

// pauseSeq waits on a timer for an hour, then stats.
const pauseSeq = `{"name":"console-pause","groups":[
 {"name":"pa-wait","wait_for":{"duration":"1h"}},
 {"name":"pa-stat","out":{"st":"object"},"tools":"{\"tool\":\"fs.stat\",\"args\":{\"path\":\".\"},\"as\":\"st\"};"}]}`

// startWaiting creates console-approve and starts a run of it that waits.
func startWaiting(t *testing.T, e *env) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.runs.SeqCreate(ctx, []byte(approveSeq)); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	id, err := e.runs.Start(ctx, events.SeqRunRequest{Sequence: "console-approve"})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, e, id, "waiting", func(v *runView) bool { return v.State.Status == events.StatusWaiting && v.State.Wait != nil })
	return id
}

// TestAPISignal: the runs list carries what a waiting run waits for; POST
// /api/runs/ID/signal reads the values by the wait's out types (a wrong
// one 400 at its field, nothing sent), delivers the signal (the run
// resumes with the values and succeeds), and a second signal answers
// seq.signal's 409; a rejection fails the run with its reason.
func TestAPISignal(t *testing.T) {
	e := start(t, console.Config{})
	id := startWaiting(t, e)

	var pg struct {
		Runs []events.RunSummary `json:"runs"`
	}
	if err := getJSON(e.url+"api/runs?status=waiting", &pg); err != nil {
		t.Fatal(err)
	}
	if len(pg.Runs) != 1 || pg.Runs[0].RunID != id || !strings.HasPrefix(pg.Runs[0].Waiting, `signal "approve" since `) {
		t.Fatalf("runs?status=waiting: %+v; want the run with what it waits for", pg.Runs)
	}

	u := e.url + "api/runs/" + id + "/signal"
	var he *httpError
	err := postJSON(u, map[string]any{"name": "approve", "args": map[string]string{"approved": "true", "count": "many", "note": "ok"}}, nil)
	if !errors.As(err, &he) || he.Status != 400 || !strings.Contains(fieldsOf(he)["count"], `count is declared integer; give a whole number such as 10, not "many"`) {
		t.Fatalf("a wrong count: %v %+v; want 400 with the count field's problem", err, fieldsOf(he))
	}
	if st, _ := e.runs.Status(context.Background(), id); st.Wait == nil || st.Wait.Signalled != nil {
		t.Fatalf("the refused form signalled the run: %+v", st.Wait)
	}
	var st events.RunState
	if err := postJSON(u, map[string]any{"name": "approve", "args": map[string]string{"approved": "true", "count": "3", "note": "go"}}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Wait == nil || st.Wait.Signalled == nil || st.Wait.Signalled.By != "console test" || string(st.Wait.Signalled.Values) == "" {
		t.Fatalf("the answer's wait: %+v; want the signal recorded by the console's user", st.Wait)
	}
	v := waitRun(t, e, id, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	var report string
	_ = json.Unmarshal(v.Slots["report"].Value, &report)
	if report != "3 approved: go" {
		t.Errorf("report %q; want the signal's values used", report)
	}
	err = postJSON(u, map[string]any{"name": "approve", "args": map[string]string{"approved": "true", "count": "3", "note": "go"}}, nil)
	if !errors.As(err, &he) || he.Status != 409 || !strings.Contains(he.Body.Error, "not waiting") {
		t.Fatalf("a second signal: %v; want 409 saying the run is not waiting", err)
	}

	id2 := startWaiting(t, e)
	// A rejection needs a reason: seq.signal refuses one of only spaces
	// (400) for the console as for every client, and the run keeps waiting.
	err = postJSON(e.url+"api/runs/"+id2+"/signal", map[string]any{"name": "approve", "reject": true, "reason": "   "}, nil)
	if !errors.As(err, &he) || he.Status != 400 || !strings.Contains(he.Body.Error, "a rejection needs a reason") {
		t.Fatalf("a rejection with a blank reason: %v; want 400 asking for a reason", err)
	}
	if err := postJSON(e.url+"api/runs/"+id2+"/signal", map[string]any{"name": "approve", "reject": true, "reason": "not today"}, nil); err != nil {
		t.Fatal(err)
	}
	v = waitRun(t, e, id2, "failed", func(v *runView) bool { return v.State.Status == events.StatusFailed })
	if !strings.Contains(v.State.Error, "not today") {
		t.Errorf("the rejected run's error %q; want the reason", v.State.Error)
	}
}

// TestBrowserWaiting: in Chromium, the sequence's page draws its wait
// group with what it waits for; the runs list shows the waiting run
// with what it waits for; its page shows the wait and the form of the
// signal's values (one field per out type); a wrong value shows the
// problem at its field; Approve resumes the run, which succeeds; on a
// second run Reject fails it with the reason; the timeline draws the
// wait; a timer's wait says when it resumes, and Cancel ends it. Screenshots at 1280 and 390 wide.
func TestBrowserWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	for _, size := range sizes {
		id := startWaiting(t, e)
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		// The sequence's page draws the wait group with what it waits for
		// (a group without tools stopped the page before).
		b.open("#/seqs/console-approve")
		b.wait("the wait group in the shape", `!!document.getElementById("seq-graph") && document.getElementById("seq-graph").textContent.includes('signal "approve", ≤ 1h0m0s')`, 20*time.Second)
		shot(t, b, dir, "waiting-seq-"+size.name)
		b.open("#/runs?status=waiting")
		b.wait("the waiting run in the list with its wait", `[...document.querySelectorAll("tr[data-run]")].some((tr) => tr.dataset.run === `+jsString(id)+` && tr.textContent.includes('for signal "approve" · since'))`, 20*time.Second)
		shot(t, b, dir, "waiting-list-"+size.name)
		b.open("#/runs/" + id)
		b.wait("the wait and its form", `!!document.getElementById("wait") && !document.getElementById("wait").hidden && document.getElementById("wait-for").textContent === 'signal "approve"' && !!document.getElementById("sig-approved") && !!document.getElementById("sig-count") && !!document.getElementById("sig-note")`, 20*time.Second)
		b.wait("the timeline's wait", `!!document.querySelector('.tl-seg[data-kind="waiting"]') && [...document.querySelectorAll(".timeline li")].some((li) => li.textContent.includes('for signal "approve"; no worker holds it'))`, 10*time.Second)
		checkPage(t, b, "waiting run ("+size.name+")")
		shot(t, b, dir, "waiting-run-"+size.name)
		b.expectFailure("/api/runs/"+id+"/signal", 400)
		b.do("a wrong value",
			chromedp.SetValue(chromedp.ID("sig-approved"), "true"),
			chromedp.SendKeys(chromedp.ID("sig-count"), "many"),
			chromedp.SendKeys(chromedp.ID("sig-note"), "looks fine"),
			chromedp.Click(chromedp.ID("signal-approve")))
		b.wait("the field's error", `document.getElementById("sig-count-error").textContent === 'count is declared integer; give a whole number such as 10, not "many"' && document.getElementById("sig-count").getAttribute("aria-invalid") === "true" && document.activeElement.id === "sig-count"`, 10*time.Second)
		eval[bool](b, `(document.getElementById("wait").scrollIntoView(), true)`)
		shot(t, b, dir, "waiting-error-"+size.name)
		b.do("fix it and approve",
			chromedp.Evaluate[chromedp.Void](`document.getElementById("sig-count").value = ""`),
			chromedp.SendKeys(chromedp.ID("sig-count"), "4"),
			chromedp.Click(chromedp.ID("signal-approve")))
		b.wait("the run resumed and succeeded", `document.getElementById("run-status").textContent.includes("succeeded") && document.getElementById("wait").hidden && [...document.querySelectorAll(".timeline li")].some((li) => li.textContent.includes("signalled by console test"))`, 30*time.Second)
		shot(t, b, dir, "waiting-approved-"+size.name)

		id2 := startWaiting(t, e)
		b.open("#/runs/" + id2)
		b.wait("the second run's form", `!!document.getElementById("reject-reason")`, 20*time.Second)
		b.do("reject", chromedp.SendKeys(chromedp.ID("reject-reason"), "not during the freeze"), chromedp.Click(chromedp.ID("signal-reject")))
		b.wait("the run failed with the reason", `document.getElementById("run-status").textContent.includes("failed") && document.querySelector("main").textContent.includes("not during the freeze")`, 30*time.Second)
	}
	// A timer wait: the panel says when it resumes, with no form; Cancel
	// ends the waiting run at once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.runs.SeqCreate(ctx, []byte(pauseSeq)); err != nil {
		t.Fatal(err)
	}
	pid, err := e.runs.Start(ctx, events.SeqRunRequest{Sequence: "console-pause"})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + pid)
		b.wait("the timer's wait", `!!document.getElementById("wait-for") && document.getElementById("wait-for").textContent === "a timer of 1 h" && document.getElementById("wait-title").textContent.startsWith("Waiting for a timer until 20") && document.getElementById("wait").textContent.includes("Resumes at") && !document.getElementById("signal-form")`, 20*time.Second)
		shot(t, b, dir, "waiting-timer-"+size.name)
	}
	b.do("cancel", chromedp.Click(chromedp.ID("cancel-run")))
	b.wait("the cancel form", `!!document.getElementById("confirm-cancel")`, 10*time.Second)
	b.do("confirm", chromedp.Click(chromedp.ID("confirm-cancel")))
	b.wait("the waiting run cancelled", `document.getElementById("run-status").textContent.includes("cancelled") && document.getElementById("wait").hidden`, 20*time.Second)
	b.checkNoErrors(t)
}

// TestWaitTimeline runs app.js's timelineModel, waitText and eventText in
// Node on a run that waited for a signal from 3 s to 10 s (signalled at
// 9 s by ann) and on one still waiting for its timer: the run's row has
// the wait's bar and the signal's mark, the wait group's bar reaches the
// resume (or now), and the events and the runs list say what it waits
// for (the runs list from the summary's waiting text).
func TestWaitTimeline(t *testing.T) {
	script := appFunc(t, "fmtMs") + appFunc(t, "fmtTime") + appFunc(t, "waitText") + appFunc(t, "waitSummary") + appFunc(t, "eventText") + appFunc(t, "timelineModel") + `
const pad = (n) => String(n).padStart(2, "0");
const T = (s) => new Date(Date.UTC(2026, 11, 1, 12, 0, 0) + s * 1000).toISOString();
const sig = { group: 2, group_name: "approve", kind: "signal", signal: "approve", since: T(3), deadline: T(3603) };
const done = { status: "succeeded", created_at: T(0), started_at: T(1), finished_at: T(12) };
const evs = [
  { kind: "started", at: T(1), worker: "w1" },
  { kind: "waiting", at: T(3), group: 2, group_name: "approve", wait: sig },
  { kind: "signalled", at: T(9), by: "ann", wait: Object.assign({}, sig, { signalled: { by: "ann", at: T(9) } }) },
  { kind: "resumed", at: T(10), worker: "w2", group: 1 },
  { kind: "finished", at: T(12), status: "succeeded" },
];
const groups = [
  { name: "prep", status: "succeeded", result: { started: T(1), duration: "2s" }, calls: [] },
  { name: "approve", status: "succeeded", result: { started: T(10), duration: "500ms" }, calls: [] },
];
const m1 = timelineModel(done, evs, groups, Date.parse(T(30)));
const timer = { group: 1, group_name: "pause", kind: "duration", since: T(2), deadline: T(62) };
const waiting = { status: "waiting", created_at: T(0), started_at: T(1), finished_groups: 0, wait: timer };
const m2 = timelineModel(waiting, [{ kind: "started", at: T(1) }, { kind: "waiting", at: T(2), group: 1, group_name: "pause", wait: timer }],
  [{ name: "pause", status: "waiting", result: {}, calls: [] }], Date.parse(T(20)));
const rows = (m) => m.rows.map((r) => ({ label: r.label, segs: r.segs.map((s) => [s.kind, (s.from - m.t0) / 1000, (s.to - m.t0) / 1000, s.text]), marks: r.marks.map((k) => [k.text, (k.at - m.t0) / 1000]) }));
console.log(JSON.stringify({ done: rows(m1), waiting: rows(m2),
  summaries: [waitSummary('signal "approve" since 2026-12-01T09:00:00Z'), waitSummary("duration until 2026-12-01T10:00:00Z"), waitSummary("until 2026-12-02T00:00:00Z"), waitSummary("until until 2026-12-02T00:00:00Z"), waitSummary("something new"), waitSummary("")],
  texts: [waitText(sig), waitText(timer).replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/, "TIME"), eventText(evs[1]), eventText(evs[2])] }));
`
	type row struct {
		Label string
		Segs  [][]any
		Marks [][]any
	}
	var got struct {
		Done, Waiting []row
		Texts         []string
		Summaries     []struct{ What, Rel, At string }
	}
	node(t, script, &got)
	if len(got.Done) != 3 || len(got.Waiting) != 2 {
		t.Fatalf("rows %+v / %+v", got.Done, got.Waiting)
	}
	if s := fmt.Sprint(got.Done[0].Segs); !strings.Contains(s, `[waiting 3 10 waiting for the signal "approve" at group approve]`) || !strings.Contains(s, "[succeeded 1 12 succeeded]") {
		t.Errorf("the run's bars %s; want the run 1-12 s and its wait 3-10 s", s)
	}
	if s := fmt.Sprint(got.Done[0].Marks); !strings.Contains(s, "[signalled by ann 9]") {
		t.Errorf("the run's marks %s; want the signal at 9 s", s)
	}
	if s := fmt.Sprint(got.Done[2].Segs); s != "[[succeeded 3 10.5 group approve: succeeded]]" {
		t.Errorf("the wait group's bar %s; want 3-10.5 s (from the wait to the end of its result, which starts at the resume)", s)
	}
	if s := fmt.Sprint(got.Waiting[0].Segs); !strings.Contains(s, "[running 1 20 waiting]") || !strings.Contains(s, "[waiting 2 20 waiting for its timer at group pause (still waiting)]") {
		t.Errorf("a waiting run's bars %s; want the wait from 2 s to now (20 s) over the run", s)
	}
	if s := fmt.Sprint(got.Waiting[1].Segs); s != "[[waiting 2 20 group pause: waiting]]" {
		t.Errorf("the waiting group's bar %s; want from its since (2 s) to now", s)
	}
	if s := fmt.Sprint(got.Summaries); s != `[{signal "approve" since 2026-12-01T09:00:00Z} {a timer until 2026-12-01T10:00:00Z} {a time until 2026-12-02T00:00:00Z} {a time until 2026-12-02T00:00:00Z} {something new  } {a signal or a time  }]` {
		t.Errorf("the runs list's reading of RunSummary.waiting: %s", s)
	}
	want := []string{`signal "approve"`, "a timer until TIME", `waiting at group 2 "approve" for signal "approve"; no worker holds it`, "signalled by ann; the run resumes"}
	if fmt.Sprint(got.Texts) != fmt.Sprint(want) {
		t.Errorf("texts %q; want %q", got.Texts, want)
	}
}

// TestBrowserWaitingLocked: with the reader's credentials, told to the
// console, a waiting run's page shows the wait and its form with Approve
// and Reject disabled up front, their title naming skillbus.seq.signal
// (the reader may not signal: docs/security.md), and the limits box above
// the page says so.
func TestBrowserWaitingLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := startLocked(t, lockedOptions{role: auth.RoleConsole, knownCreds: true})
	// An agent stores the sequence and starts the run (the console role
	// stores no sequences).
	opts, err := auth.ConnectOptions(e.setup.CredsFile(auth.RoleAgent))
	if err != nil {
		t.Fatal(err)
	}
	anc, err := nats.Connect(e.stack.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(anc.Close)
	agent, err := client.New(anc)
	if err != nil {
		t.Fatal(err)
	}
	e.runs = agent
	id := startWaiting(t, &e.env)
	_, reader := startConsoleAs(t, e.stack.URL(), e.setup, auth.RoleReader, true, &connErrs{})
	b := newBrowser(t, &env{url: reader.URL()})
	dir := screenshots(t)
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + id)
		b.wait("Approve and Reject disabled with the reason", `!!document.getElementById("signal-approve") && ["signal-approve", "signal-reject"].every((id) => document.getElementById(id).disabled && document.getElementById(id).title.includes("needs to publish to skillbus.seq.signal")) && document.getElementById("limits").textContent.includes("answering waiting runs (Approve, Reject)")`, 20*time.Second)
		shot(t, b, dir, "waiting-reader-"+size.name)
	}
	b.checkNoErrors(t)
}
