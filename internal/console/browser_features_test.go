package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/pkg/events"
)

// The browser tests of the run page's timeline, the runs list's search
// and pages, the time display, the copy buttons and edit-and-rerun
// (docs/console.md, "How it is tested"). Each takes its screenshots at
// 1280 × 800 and 390 × 800 into $SKILLBUS_SCREENSHOTS, else a temporary
// directory named in the log.

// screenshots returns the directory the screenshots go to.
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SKILLBUS_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// shot writes a full-page screenshot of the page as dir/name.png.
func shot(t *testing.T, b *browser, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sizes are the windows every feature is checked in.
var sizes = []struct {
	name string
	w, h int64
}{{"wide", 1280, 800}, {"narrow", 390, 800}}

// runDemo starts console-demo and waits for it to succeed.
func runDemo(t *testing.T, e *env, waitMS int) string {
	t.Helper()
	id, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-demo", Args: json.RawMessage(fmt.Sprintf(`{"root": ".", "wait_ms": %d}`, waitMS))})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestBrowserTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	id := runDemo(t, e, 400)
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + id)
		b.wait("the run succeeded", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
		// A row per group and per call, each with its status in words and a
		// bar of its own; the skipped group a mark, not a bar.
		b.wait("the timeline's rows", `document.querySelectorAll(".tl-row.tl-group").length === 4 && document.querySelectorAll(".tl-row.tl-call").length === 5`, 10*time.Second)
		got := eval[[]string](b, `[...document.querySelectorAll(".tl-row[data-kind]")].map(r => r.dataset.kind + " " + r.querySelector(".tl-name").textContent + " " + r.dataset.status + " bars=" + r.querySelectorAll(".tl-seg").length + " marks=" + r.querySelectorAll(".tl-mark").length)`)
		want := []string{
			"run run succeeded bars=", // the queued wait and its run: checked below
			"group 1. demo-list succeeded bars=1 marks=0",
			"call fs.list succeeded bars=1 marks=0",
			"call fs.lines succeeded bars=1 marks=0",
			"group 2. demo-wait succeeded bars=1 marks=0",
			"call test.sleep succeeded bars=1 marks=0",
			"group 3. demo-never skipped bars=0 marks=1",
			"call fs.stat skipped bars=0 marks=0",
			"group 4. demo-report succeeded bars=1 marks=0",
			"call text.render succeeded bars=1 marks=0",
		}
		if len(got) != len(want) {
			t.Fatalf("%s: timeline rows %q; want %d", size.name, got, len(want))
		}
		for i, w := range want {
			if len(got[i]) < len(w) || got[i][:len(w)] != w {
				t.Errorf("%s: timeline row %d is %q; want %q", size.name, i, got[i], w)
			}
		}
		// test.sleep's 400 ms bar is the widest of the calls and starts after
		// group 1's.
		geo := eval[[]float64](b, `(function(){ const r = (s) => document.querySelector(s).getBoundingClientRect(); const bar = (tool) => [...document.querySelectorAll('.tl-call')].find(x => x.textContent.includes(tool)).querySelector(".tl-seg").getBoundingClientRect(); const a = bar("fs.list"), w = bar("test.sleep"); return [a.left, a.width, w.left, w.width] })()`)
		if len(geo) == 4 && !(geo[2] >= geo[0] && geo[3] > geo[1]) {
			t.Errorf("%s: fs.list's bar at %.0f (%.0f wide), test.sleep's at %.0f (%.0f wide); want test.sleep after it and wider", size.name, geo[0], geo[1], geo[2], geo[3])
		}
		if title := eval[string](b, `[...document.querySelectorAll('.tl-call')].find(x => x.textContent.includes("test.sleep")).querySelector(".tl-seg").title`); title == "" {
			t.Errorf("%s: a bar without a title", size.name)
		}
		checkPage(t, b, "timeline ("+size.name+")")
		eval[bool](b, `(document.querySelector(".tl-wrap").scrollIntoView(), true)`)
		shot(t, b, dir, "timeline-"+size.name)
	}
	// A running run's timeline grows with the clock, between its events:
	// the axis lengthens and the running call's bar reaches its end.
	long, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-long", Args: json.RawMessage(`{"ms": 600000}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.runs.Cancel(context.Background(), long, "test", "over") })
	b.open("#/runs/" + long)
	b.wait("the call runs", callStatus(0, 0, "running"), 30*time.Second)
	const axisEnd = `document.querySelector(".tl-axis .tl-tick:last-child").textContent`
	first := eval[string](b, axisEnd)
	b.wait("the axis grown", axisEnd+` !== `+jsString(first)+` && (function(){ const r = document.querySelector('.tl-call[data-status="running"] .tl-seg').getBoundingClientRect(), tr = document.querySelector('.tl-call[data-status="running"] .tl-track').getBoundingClientRect(); return r.right >= tr.right - 2 })()`, 10*time.Second)
	b.checkNoErrors(t)
}

