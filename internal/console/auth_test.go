package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/pkg/tool"
)

// violationLog is a nats-server logger that keeps the permission
// violations the server reports.
type violationLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *violationLog) Noticef(string, ...any) {}
func (l *violationLog) Warnf(string, ...any)   {}
func (l *violationLog) Debugf(string, ...any)  {}
func (l *violationLog) Tracef(string, ...any)  {}
func (l *violationLog) Fatalf(f string, a ...any) {
	l.Errorf(f, a...)
}
func (l *violationLog) Errorf(f string, a ...any) {
	if s := fmt.Sprintf(f, a...); strings.Contains(s, "Violation") {
		l.mu.Lock()
		l.lines = append(l.lines, s)
		l.mu.Unlock()
	}
}

func (l *violationLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// lockedEnv is the dev stack locked down with a generated `skillbus auth`
// setup (every service on its own user), the test tool test.sleep served
// by the provider role of the prefix "test", and a console connected with
// the credentials of one role.
type lockedEnv struct {
	env
	setup *auth.Setup
	log   *violationLog
	nc    *nats.Conn
	errs  connErrs // the console connection's own error handler's
}

// lockedOptions configure startLocked.
type lockedOptions struct {
	auth        auth.Options // Dir and ToolPrefixes are set by startLocked
	concurrency int          // the seqworker's; 0 its default
	role        string       // the console's credentials
	knownCreds  bool         // tell the console its creds file (Config.Creds)
}

// startLocked starts the locked-down stack with the fixture and a big file
// (a slot kept in RUN_SLOTS), then the console as o.role.
func startLocked(t *testing.T, o lockedOptions) *lockedEnv {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"sequences/console-big.seq.yaml": "name: console-big\ngroups:\n  - name: big-g\n    out: {text: object}\n    tools:\n      - {tool: fs.read, args: {path: big.txt}, as: text}\n",
		"work/big.txt":                   strings.Repeat("0123456789abcdef\n", 6000),
	}
	for name, text := range fixture {
		files[name] = text
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o.auth.Dir, o.auth.ToolPrefixes = t.TempDir(), []string{"test"}
	setup, err := auth.Generate(o.auth)
	if err != nil {
		t.Fatal(err)
	}
	log := &violationLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stack, err := devstack.Start(ctx, devstack.Config{Dir: dir, Tools: builtin.Config{Root: filepath.Join(dir, "work")}, Auth: setup, Concurrency: o.concurrency, ServerLogger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		_ = stack.Stop(sctx)
	})
	// test.sleep, served as the tool provider of the prefix "test".
	topts, err := auth.ConnectOptions(setup.CredsFile(auth.ToolRole("test")))
	if err != nil {
		t.Fatal(err)
	}
	tnc, err := nats.Connect(stack.URL(), topts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tnc.Close)
	schema, _ := tool.SchemaFor[sleepArgs]()
	tsrv, err := tool.Serve(tnc, tool.ServerConfig{Name: "console-test-tools", Version: "1.0.0"}, tool.Tool{
		Name: "test.sleep", Description: "Sleep for ms milliseconds.", Schema: schema,
		Func: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a sleepArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, tool.Errorf("400", "%v", err)
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
				return map[string]int{"ms": a.MS}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		defer scancel()
		_ = tsrv.Stop(sctx)
	})
	e := &lockedEnv{setup: setup, log: log}
	e.stack = stack
	e.nc, e.console = startConsoleAs(t, stack.URL(), setup, o.role, o.knownCreds, &e.errs)
	e.url = e.console.URL()
	waitStored(t, &e.env, 4)
	return e
}

// connErrs are the asynchronous errors of a connection, as its own error
// handler saw them.
type connErrs struct {
	mu   sync.Mutex
	errs []string
}

func (c *connErrs) has(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// startConsoleAs starts a console on a connection of its own as role; the
// connection's own error handler records into errs (the console chains
// its handler onto it).
func startConsoleAs(t *testing.T, url string, setup *auth.Setup, role string, knownCreds bool, errs *connErrs) (*nats.Conn, *console.Server) {
	t.Helper()
	opts, err := auth.ConnectOptions(setup.CredsFile(role))
	if err != nil {
		t.Fatal(err)
	}
	handler := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		errs.mu.Lock()
		errs.errs = append(errs.errs, err.Error())
		errs.mu.Unlock()
	})
	nc, err := nats.Connect(url, append(opts, nats.Name("console as "+role), handler)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	// Not told its creds file, the console cannot know what they allow
	// (as with a user and password, an nkey or a token); it still names
	// them, as `skillbus ui` does from its connection settings.
	cfg := console.Config{Listen: "127.0.0.1:0", Credentials: "the " + role + " role's creds (a test connection)"}
	if knownCreds {
		cfg.Creds, cfg.Credentials = setup.CredsFile(role), ""
	}
	srv, err := console.New(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return nc, srv
}

// refusalInfo is a refusal as /api/info and the stream report it.
type refusalInfo struct {
	Op, Subject, Role, Credentials, Error, Effect string
}

// consoleInfo is what the tests read of /api/info.
type consoleInfo struct {
	Role     string        `json:"role"`
	Live     bool          `json:"live"`
	RunsLive bool          `json:"runs_live"`
	Refused  []refusalInfo `json:"refused"`
	Limits   []struct {
		What, Label, Subject, Reason string
	} `json:"limits"`
}

// toolsPage is what the tests read of /api/tools.
type toolsPage struct {
	Tools []struct {
		Tool        string `json:"tool"`
		CallRefused string `json:"call_refused"`
	} `json:"tools"`
	CallNote string `json:"call_note"`
}

// eventually polls cond every 50 ms for d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startRun starts a stored sequence through the console's run form.
func startRun(t *testing.T, url, name string, args map[string]string) string {
	t.Helper()
	var started struct {
		RunID string `json:"run_id"`
	}
	if err := postJSON(url+"api/seqs/"+name+"/run", map[string]any{"args": args}, &started); err != nil || started.RunID == "" {
		t.Fatalf("run %s: %v", name, err)
	}
	return started.RunID
}

// TestConsoleRole runs the console with the console role's credentials on
// a bus locked down by the generated setup, the seqworker running one run
// at a time: the runs list is live and shows a queued run as soon as it is
// queued (before it starts, while another run holds the worker); a run's
// page (its slot kept in RUN_SLOTS, its timeline), the sequences, skills,
// preview and tools pages all work; the tool form says at once, without
// trying, that calling tools needs a permission the role does not have;
// and the server logs no permission violation at all.
func TestConsoleRole(t *testing.T) {
	e := startLocked(t, lockedOptions{concurrency: 1, role: auth.RoleConsole, knownCreds: true})
	var info consoleInfo
	eventually(t, 30*time.Second, "the runs list to be live", func() bool {
		return getJSON(e.url+"api/info", &info) == nil && info.RunsLive
	})
	if info.Role != auth.RoleConsole || !info.Live || len(info.Refused) > 0 {
		t.Errorf("info = %+v; want role console, live, nothing refused", info)
	}
	stream := openSSE(t, e.url+"api/stream")
	stream.until(t, 10*time.Second, "hello", func(name, data string) bool {
		return name == "hello" && strings.Contains(data, `"runs_live":true`) && strings.Contains(data, `"refused":[]`)
	})

	// A holds the only slot of the seqworker; B, started after, is queued
	// and appears at once.
	a := startRun(t, e.url, "console-long", map[string]string{"ms": "5000"})
	stream.until(t, 30*time.Second, "run A running", func(name, data string) bool {
		return name == "summaries" && strings.Contains(data, `"run_id":"`+a+`"`) && strings.Contains(data, `"status":"running"`)
	})
	b := startRun(t, e.url, "console-long", map[string]string{"ms": "10"})
	stream.until(t, 10*time.Second, "run B queued", func(name, data string) bool {
		var sums []struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if name != "summaries" || json.Unmarshal([]byte(data), &sums) != nil {
			return false
		}
		for _, s := range sums {
			if s.RunID == b && s.Status == "queued" {
				return true
			}
		}
		return false
	})
	var page struct {
		runsPage
		NotLive string `json:"not_live"`
	}
	if err := getJSON(e.url+"api/runs?status=queued", &page); err != nil || !page.Live || len(page.Runs) != 1 || page.Runs[0].RunID != b || page.Counts["running"] != 1 {
		t.Errorf("queued runs = %+v, %v; want B alone, from the live list, A counted as running", page, err)
	}
	stream.until(t, 60*time.Second, "run B succeeded", func(name, data string) bool {
		return name == "summaries" && strings.Contains(data, `"run_id":"`+b+`"`) && strings.Contains(data, `"status":"succeeded"`)
	})

	// A run whose slot is kept in RUN_SLOTS; its page reads it back, the
	// sequence and the timeline.
	big := startRun(t, e.url, "console-big", map[string]string{})
	v := waitRun(t, &e.env, big, "succeeded", func(v *runView) bool { return v.State.Status == "succeeded" })
	var full struct {
		Slots map[string]struct {
			Size   int    `json:"size"`
			Stored string `json:"stored"`
		} `json:"slots"`
		SlotsError   string `json:"slots_error"`
		TimelineNote string `json:"timeline_note"`
		SequenceNote string `json:"sequence_note"`
	}
	if err := getJSON(e.url+"api/runs/"+big, &full); err != nil || full.Slots["text"].Stored == "" || full.Slots["text"].Size < 100000 || full.SlotsError != "" || full.TimelineNote != "" || full.SequenceNote != "" || len(v.Timeline) == 0 {
		t.Errorf("run page of %s = %+v, %v (timeline %d events); want the slot read from RUN_SLOTS, the sequence and the timeline", big, full, err, len(v.Timeline))
	}
	// The other pages.
	for _, p := range []string{"api/seqs", "api/seqs/console-nightly", "api/skills", "api/skills/deploy-helper", "api/runs/" + a} {
		if err := getJSON(e.url+p, nil); err != nil {
			t.Errorf("GET %s: %v", p, err)
		}
	}
	if err := postJSON(e.url+"api/preview", map[string]any{"message": "please deploy it"}, nil); err != nil {
		t.Errorf("preview: %v", err)
	}
	if err := postJSON(e.url+"api/runs/"+b+"/rerun", map[string]any{}, nil); err != nil {
		t.Errorf("rerun: %v", err)
	}

	// Tools: listed, and the form says at once why it cannot call.
	var tp toolsPage
	eventually(t, 10*time.Second, "test.sleep on the tools page", func() bool {
		if getJSON(e.url+"api/tools", &tp) != nil {
			return false
		}
		for _, tl := range tp.Tools {
			if tl.Tool == "test.sleep" {
				return true
			}
		}
		return false
	})
	for _, tl := range tp.Tools {
		if !strings.Contains(tl.CallRefused, "tool."+tl.Tool) || !strings.Contains(tl.CallRefused, "role console") || !strings.Contains(tl.CallRefused, auth.ConsoleCallsToolsFlag) {
			t.Errorf("%s: call_refused = %q; want the subject, the role and %s", tl.Tool, tl.CallRefused, auth.ConsoleCallsToolsFlag)
		}
	}
	if tp.CallNote == "" {
		t.Errorf("the tools page has no call note")
	}
	start := time.Now()
	err := postJSON(e.url+"api/tools/test.sleep/call", map[string]any{"args": map[string]int{"ms": 1}, "timeout_ms": 25000}, nil)
	var he *httpError
	if !errors.As(err, &he) || he.Status != 403 || he.Body.Code != "403" || !strings.Contains(he.Body.Error, "tool.test.sleep") || !strings.Contains(he.Body.Error, "role console") {
		t.Errorf("tool call as the console role = %v; want 403 naming tool.test.sleep and the role", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refused tool call took %v; want an answer at once", d)
	}
	// Nothing the console did was refused by the server (the tool call
	// was not even tried).
	if v := e.log.all(); len(v) > 0 {
		t.Errorf("the server logged %d permission violations of the console:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// TestConsoleCallsTools: with `skillbus auth --console-calls-tools` the
// console role may call tools, and the form works.
func TestConsoleCallsTools(t *testing.T) {
	on := true
	e := startLocked(t, lockedOptions{auth: auth.Options{ConsoleCallsTools: &on}, role: auth.RoleConsole, knownCreds: true})
	var tp toolsPage
	eventually(t, 10*time.Second, "test.sleep on the tools page", func() bool {
		if getJSON(e.url+"api/tools", &tp) != nil {
			return false
		}
		for _, tl := range tp.Tools {
			if tl.Tool == "test.sleep" {
				return tl.CallRefused == ""
			}
		}
		return false
	})
	if tp.CallNote != "" {
		t.Errorf("call note %q; want none with the opt-in", tp.CallNote)
	}
	var res struct {
		Result map[string]int `json:"result"`
	}
	if err := postJSON(e.url+"api/tools/test.sleep/call", map[string]any{"args": map[string]int{"ms": 3}}, &res); err != nil || res.Result["ms"] != 3 {
		t.Errorf("tool call with the opt-in = %+v, %v; want test.sleep's answer", res, err)
	}
	if v := e.log.all(); len(v) > 0 {
		t.Errorf("the server logged permission violations:\n%s", strings.Join(v, "\n"))
	}
}

// TestRunnerRole: on a bus locked down by the generated setup, a console
// given the runner role's credentials — which may not watch RUNS or call
// tools — without being told its creds file (so it cannot know in
// advance): the server's refusal of the RUNS watch is shown at once with
// its subject, the credentials' role and what the pages lose (hello,
// /api/info, the runs page), the runs list falls back to seq.list and
// still updates from run events, and a tool call is answered 403 as soon
// as the server refuses it, not at its timeout. Told its creds file, the
// console does not even try the call.
func TestRunnerRole(t *testing.T) {
	e := startLocked(t, lockedOptions{role: auth.RoleRunner})
	var info consoleInfo
	eventually(t, 15*time.Second, "the RUNS watch's refusal on /api/info", func() bool {
		return getJSON(e.url+"api/info", &info) == nil && len(info.Refused) > 0
	})
	r := info.Refused[0]
	if r.Op != "subscribe" || r.Subject != "$KV.RUNS.>" || !strings.Contains(r.Error, "refused to let these credentials subscribe") ||
		!strings.Contains(r.Effect, "not live") || info.RunsLive {
		t.Errorf("refusal = %+v (runs live %v); want the subscription to $KV.RUNS.> and that the runs list is not live", r, info.RunsLive)
	}
	stream := openSSE(t, e.url+"api/stream")
	stream.until(t, 10*time.Second, "hello with the refusal", func(name, data string) bool {
		return name == "hello" && strings.Contains(data, `"runs_live":false`) && strings.Contains(data, `$KV.RUNS.`)
	})
	a := startRun(t, e.url, "console-nightly", map[string]string{})
	stream.until(t, 30*time.Second, "a finished summary from the run's events", func(name, data string) bool {
		return name == "summaries" && strings.Contains(data, a) && strings.Contains(data, `"status":"succeeded"`)
	})
	var page struct {
		runsPage
		NotLive string `json:"not_live"`
	}
	if err := getJSON(e.url+"api/runs?trigger=manual", &page); err != nil || page.Live || len(page.Runs) == 0 || page.Runs[0].RunID != a || !strings.Contains(page.NotLive, "$KV.RUNS.") {
		t.Errorf("runs through seq.list: %+v, %v; want the run, not live, saying why", page, err)
	}
	// The search through seq.list: applied to its newest runs, with a note.
	var found struct {
		runsPage
		Note string `json:"note"`
	}
	if err := getJSON(e.url+"api/runs?q="+a[len(a)-6:]+"+nightly", &found); err != nil || len(found.Runs) != 1 || found.Runs[0].RunID != a || !strings.Contains(found.Note, "the search") {
		t.Errorf("a search through seq.list: %+v, %v; want the run and the note that it searched the newest runs", found, err)
	}

	// A tool call: the publish is refused, and the answer comes at once.
	start := time.Now()
	err := postJSON(e.url+"api/tools/test.sleep/call", map[string]any{"args": map[string]int{"ms": 1}, "timeout_ms": 25000}, nil)
	var he *httpError
	if !errors.As(err, &he) || he.Status != 403 || !strings.Contains(he.Body.Error, `publish to "tool.test.sleep"`) {
		t.Errorf("tool call as the runner = %v; want 403 with the server's refusal of tool.test.sleep", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refused tool call took %v; want the refusal at once, not the 25 s timeout", d)
	}

	// The call's own refusals are its answer, not a banner on every page.
	time.Sleep(300 * time.Millisecond)
	if err := getJSON(e.url+"api/info", &info); err != nil {
		t.Fatal(err)
	}
	for _, r := range info.Refused {
		if strings.HasPrefix(r.Subject, "tool.") {
			t.Errorf("the tool call's refusal %s is kept for every page; want it only in the call's answer", r.Subject)
		}
	}
	// The connection's own error handler still saw the refusals.
	if !e.errs.has(`Publish to "tool.test.sleep"`) || !e.errs.has(`Subscription to "$KV.RUNS.>"`) {
		t.Errorf("the connection's own error handler saw %q; want the refusals too (the console chains onto it)", e.errs.errs)
	}

	// Told its creds file, the console knows the role and does not try.
	_, known := startConsoleAs(t, e.stack.URL(), e.setup, auth.RoleRunner, true, &connErrs{})
	var tp toolsPage
	eventually(t, 10*time.Second, "the tools page of the second console", func() bool {
		return getJSON(known.URL()+"api/tools", &tp) == nil && len(tp.Tools) > 0
	})
	if !strings.Contains(tp.CallNote, "role runner") {
		t.Errorf("call note = %q; want it to name the runner role", tp.CallNote)
	}
	n := len(e.log.all())
	if err := postJSON(known.URL()+"api/tools/test.sleep/call", map[string]any{"args": map[string]int{"ms": 1}}, nil); !errors.As(err, &he) || he.Status != 403 {
		t.Errorf("tool call with the runner's creds known = %v; want 403", err)
	}
	time.Sleep(300 * time.Millisecond)
	for _, l := range e.log.all()[n:] {
		if strings.Contains(l, "tool.test.sleep") {
			t.Errorf("the console with known creds tried the call anyway: %s", l)
		}
	}
}

// TestLimitsKnownUpFront: told its creds file, the console says on
// /api/info what its credentials do not allow, before anything is tried —
// the reader's: starting, cancelling, rerunning, retrying and signalling runs,
// pausing, triggering and backfilling schedule entries; a tool
// provider's: every page; the console role's: nothing — each naming the
// subject and the credentials. Without the creds file nothing is known up
// front (a refusal is then said when it happens).
func TestLimitsKnownUpFront(t *testing.T) {
	e := startLocked(t, lockedOptions{role: auth.RoleConsole, knownCreds: true})
	limitsOf := func(url string) (whats []string, reasons string) {
		t.Helper()
		var info consoleInfo
		if err := getJSON(url+"api/info", &info); err != nil {
			t.Fatal(err)
		}
		for _, l := range info.Limits {
			whats = append(whats, l.What)
			reasons += l.Reason + "\n"
		}
		return whats, reasons
	}
	if got, _ := limitsOf(e.url); len(got) != 0 {
		t.Errorf("the console role's limits %v; want none", got)
	}
	_, reader := startConsoleAs(t, e.stack.URL(), e.setup, auth.RoleReader, true, &connErrs{})
	got, reasons := limitsOf(reader.URL())
	if fmt.Sprint(got) != "[start cancel rerun retry signal pause trigger backfill]" || !strings.Contains(reasons, "starting runs (Run…, Edit and rerun) needs to publish to skillbus.seq.run") ||
		!strings.Contains(reasons, "role reader") || !strings.Contains(reasons, "docs/security.md") {
		t.Errorf("the reader's limits %v:\n%s\nwant start, cancel, rerun, retry, signal, pause, trigger and backfill, naming the subject, the role and docs/security.md", got, reasons)
	}
	_, provider := startConsoleAs(t, e.stack.URL(), e.setup, auth.ToolRole("test"), true, &connErrs{})
	if got, _ := limitsOf(provider.URL()); fmt.Sprint(got) != "[runs run seqs skills preview schedules start cancel rerun retry signal pause trigger backfill]" {
		t.Errorf("a tool provider's limits %v; want every page but Tools, and every action", got)
	}
	_, unknown := startConsoleAs(t, e.stack.URL(), e.setup, auth.RoleReader, false, &connErrs{})
	if got, _ := limitsOf(unknown.URL()); len(got) != 0 {
		t.Errorf("limits %v without the creds file; want none known", got)
	}
}
