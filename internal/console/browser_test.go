package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/pkg/events"
)

// The browser tests drive a real Chromium with chromedp against a dev
// stack and the console, started in this process (docs/console.md,
// "Tests"). They skip when no Chromium is installed; .ci/run installs
// Debian's and runs them in a step of their own.

// chromium finds the browser: $SKILLBUS_CHROMIUM, else chromium or
// google-chrome on the PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("SKILLBUS_SKIP_BROWSER") != "" {
		t.Skip("SKILLBUS_SKIP_BROWSER is set: the browser tests run in a step of their own (.ci/run)")
	}
	if p := os.Getenv("SKILLBUS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium found, so the browser tests are skipped: install it (Debian/Ubuntu: `apt-get install -y chromium`, as .ci/run does) or set SKILLBUS_CHROMIUM=/path/to/chrome")
	return ""
}

// browser is one Chromium tab on the console, collecting what the page
// writes to its console.
type browser struct {
	t   *testing.T
	ctx context.Context
	e   *env

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	expected []expectedFailure
}

// expectedFailure is an error answer a test provokes on purpose (a form
// with a wrong value): the browser logs it as a failed request.
type expectedFailure struct{ url, status string }

// expectFailure allows one failed request of the page: the browser's log
// entry "Failed to load resource: ... status of STATUS" for a URL holding
// url.
func (b *browser) expectFailure(url string, status int) {
	b.mu.Lock()
	b.expected = append(b.expected, expectedFailure{url, fmt.Sprintf("status of %d ", status)})
	b.mu.Unlock()
}

func newBrowser(t *testing.T, e *env) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	b := &browser{t: t, ctx: ctx, e: e}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	lctx, lcancel := context.WithCancel(ctx)
	msgs := chromedp.Console(lctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() { lcancel(); <-done })
	return b
}

