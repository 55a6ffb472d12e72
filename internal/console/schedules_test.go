package console_test

import (
	"context"
	"errors"
	"os"
	"regexp"
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

// schedSeq has two schedule entries of different arguments and zones
// (created through seq.create, JSON form: docs/sequences.md, "Schedule
// entries"): berlin at 09:00 in Berlin every day (with a jitter, a
// catch-up window, a pause on failure and an end), ops every hour.
const schedSeq = `{"name":"console-sched","description":"Two entries.","schedule":[
 {"name":"berlin","cron":"0 0 9 * * *","timezone":"Europe/Berlin","args":{"path":"."},"jitter":"2m","catchup_window":"6h","pause_on_failure":3,"end_at":"2099-01-01T00:00:00Z"},
 {"name":"ops","every":"1h","args":{"path":"work"},"overlap":"buffer_one"}],
 "groups":[{"name":"sc-stat","in":{"path":"string"},"out":{"st":"object"},"tools":"{\"tool\":\"fs.stat\",\"args\":{\"path\":\".\"},\"as\":\"st\"};"}]}`

// scheduleView is the part of GET /api/schedules/{seq}/{entry} the tests read.
type scheduleView struct {
	events.ScheduleInfo
	RunStatus   map[string]string `json:"run_status"`
	MaxBackfill int               `json:"max_backfill"`
}

// createSched stores console-sched.
func createSched(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.runs.SeqCreate(ctx, []byte(schedSeq)); err != nil {
		t.Fatal(err)
	}
}

// TestAPISchedules: GET /api/schedules lists every entry (the schedule
// string's "default" and both entries of a list) with its next fire time,
// the backfill bound; an entry's page has its 10 next fire times; pause
// needs a note (400 at the field, nothing paused) and then pauses with it
// (recorded by the console's user), unpause undoes it; trigger starts a
// manual-tick run that becomes the entry's last run; backfill refuses a
// bad time and a range over the bound at the field, and runs one tick per
// fire time of a range; a sequence's page and the sequences list carry
// the entries of the list form.
func TestAPISchedules(t *testing.T) {
	e := start(t, console.Config{})
	createSched(t, e)

	var list struct {
		Entries     []events.ScheduleInfo `json:"entries"`
		MaxBackfill int                   `json:"max_backfill"`
	}
	// The seqworker sees the new sequence through its SEQUENCES watch.
	var names []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := getJSON(e.url+"api/schedules", &list); err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, en := range list.Entries {
			names = append(names, en.Sequence+"/"+en.Entry)
		}
		if len(names) == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Join(names, " ") != "console-nightly/default console-sched/berlin console-sched/ops" || list.MaxBackfill != events.MaxBackfillTicks {
		t.Fatalf("entries %v, bound %d; want the schedule string's default and both entries, bound %d", names, list.MaxBackfill, events.MaxBackfillTicks)
	}
	if b := list.Entries[1]; len(b.Next) != 1 || b.TimeZone != "Europe/Berlin" || b.Next[0].In(mustZone(t, "Europe/Berlin")).Hour() != 9 {
		t.Errorf("berlin: %+v; want its next fire time at 09:00 Berlin", b)
	}

	u := e.url + "api/schedules/console-sched/berlin"
	var sv scheduleView
	if err := getJSON(u, &sv); err != nil {
		t.Fatal(err)
	}
	if len(sv.Next) != 10 || sv.Overlap != "skip" || sv.MaxBackfill != events.MaxBackfillTicks {
		t.Fatalf("show berlin: %d next, overlap %q, bound %d; want 10, skip, %d", len(sv.Next), sv.Overlap, sv.MaxBackfill, events.MaxBackfillTicks)
	}
	if sv.Jitter != "2m0s" || sv.CatchupWindow != "6h0m0s" || sv.PauseOnFailure != 3 || !sv.EndAt.Equal(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)) || !sv.StartAt.IsZero() {
		t.Errorf("show berlin: jitter %q, catchup_window %q, pause_on_failure %d, start_at %v, end_at %v; want 2m0s, 6h0m0s, 3, none, 2099-01-01", sv.Jitter, sv.CatchupWindow, sv.PauseOnFailure, sv.StartAt, sv.EndAt)
	}

	var he *httpError
	if err := postJSON(u+"/pause", map[string]string{"note": "  "}, nil); !errors.As(err, &he) || he.Status != 400 || fieldsOf(he)["note"] == "" {
		t.Fatalf("pause without a note: %v; want 400 at the note", err)
	}
	if err := getJSON(u, &sv); err != nil || (sv.State != nil && sv.State.Paused) {
		t.Fatalf("the refused pause paused the entry: %v %+v", err, sv.State)
	}
	if err := postJSON(u+"/pause", map[string]string{"note": "incident 42"}, &sv); err != nil {
		t.Fatal(err)
	}
	if sv.State == nil || !sv.State.Paused || sv.State.Note != "incident 42" || sv.State.PausedBy != "console test" {
		t.Fatalf("after pause: %+v; want paused with the note, by the console's user", sv.State)
	}
	if err := getJSON(e.url+"api/schedules?sequence=console-sched", &list); err != nil || len(list.Entries) != 2 || list.Entries[0].State == nil || !list.Entries[0].State.Paused {
		t.Fatalf("the list after pause: %v %+v; want berlin paused", err, list.Entries)
	}
	sv = scheduleView{} // paused is left out when false: decode into a fresh value
	if err := postJSON(u+"/unpause", map[string]string{}, &sv); err != nil {
		t.Fatal(err)
	}
	if sv.State != nil && sv.State.Paused {
		t.Fatalf("after unpause: %+v; want not paused", sv.State)
	}

	var tr events.ScheduleTriggerReply
	if err := postJSON(u+"/trigger", map[string]string{}, &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Ticks) != 1 || tr.Ticks[0].Outcome != events.TickStarted || tr.Ticks[0].RunID == "" {
		t.Fatalf("trigger: %+v; want one tick started", tr.Ticks)
	}
	id := tr.Ticks[0].RunID
	v := waitRun(t, e, id, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	if v.State.Trigger != events.TriggerManualTick && !strings.Contains(v.State.Trigger, "manual") {
		t.Errorf("the triggered run's trigger %q; want %s", v.State.Trigger, events.TriggerManualTick)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		sv = scheduleView{}
		if err := getJSON(u, &sv); err == nil && sv.State != nil && sv.State.LastRun == id && sv.RunStatus[id] == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the entry's last run is not the triggered %s in 30 s: %+v %v", id, sv.State, sv.RunStatus)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := postJSON(u+"/backfill", map[string]string{"from": "yesterday", "to": "2026-11-02T00:00:00Z"}, nil); !errors.As(err, &he) || he.Status != 400 || !strings.Contains(fieldsOf(he)["from"], "RFC 3339") {
		t.Fatalf("backfill from yesterday: %v %+v; want 400 at from", err, fieldsOf(he))
	}
	err := postJSON(u+"/backfill", map[string]string{"from": "2026-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, nil)
	if !errors.As(err, &he) || he.Status != 400 || !strings.Contains(fieldsOf(he)["to"], "more than 100 ticks") {
		t.Fatalf("backfill of 10 months of a daily entry: %v %+v; want 400 at to, naming the bound", err, fieldsOf(he))
	}
	if err := postJSON(u+"/backfill", map[string]string{"from": "2026-11-01T00:00:00Z", "to": "2026-11-02T23:00:00Z"}, &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Ticks) != 2 || tr.Ticks[0].At.Format(time.RFC3339) != "2026-11-01T08:00:00Z" {
		t.Fatalf("backfill of two days: %+v; want two ticks, the first at 09:00 Berlin (08:00Z)", tr.Ticks)
	}

	var d struct {
		Entries []events.ScheduleInfo `json:"entries"`
	}
	if err := getJSON(e.url+"api/seqs/console-sched", &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Entries) != 2 || d.Entries[0].Entry != "berlin" || len(d.Entries[0].Next) != 1 || d.Entries[1].Pattern != "@every 1h0m0s" {
		t.Fatalf("the sequence's entries: %+v; want berlin with its next time and ops every hour", d.Entries)
	}
	var seqs struct {
		Sequences []struct {
			Name    string                `json:"name"`
			Entries []events.ScheduleInfo `json:"entries"`
		} `json:"sequences"`
	}
	if err := getJSON(e.url+"api/seqs", &seqs); err != nil {
		t.Fatal(err)
	}
	for _, s := range seqs.Sequences {
		if s.Name == "console-sched" && len(s.Entries) != 2 || s.Name == "console-nightly" && (len(s.Entries) != 1 || s.Entries[0].Entry != "default") {
			t.Errorf("the sequences list's %s: entries %+v", s.Name, s.Entries)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestBrowserSchedules: in Chromium, the Schedules page lists the entries
// with their pattern, zone and next fire time in the entry's zone; an
// entry's page shows its 10 next fire times; Pause without a note shows
// the problem at the note, with one it pauses (the note shown), Unpause
// undoes it; Trigger now starts a run linked from the page; a backfill
// over the bound shows the seqworker's refusal at the field, and a range
// of two days backfills two ticks; a sequence's page lists its entries.
// Screenshots at 1280 and 390 wide.
func TestBrowserSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	// The console role's credentials, known to the console: what it may
	// do is what the page does. An agent stores the sequence (the console
	// role stores none).
	e := startLocked(t, lockedOptions{role: auth.RoleConsole, knownCreds: true})
	opts, err := auth.ConnectOptions(e.setup.CredsFile(auth.RoleAgent))
	if err != nil {
		t.Fatal(err)
	}
	anc, err := nats.Connect(e.stack.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(anc.Close)
	if e.runs, err = client.New(anc); err != nil {
		t.Fatal(err)
	}
	createSched(t, &e.env)
	b := newBrowser(t, &e.env)
	dir := screenshots(t)
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/schedules")
		b.wait("the entries", `[...document.querySelectorAll("tr[data-entry]")].map((tr) => tr.dataset.entry).join(" ") === "console-nightly/default console-sched/berlin console-sched/ops" && document.querySelector('tr[data-entry="console-sched/berlin"]').textContent.match(/09:00:00 CES?T in Europe\/Berlin\)/) && document.querySelector('tr[data-entry="console-sched/ops"]').textContent.includes("every 1h0m0s")`, 30*time.Second)
		checkPage(t, b, "schedules ("+size.name+")")
		shot(t, b, dir, "schedules-list-"+size.name)

		b.open("#/schedules/console-sched/berlin")
		b.wait("the next fire times", `document.querySelectorAll("#next-fires li").length === 10 && document.getElementById("backfill-bound").textContent.includes("at most 100 ticks")`, 20*time.Second)
		b.wait("the entry's fields", `document.getElementById("entry-jitter").textContent.includes("up to 2m0s") && document.getElementById("entry-catchup").textContent.includes("in the last 6h0m0s") && document.getElementById("entry-pof").textContent === "after 3 failed runs in a row" && document.getElementById("entry-window").textContent.startsWith("until ")`, 10*time.Second)
		b.expectFailure("/api/schedules/console-sched/berlin/pause", 400)
		b.do("pause without a note", chromedp.Click(chromedp.ID("pause-entry")))
		b.wait("the note's problem", `document.getElementById("pause-note-error").textContent.includes("a note is required") && document.activeElement.id === "pause-note"`, 10*time.Second)
		b.do("pause with a note", chromedp.SendKeys(chromedp.ID("pause-note"), "incident 42"), chromedp.Click(chromedp.ID("pause-entry")))
		b.wait("paused with the note", `document.getElementById("entry-paused").textContent.includes("incident 42") && document.getElementById("entry-paused").textContent.includes("by skillbus console") && !!document.getElementById("unpause-entry") && !document.getElementById("pause-form")`, 10*time.Second)
		shot(t, b, dir, "schedules-paused-"+size.name)
		b.do("unpause", chromedp.Click(chromedp.ID("unpause-entry")))
		b.wait("unpaused", `document.getElementById("entry-paused").textContent === "no" && !!document.getElementById("pause-form")`, 10*time.Second)

		b.do("trigger", chromedp.Click(chromedp.ID("trigger-entry")))
		b.wait("the triggered run", `!!document.querySelector('#schedule-msg [data-outcome="started"]') && !!document.querySelector('#schedule-msg a[href^="#/runs/"]')`, 10*time.Second)
		b.wait("the entry's last run", `!!document.querySelector('#entry-last a[href^="#/runs/"]') && document.getElementById("entry-last").textContent.includes("succeeded") && !!document.querySelector('tr[data-tick="started"]')`, 30*time.Second)

		b.expectFailure("/api/schedules/console-sched/berlin/backfill", 400)
		b.do("backfill ten months",
			chromedp.Evaluate[chromedp.Void](`document.getElementById("backfill-from").value = "2026-01-01T00:00:00Z"; document.getElementById("backfill-to").value = "2026-11-01T00:00:00Z"`),
			chromedp.Click(chromedp.ID("backfill-entry")))
		b.wait("the refusal at the field", `document.getElementById("backfill-to-error").textContent.includes("more than 100 ticks") && document.getElementById("backfill-to").getAttribute("aria-invalid") === "true" && document.getElementById("backfill-msg").textContent.includes("nothing was backfilled")`, 10*time.Second)
		eval[bool](b, `(document.getElementById("backfill-form").scrollIntoView(), true)`)
		shot(t, b, dir, "schedules-backfill-refused-"+size.name)
		b.do("backfill two days",
			chromedp.Evaluate[chromedp.Void](`document.getElementById("backfill-from").value = "2026-11-01T00:00:00Z"; document.getElementById("backfill-to").value = "2026-11-02T23:00:00Z"`),
			chromedp.Click(chromedp.ID("backfill-entry")))
		b.wait("two ticks backfilled", `document.getElementById("backfill-msg").textContent.includes("Backfilled: 2 ticks.") && document.getElementById("backfill-to-error").textContent === ""`, 20*time.Second)
		checkPage(t, b, "schedule entry ("+size.name+")")
		shot(t, b, dir, "schedules-entry-"+size.name)

		b.open("#/seqs/console-sched")
		b.wait("the sequence's entries", `[...document.querySelectorAll(".entries li")].map((li) => li.dataset.entry).join(" ") === "berlin ops" && document.querySelector('.entries li[data-entry="berlin"]').textContent.includes("overlap skip")`, 20*time.Second)
		shot(t, b, dir, "schedules-seq-"+size.name)
	}
	b.checkNoErrors(t)

	// The reader may list and show entries, not pause, trigger or
	// backfill them: the buttons are disabled with the reason.
	_, reader := startConsoleAs(t, e.stack.URL(), e.setup, auth.RoleReader, true, &connErrs{})
	rb := newBrowser(t, &env{url: reader.URL()})
	for _, size := range sizes {
		rb.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		rb.open("#/schedules/console-sched/berlin")
		rb.wait("the actions disabled with the reason", `document.querySelectorAll("#next-fires li").length === 10 && [["pause-entry", "pause"], ["trigger-entry", "trigger"], ["backfill-entry", "backfill"]].every(([id, sub]) => document.getElementById(id).disabled && document.getElementById(id).title.includes("needs to publish to skillbus.seq.schedules." + sub)) && document.getElementById("limits").textContent.includes("triggering schedule entries")`, 20*time.Second)
		shot(t, rb, dir, "schedules-reader-"+size.name)
	}
	if errs := rb.errors(); len(errs) > 0 {
		t.Errorf("the reader's page wrote %d error(s) to the JavaScript console:\n%v", len(errs), errs)
	}
}

// TestScheduleText runs the Schedules page's words in Node (app.js's
// patternText, zonedText, nextFire, pausedText and outcomeBadge, with
// stand-ins for the DOM): a cron entry says its zone, an every entry its
// interval; the next fire time is shown in the Times switch's form and in
// the entry's own zone, daylight saving time included (09:00 in Berlin is
// 07:00 UTC on the day the clocks go forward, 08:00 the day before); an
// every entry without a tick yet says so; a pause shows its note and who
// paused; each tick outcome has a status and its word. Skipped without
// node.
func TestScheduleText(t *testing.T) {
	src, err := os.ReadFile("web/app.js")
	if err != nil {
		t.Fatal(err)
	}
	outcomes := regexp.MustCompile(`\n  const OUTCOME_STATUS = [^\n]*\n`).Find(src)
	if outcomes == nil {
		t.Fatal("no OUTCOME_STATUS in web/app.js")
	}
	script := `process.env.TZ = "Asia/Tokyo";
const h = (tag, attrs, ...kids) => ({ text: kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false).map((k) => typeof k === "object" ? k.text : String(k)).join("") });
const timeEl = (iso) => ({ text: "[" + fmtWhen(iso, "utc") + "]" });
const badge = (s, big, text) => ({ text: "<" + s + ":" + (text || s) + ">" });
` + appFunc(t, "fmtZone") + appFunc(t, "fmtAgo") + appFunc(t, "fmtWhen") + string(outcomes) +
		appFunc(t, "patternText") + appFunc(t, "zonedText") + appFunc(t, "nextFire") + appFunc(t, "pausedText") + appFunc(t, "outcomeBadge") + `
const berlin = { pattern: "0 0 9 * * *", timezone: "Europe/Berlin" };
const out = [
  patternText(berlin).text, patternText({ pattern: "@every 1h0m0s" }).text, patternText({ pattern: "@daily" }).text,
  nextFire(Object.assign({ next: ["2026-03-29T07:00:00Z"] }, berlin)).text,
  nextFire(Object.assign({ next: ["2026-03-28T08:00:00Z"] }, berlin)).text,
  nextFire({ pattern: "0 0 9 * * *", timezone: "America/New_York", next: ["2026-12-02T14:00:00Z"] }).text,
  nextFire({ pattern: "@daily", next: ["2026-12-02T00:00:00Z"] }).text,
  nextFire({ pattern: "@every 1h0m0s" }).text,
  pausedText(null).text, pausedText({}).text,
  pausedText({ paused: true, note: "incident 42", paused_by: "ann", paused_at: "2026-12-01T10:00:00Z" }).text,
  ...["started", "skipped", "buffered", "paused", "dropped", "cancelled", "missed", "new"].map((o) => outcomeBadge(o).text),
];
console.log(JSON.stringify(out));
`
	var got []string
	node(t, script, &got)
	want := []string{
		"0 0 9 * * * in Europe/Berlin", "every 1h0m0s", "@daily in UTC",
		"[2026-03-29 07:00:00 UTC] (2026-03-29 09:00:00 CEST in Europe/Berlin)",
		"[2026-03-28 08:00:00 UTC] (2026-03-28 09:00:00 CET in Europe/Berlin)",
		"[2026-12-02 14:00:00 UTC] (2026-12-02 09:00:00 GMT-5 in America/New_York)",
		"[2026-12-02 00:00:00 UTC] (2026-12-02 00:00:00 UTC)",
		"known after the first tick",
		"no", "no", "<dropped:paused>incident 42by ann [2026-12-01 10:00:00 UTC]",
		"<succeeded:started>", "<dropped:skipped>", "<queued:buffered>", "<dropped:paused>", "<dropped:dropped>", "<cancelled:cancelled>", "<failed:missed>", "<unknown:new>",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
