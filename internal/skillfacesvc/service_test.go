package skillfacesvc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/sections"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is one embedded server with the skillbus resources provisioned.
type env struct {
	srv *natsserver.Server
	nc  *nats.Conn // the test's own client connection
	kv  jetstream.KeyValue
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, events.BucketSkills)
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, nc: nc, kv: kv}
}

// put stores s in SKILLS as the registry does and returns the revision.
func (e *env) put(t testing.TB, s skill.Skill) uint64 {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := e.kv.Put(context.Background(), events.KeyFor(s.Name), b)
	if err != nil {
		t.Fatalf("put skill %q: %v", s.Name, err)
	}
	return rev
}

// start runs a replica on its own connection until the test ends.
func (e *env) start(t testing.TB, cfg skillfacesvc.Config) *skillfacesvc.Service {
	t.Helper()
	nc := natsserver.ConnectTB(t, e.srv)
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	svc, err := skillfacesvc.New(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := svc.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return svc
}

// call sends data to subject and returns the reply and its error code
// ("" for a success).
func call(t testing.TB, nc *nats.Conn, subject string, data []byte, hdr nats.Header) (*nats.Msg, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	m, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject, Data: data, Header: hdr})
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	return m, m.Header.Get(micro.ErrorCodeHeader)
}

func assemble(t testing.TB, nc *nats.Conn, req skillface.Request, hdr nats.Header) skillface.Response {
	t.Helper()
	b, _ := json.Marshal(req)
	m, code := call(t, nc, skillfacesvc.SubjectAssemble, b, hdr)
	if code != "" {
		t.Fatalf("assemble %+v: error %s: %s", req, code, m.Data)
	}
	var resp skillface.Response
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		t.Fatalf("assemble reply is not a response: %v: %s", err, m.Data)
	}
	return resp
}

func sk(name, body string, triggers ...string) skill.Skill {
	return skill.Skill{
		Name: name, Description: "Does " + name + " things.", Version: 1,
		Invocation: skill.InvocationBoth, Context: skill.ContextInline, Format: skill.FormatMarkdown,
		Body: body, Fingerprint: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(name+"\x00"+body))), Triggers: triggers,
	}
}

func userReq(session string, round int64, text string) skillface.Request {
	return skillface.Request{SessionID: session, Round: round, Messages: []skillface.Message{
		{Role: "system", Content: "You are helpful."}, {Role: "user", Content: text}}}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   skillfacesvc.Config
		field string // "" = valid
	}{
		{"zero value", skillfacesvc.Config{}, ""},
		{"explicit budgets", skillfacesvc.Config{EntryChars: 200, ListingEntries: 10, SessionBodies: 2, BodyBytes: 1000}, ""},
		{"entry budget too small", skillfacesvc.Config{EntryChars: 10}, "EntryChars"},
		{"negative listing", skillfacesvc.Config{ListingEntries: -1}, "ListingEntries"},
		{"negative bodies", skillfacesvc.Config{SessionBodies: -1}, "SessionBodies"},
		{"negative body bytes", skillfacesvc.Config{BodyBytes: -5}, "BodyBytes"},
		{"negative attempts", skillfacesvc.Config{MaxAttempts: -1}, "MaxAttempts"},
		{"negative request size", skillfacesvc.Config{MaxRequestBytes: -1}, "MaxRequestBytes"},
		{"negative concurrency", skillfacesvc.Config{MaxConcurrent: -2}, "MaxConcurrent"},
		{"negative timeout", skillfacesvc.Config{Timeout: -time.Second}, "Timeout"},
		{"negative revision wait", skillfacesvc.Config{RevisionWait: -time.Second}, "RevisionWait"},
		{"negative info lines", skillfacesvc.Config{Info: skillfaceLimits(-1)}, "Info.WholeMaxLines"},
		{"short session TTL", skillfacesvc.Config{Provision: events.Options{SessionsTTL: time.Millisecond}}, "SessionsTTL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate() = %v; want nil", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
				t.Fatalf("Validate() = %v; want an error naming %s", err, tc.field)
			}
		})
	}
}

