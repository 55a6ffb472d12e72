package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// retryFromGroups lists the groups offering "Retry from here" in the
// run page's list of groups.
const retryFromGroups = `[...document.querySelectorAll(".groups button.retry-from")].map(b => b.dataset.group)`

// openGroupList opens the run page's "Groups and calls as a list" and
// scrolls to it.
const openGroupList = `(function(){ const d = document.querySelector(".groups").closest("details"); d.open = true; d.scrollIntoView(); return true })()`

// TestBrowserRetryFrom: the run page of a finished run offers "Retry from
// here" on each group a retry may start at (docs/console.md; docs/runs.md,
// "Retry from a group") — every group of a succeeded run, the groups up
// to the first one that did not finish of a cancelled run, none of a
// running one — in the list of groups and in a group's details; a click
// starts seq.retry with from and opens the new run, whose reused group
// says which run ran it. With credentials that may not retry, the buttons
// are disabled up front with the reason.
func TestBrowserRetryFrom(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	chromium(t)
	e := start(t, console.Config{})
	b := newBrowser(t, e)
	dir := screenshots(t)
	id := runDemo(t, e, 1)

	// A running run offers none; cancelled in group 2, groups 1 and 2.
	long, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-demo", Args: json.RawMessage(`{"root": ".", "wait_ms": 600000}`)})
	if err != nil {
		t.Fatal(err)
	}
	b.open("#/runs/" + long)
	b.wait("group 2 runs", callStatus(1, 0, "running"), 30*time.Second)
	if got := eval[[]string](b, retryFromGroups); len(got) != 0 {
		t.Errorf("a running run offers Retry from here on groups %v; want none", got)
	}
	if _, err := e.runs.Cancel(context.Background(), long, "test", "to retry it"); err != nil {
		t.Fatal(err)
	}
	b.wait("the run cancelled, groups 1 and 2 offered", `document.getElementById("run-status").textContent.includes("cancelled") && `+retryFromGroups+`.join() === "1,2"`, 30*time.Second)

	for _, size := range sizes {
		b.do("viewport", chromedp.EmulateViewport(size.w, size.h))
		b.open("#/runs/" + id)
		b.wait("the run succeeded, every group offered", `document.getElementById("run-status").textContent.includes("succeeded") && !!document.getElementById("retry-from-hint") && `+retryFromGroups+`.join() === "1,2,3,4"`, 30*time.Second)
		label := eval[string](b, `document.querySelector('.groups button.retry-from[data-group="2"]').getAttribute("aria-label")`)
		if label != "Retry from group 2 (demo-wait): a new run that reuses group 1 of this run and runs this group and every one after it again" {
			t.Errorf("%s: group 2's button is labelled %q", size.name, label)
		}
		eval[bool](b, openGroupList)
		checkPage(t, b, "retry from here ("+size.name+")")
		shot(t, b, dir, "retry-from-list-"+size.name)
		// A group's details offer it too; the click opens the new run.
		b.do("select group 2", chromedp.Click(chromedp.CSS(`.groups > li:nth-child(2) > button.link`)))
		b.wait("group 2's details with the button", `(function(){ const d = document.querySelector("section.detail"); return !d.hidden && d.textContent.includes("Group 2: demo-wait") && !!d.querySelector('button.retry-from[data-group="2"]') })()`, 10*time.Second)
		eval[bool](b, `(document.querySelector("section.detail").scrollIntoView(), true)`)
		shot(t, b, dir, "retry-from-detail-"+size.name)
		b.do("retry from group 2", chromedp.Click(chromedp.CSS(`section.detail button.retry-from`)))
		b.wait("the new run, succeeded, group 1 reused", fmt.Sprintf(`location.hash.startsWith("#/runs/run-") && location.hash !== "#/runs/%s" && !!document.getElementById("run-status") && document.getElementById("run-status").textContent.includes("succeeded") && (function(){ const r = [...document.querySelectorAll(".groups .reused")]; return r.length === 1 && r[0].textContent.includes(%q) && r[0].closest("li").textContent.includes("demo-list") })()`, id, id), 30*time.Second)
		nid := strings.TrimPrefix(eval[string](b, `location.hash`), "#/runs/")
		st, err := e.runs.Status(context.Background(), nid)
		if err != nil || st.RetryOf != id || st.Status != events.StatusSucceeded {
			t.Fatalf("%s: the new run %s: %+v, %v; want a succeeded retry of %s", size.name, nid, st, err, id)
		}
		if r := stateResult(t, st); len(r.Groups) != 4 || r.Groups[0].ReusedFrom != id || r.Groups[1].ReusedFrom != "" {
			t.Errorf("%s: the new run's groups %+v; want group 1 reused from %s, group 2 run again", size.name, r.Groups, id)
		}
		// The timeline draws the reused group as a mark, not as a bar at
		// the times of the run it came from.
		b.wait("the reused group's timeline row", `(function(){ const r = [...document.querySelectorAll(".tl-row.tl-group")].find((x) => x.textContent.includes("demo-list")); return !!r && r.textContent.includes("reused") && r.querySelectorAll(".tl-seg").length === 0 && r.querySelectorAll(".tl-mark").length === 1 })()`, 10*time.Second)
		eval[bool](b, openGroupList)
		shot(t, b, dir, "retry-from-new-run-"+size.name)
	}
	b.checkNoErrors(t)

	// Credentials that may not retry (the reader's, told to the console):
	// the buttons are there, disabled with the reason.
	le := startLocked(t, lockedOptions{role: auth.RoleConsole, knownCreds: true})
	done := startRun(t, le.url, "console-nightly", map[string]string{})
	_, srv := startConsoleAs(t, le.stack.URL(), le.setup, auth.RoleReader, true, &connErrs{})
	b.e = &env{url: srv.URL()}
	b.do("viewport", chromedp.EmulateViewport(1280, 800))
	b.open("#/runs/" + done)
	b.wait("Retry from here disabled with the reason", `document.getElementById("run-status").textContent.includes("succeeded") && (function(){ const bs = [...document.querySelectorAll("button.retry-from")]; return bs.length === 1 && bs.every(b => b.disabled && b.title.includes("needs to publish to skillbus.seq.retry")) })()`, 30*time.Second)
	eval[bool](b, openGroupList)
	shot(t, b, dir, "retry-from-reader")
}