// checkNoErrors fails t (without stopping it) when the page wrote errors
// to the JavaScript console that were not expected (errors), listing them.
func (b *browser) checkNoErrors(t *testing.T) {
	t.Helper()
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("the page wrote %d error(s) to the JavaScript console:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

// errors returns the page's errors so far: uncaught exceptions,
// console.error calls and error entries of the browser log (a failed
// request included).
func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	expected := append([]expectedFailure(nil), b.expected...)
	for _, m := range b.messages {
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException {
			continue
		}
		if m.Source == "network" {
			found := -1
			for i, x := range expected {
				if strings.Contains(m.URL, x.url) && strings.Contains(m.Text, x.status) {
					found = i
					break
				}
			}
			if found >= 0 {
				expected = append(expected[:found], expected[found+1:]...)
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
	}
	return out
}

// do runs actions, failing the test with what.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// wait polls a JavaScript predicate until it is true. A poll that lost
// its document (a navigation replaced it while the poll started) is
// started again.
func (b *browser) wait(what, predicate string, d time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		ctx, cancel := context.WithTimeout(b.ctx, left+5*time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(left), chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		lost := strings.Contains(err.Error(), "Cannot find context with specified id") || strings.Contains(err.Error(), "Execution context was destroyed") || strings.Contains(err.Error(), "Inspected target navigated or closed")
		if lost && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		txt, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText.slice(0, 1500)`))
		b.t.Fatalf("%s: not within %s (%v); the page says:\n%s", what, d, err, txt)
	}
}

// open loads the console at hash in a fresh document and waits for the
// page to be ready (main[aria-busy=false]).
func (b *browser) open(hash string) {
	b.t.Helper()
	b.do("open "+hash, chromedp.Navigate("about:blank"), chromedp.Navigate(b.e.url+hash))
	b.ready(hash)
}

func (b *browser) ready(hash string) {
	b.t.Helper()
	raw, _ := json.Marshal(hash)
	b.wait("page "+hash+" ready", `location.hash === `+string(raw)+` && document.querySelector("main").getAttribute("aria-busy") === "false"`, 30*time.Second)
}

// callStatus is the predicate "the call of group g, call c shows status s"
// on a run page (the SVG node's data-status and its text label).
func callStatus(g, c int, s string) string {
	return fmt.Sprintf(`(function(){ const n = document.querySelector('g.g-call[data-group="%d"][data-call="%d"]'); return !!n && n.dataset.status === %q && n.textContent.includes(%q) })()`, g, c, s, s)
}

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)

	t.Run("a run from the form, live until it succeeds", func(t *testing.T) {
		b.t = t
		b.open("#/seqs/console-demo")
		b.do("open the run form", chromedp.Click(chromedp.ID("open-run-form")))
		b.wait("the form", `!!document.getElementById("arg-root")`, 10*time.Second)
		// A value of the wrong type: the CLI's message, on its field.
		b.expectFailure("/api/seqs/console-demo/run", 400)
		b.do("fill the form wrongly",
			chromedp.SendKeys(chromedp.ID("arg-root"), "."),
			chromedp.SendKeys(chromedp.ID("arg-wait_ms"), "soon"),
			chromedp.Click(chromedp.ID("start-run")))
		b.wait("the field's error", `document.getElementById("arg-wait_ms-error").textContent === 'wait_ms is declared integer; give a whole number such as 10, not "soon"' && document.getElementById("arg-wait_ms").getAttribute("aria-invalid") === "true" && document.activeElement.id === "arg-wait_ms"`, 10*time.Second)
		eval[bool](b, `window.__noReload = true`)
		b.do("fix the field and start",
			chromedp.Evaluate[chromedp.Void](`document.getElementById("arg-wait_ms").value = ""`),
			chromedp.SendKeys(chromedp.ID("arg-wait_ms"), "2500"),
			chromedp.Click(chromedp.ID("start-run")))
		b.wait("the run page", `location.hash.startsWith("#/runs/run-") && !!document.querySelector("svg.graph g.g-call")`, 20*time.Second)
		// Live: group 1 has succeeded while group 2's call still runs.
		b.wait("group 1 succeeded while group 2 runs", callStatus(0, 0, "succeeded")+` && `+callStatus(0, 1, "succeeded")+` && `+callStatus(1, 0, "running"), 20*time.Second)
		// The keyboard focus on a call survives the live redraws.
		eval[bool](b, `(document.querySelector('g.g-call[data-group="0"][data-call="1"]').focus(), true)`)
		b.wait("the run succeeded", `document.getElementById("run-status").textContent.includes("succeeded") && `+
			callStatus(1, 0, "succeeded")+` && `+callStatus(2, 0, "skipped")+` && `+callStatus(3, 0, "succeeded"), 30*time.Second)
		if !eval[bool](b, `window.__noReload === true`) {
			t.Error("the page was reloaded; the run page must update live")
		}
		if !eval[bool](b, `document.activeElement.matches('g.g-call[data-group="0"][data-call="1"]')`) {
			t.Errorf("the focus moved to %s while the run page updated; want it kept on the call", eval[string](b, `document.activeElement.outerHTML.slice(0, 120)`))
		}
		if txt := eval[string](b, `document.querySelector('g.g-group-hit[data-group="2"]').textContent`); !strings.Contains(txt, "when $args.top == null → false") {
			t.Errorf("the skipped group shows %q; want its when and its result", txt)
		}
		// The details of a call, on click.
		b.do("select a call", chromedp.Click(chromedp.CSS(`g.g-call[data-group="3"][data-call="0"]`)))
		b.wait("the call's details", `(function(){ const d = document.getElementById("detail-title"); const p = d && d.closest("section"); return !!p && d.textContent.includes("text.render") && p.textContent.includes("Attempts") && p.textContent.includes("entries, waited 2500 ms") })()`, 10*time.Second)
		b.wait("the timeline", `document.querySelector(".timeline").textContent.includes("finished") && document.querySelectorAll(".timeline li").length >= 7`, 10*time.Second)
	})

	t.Run("cancel a long run", func(t *testing.T) {
		b.t = t
		id, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-long", Args: json.RawMessage(`{"ms": 600000}`)})
		if err != nil {
			t.Fatal(err)
		}
		b.open("#/runs/" + id)
		b.wait("the call runs", callStatus(0, 0, "running"), 30*time.Second)
		b.do("ask to cancel", chromedp.Click(chromedp.ID("cancel-run")))
		b.do("confirm", chromedp.SendKeys(chromedp.ID("cancel-reason"), "not needed"), chromedp.Click(chromedp.ID("confirm-cancel")))
		b.wait("the run ends cancelled", `document.getElementById("run-status").textContent.includes("cancelled") && `+callStatus(0, 0, "cancelled"), 40*time.Second)
		// One vocabulary: the group says cancelled too, and the user's own
		// cancel is not an error box.
		if txt := eval[string](b, `document.querySelector('g.g-group-hit[data-group="0"]').textContent`); !strings.Contains(txt, "cancelled") || strings.Contains(txt, "interrupted") {
			t.Errorf("the cancelled run's group shows %q; want cancelled", txt)
		}
		if eval[bool](b, `!!document.querySelector("main .error[role=alert]")`) {
			t.Error("a run the user cancelled shows an error box")
		}
		b.wait("the cancel in the timeline", `document.querySelector(".timeline").textContent.includes("cancel asked by console test: not needed")`, 10*time.Second)
		if eval[bool](b, `!!document.getElementById("cancel-run")`) {
			t.Error("a cancelled run still offers Cancel")
		}
	})

	t.Run("a skill activates in the preview", func(t *testing.T) {
		b.t = t
		b.open("#/preview")
		b.do("fill the turn",
			chromedp.SendKeys(chromedp.ID("p-message"), "Please deploy the api"),
			chromedp.SendKeys(chromedp.ID("p-files"), "docs/form.pdf"),
			chromedp.SendKeys(chromedp.ID("p-tools"), "Read, Write, Bash, WebFetch"),
			chromedp.Click(chromedp.ID("run-preview")))
		b.wait("deploy-helper activated by its trigger", `(function(){ const r = document.querySelector('tr[data-skill="deploy-helper"]'); return !!r && r.textContent.includes("activated") && r.textContent.includes('the trigger "deploy" appears in the message') })()`, 20*time.Second)
		b.wait("pdf-forms by its path, typo-skill not", `document.querySelector('tr[data-skill="pdf-forms"]').textContent.includes('matches its path "**/*.pdf"') && document.querySelector('tr[data-skill="typo-skill"]').textContent.includes("not activated")`, 5*time.Second)
		if got := eval[string](b, `[...document.querySelectorAll(".chip.removed")].map(e => e.textContent).join(",")`); got != "Write (removed),WebFetch (removed)" {
			t.Errorf("removed tools shown as %q", got)
		}
	})

	t.Run("keyboard only: tab to the run button and press Enter", func(t *testing.T) {
		b.t = t
		b.open("#/seqs/console-demo")
		tabTo(t, b, `document.activeElement.id === "open-run-form"`, 40)
		// The focus is visible.
		if style := eval[string](b, `getComputedStyle(document.activeElement).outlineStyle + " " + getComputedStyle(document.activeElement).outlineWidth`); strings.HasPrefix(style, "none") || strings.HasSuffix(style, " 0px") {
			t.Errorf("the focused Run button has outline %q; want a visible focus", style)
		}
		b.do("Enter", chromedp.KeyEvent(kb.Enter))
		b.wait("the form, focus on its first field", `document.activeElement.id === "arg-root"`, 10*time.Second)
		b.do("type the arguments", chromedp.KeyEvent("."), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("5"))
		if id := eval[string](b, `document.activeElement.id`); id != "arg-wait_ms" {
			t.Fatalf("Tab from the first field went to %q; want arg-wait_ms", id)
		}
		b.do("Tab to Start", chromedp.KeyEvent(kb.Tab))
		if id := eval[string](b, `document.activeElement.id`); id != "start-run" {
			t.Fatalf("Tab from the last field went to %q; want start-run", id)
		}
		b.do("Enter", chromedp.KeyEvent(kb.Enter))
		b.wait("the run succeeded", `location.hash.startsWith("#/runs/run-") && document.getElementById("run-status") && document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
		// The calls in the drawing are reached with Tab too, and Enter opens
		// their details.
		tabTo(t, b, `document.activeElement.matches("g.g-call")`, 60)
		b.do("Enter on a call", chromedp.KeyEvent(kb.Enter))
		b.wait("the call's details have the focus", `document.activeElement.id === "detail-title" && document.activeElement.textContent.includes("Call 1 of group 1")`, 10*time.Second)
	})

	t.Run("the runs list updates live", func(t *testing.T) {
		b.t = t
		b.open("#/runs")
		eval[bool](b, `window.__noReload = true`)
		id, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-demo", Args: json.RawMessage(`{"root": ".", "wait_ms": 300}`)})
		if err != nil {
			t.Fatal(err)
		}
		b.wait("the new run, succeeded", fmt.Sprintf(`(function(){ const r = document.querySelector('tr[data-run=%q]'); return !!r && r.textContent.includes("succeeded") })()`, id), 30*time.Second)
		if !eval[bool](b, `window.__noReload === true`) {
			t.Error("the runs page was reloaded")
		}
		b.do("filter by a count", chromedp.Click(chromedp.CSS(`.counts li:nth-child(7) button`))) // cancelled
		b.wait("only cancelled runs", `location.hash === "#/runs?status=cancelled" && [...document.querySelectorAll("tbody tr")].length === 1 && document.querySelector("tbody tr").textContent.includes("cancelled")`, 10*time.Second)
	})

	t.Run("every page, narrow and wide: screenshots, labels, no overflow", func(t *testing.T) {
		b.t = t
		dir := os.Getenv("SKILLBUS_SCREENSHOTS")
		if dir == "" {
			dir = t.TempDir()
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshots in %s", dir)
		// A run of the repository's project-survey, for the run page.
		id, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "project-survey", Args: json.RawMessage(`{"root": "."}`)})
		if err != nil {
			t.Fatal(err)
		}
		pages := []struct{ name, hash, ready string }{
			{"runs", "#/runs", `document.querySelectorAll("tbody tr").length >= 5`},
			{"run", "#/runs/" + id, `document.getElementById("run-status").textContent.includes("succeeded")`},
			{"sequences", "#/seqs", `document.querySelectorAll("tbody tr").length >= 3`},
			{"sequence", "#/seqs/console-demo?run=1", `!!document.getElementById("run-form")`},
			{"skills", "#/skills", `document.querySelectorAll("tbody tr").length === 3`},
			{"skill", "#/skills/deploy-helper", `!!document.querySelector(".toc a")`},
			{"preview", "#/preview?mount=pdf-forms", `true`},
			{"tools", "#/tools", `document.querySelectorAll("tbody tr").length >= 8`},
			{"tool", "#/tools/fs.read", `!!document.getElementById("call-tool")`},
		}
		for _, size := range []struct {
			name string
			w, h int64
		}{{"narrow", 400, 900}, {"wide", 1400, 1000}} {
			b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
			for _, p := range pages {
				b.open(p.hash)
				b.wait(p.name+" shows its content", p.ready, 30*time.Second)
				if p.name == "preview" {
					b.do("preview", chromedp.SendKeys(chromedp.ID("p-message"), "How do I deploy this?"), chromedp.SendKeys(chromedp.ID("p-tools"), "Read, Bash, WebFetch"), chromedp.Click(chromedp.ID("run-preview")))
					b.wait("the preview", `!!document.getElementById("preview-result")`, 20*time.Second)
				}
				if p.name == "run" {
					b.do("select a call", chromedp.Click(chromedp.CSS(`g.g-call[data-group="1"][data-call="2"]`)))
					b.wait("its details", `!!document.getElementById("detail-title")`, 10*time.Second)
					eval[bool](b, `(window.scrollTo(0, 0), true)`)
					b.do("blur", chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`))
				}
				checkPage(t, b, p.name+" ("+size.name+")")
				ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
				png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				cancel()
				if err != nil {
					t.Fatalf("screenshot of %s: %v", p.name, err)
				}
				file := filepath.Join(dir, fmt.Sprintf("console-%s-%s.png", p.name, size.name))
				if err := os.WriteFile(file, png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The picture of docs/console-run.png (README): the run page's top,
		// with a call's details, in a 1280 × 1000 window.
		if docs := os.Getenv("SKILLBUS_DOCS_SCREENSHOT"); docs != "" {
			b.do("viewport", chromedp.EmulateViewport(1280, 1000))
			b.open("#/runs/" + id)
			b.wait("the run", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
			b.do("select a call", chromedp.Click(chromedp.CSS(`g.g-call[data-group="1"][data-call="2"]`)))
			b.wait("its details", `!!document.getElementById("detail-title")`, 10*time.Second)
			eval[bool](b, `(document.querySelector("main details").open = false, document.activeElement.blur(), window.scrollTo(0, 0), true)`)
			ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(docs, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})

	b.checkNoErrors(t)
}

// tabTo presses Tab until predicate holds, at most n times.
func tabTo(t *testing.T, b *browser, predicate string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if eval[bool](b, predicate) {
			return
		}
		b.do("Tab", chromedp.KeyEvent(kb.Tab))
	}
	t.Fatalf("%d presses of Tab did not reach %s (the focus is on %s)", n, predicate, eval[string](b, `document.activeElement.outerHTML.slice(0, 120)`))
}

// checkPage checks what every page must have: every form field labelled,
// every button and link named, every status badge and every call of a
// drawing with its status in words, and no horizontal scrolling of the
// page (wide content scrolls in its own box).
func checkPage(t *testing.T, b *browser, name string) {
	t.Helper()
	if bad := eval[[]string](b, `[...document.querySelectorAll("input, select, textarea")].filter(e => e.type !== "hidden" && !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby")).map(e => e.id || e.name || e.outerHTML.slice(0, 80))`); len(bad) > 0 {
		t.Errorf("%s: form fields without a label: %v", name, bad)
	}
	if bad := eval[[]string](b, `[...document.querySelectorAll("button, a[href], [role=button]")].filter(e => !(e.textContent.trim() || e.getAttribute("aria-label"))).map(e => e.outerHTML.slice(0, 80))`); len(bad) > 0 {
		t.Errorf("%s: buttons or links without a name: %v", name, bad)
	}
	if bad := eval[[]string](b, `[...document.querySelectorAll(".st")].filter(e => !/[a-z]/.test(e.textContent)).map(e => e.outerHTML.slice(0, 80))`); len(bad) > 0 {
		t.Errorf("%s: status badges without words: %v", name, bad)
	}
	if bad := eval[[]string](b, `[...document.querySelectorAll("svg.graph g.g-call[data-status]")].filter(e => e.dataset.status && !e.querySelector(".g-status").textContent.includes(e.dataset.status.replace("_", " "))).map(e => e.getAttribute("aria-label"))`); len(bad) > 0 {
		t.Errorf("%s: calls drawn without their status in words: %v", name, bad)
	}
	if w := eval[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`); len(w) == 2 && w[0] > w[1]+1 {
		t.Errorf("%s: the page is %d px wide in a %d px window (it scrolls sideways)", name, w[0], w[1])
	}
}
