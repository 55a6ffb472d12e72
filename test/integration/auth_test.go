package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/events"
)

// authLog is a nats-server logger that keeps the permission violations
// the server reports (and every error, for failure messages).
type authLog struct {
	mu     sync.Mutex
	errors []string
}

func (l *authLog) Noticef(string, ...any) {}
func (l *authLog) Warnf(string, ...any)   {}
func (l *authLog) Fatalf(f string, a ...any) {
	l.Errorf(f, a...)
}
func (l *authLog) Debugf(string, ...any) {}
func (l *authLog) Tracef(string, ...any) {}
func (l *authLog) Errorf(f string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, fmt.Sprintf(f, a...))
}

// violations returns the permission violations logged since mark (an
// index from mark()).
func (l *authLog) violations(from int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.errors[min(from, len(l.errors)):] {
		if strings.Contains(e, "Violation") {
			out = append(out, e)
		}
	}
	return out
}

func (l *authLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errors)
}

// authEnv is a dev stack locked down with a generated setup.
type authEnv struct {
	setup *auth.Setup
	stack *devstack.Stack
	log   *authLog
	defs  string
	root  string
}

// authStart generates a setup (with a tool provider role for the prefix
// "web"), starts the stack on it with every service as its own user, the
// registry on a copy of the example sequences and skills.
func authStart(t *testing.T) *authEnv {
	t.Helper()
	defs := t.TempDir()
	for _, rel := range []string{"examples/sequences/project-survey.seq.yaml", "examples/sequences/agent-boot.seq.json"} {
		cliCopy(t, rel, defs)
	}
	skill, err := os.ReadFile(cliRepoFile(t, "examples/skills/jetstream-incident/SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(defs, "jetstream-incident"), 0o755)
	os.WriteFile(filepath.Join(defs, "jetstream-incident", "SKILL.md"), skill, 0o644)
	root := cliProject(t)
	// A file larger than a RUNS entry keeps inline: its slot goes to RUN_SLOTS.
	os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat("0123456789abcdef\n", 6000)), 0o644)
	return authStartOn(t, defs, root)
}

// authStartOn is authStart with the registry on defs and the tools on root.
func authStartOn(t *testing.T, defs, root string) *authEnv {
	t.Helper()
	setup, err := auth.Generate(auth.Options{Dir: filepath.Join(t.TempDir(), "auth"), ToolPrefixes: []string{"web"}})
	if err != nil {
		t.Fatalf("auth.Generate: %v", err)
	}
	log := &authLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Dir: defs, Tools: builtin.Config{Root: root, AllowCommands: []string{"sleep"}}, Auth: setup, ServerLogger: log})
	if err != nil {
		t.Fatalf("devstack.Start with auth: %v (server errors: %q)", err, log.errors)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stack Stop: %v", err)
		}
	})
	t.Setenv(cli.EnvNATSURL, s.URL())
	return &authEnv{setup: setup, stack: s, log: log, defs: defs, root: root}
}

// as points the skillbus command line at role's creds.
func (e *authEnv) as(t *testing.T, role string) {
	t.Helper()
	t.Setenv(natsconn.EnvCreds, e.setup.CredsFile(role))
}

// conn connects as role's user, recording the connection's async errors
// (permission violations) in errs.
func (e *authEnv) conn(t *testing.T, role string) (*nats.Conn, *asyncErrs) {
	t.Helper()
	opts, err := auth.ConnectOptions(e.setup.CredsFile(role))
	if err != nil {
		t.Fatal(err)
	}
	errs := &asyncErrs{}
	opts = append(opts, nats.Name("auth test "+role), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs.add(err) }))
	nc, err := nats.Connect(e.stack.URL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// asyncErrs collects a connection's asynchronous errors.
type asyncErrs struct {
	mu   sync.Mutex
	errs []string
}

func (a *asyncErrs) add(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err.Error())
}