func TestBrowserRunsSearch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	for i := 0; i < 55; i++ {
		if _, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-nightly"}); err != nil {
			t.Fatal(err)
		}
	}
	demo := runDemo(t, e, 1)
	b.do("viewport", chromedp.EmulateViewport(1280, 800))
	b.open("#/runs")
	b.wait("the first page", `(document.getElementById("page-text") || {}).textContent === "1–50 of 56 runs" && document.querySelectorAll("tbody tr").length === 50`, 30*time.Second)
	b.do("older", chromedp.Click(chromedp.ID("page-older")))
	b.wait("the second page, in the address", `location.hash.startsWith("#/runs?before=") && (document.getElementById("page-text") || {}).textContent === "51–56 of 56 runs" && !!document.getElementById("page-newest")`, 10*time.Second)
	second := eval[string](b, `location.hash`)
	eval[bool](b, `(history.back(), true)`)
	b.wait("Back: the first page", `location.hash === "#/runs" && (document.getElementById("page-text") || {}).textContent === "1–50 of 56 runs"`, 10*time.Second)
	eval[bool](b, `(history.forward(), true)`)
	b.wait("Forward: the second page", `location.hash === `+jsString(second)+` && (document.getElementById("page-text") || {}).textContent === "51–56 of 56 runs"`, 10*time.Second)
	// A pasted link opens the same page.
	b.open(second)
	b.wait("the pasted link's page", `(document.getElementById("page-text") || {}).textContent === "51–56 of 56 runs" && document.querySelectorAll("tbody tr").length === 6`, 10*time.Second)
	// The search: a part of a run id finds it, the address keeps it.
	b.open("#/runs")
	b.do("search", chromedp.SendKeys(chromedp.ID("f-q"), demo[len(demo)-8:]))
	b.wait("the run found", fmt.Sprintf(`location.hash === "#/runs?q=%s" && document.querySelectorAll("tbody tr").length === 1 && !!document.querySelector('tr[data-run=%q]')`, demo[len(demo)-8:], demo), 10*time.Second)
	b.open("#/runs?q=demo+succeeded")
	b.wait("a search of words", fmt.Sprintf(`document.getElementById("f-q").value === "demo succeeded" && document.querySelectorAll("tbody tr").length === 1 && !!document.querySelector('tr[data-run=%q]')`, demo), 20*time.Second)
	// The statuses come from the answer: each one a count and an option.
	if got := eval[[]string](b, `[...document.querySelectorAll("#f-status option")].map(o => o.value)`); fmt.Sprint(got) != "[ queued running interrupted succeeded failed cancelled]" {
		t.Errorf("status options %q", got)
	}
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs?q=nightly")
		b.wait("the search", `(document.getElementById("page-text") || {}).textContent === "1–50 of 55 runs"`, 20*time.Second)
		checkPage(t, b, "runs search ("+size.name+")")
		shot(t, b, dir, "runs-search-"+size.name)
	}
	b.checkNoErrors(t)
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestBrowserTimeDisplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	id := runDemo(t, e, 1)
	// times lists the page's times as they are written, with their
	// datetime.
	const times = `[...document.querySelectorAll("main time")].map(x => x.dateTime + "=" + x.textContent)`
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + id)
		b.wait("the run succeeded", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
		if m := eval[string](b, `document.getElementById("time-mode").value`); m != "local" {
			t.Errorf("the time display starts as %q; want local", m)
		}
		// Local: every time with its zone.
		if bad := eval[[]string](b, times+`.filter(s => !/=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z][A-Za-z0-9+:-]*$/.test(s))`); len(bad) > 0 {
			t.Errorf("%s: local times without their zone: %q", size.name, bad)
		}
		b.do("UTC", chromedp.SetValue(chromedp.ID("time-mode"), "utc"), chromedp.Evaluate[chromedp.Void](`document.getElementById("time-mode").dispatchEvent(new Event("change"))`))
		b.wait("the page in UTC", `document.getElementById("run-status").textContent.includes("succeeded") && document.querySelectorAll("main time").length >= 8`, 10*time.Second)
		if bad := eval[[]string](b, times+`.filter(s => { const [iso, text] = s.split("="); return text !== new Date(iso).toISOString().slice(0, 19).replace("T", " ") + " UTC" })`); len(bad) > 0 {
			t.Errorf("%s: times not in UTC: %q", size.name, bad)
		}
		// Kept across pages and visits: the runs list opens in UTC.
		b.open("#/runs")
		b.wait("the runs list in UTC", fmt.Sprintf(`(function(){ const r = document.querySelector('tr[data-run=%q] time'); return !!r && r.textContent.endsWith(" UTC") && document.getElementById("time-mode").value === "utc" })()`, id), 20*time.Second)
		b.do("relative", chromedp.SetValue(chromedp.ID("time-mode"), "relative"), chromedp.Evaluate[chromedp.Void](`document.getElementById("time-mode").dispatchEvent(new Event("change"))`))
		b.wait("the runs list relative", fmt.Sprintf(`(function(){ const r = document.querySelector('tr[data-run=%q] time'); return !!r && / ago$/.test(r.textContent) && r.title.includes(" UTC") })()`, id), 20*time.Second)
		shot(t, b, dir, "times-relative-"+size.name)
		b.open("#/seqs/console-nightly")
		b.wait("the schedule's next time in its own zone", `document.querySelector("main").textContent.includes("in Europe/Berlin")`, 20*time.Second)
		checkPage(t, b, "times ("+size.name+")")
		shot(t, b, dir, "times-schedule-"+size.name)
		eval[bool](b, `(localStorage.removeItem("skillbus.times"), true)`)
	}
	b.checkNoErrors(t)
}

