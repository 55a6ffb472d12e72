package console_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestBrowserCallArgs: the run page shows JSON values as trees that fold
// (with their counts when folded) and a raw toggle with the JSON text; a
// multi-line string output as its text; each call's row expands to the
// arguments it was sent after substitution, and a for_each call's items
// in its details to theirs; the copy buttons still copy (docs/console.md,
// "JSON values").
func TestBrowserCallArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	survey, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "project-survey", Args: json.RawMessage(`{"root": "."}`)})
	if err != nil {
		t.Fatal(err)
	}
	// An inline for_each whose second item fails under continue.
	s, err := seq.ParseYAML([]byte(`name: each-stat
groups:
  - name: stat-each
    in: {names: array<string>}
    out: {stats: array<object>}
    on_error: continue
    tools:
      - {tool: fs.stat, for_each: $args.names, args: {path: "src/$item"}, as: stats}
  - name: long-args
    in: {big: string}
    tools:
      - {tool: text.render, args: {template: $args.big, data: {}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	inline, err := seq.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	each, err := e.runs.Start(context.Background(), events.SeqRunRequest{Inline: inline, Args: json.RawMessage(`{"names": ["main.go", "gone.go"], "big": "` + strings.Repeat("x", 3000) + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + survey)
		b.wait("the run succeeded", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)

		// The run's arguments: a tree, and the raw JSON text on a toggle.
		args := `document.querySelector("main details .json-view")`
		if got := eval[string](b, args+`.querySelector(".json-tree").textContent`); got != `{ … } 1 key"root": "."}` {
			t.Errorf("%s: the arguments' tree reads %q", size.name, got)
		}
		b.do("raw", chromedp.Click(chromedp.CSS(`main details .json-view button.json-raw-toggle`)))
		if got := eval[[]any](b, `[`+args+`.querySelector("pre.json-raw").hidden, `+args+`.querySelector(".json-tree").hidden, `+args+`.querySelector("pre.json-raw").textContent, `+args+`.querySelector("button.json-raw-toggle").getAttribute("aria-pressed")]`); len(got) != 4 || got[0] != false || got[1] != true || got[2] != "{\n  \"root\": \".\"\n}" || got[3] != "true" {
			t.Errorf("%s: after raw: raw hidden, tree hidden, text, pressed = %q; want the JSON text shown instead of the tree", size.name, got)
		}
		b.do("tree", chromedp.Click(chromedp.CSS(`main details .json-view button.json-raw-toggle`)))
		eval[bool](b, stubClipboard)
		b.do("copy the arguments", chromedp.Click(chromedp.CSS(`main details .copy-wrap button.copy`)))
		b.wait("the arguments copied", `window.__copied && JSON.parse(window.__copied).root === "."`, 5*time.Second)

		// The report, a Markdown text: shown as its lines, not "# …\n…".
		b.do("open the report", chromedp.Evaluate[chromedp.Void](`document.querySelector('details[data-slot="report"]').open = true`))
		report := eval[[]any](b, `(function(){ const v = document.querySelector('details[data-slot="report"] .json-view'); const p = v.querySelector("pre.json-text"); return [p ? p.textContent : "", p ? getComputedStyle(p).whiteSpace : "", v.querySelector("pre.json-raw").textContent] })()`)
		if len(report) != 3 || !strings.Contains(report[0].(string), "\n") || strings.Contains(report[0].(string), `\n`) || report[1] != "pre-wrap" {
			t.Errorf("%s: the report is shown as %q (white-space %v); want its text, wrapped", size.name, report[0], report[1])
		} else if raw := report[2].(string); !strings.HasPrefix(raw, `"`) || !strings.Contains(raw, `\n`) {
			t.Errorf("%s: the report's raw view is %q; want the JSON string", size.name, raw)
		}
		b.do("copy the report", chromedp.Click(chromedp.CSS(`details[data-slot="report"] button.copy`)))
		b.wait("the report copied", `window.__copied && JSON.parse(window.__copied).includes("\n")`, 5*time.Second)

		// The top slot: its entries fold; a folded object says its keys.
		b.do("open top", chromedp.Evaluate[chromedp.Void](`document.querySelector('details[data-slot="top"]').open = true`))
		folded := eval[[]string](b, `[...document.querySelectorAll('details[data-slot="top"] details.json-node:not([open]) > summary')].map(s => s.textContent)`)
		if len(folded) == 0 || !strings.Contains(folded[0], "keys") {
			t.Errorf("%s: folded nodes of top %q; want its entries folded, each saying its keys", size.name, folded)
		} else {
			// Unfolding builds the entries (on its toggle event).
			b.do("unfold an entry", chromedp.Evaluate[chromedp.Void](`(function(){ const n = document.querySelector('details[data-slot="top"] details.json-node:not([open])'); n.id = "unfolded"; n.querySelector("summary").click() })()`))
			b.wait("the entry unfolded", `(function(){ const n = document.getElementById("unfolded"); return !!n && n.open && n.querySelector(".json-children").textContent.includes('"name":') })()`, 5*time.Second)
		}

		// Each call's row expands to the arguments it was sent: fs.read's
		// path is "$args.root/README.md" substituted.
		b.do("open the list", chromedp.Evaluate[chromedp.Void](`document.querySelector('.groups').closest("details").open = true`))
		row := `document.querySelector('.groups li[data-group="1"][data-call="2"]')`
		b.do("expand fs.read's arguments", chromedp.Evaluate[chromedp.Void](row+`.querySelector("details.call-args").open = true`))
		if got := eval[string](b, row+`.querySelector("details.call-args .json-tree").textContent`); !strings.Contains(got, `"path": "./README.md"`) || !strings.Contains(got, `"max_bytes": 8192`) {
			t.Errorf("%s: fs.read's arguments read %q; want the substituted path", size.name, got)
		}
		b.do("expand text.render's arguments", chromedp.Evaluate[chromedp.Void](`document.querySelector('.groups li[data-group="2"][data-call="0"] details.call-args').open = true`))
		shotOf(t, b, dir, "call-args-list-"+size.name, ".groups")
		// The call's details too.
		b.do("select fs.read", chromedp.Click(chromedp.CSS(`.groups li[data-group="1"][data-call="2"] button.link`)))
		if got := eval[string](b, `document.querySelector(".panel.detail").textContent`); !strings.Contains(got, "Arguments sent, after substitution") || !strings.Contains(got, `"./README.md"`) {
			t.Errorf("%s: fs.read's details %q; want the arguments sent", size.name, got)
		}
		checkPage(t, b, "call arguments ("+size.name+")")
		shot(t, b, dir, "call-args-"+size.name)
		shotOf(t, b, dir, "call-args-detail-"+size.name, ".panel.detail")
		shotOf(t, b, dir, "call-args-report-"+size.name, `details[data-slot="report"]`)
		shotOf(t, b, dir, "call-args-top-"+size.name, `details[data-slot="top"]`)

		// A for_each: the call's first item, and the failed item's own.
		b.open("#/runs/" + each)
		b.wait("the run finished", `document.getElementById("run-status").textContent.includes("succeeded")`, 30*time.Second)
		b.do("select the call", chromedp.Evaluate[chromedp.Void](`document.querySelector('g.g-call[data-group="0"][data-call="0"]').dispatchEvent(new MouseEvent("click", { bubbles: true }))`))
		b.wait("the details", `!!document.querySelector('.panel.detail tr[data-item-args="1"]')`, 5*time.Second)
		detail := eval[[]string](b, `[document.querySelector(".panel.detail").textContent, document.querySelector('.panel.detail tr[data-item-args="1"] summary').textContent, String(document.querySelectorAll(".panel.detail tr[data-item-args]").length)]`)
		if len(detail) != 3 || !strings.Contains(detail[0], "Arguments sent to its first item ($index 0)") || !strings.Contains(detail[0], `"src/main.go"`) || detail[1] != `arguments sent {"path":"src/gone.go"}` || detail[2] != "1" {
			t.Errorf("%s: the for_each call's details: %q; want its first item's arguments and item 1's", size.name, detail)
		}
		b.do("expand item 1", chromedp.Evaluate[chromedp.Void](`document.querySelector('.panel.detail tr[data-item-args="1"] details').open = true`))
		if got := eval[string](b, `document.querySelector('.panel.detail tr[data-item-args="1"] .json-tree').textContent`); !strings.Contains(got, `"path": "src/gone.go"`) {
			t.Errorf("%s: item 1's arguments read %q", size.name, got)
		}
		// Arguments over 2 KiB: their size and the start the run kept.
		b.do("open the list", chromedp.Evaluate[chromedp.Void](`document.querySelector('.groups').closest("details").open = true`))
		b.do("expand the long arguments", chromedp.Evaluate[chromedp.Void](`document.querySelector('.groups li[data-group="1"][data-call="0"] details.call-args').open = true`))
		clipped := eval[[]string](b, `(function(){ const c = document.querySelector('.groups li[data-group="1"][data-call="0"] .clipped-args'); return c ? [c.querySelector("p").textContent, c.querySelector("pre").textContent] : [] })()`)
		if len(clipped) != 2 || !strings.Contains(clipped[0], "3.0 KiB of arguments were sent") || !strings.Contains(clipped[0], "first 2.0 KiB") || !strings.HasPrefix(clipped[1], `{"data":{},"template":"xxx`) || !strings.HasSuffix(clipped[1], "x…") {
			t.Errorf("%s: the clipped arguments show %q; want their size and start", size.name, clipped)
		}
		checkPage(t, b, "for_each arguments ("+size.name+")")
		shot(t, b, dir, "call-args-each-"+size.name)
		shotOf(t, b, dir, "call-args-each-detail-"+size.name, ".panel.detail")
	}
	b.checkNoErrors(t)
}

// shotOf writes a screenshot of the first element matching css as
// dir/name.png (a part of the page, to look at its details).
func shotOf(t *testing.T, b *browser, dir, name, css string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("screenshot %s of %s: %v", name, css, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
