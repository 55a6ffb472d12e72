package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// httpError is a non-2xx answer of the API.
type httpError struct {
	Status int
	Body   struct {
		Error  string            `json:"error"`
		Code   string            `json:"code"`
		Fields map[string]string `json:"fields"`
	}
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body.Error) }

func getJSON(u string, out any) error { return getJSONAuth(u, "", out) }

// getJSONAuth is getJSON with a bearer token ("" for none).
func getJSONAuth(u, token string, out any) error {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return decode(res, out)
}

func postJSON(u string, in, out any) error {
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(console.ActionHeader, "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return decode(res, out)
}

func decode(res *http.Response, out any) error {
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		e := &httpError{Status: res.StatusCode}
		_ = json.Unmarshal(b, &e.Body)
		if e.Body.Error == "" {
			e.Body.Error = string(b)
		}
		return e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// runView is what the tests read of GET /api/runs/{id}.
type runView struct {
	State    events.RunState `json:"state"`
	Sequence json.RawMessage `json:"sequence"`
	Slots    map[string]struct {
		Value json.RawMessage `json:"value"`
		Size  int             `json:"size"`
	} `json:"slots"`
	Timeline []events.RunEvent `json:"timeline"`
}

// waitRun reads a run until cond holds (30 s at most).
func waitRun(t *testing.T, e *env, id string, what string, cond func(v *runView) bool) *runView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var v runView
		err := getJSON(e.url+"api/runs/"+id, &v)
		if err == nil && cond(&v) {
			return &v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s did not happen in 60 s (last: %v, status %q, error %q)", id, what, err, v.State.Status, v.State.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAPIRunForm(t *testing.T) {
	e := start(t, console.Config{})
	u := e.url + "api/seqs/console-demo/run"

	// The form's values are checked by the CLI's rules, field by field.
	var he *httpError
	err := postJSON(u, map[string]any{"args": map[string]string{"wait_ms": "soon", "nope": "x"}}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest {
		t.Fatalf("run with bad arguments: %v; want 400", err)
	}
	_, cliErr := runargs.Value("integer", "soon")
	if want := "wait_ms is declared integer; " + cliErr.Error(); he.Body.Fields["wait_ms"] != want {
		t.Errorf("fields.wait_ms = %q; want the CLI's %q", he.Body.Fields["wait_ms"], want)
	}
	if !strings.Contains(he.Body.Fields["wait_ms"], `give a whole number such as 10, not "soon"`) {
		t.Errorf("fields.wait_ms = %q; want the --arg message", he.Body.Fields["wait_ms"])
	}
	if !strings.Contains(he.Body.Fields["root"], "missing") || !strings.Contains(he.Body.Fields["nope"], `unknown argument "nope"`) {
		t.Errorf("fields = %v; want root missing and nope unknown", he.Body.Fields)
	}
	if !strings.Contains(he.Body.Error, "the run was not started") {
		t.Errorf("error = %q", he.Body.Error)
	}

	// A program may send JSON values of the arguments' types instead of
	// the form's text; a value of another type is named per field.
	err = postJSON(u, map[string]any{"args": map[string]any{"root": 5, "wait_ms": 10}}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Body.Fields["root"] != `root is declared string; give a JSON string such as "text", not an integer 5` || he.Body.Fields["wait_ms"] != "" {
		t.Errorf("run with a number for a string: %v, fields %v; want 400 naming root alone", err, fieldsOf(he))
	}
	// A key given twice is refused, as --args-file refuses it.
	err = postJSON(u, json.RawMessage(`{"args": {"root": ".", "wait_ms": 10, "root": "/"}}`), nil)
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || !strings.Contains(he.Body.Error, `the argument "root" is given twice`) {
		t.Errorf("run with a key given twice: %v; want 400 naming the key", err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	if err := postJSON(u, map[string]any{"args": map[string]any{"root": ".", "wait_ms": 10}}, &started); err != nil {
		t.Fatal(err)
	}
	v := waitRun(t, e, started.RunID, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	if len(v.Sequence) == 0 {
		t.Error("the run's view has no sequence")
	}
	var report string
	_ = json.Unmarshal(v.Slots["report"].Value, &report)
	if !strings.HasSuffix(report, "entries, waited 10 ms") {
		t.Errorf("slot report = %q", report)
	}
	var res seq.Result
	if err := json.Unmarshal(v.State.Result, &res); err != nil || len(res.Groups) != 4 || res.Groups[2].Status != seq.GroupSkipped {
		t.Fatalf("result = %s (%v); want 4 groups, the third skipped", v.State.Result, err)
	}
	// The timeline is read from EVENTS: started, four groups, finished.
	v = waitRun(t, e, started.RunID, "a complete timeline", func(v *runView) bool { return len(v.Timeline) >= 6 })
	var kinds []string
	for _, ev := range v.Timeline {
		kinds = append(kinds, ev.Kind)
	}
	if got := strings.Join(kinds, " "); got != "started group group group group finished" {
		t.Errorf("timeline = %s", got)
	}
	if v.State.Trigger != events.TriggerManual {
		t.Errorf("trigger = %q", v.State.Trigger)
	}
}

func TestAPICancelRerunAndErrors(t *testing.T) {
	e := start(t, console.Config{})
	ctx := context.Background()
	id, err := e.runs.Start(ctx, events.SeqRunRequest{Sequence: "console-long", Args: json.RawMessage(`{"ms": 600000}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, e, id, "running", func(v *runView) bool { return v.State.Status == events.StatusRunning })
	if err := postJSON(e.url+"api/runs/"+id+"/cancel", map[string]string{"reason": "from the test"}, nil); err != nil {
		t.Fatal(err)
	}
	v := waitRun(t, e, id, "cancelled", func(v *runView) bool { return v.State.Status == events.StatusCancelled })
	if v.State.Cancel == nil || v.State.Cancel.By != "console test" || v.State.Cancel.Reason != "from the test" {
		t.Errorf("cancel = %+v; want by the console's user, with the reason", v.State.Cancel)
	}
	// Again: idempotent.
	if err := postJSON(e.url+"api/runs/"+id+"/cancel", map[string]string{}, nil); err != nil {
		t.Errorf("second cancel: %v", err)
	}

	// A finished run: the seqworker's 409, with the client's message.
	var started struct {
		RunID string `json:"run_id"`
	}
	if err := postJSON(e.url+"api/seqs/console-demo/run", map[string]any{"args": map[string]string{"root": ".", "wait_ms": "1"}}, &started); err != nil {
		t.Fatal(err)
	}
	waitRun(t, e, started.RunID, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	_, cerr := e.runs.Cancel(ctx, started.RunID, "x", "")
	var he *httpError
	err = postJSON(e.url+"api/runs/"+started.RunID+"/cancel", map[string]string{}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusConflict || he.Body.Code != "409" || cerr == nil || he.Body.Error != errtext.Error(cerr) {
		t.Errorf("cancel of a finished run: %v (code %q); want 409 with the client's %v", err, codeOf(he), cerr)
	}

	var rerun struct {
		RunID string `json:"run_id"`
	}
	if err := postJSON(e.url+"api/runs/"+started.RunID+"/rerun", map[string]string{}, &rerun); err != nil || rerun.RunID == "" || rerun.RunID == started.RunID {
		t.Fatalf("rerun: %+v, %v", rerun, err)
	}
	waitRun(t, e, rerun.RunID, "succeeded", func(v *runView) bool { return v.State.Status == events.StatusSucceeded })
	// A run that succeeded is not retried: 409, with the client's error.
	_, rerr := e.runs.Retry(ctx, started.RunID, "", false)
	err = postJSON(e.url+"api/runs/"+started.RunID+"/retry", map[string]string{}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusConflict || rerr == nil || he.Body.Error != errtext.Error(rerr) {
		t.Errorf("retry of a succeeded run: %v (code %q); want 409 with the client's %v", err, codeOf(he), rerr)
	}

	_, serr := e.runs.Status(ctx, "no-such-run")
	err = getJSON(e.url+"api/runs/no-such-run", nil)
	if !errors.As(err, &he) || he.Status != http.StatusNotFound || serr == nil || he.Body.Error != errtext.Error(serr) || he.Body.Code != "404" {
		t.Errorf("unknown run: %v; want 404 with the client's %v", err, serr)
	}
	// Errors in words, each with a code: no Go package or type names.
	err = postJSON(e.url+"api/runs/"+started.RunID+"/cancel", map[string]any{"reason": 5}, nil)
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Body.Code != "400" || he.Body.Error != "the request body is not what this endpoint takes: reason: got a JSON number, want a string" {
		t.Errorf("cancel with a number for its reason: %v (code %q); want 400 saying reason wants a string", err, codeOf(he))
	}
	if err := postJSON(e.url+"api/runs/x/cancel", map[string]int{"nope": 1}, nil); !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Body.Code != "400" {
		t.Errorf("cancel with an unknown field: %v; want 400", err)
	}
}

func codeOf(he *httpError) string {
	if he == nil {
		return ""
	}
	return he.Body.Code
}

type runsPage struct {
	Runs   []events.RunSummary `json:"runs"`
	Total  int                 `json:"total"`
	Counts map[string]int      `json:"counts"`
	Next   string              `json:"next"`
	Live   bool                `json:"live"`
	// The page's position (live list only) and the statuses a filter offers.
	First    int      `json:"first"`
	HasPrev  bool     `json:"has_prev"`
	Prev     string   `json:"prev"`
	Statuses []string `json:"statuses"`
}

func TestAPIRunsList(t *testing.T) {
	e := start(t, console.Config{})
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		id, err := e.runs.Start(ctx, events.SeqRunRequest{Sequence: "console-demo", Args: json.RawMessage(`{"root": ".", "wait_ms": 1}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// A mistyped argument is refused before a run is made (seq.run checks
	// the signature); a null one passes it and the tool refuses it, so the
	// run fails.
	if _, err := e.runs.Start(ctx, events.SeqRunRequest{Sequence: "console-long", Args: json.RawMessage(`{"ms": "x"}`)}); err == nil || !strings.Contains(err.Error(), "ms is declared integer") {
		t.Fatalf("Start with ms \"x\" = %v; want refused: ms is declared integer", err)
	}
	bad, err := e.runs.Start(ctx, events.SeqRunRequest{Sequence: "console-long", Args: json.RawMessage(`{"ms": null}`)})
	if err != nil {
		t.Fatal(err)
	}
	var page runsPage
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := getJSON(e.url+"api/runs", &page)
		if err == nil && page.Live && page.Counts[events.StatusSucceeded] == 3 && page.Counts[events.StatusFailed] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs list: %+v, %v; want 3 succeeded and 1 failed, live", page, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if page.Runs[0].RunID != bad {
		t.Errorf("newest run = %s; want the last started, %s", page.Runs[0].RunID, bad)
	}
	check := func(query string, want ...string) {
		t.Helper()
		var p runsPage
		if err := getJSON(e.url+"api/runs?"+query, &p); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var got []string
		for _, r := range p.Runs {
			got = append(got, r.RunID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || p.Total != len(want) {
			t.Errorf("runs?%s = %v (total %d); want %v", query, got, p.Total, want)
		}
	}
	check("status=failed", bad)
	check("sequence=console-demo&status=succeeded", ids[2], ids[1], ids[0])
	check("trigger=manual&sequence=console-long", bad)
	check("trigger=boot")
	check("since=1h&sequence=console-long", bad)
	check("until=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)))
	// The search: every word matches the run id (any part of it), the
	// sequence, the status, the trigger, the worker or the error.
	check("q="+url.QueryEscape(bad[len(bad)-8:]), bad) // a part of its id (the end: the start is shared by ids made together)
	check("q=CONSOLE-LONG", bad)                       // words other than ids match in any case
	check("q=long", bad)
	check("q=FAILED", bad)
	check("q=console+succeeded", ids[2], ids[1], ids[0])
	check("q=manual+demo", ids[2], ids[1], ids[0])
	check("q=got+null", bad) // its error: the tool refused the null argument
	check("q=console-demo+failed")
	check("q="+url.QueryEscape(ids[1])+"&status=succeeded", ids[1])
	if !slices.Equal(page.Statuses, []string{"queued", "running", "interrupted", "succeeded", "failed", "cancelled"}) {
		t.Errorf("statuses %v; want the six known, in order", page.Statuses)
	}
	// Pages: the next one's cursor, and from the second the page before.
	var p1, p2, p3 runsPage
	if err := getJSON(e.url+"api/runs?sequence=console-demo&limit=2", &p1); err != nil || len(p1.Runs) != 2 || p1.Next == "" || p1.First != 0 || p1.HasPrev {
		t.Fatalf("first page: %+v, %v", p1, err)
	}
	if err := getJSON(e.url+"api/runs?sequence=console-demo&limit=2&before="+url.QueryEscape(p1.Next), &p2); err != nil || len(p2.Runs) != 1 || p2.Runs[0].RunID != ids[0] || p2.First != 2 || !p2.HasPrev || p2.Prev != "" {
		t.Fatalf("second page: %+v, %v; want the oldest run at position 2, the newest page before it", p2, err)
	}
	if err := getJSON(e.url+"api/runs?limit=1&before="+url.QueryEscape(p1.Next), &p3); err != nil || p3.First != 3 || !p3.HasPrev || p3.Prev == "" {
		t.Fatalf("a page of one after the second demo run: %+v, %v; want position 3 and the cursor of the page before", p3, err)
	}
	var back runsPage
	if err := getJSON(e.url+"api/runs?limit=1&before="+url.QueryEscape(p3.Prev), &back); err != nil || back.First != 2 || back.Runs[0].RunID != ids[1] {
		t.Fatalf("the page before it: %+v, %v; want position 2, the second demo run", back, err)
	}
	// Bad filters read as seq.list says them.
	var he *httpError
	if err := getJSON(e.url+"api/runs?status=nope", nil); !errors.As(err, &he) || he.Status != 400 || !strings.Contains(he.Body.Error, `status "nope"; want queued, running, interrupted, succeeded, failed or cancelled`) {
		t.Errorf("bad status: %v", err)
	}
	if err := getJSON(e.url+"api/runs?trigger=cron", nil); !errors.As(err, &he) || he.Status != 400 || !strings.Contains(he.Body.Error, "want manual, boot, schedule, manual-tick, backfill or seq_call") {
		t.Errorf("bad trigger: %v", err)
	}
	if err := getJSON(e.url+"api/runs?since=yesterday", nil); !errors.As(err, &he) || he.Status != 400 {
		t.Errorf("bad since: %v", err)
	}
	if err := getJSON(e.url+"api/runs?q="+strings.Repeat("x", 300), nil); !errors.As(err, &he) || he.Status != 400 || !strings.Contains(he.Body.Error, "the search is 300 bytes; at most 256") {
		t.Errorf("long search: %v", err)
	}
}

// sse reads server-sent events from the console.
type sse struct {
	res *http.Response
	sc  *bufio.Scanner
}

func openSSE(t *testing.T, u string) *sse {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream content type %q", ct)
	}
	t.Cleanup(func() { res.Body.Close() })
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sse{res: res, sc: sc}
}

// next returns the next event's name and data.
func (s *sse) next() (string, string, error) {
	var name, data string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && name != "":
			return name, data, nil
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	if err := s.sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", io.EOF
}

// until reads events until match returns true, for at most d.
func (s *sse) until(t *testing.T, d time.Duration, what string, match func(name, data string) bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			name, data, err := s.next()
			if err != nil {
				done <- err
				return
			}
			if match(name, data) {
				done <- nil
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stream ended before %s: %v", what, err)
		}
	case <-time.After(d):
		s.res.Body.Close()
		t.Fatalf("no %s on the stream in %s", what, d)
	}
}

func TestAPIStream(t *testing.T) {
	e := start(t, console.Config{})
	all := openSSE(t, e.url+"api/stream")
	all.until(t, 10*time.Second, "hello", func(name, data string) bool {
		return name == "hello" && strings.Contains(data, `"live":true`)
	})
	id, err := e.runs.Start(context.Background(), events.SeqRunRequest{Sequence: "console-long", Args: json.RawMessage(`{"ms": 1500}`)})
	if err != nil {
		t.Fatal(err)
	}
	one := openSSE(t, e.url+"api/stream?run="+id)
	var kinds []string
	one.until(t, 60*time.Second, "the run's finished event", func(name, data string) bool {
		if name != "run" {
			return false
		}
		var ev events.RunEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.RunID != id {
			t.Errorf("run event %s: %v (run %q, want %q)", data, err, ev.RunID, id)
			return true
		}
		kinds = append(kinds, ev.Kind)
		return ev.Kind == events.RunFinished
	})
	if got := strings.Join(kinds, " "); !strings.HasSuffix(got, "group finished") {
		t.Errorf("run events = %q; want ... group finished", got)
	}
	// The runs page's stream gets the run's summaries, ending succeeded.
	all.until(t, 30*time.Second, "a succeeded summary of the run", func(name, data string) bool {
		if name != "summaries" {
			return false
		}
		var list []events.RunSummary
		_ = json.Unmarshal([]byte(data), &list)
		for _, s := range list {
			if s.RunID == id && s.Status == events.StatusSucceeded {
				return true
			}
		}
		return false
	})
}

func TestAPISequences(t *testing.T) {
	e := start(t, console.Config{})
	var list struct {
		Sequences []struct {
			Name      string            `json:"name"`
			Signature map[string]string `json:"signature"`
			NextTick  *time.Time        `json:"next_tick"`
			TimeZone  string            `json:"timezone"`
			Source    string            `json:"source"`
		} `json:"sequences"`
	}
	if err := getJSON(e.url+"api/seqs", &list); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, s := range list.Sequences {
		switch s.Name {
		case "console-demo":
			found++
			if s.Signature["root"] != "string" || s.Signature["wait_ms"] != "integer" || s.Source != "sequences/console-demo.seq.yaml" {
				t.Errorf("console-demo = %+v", s)
			}
		case "console-nightly":
			found++
			want, _, _ := seq.NextTick("0 0 3 * * *", "Europe/Berlin", time.Now())
			if s.NextTick == nil || !s.NextTick.Equal(want) || s.TimeZone != "Europe/Berlin" {
				t.Errorf("console-nightly next tick = %v (%s); want %v", s.NextTick, s.TimeZone, want)
			}
		}
	}
	if found != 2 {
		t.Errorf("sequences = %+v", list.Sequences)
	}
	var one struct {
		Name          string                `json:"name"`
		Sequence      json.RawMessage       `json:"sequence"`
		Source        string                `json:"source"`
		ScheduleState *events.ScheduleEvent `json:"schedule_state"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := getJSON(e.url+"api/seqs/console-nightly", &one)
		if err == nil && one.ScheduleState != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("console-nightly: %+v, %v; want its schedule state", one, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if one.ScheduleState.Status != events.ScheduleSet || one.Source != "sequences/console-nightly.seq.yaml" {
		t.Errorf("console-nightly = %+v, state %+v", one, one.ScheduleState)
	}
	if s, err := seq.Decode(one.Sequence); err != nil || s.Name != "console-nightly" {
		t.Errorf("sequence AST: %v, %v", s, err)
	}
	var he *httpError
	if err := getJSON(e.url+"api/seqs/nope", nil); !errors.As(err, &he) || he.Status != 404 {
		t.Errorf("unknown sequence: %v; want 404", err)
	}
}

type previewAnswer struct {
	Response struct {
		Tools     []string `json:"tools"`
		Activated []string `json:"activated"`
		Triggered []string `json:"triggered"`
		Counts    map[string]int
	} `json:"response"`
	Removed []string `json:"removed"`
	Listing string   `json:"listing"`
	Skills  []struct {
		Name    string   `json:"name"`
		Outcome string   `json:"outcome"`
		Reasons []string `json:"reasons"`
	} `json:"skills"`
	Injected []struct{ Skill, Text string } `json:"injected"`
}

func TestAPIPreview(t *testing.T) {
	e := start(t, console.Config{})
	var p previewAnswer
	req := map[string]any{"system": "You are an agent.", "message": "Please DEPLOY the api", "work_files": []string{"./docs/form.pdf", "README.md"},
		"tools": []string{"Read", "Write", "Bash", "WebFetch"}}
	if err := postJSON(e.url+"api/preview", req, &p); err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Response.Activated, ",") != "deploy-helper,pdf-forms" {
		t.Errorf("activated = %v; want deploy-helper and pdf-forms", p.Response.Activated)
	}
	if strings.Join(p.Response.Tools, ",") != "Read,Bash" || strings.Join(p.Removed, ",") != "Write,WebFetch" {
		t.Errorf("surface %v, removed %v; want Read,Bash and Write,WebFetch removed", p.Response.Tools, p.Removed)
	}
	why := map[string]string{}
	outcome := map[string]string{}
	for _, s := range p.Skills {
		why[s.Name] = strings.Join(s.Reasons, "; ")
		outcome[s.Name] = s.Outcome
	}
	if outcome["deploy-helper"] != "activated" || why["deploy-helper"] != `the trigger "deploy" appears in the message` {
		t.Errorf("deploy-helper: %s: %s", outcome["deploy-helper"], why["deploy-helper"])
	}
	if why["pdf-forms"] != `the work file "./docs/form.pdf" matches its path "**/*.pdf"` {
		t.Errorf("pdf-forms: %s", why["pdf-forms"])
	}
	if outcome["typo-skill"] != "not activated" || !strings.Contains(why["typo-skill"], `none of its triggers ("typo") appears`) {
		t.Errorf("typo-skill: %s: %s", outcome["typo-skill"], why["typo-skill"])
	}
	if !strings.Contains(p.Listing, "deploy-helper: Deploy a service") || len(p.Injected) != 2 || !strings.Contains(p.Injected[0].Text, "# Deploy helper") {
		t.Errorf("listing %q, injected %+v", p.Listing, p.Injected)
	}

	// Budgets: one body per session drops the second skill.
	if err := postJSON(e.url+"api/preview", map[string]any{"message": "deploy", "work_files": []string{"a.pdf"}, "budgets": map[string]int{"session_bodies": 1}}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Response.Counts["bodies_dropped"] != 1 {
		t.Errorf("counts = %v; want one body dropped", p.Response.Counts)
	}

	// An unknown mount is skillface's 404.
	var he *httpError
	if err := postJSON(e.url+"api/preview", map[string]any{"message": "hi", "mounts": []string{"nope"}}, nil); !errors.As(err, &he) || he.Status != 404 || !strings.Contains(he.Body.Error, `cannot mount unknown skill "nope"`) {
		t.Errorf("unknown mount: %v", err)
	}

	// A preview stores no session.
	js, _ := jetstream.New(e.nc)
	kv, err := js.KeyValue(context.Background(), events.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := kv.ListKeys(context.Background()); err == nil {
		n := 0
		for range keys.Keys() {
			n++
		}
		if n != 0 {
			t.Errorf("%s holds %d sessions after previews; want none", events.BucketSessions, n)
		}
	}
}

func TestAPISkillsAndTools(t *testing.T) {
	e := start(t, console.Config{})
	var skills struct {
		Skills []struct {
			Name     string   `json:"name"`
			Warnings []string `json:"warnings"`
		} `json:"skills"`
	}
	if err := getJSON(e.url+"api/skills", &skills); err != nil {
		t.Fatal(err)
	}
	for _, s := range skills.Skills {
		if s.Name == "typo-skill" && (len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "allowed_tools")) {
			t.Errorf("typo-skill warnings = %v", s.Warnings)
		}
	}
	var sk struct {
		Info struct {
			Text string `json:"text"`
		} `json:"info"`
		Record struct {
			Sections []struct {
				Title string `json:"title"`
			} `json:"sections"`
			Triggers []string `json:"triggers"`
		} `json:"record"`
	}
	if err := getJSON(e.url+"api/skills/deploy-helper?section=rollout", &sk); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sk.Info.Text, "## Rollout") || len(sk.Record.Sections) < 3 || strings.Join(sk.Record.Triggers, ",") != "deploy,rollout" {
		t.Errorf("skill = %+v", sk)
	}

	var tools struct {
		Tools []struct {
			Tool      string `json:"tool"`
			Providers []struct {
				Provider  string   `json:"provider"`
				Site      string   `json:"site"`
				Instances []string `json:"instances"`
			} `json:"providers"`
			Schema json.RawMessage `json:"schema"`
		} `json:"tools"`
	}
	if err := getJSON(e.url+"api/tools", &tools); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, tl := range tools.Tools {
		if len(tl.Providers) > 0 {
			have[tl.Tool] = tl.Providers[0].Provider
			if tl.Providers[0].Site == "" {
				t.Errorf("tool %s: provider %s has no site; want its NATS server's name (docs/edge.md)", tl.Tool, tl.Providers[0].Provider)
			}
		}
	}
	if have["fs.read"] != "skillbus-builtin" || have["test.sleep"] != "console-test-tools" {
		t.Errorf("tools = %v", have)
	}
	var read struct {
		Result struct {
			Content string `json:"content"`
		} `json:"result"`
	}
	if err := postJSON(e.url+"api/tools/fs.read/call", map[string]any{"args": map[string]string{"path": "README.md"}}, &read); err != nil || !strings.Contains(read.Result.Content, "# A project") {
		t.Errorf("fs.read: %+v, %v", read, err)
	}
	var he *httpError
	if err := postJSON(e.url+"api/tools/fs.read/call", map[string]any{"args": map[string]int{"path": 5}}, nil); !errors.As(err, &he) || he.Body.Code != "400" || !strings.Contains(he.Body.Error, `"path"`) {
		t.Errorf("fs.read with a number: %v (code %q)", err, codeOf(he))
	}
	if err := postJSON(e.url+"api/tools/no.such/call", map[string]any{}, nil); !errors.As(err, &he) || he.Status != 503 || !strings.Contains(he.Body.Error, "no provider serves") {
		t.Errorf("unknown tool: %v", err)
	}
	if err := postJSON(e.url+"api/tools/fs.read/call", map[string]any{"args": []int{1}}, nil); !errors.As(err, &he) || he.Status != 400 {
		t.Errorf("array arguments: %v", err)
	}
}

func TestSecurity(t *testing.T) {
	e := start(t, console.Config{})
	do := func(method, path string, hdr map[string]string, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	json := map[string]string{"Content-Type": "application/json", console.ActionHeader: "1"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range json {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		want   int
	}{
		{"page", "GET", "", nil, 200},
		{"a rebinding host name", "GET", "api/runs", map[string]string{"Host": "evil.example:4280"}, 403},
		{"localhost by name", "GET", "api/runs", map[string]string{"Host": "localhost:4280"}, 200},
		{"an action without the header", "POST", "api/runs/x/rerun", map[string]string{"Content-Type": "application/json"}, 403},
		{"an action as a form", "POST", "api/runs/x/rerun", map[string]string{"Content-Type": "application/x-www-form-urlencoded", console.ActionHeader: "1"}, 415},
		{"an action from another origin", "POST", "api/runs/x/rerun", with(map[string]string{"Origin": "http://evil.example"}), 403},
		{"an action from another site", "POST", "api/runs/x/rerun", with(map[string]string{"Sec-Fetch-Site": "cross-site"}), 403},
		{"an action from the page", "POST", "api/runs/no-such/rerun", with(map[string]string{"Origin": strings.TrimSuffix(e.url, "/")}), 404},
	}
	for _, tc := range cases {
		res := do(tc.method, tc.path, tc.hdr, "{}")
		if res.StatusCode != tc.want {
			t.Errorf("%s: %s /%s = %d; want %d", tc.name, tc.method, tc.path, res.StatusCode, tc.want)
		}
		if tc.want == 200 && res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no Content-Security-Policy", tc.name)
		}
	}
	if _, err := console.New(e.nc, console.Config{Listen: "0.0.0.0:0"}); !errors.Is(err, console.ErrConfig) {
		t.Errorf("a non-loopback address without a token: %v; want ErrConfig", err)
	}
}

func TestToken(t *testing.T) {
	e := start(t, console.Config{Token: "s3cret"})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", e.url+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get("api/runs", nil); res.StatusCode != 401 {
		t.Errorf("API without the token: %d; want 401", res.StatusCode)
	}
	if res := get("", nil); res.StatusCode != 200 || res.Header.Get("Set-Cookie") != "" {
		t.Errorf("page without the token: %d; want the login page", res.StatusCode)
	}
	if res := get("api/runs", map[string]string{"Authorization": "Bearer s3cret"}); res.StatusCode != 200 {
		t.Errorf("API with the bearer token: %d", res.StatusCode)
	}
	if res := get("api/runs", map[string]string{"Authorization": "Bearer wrong"}); res.StatusCode != 401 {
		t.Errorf("API with a wrong token: %d", res.StatusCode)
	}
	res := get("?token=s3cret", nil)
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == console.CookieName {
			cookie = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("?token=: %d, cookie %+v; want a redirect setting an HttpOnly SameSite=Strict cookie", res.StatusCode, cookie)
	}
	if res := get("api/runs", map[string]string{"Cookie": console.CookieName + "=" + cookie.Value}); res.StatusCode != 200 {
		t.Errorf("API with the cookie: %d", res.StatusCode)
	}
	// The login form.
	form := url.Values{"token": {"s3cret"}}
	lres, err := noRedirect.PostForm(e.url+"login", form)
	if err != nil {
		t.Fatal(err)
	}
	lres.Body.Close()
	if lres.StatusCode != http.StatusSeeOther || len(lres.Cookies()) == 0 {
		t.Errorf("login: %d", lres.StatusCode)
	}
	bad, err := noRedirect.PostForm(e.url+"login", url.Values{"token": {"nope"}})
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: %d", bad.StatusCode)
	}
}

// TestAPINamesNormalised: a sequence name typed in decomposed form (e +
// U+0301, as macOS keyboards produce it) finds the sequence stored under
// its composed form, as the CLI does (docs/sequences.md, Names); before,
// the console answered 404 naming what looked like the same name.
func TestAPINamesNormalised(t *testing.T) {
	e := start(t, console.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.runs.SeqCreate(ctx, []byte(`{"name":"caf\u00e9-nfc","groups":[{"name":"caf\u00e9-nfc-g","tools":"{\"tool\":\"fs.list\",\"args\":{\"path\":\".\"}};"}]}`)); err != nil {
		t.Fatal(err)
	}
	var one struct {
		Name string `json:"name"`
	}
	if err := getJSON(e.url+"api/seqs/cafe%CC%81-nfc", &one); err != nil || one.Name != "caf\u00e9-nfc" {
		t.Errorf("GET api/seqs/ with a decomposed é = %+v, %v; want the sequence café-nfc", one, err)
	}
}

func fieldsOf(he *httpError) map[string]string {
	if he == nil {
		return nil
	}
	return he.Body.Fields
}

// TestLoginPageNamesTokenSettings: the login page and the refusal of a
// non-loopback address without a token name the settings `skillbus ui`
// reads the token from, SKILLBUS_TOKEN and --token-file (docs/console.md);
// they named SKILLBUS_UI_TOKEN, which nothing reads.
func TestLoginPageNamesTokenSettings(t *testing.T) {
	e := start(t, console.Config{Token: "s3cret-s3cret-s3cret"})
	res, err := http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	if res.StatusCode != 200 || !strings.Contains(page, `action="/login"`) {
		t.Fatalf("GET / without the token = %d %q; want the login page", res.StatusCode, page)
	}
	if !strings.Contains(page, "<code>--token-file</code>") || !strings.Contains(page, "<code>SKILLBUS_TOKEN</code>") || strings.Contains(page, "SKILLBUS_UI_TOKEN") {
		t.Errorf("the login page names %q; want --token-file and SKILLBUS_TOKEN, not SKILLBUS_UI_TOKEN", page)
	}
	_, err = console.New(e.nc, console.Config{Listen: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "SKILLBUS_TOKEN or --token-file") || strings.Contains(err.Error(), "SKILLBUS_UI_TOKEN") {
		t.Errorf("a non-loopback address without a token: %v; want the error to name SKILLBUS_TOKEN or --token-file", err)
	}
}