// stubClipboard makes the page's clipboard a stand-in that keeps what is
// copied in window.__copied (a headless browser's clipboard cannot be
// read back without a permission prompt).
const stubClipboard = `(Object.defineProperty(navigator, "clipboard", { configurable: true, value: { writeText: async (t) => { window.__copied = t; } } }), true)`

func TestBrowserDenseAndCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	id := runDemo(t, e, 1)
	for i := 0; i < 12; i++ {
		runDemo(t, e, 1)
	}
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs")
		b.wait("the runs", fmt.Sprintf(`document.querySelectorAll("tbody tr").length === 13 && !!document.querySelector('tr[data-run=%q]')`, id), 30*time.Second)
		row := fmt.Sprintf(`document.querySelector('tr[data-run=%q]')`, id)
		if size.name == "wide" {
			// One line a run: the id cut with its whole in the title.
			h := eval[float64](b, row+`.getBoundingClientRect().height`)
			if h > 34 {
				t.Errorf("a run's row is %.0f px high; want one line (at most 34 px)", h)
			}
			// Ids made together share their start: the cut keeps the end.
			link := eval[[]any](b, `(function(){ const a = `+row+`.querySelector("a.id"); return [a.title, a.textContent, a.getClientRects().length] })()`)
			if want := id[:8] + "…" + id[len(id)-5:]; link[0] != id || link[1] != want || link[2] != float64(1) {
				t.Errorf("the run id link: title, text, lines = %v; want %s, %s, 1", link, id, want)
			}
		}
		eval[bool](b, stubClipboard)
		b.do("copy the run id", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-run=%q] button.copy`, id))))
		b.wait("the id copied", `window.__copied === `+jsString(id), 5*time.Second)
		checkPage(t, b, "dense runs ("+size.name+")")
		shot(t, b, dir, "runs-dense-"+size.name)
		// The run page: its id, its arguments and a slot's value.
		b.open("#/runs/" + id)
		b.wait("the run succeeded", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
		eval[bool](b, stubClipboard)
		b.do("copy the arguments", chromedp.Click(chromedp.CSS(`main details .copy-wrap button.copy`)))
		b.wait("the arguments copied", `window.__copied && JSON.parse(window.__copied).wait_ms === 1 && JSON.parse(window.__copied).root === "."`, 5*time.Second)
		b.do("open a slot", chromedp.Evaluate[chromedp.Void](`document.querySelector('details[data-slot="report"]').open = true`))
		b.do("copy the slot", chromedp.Click(chromedp.CSS(`details[data-slot="report"] button.copy`)))
		b.wait("the slot copied", `/^"\d+ entries, waited 1 ms"$/.test(window.__copied)`, 5*time.Second)
		b.do("copy the id", chromedp.Click(chromedp.CSS(`.title-row button.copy`)))
		b.wait("the id copied", `window.__copied === `+jsString(id), 5*time.Second)
		checkPage(t, b, "run copy ("+size.name+")")
		shot(t, b, dir, "run-copy-"+size.name)
	}
	b.checkNoErrors(t)
}

func TestBrowserEditRerun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	id := runDemo(t, e, 1)
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + id)
		b.wait("the run succeeded", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
		b.do("edit and rerun", chromedp.Click(chromedp.ID("edit-rerun")))
		// The form, filled with the run's arguments, typed by the signature.
		b.wait("the form, filled", `document.getElementById("arg-root") && document.getElementById("arg-root").value === "." && document.getElementById("arg-wait_ms").value === "1" && document.activeElement.id === "arg-root"`, 10*time.Second)
		checkPage(t, b, "edit and rerun ("+size.name+")")
		// A wrong value: the CLI's message at its field, the focus on it.
		b.expectFailure("/api/seqs/console-demo/run", 400)
		b.do("a wrong value",
			chromedp.Evaluate[chromedp.Void](`document.getElementById("arg-wait_ms").value = ""`),
			chromedp.SendKeys(chromedp.ID("arg-wait_ms"), "soon"),
			chromedp.Click(chromedp.ID("start-run")))
		b.wait("the field's error", `document.getElementById("arg-wait_ms-error").textContent === 'wait_ms is declared integer; give a whole number such as 10, not "soon"' && document.getElementById("arg-wait_ms").getAttribute("aria-invalid") === "true" && document.activeElement.id === "arg-wait_ms"`, 10*time.Second)
		eval[bool](b, `(document.getElementById("run-form").scrollIntoView(), true)`)
		shot(t, b, dir, "edit-rerun-error-"+size.name)
		b.do("fix it and start",
			chromedp.Evaluate[chromedp.Void](`document.getElementById("arg-wait_ms").value = ""`),
			chromedp.SendKeys(chromedp.ID("arg-wait_ms"), "7"),
			chromedp.Click(chromedp.ID("start-run")))
		b.wait("the new run, with the new value", fmt.Sprintf(`location.hash.startsWith("#/runs/run-") && location.hash !== "#/runs/%s" && !!document.getElementById("run-status") && document.getElementById("run-status").textContent.includes("succeeded") && document.querySelector("main details pre").textContent.includes('"wait_ms": 7')`, id), 30*time.Second)
	}
	b.checkNoErrors(t)
}