// stateResult decodes the pkg/seq result inside a run's state.
func stateResult(t *testing.T, st *events.RunState) seq.Result {
	t.Helper()
	var r seq.Result
	if err := json.Unmarshal(st.Result, &r); err != nil {
		t.Fatalf("run %s: result: %v", st.RunID, err)
	}
	return r
}

// TestAPIRetryFrom: POST /api/runs/ID/retry with {"from"} is seq.retry
// with that group (docs/runs.md, "Retry from a group"): a succeeded run
// retried from group 2 answers the new run; a mistyped group answers 400
// with the seqworker's words (the closest name, the groups allowed), a
// from that is not a string 400 naming the field.
func TestAPIRetryFrom(t *testing.T) {
	e := start(t, console.Config{})
	id := runDemo(t, e, 1)
	waitRun(t, e, id, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	var he *httpError
	err := postJSON(e.url+"api/runs/"+id+"/retry", map[string]string{"from": "demo-wat"}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Body.Code != "400" || !strings.Contains(he.Body.Error, `did you mean "demo-wait"?`) || !strings.Contains(he.Body.Error, `3 "demo-never" or 4 "demo-report"`) {
		t.Errorf("retry from a mistyped group: %v (code %q); want 400 with did you mean and the groups allowed", err, codeOf(he))
	}
	err = postJSON(e.url+"api/runs/"+id+"/retry", map[string]any{"from": 2}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || !strings.Contains(he.Body.Error, "from: got a JSON number, want a string") {
		t.Errorf("retry with from 2 (a number): %v; want 400 naming the field", err)
	}
	var retry struct {
		RunID string `json:"run_id"`
	}
	if err := postJSON(e.url+"api/runs/"+id+"/retry", map[string]string{"from": "2"}, &retry); err != nil || retry.RunID == "" {
		t.Fatalf("retry from group 2: %+v, %v", retry, err)
	}
	v := waitRun(t, e, retry.RunID, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	if r := stateResult(t, &v.State); v.State.RetryOf != id || r.Groups[0].ReusedFrom != id || r.Groups[1].ReusedFrom != "" {
		t.Errorf("the retry from group 2: retry_of %q, groups %+v", v.State.RetryOf, r.Groups)
	}
}