// TestBadRequests: every malformed request gets a structured error with a
// code and a message saying what is wrong; the service keeps serving.
func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	e.put(t, sk("deploy", "# Deploy\n\nRun the pipeline.\n", "deploy"))
	e.start(t, skillfacesvc.Config{MaxRequestBytes: 64 << 10})
	big := `{"session_id":"s","round":1,"messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`
	tests := []struct {
		name, subject, body string
		hdr                 nats.Header
		code, want          string
	}{
		{"not JSON", skillfacesvc.SubjectAssemble, `{"session_id":`, nil, "400", "JSON ends too early"},
		{"syntax error", skillfacesvc.SubjectAssemble, `{"session_id" "s"}`, nil, "400", "not valid JSON at byte"},
		{"empty body", skillfacesvc.SubjectAssemble, ``, nil, "400", "body is empty"},
		{"array body", skillfacesvc.SubjectAssemble, `[1]`, nil, "400", "send a JSON object"},
		{"unknown field", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":1,"mesages":[]}`, nil, "400", `unknown field "mesages"`},
		{"unknown message field", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":1,"messages":[{"role":"user","content":"x","name":"bob"}]}`, nil, "400", `unknown field "name"`},
		{"wrong type", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":"one"}`, nil, "400", `field "round" has the wrong type (got a JSON string, want a whole number)`},
		{"trailing data", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":1} {}`, nil, "400", "unexpected data after the JSON object"},
		{"no session", skillfacesvc.SubjectAssemble, `{"round":1,"messages":[]}`, nil, "400", "session_id is empty"},
		{"round zero", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":0}`, nil, "400", "round 0"},
		{"message without role", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":1,"messages":[{"content":"hi"}]}`, nil, "400", "message 1 has no role"},
		{"session id too long", skillfacesvc.SubjectAssemble, `{"session_id":"` + strings.Repeat("s", 1025) + `","round":1}`, nil, "400", "1025 bytes long"},
		{"unknown mount", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":1,"mounts":["deploy","nope"]}`, nil, "404", `unknown skill "nope"`},
		{"oversize", skillfacesvc.SubjectAssemble, big, nil, "413", "accepts at most 65536"},
		{"bad revision header", skillfacesvc.SubjectAssemble, `{"session_id":"s","round":1}`, nats.Header{skillfacesvc.SkillsRevisionHeader: {"soon"}}, "400", "want a SKILLS bucket revision"},
		{"info without name", skillfacesvc.SubjectInfo, `{}`, nil, "400", `"name" is required`},
		{"info unknown field", skillfacesvc.SubjectInfo, `{"name":"deploy","sectoin":"x"}`, nil, "400", `unknown field "sectoin"`},
		{"info unknown skill", skillfacesvc.SubjectInfo, `{"name":"nope"}`, nil, "404", `no skill named "nope"`},
		{"info unknown section", skillfacesvc.SubjectInfo, `{"name":"deploy","section":"Rollback"}`, nil, "404", "Rollback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, code := call(t, e.nc, tc.subject, []byte(tc.body), tc.hdr)
			if code != tc.code {
				t.Fatalf("%s(%.60q) code = %q; want %q (reply %s)", tc.subject, tc.body, code, tc.code, m.Data)
			}
			var er skillfacesvc.ErrorReply
			if err := json.Unmarshal(m.Data, &er); err != nil {
				t.Fatalf("error reply body is not an ErrorReply: %v: %s", err, m.Data)
			}
			if er.Code != tc.code || !strings.Contains(er.Error, tc.want) {
				t.Fatalf("%s(%.60q) = %+v; want code %s and a message containing %q", tc.subject, tc.body, er, tc.code, tc.want)
			}
			if desc := m.Header.Get(micro.ErrorHeader); desc == "" || strings.Contains(desc, "\n") {
				t.Fatalf("error header = %q; want one non-empty line", desc)
			}
			if strings.Contains(er.Error, "json:") || strings.Contains(er.Error, "int64") || strings.Contains(er.Error, "skillface.") {
				t.Fatalf("message %q leaks Go names", er.Error)
			}
		})
	}
	t.Run("unknown mount names the skills", func(t *testing.T) {
		m, _ := call(t, e.nc, skillfacesvc.SubjectAssemble, []byte(`{"session_id":"s","round":1,"mounts":["x","y"]}`), nil)
		var er skillfacesvc.ErrorReply
		_ = json.Unmarshal(m.Data, &er)
		if strings.Join(er.Skills, ",") != "x,y" {
			t.Fatalf("skills = %q; want [x y]", er.Skills)
		}
	})
	// Still serving after all of that.
	resp := assemble(t, e.nc, userReq("after-errors", 1, "please deploy"), nil)
	if strings.Join(resp.Activated, ",") != "deploy" {
		t.Fatalf("after bad requests: activated %q; want [deploy]", resp.Activated)
	}
}

// TestRestrictedEchoesBytes: a restricted session gets its messages back
// byte for byte, however the caller encoded them.
func TestRestrictedEchoesBytes(t *testing.T) {
	e := newEnv(t)
	e.put(t, sk("deploy", "# Deploy\n", "deploy"))
	e.start(t, skillfacesvc.Config{})
	msgs := "[ {\"role\": \"user\",   \"content\": \"deploy \\u00e9t\\u00e9 <b>\"} ]"
	body := `{"restricted": true, "tools": ["Read"], "messages": ` + msgs + `}`
	m, code := call(t, e.nc, skillfacesvc.SubjectAssemble, []byte(body), nil)
	if code != "" {
		t.Fatalf("restricted request: %s %s", code, m.Data)
	}
	var raw struct {
		Messages json.RawMessage `json:"messages"`
		Tools    []string        `json:"tools"`
	}
	if err := json.Unmarshal(m.Data, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw.Messages) != msgs {
		t.Fatalf("restricted messages = %s; want the request's bytes %s", raw.Messages, msgs)
	}
	if strings.Join(raw.Tools, ",") != "Read" {
		t.Fatalf("restricted tools = %q; want the caller's [Read]", raw.Tools)
	}
}

// TestInfo: skill_info over NATS gives the table of contents of a long
// skill and one section with its subsections.
func TestInfo(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("# Release\n\nOverview.\n\n## Build\n\n")
	for i := range 250 {
		fmt.Fprintf(&b, "build step %d\n", i)
	}
	b.WriteString("\n### Cache\n\nUse the cache.\n\n## Ship\n\nShip it.\n")
	e.put(t, sk("release", b.String()))
	e.start(t, skillfacesvc.Config{})
	info := func(req string) skillfacesvc.InfoReply {
		m, code := call(t, e.nc, skillfacesvc.SubjectInfo, []byte(req), nil)
		if code != "" {
			t.Fatalf("info %s: %s %s", req, code, m.Data)
		}
		var r skillfacesvc.InfoReply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	toc := info(`{"name":"release"}`)
	for _, want := range []string{"# Release", "Build", "Cache", "Ship"} {
		if !strings.Contains(toc.Text, want) {
			t.Errorf("info(release) lacks %q:\n%s", want, toc.Text)
		}
	}
	if strings.Contains(toc.Text, "build step 200") {
		t.Errorf("info(release) of a 260-line skill has the whole text; want the first lines and a table of contents")
	}
	sec := info(`{"name":"release","section":"build"}`)
	if !strings.HasPrefix(sec.Text, "## Build") || !strings.Contains(sec.Text, "Use the cache.") || strings.Contains(sec.Text, "Ship it.") {
		t.Errorf("info(release, build) = %.80q…; want the Build section with its Cache subsection, without Ship", sec.Text)
	}
}

// TestHotReload: puts and deletes in SKILLS reach the next request without
// a restart; with the revision header the very next request sees them.
func TestHotReload(t *testing.T) {
	e := newEnv(t)
	e.put(t, sk("deploy", "# Deploy v1\n", "deploy"))
	svc := e.start(t, skillfacesvc.Config{})
	hdr := func(rev uint64) nats.Header {
		return nats.Header{skillfacesvc.SkillsRevisionHeader: {strconv.FormatUint(rev, 10)}}
	}
	r1 := assemble(t, e.nc, userReq("hr", 1, "deploy please"), nil)
	if !containsContent(r1.Messages, "# Deploy v1\n") {
		t.Fatalf("turn 1 lacks the v1 body: %+v", r1.Messages)
	}
	rev := e.put(t, sk("deploy", "# Deploy v2\n", "deploy"))
	r2 := assemble(t, e.nc, userReq("hr", 2, "thanks"), hdr(rev))
	if !containsContent(r2.Messages, "# Deploy v2\n") || containsContent(r2.Messages, "# Deploy v1\n") {
		t.Fatalf("turn 2 after the edit: %+v; want the v2 body in place of v1", r2.Messages)
	}
	rev = e.put(t, sk("lint", "# Lint\n", "lint"))
	r3 := assemble(t, e.nc, userReq("hr", 3, "now lint"), hdr(rev))
	if strings.Join(r3.Active, ",") != "deploy,lint" {
		t.Fatalf("turn 3 active = %q; want [deploy lint]", r3.Active)
	}
	if err := e.kv.Delete(context.Background(), "deploy"); err != nil {
		t.Fatal(err)
	}
	st, err := e.kv.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	last := st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
	r4 := assemble(t, e.nc, userReq("hr", 4, "go on"), hdr(last))
	if strings.Join(r4.Active, ",") != "lint" || containsContent(r4.Messages, "# Deploy v2\n") {
		t.Fatalf("turn 4 after delete: active %q; want [lint] and no deploy body", r4.Active)
	}
	if got := svc.SkillsRevision(); got < last {
		t.Fatalf("SkillsRevision() = %d; want at least %d", got, last)
	}
	// A bad record never replaces the good one.
	if _, err := e.kv.Put(context.Background(), "lint", []byte(`{"name":"lint","invocation":"sometimes"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kv.Put(context.Background(), "broken", []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	st, _ = e.kv.Status(context.Background())
	last = st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
	r5 := assemble(t, e.nc, userReq("hr", 5, "lint again"), hdr(last))
	if !containsContent(r5.Messages, "# Lint\n") {
		t.Fatalf("turn 5 after an invalid record: %+v; want the last good lint body", r5.Messages)
	}
	// A revision the bucket never reaches is a retryable 503, not a hang.
	_ = svc
}

func TestRevisionNeverReached(t *testing.T) {
	e := newEnv(t)
	e.start(t, skillfacesvc.Config{RevisionWait: 200 * time.Millisecond})
	b, _ := json.Marshal(userReq("s", 1, "hi"))
	m, code := call(t, e.nc, skillfacesvc.SubjectAssemble, b, nats.Header{skillfacesvc.SkillsRevisionHeader: {"999999"}})
	var er skillfacesvc.ErrorReply
	_ = json.Unmarshal(m.Data, &er)
	if code != "503" || !er.Retryable || !strings.Contains(er.Error, "not yet 999999") {
		t.Fatalf("request waiting for revision 999999 = %s %+v; want a retryable 503 naming the revision", code, er)
	}
}

// TestInitialLoad: a replica started on a full bucket answers its first
// request with every skill.
func TestInitialLoad(t *testing.T) {
	e := newEnv(t)
	for i := range 50 {
		e.put(t, sk(fmt.Sprintf("skill-%02d", i), "# body\n"))
	}
	_ = e.kv.Delete(context.Background(), "skill-07")
	svc := e.start(t, skillfacesvc.Config{ListingEntries: 100})
	if st := svc.Stats(); st.Skills != 49 {
		t.Fatalf("Stats().Skills after Start = %d; want 49", st.Skills)
	}
	resp := assemble(t, e.nc, userReq("first", 1, "hello"), nil)
	listing := resp.Messages[1].Content
	if !strings.Contains(listing, "skill-49") || strings.Contains(listing, "skill-07") {
		t.Fatalf("first listing lacks skill-49 or shows the deleted skill-07:\n%.300s", listing)
	}
}

// recorder is a TracerProvider that records the parent span context of
// every span started (the noop tracer carries the parent along).
type recorder struct {
	embedded.TracerProvider
	mu      sync.Mutex
	parents map[string][]trace.SpanContext // by span name
}

func (r *recorder) Tracer(string, ...trace.TracerOption) trace.Tracer { return recTracer{r: r} }

type recTracer struct {
	embedded.Tracer
	r *recorder
}

func (t recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.r.mu.Lock()
	t.r.parents[name] = append(t.r.parents[name], trace.SpanContextFromContext(ctx))
	t.r.mu.Unlock()
	return noop.NewTracerProvider().Tracer("").Start(ctx, name, opts...)
}

// TestTraceContext: the handler's span continues the caller's trace
// (W3C traceparent in the request headers, docs/deploy.md "Traces").
func TestTraceContext(t *testing.T) {
	rec := &recorder{parents: map[string][]trace.SpanContext{}}
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(rec)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	e := newEnv(t)
	e.start(t, skillfacesvc.Config{})
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	hdr := nats.Header{"traceparent": {"00-" + tid.String() + "-" + sid.String() + "-01"}}
	assemble(t, e.nc, userReq("traced", 1, "hi"), hdr)
	name := "skillface " + skillfacesvc.SubjectAssemble
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ps := rec.parents[name]
	if len(ps) != 1 || ps[0].TraceID() != tid || ps[0].SpanID() != sid || !ps[0].IsRemote() {
		t.Fatalf("parents of span %q = %v; want one remote parent trace %s span %s", name, ps, tid, sid)
	}
}

// TestStopAnswersInFlight: requests received before Stop are answered.
func TestStopAnswersInFlight(t *testing.T) {
	e := newEnv(t)
	e.put(t, sk("deploy", "# Deploy\n", "deploy"))
	nc := natsserver.ConnectTB(t, e.srv)
	svc, err := skillfacesvc.New(nc, skillfacesvc.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	b, _ := json.Marshal(userReq("stop", 1, "deploy"))
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := bytes.Replace(b, []byte(`"stop"`), []byte(fmt.Sprintf(`"stop-%d"`, i)), 1)
			m, err := e.nc.RequestWithContext(ctx, skillfacesvc.SubjectAssemble, req)
			switch {
			case errors.Is(err, nats.ErrNoResponders):
				// sent after the endpoints stopped: fine, nobody took it
			case err != nil:
				errs <- err
			case m.Header.Get(micro.ErrorCodeHeader) != "":
				errs <- fmt.Errorf("error reply %s", m.Data)
			}
		}()
	}
	time.Sleep(5 * time.Millisecond) // not a wait: Stop lands among the 40 requests, some answered, some in flight, some after
	if err := svc.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := svc.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := nc.Drain(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("request around Stop: %v", err)
	}
	if err := svc.Start(ctx); !errors.Is(err, skillfacesvc.ErrStopped) {
		t.Fatalf("Start after Stop = %v; want ErrStopped", err)
	}
}

// containsContent reports whether a message contains text.
// TestContentionIsRetryable: with one compare-and-set attempt allowed,
// concurrent turns of one session that lose the race get a retryable 409,
// and the winners' activations are all kept.
func TestContentionIsRetryable(t *testing.T) {
	e := newEnv(t)
	const n = 24
	for i := range n {
		e.put(t, sk(fmt.Sprintf("s%02d", i), fmt.Sprintf("# S%d\n", i)))
	}
	e.start(t, skillfacesvc.Config{MaxAttempts: 1, SessionBodies: n})
	for batch := 0; batch < 5; batch++ {
		session := fmt.Sprintf("contended-%d", batch)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []string
		conflicts := 0
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, _ := json.Marshal(skillface.Request{SessionID: session, Round: int64(i + 1), Mounts: []string{fmt.Sprintf("s%02d", i)},
					Messages: []skillface.Message{{Role: "user", Content: "go"}}})
				m, code := call(t, e.nc, skillfacesvc.SubjectAssemble, b, nil)
				mu.Lock()
				defer mu.Unlock()
				switch code {
				case "":
					var r skillface.Response
					_ = json.Unmarshal(m.Data, &r)
					won = append(won, r.Activated...)
				case "409":
					var er skillfacesvc.ErrorReply
					_ = json.Unmarshal(m.Data, &er)
					if !er.Retryable || !strings.Contains(er.Error, "retry") {
						t.Errorf("409 reply %+v; want retryable with advice to retry", er)
					}
					conflicts++
				default:
					t.Errorf("concurrent turn: code %s: %s", code, m.Data)
				}
			}()
		}
		wg.Wait()
		final := assemble(t, e.nc, skillface.Request{SessionID: session, Round: n + 1}, nil)
		got, want := slices.Sorted(slices.Values(final.Active)), slices.Sorted(slices.Values(won))
		if !slices.Equal(got, want) {
			t.Fatalf("session holds %q; want exactly the winners' activations %q", got, want)
		}
		if conflicts > 0 {
			return
		}
	}
	t.Skip("no compare-and-set conflict in 5 batches of concurrent turns (machine too calm); 409 path not exercised")
}

// TestSessionExpires: a session idle for longer than the sessions TTL
// starts afresh.
func TestSessionExpires(t *testing.T) {
	e := newEnv(t)
	e.put(t, sk("deploy", "# Deploy\n", "deploy"))
	e.start(t, skillfacesvc.Config{Provision: events.Options{SessionsTTL: time.Second}})
	if r := assemble(t, e.nc, userReq("short", 1, "deploy"), nil); strings.Join(r.Active, ",") != "deploy" {
		t.Fatalf("turn 1 active %q; want [deploy]", r.Active)
	}
	if r := assemble(t, e.nc, userReq("short", 2, "and then?"), nil); strings.Join(r.Active, ",") != "deploy" {
		t.Fatalf("turn 2 active %q; want [deploy] kept", r.Active)
	}
	// A turn rewrites the session, so the expiry is watched in the
	// bucket, where a read writes nothing: the server drops the entry at
	// its max age and no watcher is told, so this polls the key.
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sessions, err := js.KeyValue(ctx, events.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	for {
		_, err := sessions.Get(ctx, events.KeyFor("short"))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("session still stored 10 s after its last write with a 1 s TTL (last read: %v)", err)
		}
		time.Sleep(20 * time.Millisecond) // nats-server tells nobody when max age drops an entry
	}
	if took := time.Since(written); took < 500*time.Millisecond {
		t.Errorf("session gone %s after its last write; want about the 1 s TTL", took.Round(time.Millisecond))
	}
	if r := assemble(t, e.nc, userReq("short", 3, "and then?"), nil); len(r.Active) != 0 {
		t.Errorf("turn 3 after the session expired: active %q; want none (a fresh session)", r.Active)
	}
}

// TestMicroStats: `nats micro stats` shows the service's counters.
func TestMicroStats(t *testing.T) {
	e := newEnv(t)
	e.put(t, sk("deploy", "# Deploy\n", "deploy"))
	e.start(t, skillfacesvc.Config{})
	assemble(t, e.nc, userReq("st", 1, "deploy"), nil)
	subj, err := micro.ControlSubject(micro.StatsVerb, events.ServiceSkillface, "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.nc.Request(subj, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var st micro.Stats
	if err := json.Unmarshal(m.Data, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Endpoints) != 2 {
		t.Fatalf("micro stats has %d endpoints; want 2 (assemble, info)", len(st.Endpoints))
	}
	var data skillfacesvc.Stats
	if err := json.Unmarshal(st.Endpoints[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Skills != 1 || data.Requests != 1 || data.Assembler.Activations != 1 {
		t.Fatalf("stats data = %+v; want 1 skill, 1 request, 1 activation", data)
	}
}

// TestManyUnknownMounts: an error about thousands of unknown mounts still
// fits in one reply.
func TestManyUnknownMounts(t *testing.T) {
	e := newEnv(t)
	e.start(t, skillfacesvc.Config{})
	req := skillface.Request{SessionID: "m", Round: 1}
	for i := range 30000 {
		req.Mounts = append(req.Mounts, fmt.Sprintf("missing-skill-number-%05d", i))
	}
	b, _ := json.Marshal(req)
	m, code := call(t, e.nc, skillfacesvc.SubjectAssemble, b, nil)
	var er skillfacesvc.ErrorReply
	_ = json.Unmarshal(m.Data, &er)
	if code != "404" || len(er.Skills) != 100 || !strings.Contains(er.Error, "30000 mounted skills are not loaded") {
		t.Fatalf("30,000 unknown mounts: code %s, %d skills, %.120q; want 404 with the first 100 named and the count", code, len(er.Skills), er.Error)
	}
}

// TestReplyTooLarge: an assembled prompt larger than the server's
// max_payload is a 413 that says so, not a lost reply.
func TestReplyTooLarge(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{MaxPayload: 32 << 10})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, events.BucketSkills)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, nc: nc, kv: kv}
	e.put(t, sk("big", "# Big\n\n"+strings.Repeat("a line of instructions\n", 700), "big"))
	e.start(t, skillfacesvc.Config{})
	req := userReq("large", 1, "big "+strings.Repeat("y", 20<<10))
	b, _ := json.Marshal(req)
	m, code := call(t, nc, skillfacesvc.SubjectAssemble, b, nil)
	var er skillfacesvc.ErrorReply
	_ = json.Unmarshal(m.Data, &er)
	if code != "413" || !strings.Contains(er.Error, "max_payload of 32768 bytes") {
		t.Fatalf("oversize reply: code %q %+v; want 413 naming max_payload", code, er)
	}
	// The service keeps serving.
	if r := assemble(t, nc, userReq("large", 2, "small"), nil); len(r.Messages) == 0 {
		t.Fatal("no messages after a 413")
	}
}

func containsContent(msgs []skillface.Message, text string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

func skillfaceLimits(whole int) sections.Limits { return sections.Limits{WholeMaxLines: whole} }
