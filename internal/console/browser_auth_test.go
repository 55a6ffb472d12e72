package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillbus/skillbus/internal/auth"
)

// TestBrowserLocked drives the console in Chromium on a bus locked down by
// a generated `skillbus auth` setup (docs/security.md), with the
// credentials of several roles on one stack: the console role works fully
// (the runs list live, a run started from the form, no refusal anywhere)
// and its Tools page says, without trying, that calling tools needs the
// opt-in; with credentials that do not allow an action (the runner's, not
// told to the console; the reader's; a tool provider's) every refusal is
// shown at once in the page where it was made — well before the call's
// own timeout — naming the subject and the credentials, and a page the
// credentials cannot read says so instead of spinning. The screenshots
// (SKILLBUS_SCREENSHOTS, else a temporary directory) show each refusal.
func TestBrowserLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	dir := os.Getenv("SKILLBUS_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	e := startLocked(t, lockedOptions{role: auth.RoleConsole, knownCreds: true})
	b := newBrowser(t, &e.env)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "locked-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// consoleAs points the browser at another console on the same stack,
	// connected with role's credentials (told to it when known).
	consoleAs := func(role string, known bool) {
		t.Helper()
		_, srv := startConsoleAs(t, e.stack.URL(), e.setup, role, known, &connErrs{})
		b.e = &env{url: srv.URL()}
	}
	// timed runs action and waits for predicate; it returns how long the
	// answer took.
	timed := func(what, predicate string, action chromedp.Action[chromedp.Void]) time.Duration {
		t.Helper()
		start := time.Now()
		b.do(what, action)
		b.wait(what, predicate, 20*time.Second)
		return time.Since(start)
	}
	const refusalsShown = `(function(){ const r = document.getElementById("refusals"); return !!r && !r.hidden && r.offsetHeight > 0 })()`

	t.Run("the console role: everything works, the tool form says why it cannot call", func(t *testing.T) {
		b.t = t
		b.open("#/runs")
		b.wait("the runs list live", `document.getElementById("conn-text").textContent === "live"`, 30*time.Second)
		eval[bool](b, `window.__noReload = true`)
		id := startRun(t, e.url, "console-nightly", map[string]string{})
		b.wait("the new run, succeeded, in the live list", fmt.Sprintf(`(function(){ const r = document.querySelector('tr[data-run=%q]'); return !!r && r.textContent.includes("succeeded") })()`, id), 30*time.Second)
		if !eval[bool](b, `window.__noReload === true`) {
			t.Error("the runs page was reloaded; with the console role the list is live")
		}
		if eval[bool](b, refusalsShown) {
			t.Errorf("the console role's pages show refusals: %s", eval[string](b, `document.getElementById("refusals").innerText`))
		}
		b.open("#/runs/" + id)
		b.wait("the run page with its timeline", `document.getElementById("run-status").textContent.includes("succeeded") && document.querySelectorAll(".timeline li").length >= 2`, 30*time.Second)
		b.open("#/skills/deploy-helper")
		b.open("#/tools/test.sleep")
		b.wait("the form says why it cannot call", `(function(){ const n = document.getElementById("t-call-refused"); return !!n && n.textContent.includes("tool.test.sleep") && n.textContent.includes("role console") && n.textContent.includes("--console-calls-tools") && document.getElementById("call-tool").disabled })()`, 10*time.Second)
		shot("console-role-tool")
		if eval[bool](b, refusalsShown) {
			t.Error("the tools page shows a refusal banner; the call was not even tried")
		}
	})

	t.Run("the runner's creds, not told: the refused RUNS watch and a refused tool call", func(t *testing.T) {
		b.t = t
		consoleAs(auth.RoleRunner, false)
		b.open("#/runs")
		b.wait("the RUNS watch's refusal above the page", refusalsShown+` && document.getElementById("refusals").textContent.includes("$KV.RUNS.>") && document.getElementById("refusals").textContent.includes("runs list is not live")`, 20*time.Second)
		b.wait("the runs page says why it is not live", `(function(){ const n = document.querySelector("main .notice"); return !!n && n.textContent.includes("does not watch the RUNS bucket") && n.textContent.includes("$KV.RUNS.>") })()`, 20*time.Second)
		shot("runner-runs")
		b.open("#/tools/test.sleep")
		b.do("fill the call", chromedp.SetValue(chromedp.ID("t-args"), `{"ms": 1}`), chromedp.SendKeys(chromedp.ID("t-timeout"), "25"))
		b.expectFailure("/api/tools/test.sleep/call", 403)
		took := timed("the refused call shown in the tool's page", `(function(){ const e = document.querySelector("main .error"); return !!e && e.textContent.includes('publish to "tool.test.sleep"') && e.textContent.includes("the runner role's creds") && e.textContent.includes("code 403") })()`,
			chromedp.Click(chromedp.ID("call-tool")))
		t.Logf("the refused tool call (timeout 25 s) was shown after %v", took)
		if took > 5*time.Second {
			t.Errorf("the refused tool call was shown after %v; want it at once, not at the call's 25 s timeout", took)
		}
		shot("runner-tool-refused")
	})

	t.Run("the reader's creds: a refused run, a refused cancel", func(t *testing.T) {
		b.t = t
		long := startRun(t, e.url, "console-long", map[string]string{"ms": "600000"})
		t.Cleanup(func() { _ = postJSON(e.url+"api/runs/"+long+"/cancel", map[string]any{"reason": "test over"}, nil) })
		// Not told its creds file: the buttons are there and each refusal
		// is said where it happens (told, they are disabled up front: the
		// next subtest).
		consoleAs(auth.RoleReader, false)
		b.open("#/seqs/console-nightly")
		b.do("open the run form", chromedp.Click(chromedp.ID("open-run-form")))
		b.wait("the form", `!!document.getElementById("start-run")`, 10*time.Second)
		b.expectFailure("/api/seqs/console-nightly/run", 403)
		took := timed("the refused start shown in the form", `(function(){ const f = document.getElementById("run-form"); return !!f && f.textContent.includes('publish to "skillbus.seq.run"') && f.textContent.includes("the reader role's creds") })()`,
			chromedp.Click(chromedp.ID("start-run")))
		t.Logf("the refused run start was shown after %v", took)
		if took > 5*time.Second {
			t.Errorf("the refused start was shown after %v; want it at once", took)
		}
		shot("reader-run-refused")
		b.open("#/runs/" + long)
		b.wait("the run runs", callStatus(0, 0, "running"), 30*time.Second)
		b.do("ask to cancel", chromedp.Click(chromedp.ID("cancel-run")))
		b.expectFailure("/api/runs/"+long+"/cancel", 403)
		took = timed("the refused cancel shown on the run page", `(function(){ const e = document.querySelector("main .error"); return !!e && e.textContent.includes("Cancel") && e.textContent.includes('publish to "skillbus.seq.cancel"') && e.textContent.includes("the reader role's creds") })()`,
			chromedp.Click(chromedp.ID("confirm-cancel")))
		t.Logf("the refused cancel was shown after %v", took)
		if took > 5*time.Second {
			t.Errorf("the refused cancel was shown after %v; want it at once", took)
		}
		shot("reader-cancel-refused")
	})

	t.Run("the reader's creds, told: the actions disabled up front with the reason", func(t *testing.T) {
		b.t = t
		long := startRun(t, e.url, "console-long", map[string]string{"ms": "600000"})
		t.Cleanup(func() { _ = postJSON(e.url+"api/runs/"+long+"/cancel", map[string]any{"reason": "test over"}, nil) })
		consoleAs(auth.RoleReader, true)
		const limitsShown = `(function(){ const r = document.getElementById("limits"); return !!r && !r.hidden && r.textContent.includes("skillbus.seq.run") && r.textContent.includes("role reader") })()`
		b.open("#/seqs/console-nightly")
		b.wait("Run… disabled with the reason", limitsShown+` && document.getElementById("open-run-form").disabled && document.getElementById("open-run-form").title.includes("skillbus.seq.run")`, 10*time.Second)
		shot("reader-known-seq")
		b.open("#/runs/" + long)
		b.wait("the run's actions disabled with the reason", callStatus(0, 0, "running")+` && ["cancel-run", "rerun-run", "edit-rerun"].every((id) => document.getElementById(id).disabled && document.getElementById(id).title.includes("needs to publish to skillbus.seq."))`, 30*time.Second)
		shot("reader-known-run")
	})

	t.Run("a tool provider's creds: pages it cannot read say so", func(t *testing.T) {
		b.t = t
		consoleAs(auth.ToolRole("test"), false)
		for _, p := range []struct{ name, hash, subject string }{
			{"seqs", "#/seqs", "skillbus.registry.seq.list"},
			{"skills", "#/skills", "skillbus.registry.skill.list"},
			{"runs", "#/runs", "skillbus.seq.list"},
		} {
			b.expectFailure("/api/"+strings.TrimPrefix(p.hash, "#/"), 403)
			if p.name == "runs" {
				b.expectFailure("/api/seqs", 403) // the sequence filter's choices
			}
			start := time.Now()
			b.open(p.hash)
			b.wait(p.name+": the refusal instead of the list", fmt.Sprintf(`(function(){ const e = document.querySelector("main .error"); return !!e && e.textContent.includes('publish to %q') && e.textContent.includes("code 403") })()`, p.subject), 20*time.Second)
			t.Logf("%s: the refusal was shown %v after opening the page", p.name, time.Since(start))

			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s: the refusal was shown after %v; want it at once", p.name, d)
			}
		}
		b.wait("the refused events subscription above the page", refusalsShown+` && document.getElementById("refusals").textContent.includes("events.>")`, 20*time.Second)
		shot("provider-runs")
		// Told its creds file, the console says which pages are unavailable
		// before trying them: in the navigation and on the page.
		consoleAs(auth.ToolRole("test"), true)
		b.expectFailure("/api/runs", 403)
		b.expectFailure("/api/seqs", 403)
		b.open("#/runs")
		b.wait("the unavailable pages named up front", `(function(){ const n = document.getElementById("page-limit"); const nav = document.querySelector('[data-nav="skills"]'); return !!n && n.textContent.includes("skillbus.seq.list") && nav.textContent.includes("(unavailable)") && !document.querySelector('[data-nav="tools"]').textContent.includes("unavailable") && document.getElementById("limits").textContent.includes("Unavailable pages") })()`, 10*time.Second)
		shot("provider-known-runs")
	})

	b.checkNoErrors(t)
}