// has reports whether an error mentioning s arrives within d.
func (a *asyncErrs) has(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		a.mu.Lock()
		for _, e := range a.errs {
			if strings.Contains(e, s) {
				a.mu.Unlock()
				return true
			}
		}
		a.mu.Unlock()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAuthRolesDoTheirJobs runs the whole stack with every service on its
// own user and uses skillbus as a runner, a reader and an agent would: a
// sequence runs end to end, runs are listed and shown, the registry's
// sequences and skills are read, skillface assembles, a tool provider on
// its own prefix answers — and the server logs no permission violation.
func TestAuthRolesDoTheirJobs(t *testing.T) {
	e := authStart(t)
	mark := e.log.mark()

	// Runner: a run end to end, its events, one group, cancel, agent_ready.
	e.as(t, auth.RoleRunner)
	code, out, errOut := cliRun(t, "run", "project-survey", "--arg", "root=.", "--json")
	if code != 0 {
		t.Fatalf("runner: skillbus run project-survey = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var st struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Status != "succeeded" {
		t.Fatalf("runner: run result %.300s (%v); want succeeded", out, err)
	}
	if code, out, errOut := cliRun(t, "watch", st.RunID); code != 0 || !strings.Contains(out, "project-survey succeeded") {
		t.Errorf("runner: skillbus watch %s = %d\nstdout: %s\nstderr: %s", st.RunID, code, out, errOut)
	}
	if code, out, errOut := cliRun(t, "call", "survey-inventory", "--arg", "root=."); code != 0 {
		t.Errorf("runner: skillbus call = %d\nstdout: %.500s\nstderr: %s", code, out, errOut)
	}
	if code, _, errOut := cliRun(t, "runs", "cancel", st.RunID); code == 0 || !strings.Contains(errOut, "409") && !strings.Contains(errOut, "finished") {
		t.Errorf("runner: runs cancel of a finished run = %d, %s; want the seqworker's refusal (it finished)", code, errOut)
	}
	if code, out, errOut := cliRun(t, "agent-ready", "robot"); code != 0 {
		t.Errorf("runner: skillbus agent-ready = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// Runner: a large slot (RUN_SLOTS), a re-run, a cancel of a running run.
	big := filepath.Join(t.TempDir(), "big.seq.yaml")
	os.WriteFile(big, []byte("name: big-read\ngroups:\n  - name: big-g\n    out: {text: object}\n    tools:\n      - tool: fs.read\n        args: {path: big.txt}\n        as: text\n"), 0o644)
	code, out, errOut = cliRun(t, "run", big, "--json")
	var bigSt struct {
		RunID    string         `json:"run_id"`
		Status   string         `json:"status"`
		SlotRefs map[string]any `json:"slot_refs"`
		Slots    map[string]any `json:"slots"`
	}
	if err := json.Unmarshal([]byte(out), &bigSt); code != 0 || err != nil || bigSt.Status != "succeeded" {
		t.Fatalf("runner: a run with a large slot = %d, %v\nstdout: %.300s\nstderr: %s", code, err, out, errOut)
	}
	if code, out, errOut := cliRun(t, "runs", "rerun", st.RunID); code != 0 {
		t.Errorf("runner: runs rerun = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	slow := filepath.Join(t.TempDir(), "slow.seq.yaml")
	os.WriteFile(slow, []byte("name: slow\ngroups:\n  - name: slow-g\n    timeout: 60s\n    tools:\n      - tool: cmd.run\n        args: {command: sleep, args: [\"5\"]}\n"), 0o644)
	code, out, errOut = cliRun(t, "run", slow, "--detach")
	slowID := strings.TrimSpace(out)
	if code != 0 || slowID == "" {
		t.Fatalf("runner: run --detach = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	cliEventually(t, "the slow run to be running", func() bool {
		_, out, _ := cliRun(t, "runs", "show", slowID, "-o", "json")
		return strings.Contains(out, `"status": "running"`) || strings.Contains(out, `"status":"running"`)
	})
	if code, out, errOut := cliRun(t, "runs", "cancel", slowID); code != 0 {
		t.Errorf("runner: runs cancel of a running run = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	cliEventually(t, "the slow run to end cancelled", func() bool {
		_, out, _ := cliRun(t, "runs", "show", slowID, "-o", "json")
		return strings.Contains(out, "cancelled")
	})

	// Reader: lists and reads (a large slot among them).
	e.as(t, auth.RoleReader)
	for _, args := range [][]string{
		{"runs", "ls"}, {"runs", "show", st.RunID}, {"runs", "show", bigSt.RunID}, {"seqs"}, {"seqs", "show", "project-survey"},
		{"skills"}, {"skills", "info", "jetstream-incident"}, {"tools"}, {"watch", st.RunID},
	} {
		code, out, errOut := cliRun(t, args...)
		if code != 0 {
			t.Errorf("reader: skillbus %s = %d\nstdout: %.500s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if _, out, errOut := cliRun(t, "runs", "show", bigSt.RunID); !strings.Contains(out, "0123456789abcdef") || errOut != "" {
		t.Errorf("reader: runs show of a run with a large slot (in RUN_SLOTS) does not show its value: %.300s\nstderr: %s", out, errOut)
	}
	watchOut, watchErr, stopWatch := cliBackground(t, "watch")
	watchErr.waitFor(t, "watch (as reader) to follow the events", "watching events") // said once it follows the stream
	e.as(t, auth.RoleRunner)
	cliRun(t, "agent-ready", "robot2")
	watchOut.waitFor(t, "watch (as reader) to show the agent_ready", "robot2")
	stopWatch()

	// Agent: a scheduled sequence stored through the registry, its ticks
	// run, then it is deleted.
	e.as(t, auth.RoleAgent)
	anc, _ := e.conn(t, auth.RoleAgent)
	sched := `{"name":"tick","schedule":"@every 1s","groups":[{"name":"tick-g","tools":"{\"tool\":\"fs.stat\",\"args\":{\"path\":\".\"}};"}]}`
	if m, err := anc.Request("skillbus.registry.seq.create", []byte(sched), 15*time.Second); err != nil || m.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("agent: seq.create = %v, %s", err, msgData(m))
	}
	cliEventually(t, "a tick of the scheduled sequence", func() bool {
		_, out, _ := cliRun(t, "runs", "ls", "--sequence", "tick")
		return strings.Contains(out, "succeeded")
	})
	if code, out, errOut := cliRun(t, "seqs", "rm", "tick"); code != 0 {
		t.Errorf("agent: seqs rm tick = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// Agent: prompt assembly through skillface.
	nc, _ := e.conn(t, auth.RoleAgent)
	req := `{"session_id":"s1","round":1,"messages":[{"role":"user","content":"consumer lag on jetstream again"}]}`
	msg, err := nc.Request("skillbus.skillface.assemble", []byte(req), 15*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), "jetstream-incident") {
		t.Errorf("agent: assemble = %v, %.300s; want the jetstream-incident skill injected", err, msgData(msg))
	}

	// A tool provider on its own prefix answers a run's calls.
	_, toolsErr, stopTools := cliBackground(t, "tools", "serve", "--root", e.root, "--prefix", "web", "--creds", e.setup.CredsFile(auth.ToolRole("web")))
	e.as(t, auth.RoleRunner)
	inline := filepath.Join(t.TempDir(), "web.seq.yaml")
	os.WriteFile(inline, []byte("name: web-list\ngroups:\n  - name: web-g\n    tools:\n      - tool: web.fs.list\n        args: {path: .}\n"), 0o644)
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, errOut := cliRun(t, "run", inline)
		if code == 0 {
			break
		}
		last = out + errOut
		if time.Now().After(deadline) {
			t.Fatalf("a run calling web.fs.list failed: %s\ntools serve: %s", last, toolsErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code := stopTools(); code != 0 {
		t.Errorf("tools serve --prefix web exited %d", code)
	}

	if v := e.log.violations(mark); len(v) > 0 {
		t.Errorf("the server logged %d permission violations while every role did its job:\n%s", len(v), strings.Join(v, "\n"))
	}
}

func msgData(m *nats.Msg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}

// refusePub publishes on subject as nc and requires the server to refuse
// it: the connection gets a permissions violation naming the subject.
func refusePub(t *testing.T, role string, nc *nats.Conn, errs *asyncErrs, subject string, hdr nats.Header) {
	t.Helper()
	m := &nats.Msg{Subject: subject, Reply: nc.NewRespInbox(), Header: hdr, Data: []byte(`{"v":1}`)}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatalf("%s: publish %s: %v", role, subject, err)
	}
	nc.Flush()
	if !errs.has(`Publish to "`+subject+`"`, 5*time.Second) {
		t.Errorf("%s may publish on %s; want it refused", role, subject)
	}
}

// refuseSub subscribes to subject (in queue when not "") as nc and requires
// the server to refuse it.
func refuseSub(t *testing.T, role string, nc *nats.Conn, errs *asyncErrs, subject, queue string) {
	t.Helper()
	sub, err := nc.QueueSubscribeSync(subject, queue)
	if err != nil {
		t.Fatalf("%s: subscribe %s: %v", role, subject, err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	if !errs.has(`Subscription to "`+subject+`"`, 5*time.Second) {
		t.Errorf("%s may subscribe to %s (queue %q); want it refused", role, subject, queue)
	}
}

// allowSub subscribes to subject as nc and requires no refusal: the
// control that shows refuseSub tells an allowed subject from a forbidden
// one on the same connection.
func allowSub(t *testing.T, role string, nc *nats.Conn, errs *asyncErrs, subject, queue string) {
	t.Helper()
	sub, err := nc.QueueSubscribeSync(subject, queue)
	if err != nil {
		t.Fatalf("%s: subscribe %s: %v", role, subject, err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	if errs.has(`Subscription to "`+subject+`"`, 500*time.Millisecond) {
		t.Errorf("%s may not subscribe to %s; want it allowed", role, subject)
	}
}

// kvRevision reads key of bucket as the reader and returns its revision
// (0 when the key does not exist).
func (e *authEnv) kvRevision(t *testing.T, bucket, key string) uint64 {
	t.Helper()
	// The services read by KV gets (direct gets, which clients may not
	// make): the seqworker RUNS, the registry the rest.
	nc, _ := e.conn(t, auth.RoleRegistry)
	if bucket == "RUNS" {
		nc, _ = e.conn(t, auth.RoleSeqworker)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("bucket %s: %v", bucket, err)
	}
	en, err := kv.Get(ctx, key)
	if err != nil {
		return 0
	}
	return en.Revision()
}

// TestAuthDenies checks, on the stack locked down with a generated setup,
// that the server refuses each forbidden action of issue 11 (§4) to each
// role, and that what they were meant to protect is unchanged.
func TestAuthDenies(t *testing.T) {
	e := authStart(t)
	e.as(t, auth.RoleRunner)
	code, out, errOut := cliRun(t, "run", "project-survey", "--arg", "root=.", "--json")
	var st struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("runner: skillbus run = %d (%v)\nstderr: %s", code, err, errOut)
	}
	runRev := e.kvRevision(t, "RUNS", st.RunID)
	seqRev := e.kvRevision(t, "SEQUENCES", "project-survey")
	skillRev := e.kvRevision(t, "SKILLS", "jetstream-incident")
	if runRev == 0 || seqRev == 0 || skillRev == 0 {
		t.Fatalf("revisions of the run, the sequence and the skill: %d %d %d; want all stored", runRev, seqRev, skillRev)
	}
	roles := []string{auth.RoleRegistry, auth.RoleSeqworker, auth.RoleSkillface, auth.RoleTools, auth.ToolRole("web"), auth.RoleAgent, auth.RoleRunner, auth.RoleReader, auth.RoleConsole}
	conns := map[string]*nats.Conn{}
	errs := map[string]*asyncErrs{}
	for _, r := range roles {
		conns[r], errs[r] = e.conn(t, r)
	}
	del := nats.Header{"KV-Operation": []string{"DEL"}}
	pending := nats.Header{"Nats-Msg-Id": []string{"forged-run"}, "Skillbus-Pending-Revision": []string{fmt.Sprint(runRev)}}

	t.Run("only the seqworker writes RUNS", func(t *testing.T) {
		for _, r := range roles {
			if r == auth.RoleSeqworker {
				continue
			}
			refusePub(t, r, conns[r], errs[r], "$KV.RUNS."+st.RunID, nil)
			refusePub(t, r, conns[r], errs[r], "$KV.RUNS.forged-run", del)
			refusePub(t, r, conns[r], errs[r], "$O.RUN_SLOTS.C.forged", nil)
		}
	})
	t.Run("only the registry writes SKILLS and SEQUENCES", func(t *testing.T) {
		for _, r := range roles {
			if r == auth.RoleRegistry {
				continue
			}
			refusePub(t, r, conns[r], errs[r], "$KV.SKILLS.jetstream-incident", nil)
			refusePub(t, r, conns[r], errs[r], "$KV.SEQUENCES.project-survey", nil)
			refusePub(t, r, conns[r], errs[r], "$KV.SEQUENCES.forged-boot", nil)
		}
	})
	t.Run("only the seqworker writes SEQ_SCHEDULES; readers list schedules, operators pause them", func(t *testing.T) {
		for _, r := range roles {
			if r == auth.RoleSeqworker {
				continue
			}
			refusePub(t, r, conns[r], errs[r], "$KV.SEQ_SCHEDULES.project-survey.default", nil)
		}
		refusePub(t, auth.RoleReader, conns[auth.RoleReader], errs[auth.RoleReader], events.SeqSchedulesPauseSubject, nil)
		refusePub(t, auth.RoleReader, conns[auth.RoleReader], errs[auth.RoleReader], events.SeqSchedulesTriggerSubject, nil)
		refusePub(t, auth.RoleReader, conns[auth.RoleReader], errs[auth.RoleReader], events.SeqSchedulesBackfillSubject, nil)
		for _, r := range []string{auth.RoleReader, auth.RoleRunner} {
			m, err := conns[r].Request(events.SeqSchedulesListSubject, []byte(`{"v":1}`), 5*time.Second)
			if err != nil || m.Header.Get("Nats-Service-Error-Code") != "" {
				t.Errorf("%s: schedules.list = %v, %v; want a list", r, m, err)
			}
		}
		m, err := conns[auth.RoleRunner].Request(events.SeqSchedulesPauseSubject, []byte(`{"v":1,"sequence":"project-survey","note":"auth test"}`), 5*time.Second)
		if err != nil || m.Header.Get("Nats-Service-Error-Code") != "404" {
			t.Errorf("runner: schedules.pause of an unscheduled sequence = %v, %v; want the seqworker's 404 (the request allowed)", m, err)
		}
	})
	t.Run("runs start only through skillbus.seq.run", func(t *testing.T) {
		for _, r := range roles {
			if r == auth.RoleSeqworker {
				continue
			}
			refusePub(t, r, conns[r], errs[r], "seq.run.project-survey", pending)
			refusePub(t, r, conns[r], errs[r], "seq.schedule.project-survey", nil)
		}
	})
	t.Run("nobody else drains the seqworker's consumers or changes the streams", func(t *testing.T) {
		for _, r := range []string{auth.RoleAgent, auth.RoleRunner, auth.RoleReader, auth.RoleTools, auth.RoleConsole} {
			nc, ae := conns[r], errs[r]
			refusePub(t, r, nc, ae, "$JS.API.CONSUMER.MSG.NEXT.SEQ_RUNS.seqworker", nil)
			refusePub(t, r, nc, ae, "$JS.API.CONSUMER.CREATE.SEQ_RUNS.thief.seq.run.>", nil)
			refusePub(t, r, nc, ae, "$JS.API.CONSUMER.CREATE.EVENTS.seqworker-boot.events.agent_ready.*", nil)
			refusePub(t, r, nc, ae, "$JS.API.CONSUMER.DELETE.EVENTS.seqworker-boot", nil)
			refusePub(t, r, nc, ae, "$JS.API.STREAM.UPDATE.KV_SKILLS", nil)
			refusePub(t, r, nc, ae, "$JS.API.STREAM.PURGE.KV_RUNS", nil)
			refusePub(t, r, nc, ae, "$JS.API.STREAM.DELETE.SEQ_RUNS", nil)
		}
		for _, r := range []string{auth.RoleRegistry, auth.RoleSkillface, auth.RoleSeqworker} {
			refusePub(t, r, conns[r], errs[r], "$JS.API.STREAM.DELETE.KV_RUNS", nil)
			refusePub(t, r, conns[r], errs[r], "$JS.API.STREAM.PURGE.KV_SKILLS", nil)
		}
		for _, r := range []string{auth.RoleRegistry, auth.RoleSkillface} {
			refusePub(t, r, conns[r], errs[r], "$JS.API.CONSUMER.MSG.NEXT.SEQ_RUNS.seqworker", nil)
			refusePub(t, r, conns[r], errs[r], "$JS.API.CONSUMER.CREATE.SEQ_RUNS.seqworker.seq.run.>", nil)
		}
		// A service reconfigures only the streams it owns: a stream update
		// (a source added to a bucket, say) is how one could feed another's
		// bucket.
		for r, streams := range map[string][]string{
			auth.RoleRegistry:  {"KV_RUNS", "KV_SKILLFACE_SESSIONS", "SEQ_RUNS", "EVENTS", "OBJ_RUN_SLOTS"},
			auth.RoleSkillface: {"KV_SKILLS", "KV_SEQUENCES", "KV_RUNS", "EVENTS"},
			auth.RoleSeqworker: {"KV_SKILLS", "KV_SEQUENCES", "KV_SKILLFACE_SESSIONS"},
		} {
			for _, s := range streams {
				refusePub(t, r, conns[r], errs[r], "$JS.API.STREAM.UPDATE."+s, nil)
			}
		}
	})
	t.Run("nobody but skillface reads the prompts", func(t *testing.T) {
		for _, r := range roles {
			if r == auth.RoleSkillface {
				continue
			}
			refuseSub(t, r, conns[r], errs[r], "skillbus.skillface.>", "")
			refuseSub(t, r, conns[r], errs[r], "skillbus.skillface.assemble", "q")
			refuseSub(t, r, conns[r], errs[r], "_INBOX.>", "")
			if r != auth.RoleAgent {
				refuseSub(t, r, conns[r], errs[r], "_INBOX."+auth.RoleAgent+".>", "")
			}
		}
		// The agent's own request is still answered, by skillface alone.
		req := `{"session_id":"s2","round":1,"messages":[{"role":"user","content":"jetstream consumer lag"}]}`
		if m, err := conns[auth.RoleAgent].Request("skillbus.skillface.assemble", []byte(req), 15*time.Second); err != nil || !strings.Contains(string(m.Data), "jetstream-incident") {
			t.Errorf("agent: assemble = %v, %.200s", err, msgData(m))
		}
		for _, r := range []string{auth.RoleRunner, auth.RoleReader} {
			refusePub(t, r, conns[r], errs[r], "skillbus.skillface.assemble", nil)
		}
	})
	t.Run("only the tools' own providers answer tools", func(t *testing.T) {
		for _, r := range roles {
			if r == auth.RoleTools || r == auth.ToolRole("web") {
				continue
			}
			refuseSub(t, r, conns[r], errs[r], "tool.fs.read", "skillbus-tools")
			refuseSub(t, r, conns[r], errs[r], "tool.>", "")
		}
		web := auth.ToolRole("web")
		refuseSub(t, web, conns[web], errs[web], "tool.fs.read", "skillbus-tools")
		refuseSub(t, web, conns[web], errs[web], "tool.cmd.run", "skillbus-tools")
		refuseSub(t, web, conns[web], errs[web], "tool.webx.read", "")
		allowSub(t, web, conns[web], errs[web], "tool.web.fs.read", "skillbus-tools")
		refuseSub(t, auth.RoleTools, conns[auth.RoleTools], errs[auth.RoleTools], "tool.web.fs.read", "skillbus-tools")
		allowSub(t, auth.RoleTools, conns[auth.RoleTools], errs[auth.RoleTools], "tool.fs.read", "skillbus-tools")
		for _, r := range []string{auth.RoleTools, web, auth.RoleRunner, auth.RoleReader, auth.RoleAgent, auth.RoleConsole} {
			refusePub(t, r, conns[r], errs[r], "tool.fs.read", nil) // only the seqworker calls tools (and the console with --console-calls-tools)
		}
	})
	t.Run("a reader starts nothing", func(t *testing.T) {
		nc, ae := conns[auth.RoleReader], errs[auth.RoleReader]
		for _, subj := range []string{"skillbus.seq.run", "skillbus.seq.call", "skillbus.seq.cancel", "skillbus.seq.rerun",
			"skillbus.registry.seq.create", "skillbus.registry.seq.delete", "events.agent_ready.robot"} {
			refusePub(t, auth.RoleReader, nc, ae, subj, nil)
		}
		e.as(t, auth.RoleReader)
		start := time.Now()
		code, _, errOut := cliRun(t, "run", "project-survey", "--arg", "root=.")
		if code == 0 || !strings.Contains(errOut, `refused it: Permissions Violation for Publish to "skillbus.seq.run"`) || time.Since(start) > 10*time.Second {
			t.Errorf("reader: skillbus run = %d after %v, %q; want it refused at once, saying what", code, time.Since(start), errOut)
		}
		if strings.Contains(errOut, "connection closed") {
			t.Errorf("reader: skillbus run's stderr %q; want the refusal alone, not the closed connection it leads to", errOut)
		}
		t.Logf("reader: skillbus run = %d after %v: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(errOut))
		code, _, errOut = cliRun(t, "agent-ready", "robot")
		if code == 0 || !strings.Contains(errOut, `refused it: Permissions Violation for Publish to "events.agent_ready.robot"`) || strings.Contains(errOut, "connection closed") || strings.Contains(errOut, "provisioned") {
			t.Errorf("reader: skillbus agent-ready = %d, %q; want the refusal alone", code, errOut)
		}
	})
	t.Run("the console does what its pages do, nothing more", func(t *testing.T) {
		nc, ae := conns[auth.RoleConsole], errs[auth.RoleConsole]
		for _, subj := range []string{"skillbus.seq.call", "events.agent_ready.robot", "skillbus.registry.seq.create", "skillbus.registry.seq.delete",
			"skillbus.skillface.assemble", "skillbus.skillface.info", "$JS.API.DIRECT.GET.KV_RUNS", "$JS.API.CONSUMER.CREATE.KV_RUNS.x.$KV.SKILLS.>",
			"$JS.API.CONSUMER.CREATE.KV_SKILLS.x", "$JS.API.STREAM.INFO.KV_SKILLFACE_SESSIONS"} {
			refusePub(t, auth.RoleConsole, nc, ae, subj, nil)
		}
	})
	t.Run("a runner stores no sequence", func(t *testing.T) {
		nc, ae := conns[auth.RoleRunner], errs[auth.RoleRunner]
		refusePub(t, auth.RoleRunner, nc, ae, "skillbus.registry.seq.create", nil)
		refusePub(t, auth.RoleRunner, nc, ae, "skillbus.registry.seq.delete", nil)
	})

	// What the refusals protect is unchanged.
	time.Sleep(500 * time.Millisecond) // a window for a write the refusals must have stopped: its absence is the behaviour
	if got := e.kvRevision(t, "RUNS", st.RunID); got != runRev {
		t.Errorf("the finished run's RUNS revision moved from %d to %d", runRev, got)
	}
	if got := e.kvRevision(t, "RUNS", "forged-run"); got != 0 {
		t.Errorf("a forged run forged-run exists in RUNS (revision %d)", got)
	}
	if got := e.kvRevision(t, "SEQUENCES", "project-survey"); got != seqRev {
		t.Errorf("SEQUENCES project-survey moved from revision %d to %d", seqRev, got)
	}
	if got := e.kvRevision(t, "SEQUENCES", "forged-boot"); got != 0 {
		t.Errorf("a forged sequence forged-boot exists in SEQUENCES (revision %d)", got)
	}
	if got := e.kvRevision(t, "SKILLS", "jetstream-incident"); got != skillRev {
		t.Errorf("SKILLS jetstream-incident moved from revision %d to %d", skillRev, got)
	}
	e.as(t, auth.RoleReader)
	if _, out, _ := cliRun(t, "runs", "ls"); strings.Count(out, "project-survey") != 1 {
		t.Errorf("runs after the refused starts:\n%s\nwant the one run of project-survey", out)
	}
}

// TestAuthDev runs `skillbus dev --auth` on a non-loopback address: it
// starts (the refusal without --auth is lifted), prints the creds for the
// user's commands, which work, while a command without credentials is
// refused; its web console connects as the console role (its runs list is
// live), and so does `skillbus ui` given the console role's creds, whose
// tool form is refused at once (no --console-calls-tools); `skillbus dev
// --host 0.0.0.0` without --auth still refuses to start.
func TestAuthDev(t *testing.T) {
	data := t.TempDir()
	code, _, errOut := cliRun(t, "dev", "--host", "0.0.0.0", "--port", "0", "--data", data, "--dir", t.TempDir())
	if code != cli.ExitUsage || !strings.Contains(errOut, "--auth") {
		t.Errorf("dev --host 0.0.0.0 without --auth = %d, %q; want exit 2 pointing at --auth", code, errOut)
	}
	defs := t.TempDir()
	cliCopy(t, "examples/sequences/project-survey.seq.yaml", defs)
	out, errb, stop := cliBackground(t, "dev", "--auth", "--host", "0.0.0.0", "--port", "0", "--ui-port", "0", "--data", data, "--dir", defs, "--tools-root", cliProject(t))
	var url, creds, ui string
	out.waitUntil(t, "skillbus dev --auth to print its URL and creds", func(text string) bool {
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "export NATS_URL="); ok {
				url = v
			}
			if v, ok := strings.CutPrefix(l, "export NATS_CREDS="); ok {
				creds = strings.Fields(v)[0]
			}
			if v, ok := strings.CutPrefix(l, "console:"); ok {
				ui = strings.TrimSpace(v)
			}
		}
		return url != "" && creds != "" && ui != "" && strings.Contains(text, "Press Ctrl-C")
	})
	consoleIsRole(t, "the dev console", ui)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || !strings.HasPrefix(creds, filepath.Join(data, "auth")) {
		t.Errorf("dev --auth printed NATS_URL=%s NATS_CREDS=%s; want a dialable URL and creds under %s/auth", url, creds, data)
	}
	t.Setenv(cli.EnvNATSURL, url)
	t.Setenv(natsconn.EnvCreds, creds)
	if code, out, errOut := cliRun(t, "run", "project-survey", "--arg", "root=."); code != 0 {
		t.Errorf("with the printed creds: skillbus run = %d\nstdout: %.300s\nstderr: %s", code, out, errOut)
	}
	// skillbus ui with the console role's creds.
	consoleCreds := filepath.Join(filepath.Dir(creds), auth.RoleConsole+".creds")
	t.Setenv(natsconn.EnvCreds, consoleCreds)
	uiOut, uiErr, uiStop := cliBackground(t, "ui", "--listen", "127.0.0.1:0")
	uiRe := regexp.MustCompile(`skillbus console: (http://127\.0\.0\.1:[0-9]+/)\n`)
	uiOut.waitUntil(t, "ui to print its URL", uiRe.MatchString)
	u := uiRe.FindStringSubmatch(uiOut.String())[1]
	consoleIsRole(t, "skillbus ui --creds console.creds", u)
	if code, body := consoleGet(t, u+"api/tools", ""); code != 200 || !strings.Contains(body, `"call_note":"calling tools from the console needs the permission to publish to tool.fs.`) || !strings.Contains(body, consoleCreds) {
		t.Errorf("ui api/tools = %d %.600s; want the tools and the note that calling them needs %s, naming %s", code, body, auth.ConsoleCallsToolsFlag, consoleCreds)
	}
	start := time.Now()
	code, body := consolePost(t, u+"api/tools/fs.list/call", `{"args": {"path": "."}, "timeout_ms": 25000}`)
	if code != http.StatusForbidden || !strings.Contains(body, "tool.fs.list") || !strings.Contains(body, "role console") {
		t.Errorf("ui tool call with the console role = %d %s; want 403 naming tool.fs.list and the role", code, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refused tool call took %v; want an answer at once, not the call's 25 s timeout", d)
	}
	if code := uiStop(); code != cli.ExitOK {
		t.Errorf("ui stopped with %d; want 0\nstderr: %s", code, uiErr)
	}
	t.Setenv(natsconn.EnvCreds, "")
	if code, _, errOut := cliRun(t, "seqs"); code == 0 || !strings.Contains(errOut, "NATS_CREDS") {
		t.Errorf("without creds: skillbus seqs = %d, %q; want refused, naming NATS_CREDS", code, errOut)
	}
	if code := stop(); code != 0 {
		t.Errorf("dev --auth exited %d at Ctrl-C\nstderr: %s", code, errb)
	}
	if strings.Contains(errb.String(), "Violation") {
		t.Errorf("dev --auth logged a permission violation:\n%s", errb)
	}
}

// consoleIsRole waits until the console at ui reports the console role and
// a live runs list (its watch of RUNS runs), with nothing refused.
func consoleIsRole(t *testing.T, what, ui string) {
	t.Helper()
	var info struct {
		Role     string            `json:"role"`
		RunsLive bool              `json:"runs_live"`
		Refused  []json.RawMessage `json:"refused"`
	}
	cliEventually(t, what+": the role console and a live runs list", func() bool {
		code, body := consoleGet(t, ui+"api/info", "")
		return code == 200 && json.Unmarshal([]byte(body), &info) == nil && info.RunsLive
	})
	if info.Role != auth.RoleConsole || len(info.Refused) > 0 {
		t.Errorf("%s: info = %+v; want the role console and nothing refused", what, info)
	}
}

// consolePost sends an action to the console (JSON body, its CSRF header)
// and returns the status and body.
func consolePost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(console.ActionHeader, "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestAuthMCPServe runs `skillbus mcp serve` with the agent's creds on the
// locked-down stack: the whole model-style exchange (skills, sequences
// stored and deleted, runs, one group, tools) works, and the server logs
// no permission violation.
func TestAuthMCPServe(t *testing.T) {
	defs, root := mcpservertest.Fixture(t)
	e := authStartOn(t, defs, root)
	mark := e.log.mark()
	port := freePort(t)
	_, stderr, stop := cliBackground(t, "mcp", "serve", "--listen", ":"+strconv.Itoa(port), "--creds", e.setup.CredsFile(auth.RoleAgent))
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	stderr.waitFor(t, "the HTTP server", url)
	r := &mcpservertest.Recorder{}
	cs, err := mcpservertest.NewClient(r).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect over HTTP: %v; stderr %s", err, stderr.String())
	}
	mcpservertest.Exchange(t, cs, r, defs)
	_ = cs.Close()
	if code := stop(); code != cli.ExitOK {
		t.Errorf("mcp serve exit %d; stderr %s", code, stderr.String())
	}
	if v := e.log.violations(mark); len(v) > 0 {
		t.Errorf("mcp serve as the agent: the server logged %d permission violations:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// subjectMatches reports whether subject matches the NATS pattern.
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

// allowed reports whether role r may publish to subject by its grants.
func allowed(r auth.Role, subject string) bool {
	for _, g := range r.DenyPub {
		if subjectMatches(g.Subject, subject) {
			return false
		}
	}
	for _, g := range r.Pub {
		if subjectMatches(g.Subject, subject) {
			return true
		}
	}
	return false
}

// TestAuthEndpointsCovered asks every micro service on the locked-down
// stack for its endpoints ($SRV.INFO), so an endpoint added later cannot
// slip past the permission table: the agent may call every skillbus
// endpoint, the runner and the reader exactly the ones listed here, and
// tool endpoints only the seqworker.
func TestAuthEndpointsCovered(t *testing.T) {
	e := authStart(t)
	nc, _ := e.conn(t, auth.RoleReader)
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("$SRV.INFO", inbox, nil); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for {
		m, err := sub.NextMsg(time.Second)
		if err != nil {
			break
		}
		var info struct {
			Name      string `json:"name"`
			Endpoints []struct {
				Subject string `json:"subject"`
			} `json:"endpoints"`
		}
		if err := json.Unmarshal(m.Data, &info); err != nil {
			t.Fatal(err)
		}
		for _, ep := range info.Endpoints {
			subjects = append(subjects, ep.Subject)
		}
	}
	if len(subjects) < 15 {
		t.Fatalf("discovered endpoints %v; want those of the registry, skillface, the seqworker and the tools", subjects)
	}
	roles := map[string]auth.Role{}
	for _, r := range e.setup.Roles {
		roles[r.Name] = r
	}
	reads := []string{"skillbus.registry.skill.list", "skillbus.registry.skill.get", "skillbus.registry.skill.info",
		"skillbus.registry.seq.list", "skillbus.registry.seq.get", "skillbus.seq.status", "skillbus.seq.list",
		"skillbus.seq.schedules.list", "skillbus.seq.schedules.show"}
	runs := append(slices.Clone(reads), "skillbus.seq.run", "skillbus.seq.call", "skillbus.seq.cancel", "skillbus.seq.rerun", "skillbus.seq.retry", "skillbus.seq.signal",
		"skillbus.seq.schedules.pause", "skillbus.seq.schedules.unpause", "skillbus.seq.schedules.trigger", "skillbus.seq.schedules.backfill")
	for _, s := range subjects {
		if strings.HasPrefix(s, "tool.") {
			for name, r := range roles {
				if got := allowed(r, s); got != (name == auth.RoleSeqworker) {
					t.Errorf("%s may call the tool endpoint %s: %v; want only the seqworker", name, s, got)
				}
			}
			continue
		}
		if !allowed(roles[auth.RoleAgent], s) {
			t.Errorf("the agent may not call the endpoint %s; add it to the agent's role (internal/auth)", s)
		}
		if got, want := allowed(roles[auth.RoleRunner], s), slices.Contains(runs, s); got != want {
			t.Errorf("the runner may call %s: %v; want %v (decide, in internal/auth and here)", s, got, want)
		}
		if got, want := allowed(roles[auth.RoleReader], s), slices.Contains(reads, s); got != want {
			t.Errorf("the reader may call %s: %v; want %v (decide, in internal/auth and here)", s, got, want)
		}
	}
}
