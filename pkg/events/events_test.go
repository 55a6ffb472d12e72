package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

func TestSubjects(t *testing.T) {
	tests := []struct {
		name    string
		f       func() (string, error)
		want    string
		wantErr bool
	}{
		{"run", func() (string, error) { return events.RunSubject("repo-survey") }, "seq.run.repo-survey", false},
		{"run unicode", func() (string, error) { return events.RunSubject("开机自检") }, "seq.run.=5byA5py66Ieq5qOA", false},
		{"run with dot, encoded", func() (string, error) { return events.RunSubject("a.b") }, "seq.run.=YS5i", false},
		{"run empty", func() (string, error) { return events.RunSubject("") }, "", true},
		{"run too long", func() (string, error) { return events.RunSubject(strings.Repeat("检", 200)) }, "", true},
		{"run wildcard, encoded", func() (string, error) { return events.RunSubject("x*") }, "seq.run.=eCo", false},
		{"run inline", func() (string, error) { return events.RunSubject(events.InlineRunToken) }, "seq.run._inline", false},
		{"schedule", func() (string, error) { return events.ScheduleSubject("nightly") }, "seq.schedule.nightly", false},
		{"schedule unicode", func() (string, error) { return events.ScheduleSubject("开机自检") }, "seq.schedule.=5byA5py66Ieq5qOA", false},
		{"schedule event unicode", func() (string, error) { return events.ScheduleEventSubject("检查网络") }, "events.schedule.=5qOA5p-l572R57uc", false},
		{"agent ready", func() (string, error) { return events.AgentReadySubject("bot-1") }, "events.agent_ready.bot-1", false},
		{"agent ready unicode", func() (string, error) { return events.AgentReadySubject("机器人") }, "events.agent_ready.=5py65Zmo5Lq6", false},
		{"agent with space, encoded", func() (string, error) { return events.AgentReadySubject("bot 1") }, "events.agent_ready.=Ym90IDE", false},
		{"agent empty", func() (string, error) { return events.AgentReadySubject("") }, "", true},
		{"run event", func() (string, error) { return events.RunEventSubject("r1", events.RunGroup) }, "events.run.r1.group", false},
		{"run event bad kind", func() (string, error) { return events.RunEventSubject("r1", "done") }, "", true},
		{"registry", func() (string, error) { return events.RegistryEventSubject(events.KindSkill, events.OpPut) }, "events.registry.skill.put", false},
		{"registry bad op", func() (string, error) { return events.RegistryEventSubject(events.KindSkill, "upsert") }, "", true},
		{"tool dotted", func() (string, error) { return events.ToolSubject("fs.read") }, "tool.fs.read", false},
		{"tool empty token", func() (string, error) { return events.ToolSubject("fs..read") }, "", true},
		{"tool wildcard", func() (string, error) { return events.ToolSubject("fs.>") }, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f()
			if tt.wantErr {
				if !errors.Is(err, events.ErrBadToken) {
					t.Fatalf("got (%q, %v); want an error wrapping ErrBadToken", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got (%q, %v); want %q", got, err, tt.want)
			}
		})
	}
}

func TestKeyFor(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{"repo-survey", "repo-survey"},
		{"a/b_c=d.e", "a/b_c=d.e"},
		{"has space", "=aGFzIHNwYWNl"},
		{".leading", "=LmxlYWRpbmc"},
		{"trailing.", "=dHJhaWxpbmcu"},
		{"a..b", "=YS4uYg"},
		{"=looks-encoded", "=PWxvb2tzLWVuY29kZWQ"},
		{"ünïcode", "=w7xuw69jb2Rl"},
	}
	for _, tt := range tests {
		got := events.KeyFor(tt.name)
		if got != tt.want {
			t.Errorf("KeyFor(%q) = %q; want %q", tt.name, got, tt.want)
		}
		back, err := events.NameForKey(got)
		if err != nil || back != tt.name {
			t.Errorf("NameForKey(%q) = %q, %v; want %q", got, back, err, tt.name)
		}
	}
	if _, err := events.NameForKey("=not base64!"); !errors.Is(err, events.ErrBadKey) {
		t.Errorf("NameForKey(%q) error = %v; want ErrBadKey", "=not base64!", err)
	}
}

func FuzzKeyFor(f *testing.F) {
	for _, s := range []string{"a", "a b", "=x", ".", "a..b", "x/y", "开机自检", "机器人", "café", "cafe\u0301", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return
		}
		k := events.KeyFor(name)
		back, err := events.NameForKey(k)
		if err != nil || back != name {
			t.Fatalf("NameForKey(KeyFor(%q)) = %q, %v", name, back, err)
		}
	})
}

// TokenFor keeps ASCII names as they are and encodes every other name
// reversibly into one subject token that is also a KV key.
func TestTokenFor(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"repo-survey", "repo-survey"},
		{"A_1", "A_1"},
		{"开机自检", "=5byA5py66Ieq5qOA"},
		{"机器人", "=5py65Zmo5Lq6"},
		{"检查磁盘", "=5qOA5p-l56OB55uY"},
		{"café", "=Y2Fmw6k"},
		{"a.b", "=YS5i"},
		{"a b", "=YSBi"},
		{"=x", "=PXg"},
		{"a/b", "=YS9i"},
		{"", "="},
	} {
		got := events.TokenFor(tt.name)
		if got != tt.want {
			t.Errorf("TokenFor(%q) = %q; want %q", tt.name, got, tt.want)
		}
		if tt.name == "" {
			continue
		}
		if back, err := events.NameForToken(got); err != nil || back != tt.name {
			t.Errorf("NameForToken(%q) = %q, %v; want %q", got, back, err, tt.name)
		}
		// A valid name has the same token and key.
		if k := events.KeyFor(tt.name); !strings.ContainsAny(tt.name, "./ =") && k != got {
			t.Errorf("KeyFor(%q) = %q, TokenFor = %q; want them equal", tt.name, k, got)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "=", "=!!", "=YWJj", "=YS5i=", "a*", "=5byA5py66Ieq5qOA=="} {
		if name, err := events.NameForToken(bad); !errors.Is(err, events.ErrBadToken) {
			t.Errorf("NameForToken(%q) = %q, %v; want ErrBadToken", bad, name, err)
		}
	}
	for subj, want := range map[string]string{
		"seq.schedule.=5byA5py66Ieq5qOA":   "开机自检",
		"seq.run.repo-survey":              "repo-survey",
		"events.agent_ready.=5py65Zmo5Lq6": "机器人",
		"events.schedule.nightly":          "nightly",
	} {
		if got, err := events.NameOfSubject(subj); err != nil || got != want {
			t.Errorf("NameOfSubject(%q) = %q, %v; want %q", subj, got, err, want)
		}
	}
	for _, bad := range []string{"seq.run.a.b", "tool.fs.read", "seq.run.", "seq.schedule.=!!"} {
		if _, err := events.NameOfSubject(bad); !errors.Is(err, events.ErrBadToken) {
			t.Errorf("NameOfSubject(%q) = %v; want ErrBadToken", bad, err)
		}
	}
}

// FuzzTokenFor: every name maps to one token that is a single valid
// subject token and KV key, and back to the same name; ASCII names stay
// as they are.
func FuzzTokenFor(f *testing.F) {
	for _, s := range []string{"a", "repo-survey", "开机自检", "机器人", "a.b", "a b", "=x", "=", "a*", ">", "\x00", "\xff\xfe", "café", "cafe\u0301", "pаyments"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return
		}
		tok := events.TokenFor(name)
		back, err := events.NameForToken(tok)
		if err != nil || back != name {
			t.Fatalf("NameForToken(TokenFor(%q)) = %q, %v", name, back, err)
		}
		for _, c := range []byte(tok) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '=') {
				t.Fatalf("TokenFor(%q) = %q holds %q", name, tok, c)
			}
		}
		if strings.Count(tok, "=") > 1 || strings.Contains(tok[1:], "=") {
			t.Fatalf("TokenFor(%q) = %q: '=' only as the first character", name, tok)
		}
		if k := events.KeyFor(name); k != tok && !strings.ContainsAny(name, "./=") {
			t.Fatalf("KeyFor(%q) = %q differs from TokenFor %q", name, k, tok)
		}
		subj, err := events.RunSubject(name)
		if len(name) <= events.MaxNameLength {
			if err != nil || subj != "seq.run."+tok {
				t.Fatalf("RunSubject(%q) = %q, %v", name, subj, err)
			}
			if n, err := events.NameOfSubject(subj); err != nil || n != name {
				t.Fatalf("NameOfSubject(%q) = %q, %v", subj, n, err)
			}
		} else if !errors.Is(err, events.ErrBadToken) {
			t.Fatalf("RunSubject of a %d-byte name = %q, %v; want ErrBadToken", len(name), subj, err)
		}
		// A token TokenFor did not make does not decode to a name whose token differs.
		if n, err := events.NameForToken(name); err == nil && events.TokenFor(n) != name {
			t.Fatalf("NameForToken(%q) = %q, whose token is %q", name, n, events.TokenFor(n))
		}
	})
}

func TestMessageRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   events.Message
		out  events.Message
		json string
	}{
		{
			"run request",
			&events.RunRequest{RunID: "r1", Sequence: "survey", Args: json.RawMessage(`{"repo":"x"}`), RequestedAt: at},
			&events.RunRequest{},
			`{"v":1,"run_id":"r1","sequence":"survey","args":{"repo":"x"},"requested_at":"2026-11-30T03:00:00Z"}`,
		},
		{
			"agent ready",
			&events.AgentReady{Agent: "bot", BootID: "b-1"},
			&events.AgentReady{},
			`{"v":1,"agent":"bot","boot_id":"b-1"}`,
		},
		{
			"run state",
			&events.RunState{RunID: "r1", Status: events.StatusRunning, FinishedGroups: 2},
			&events.RunState{},
			`{"v":1,"run_id":"r1","status":"running","finished_groups":2}`,
		},
		{
			"run event",
			&events.RunEvent{RunID: "r1", Kind: events.RunGroup, Group: 1, GroupName: "fetch", Status: "ok"},
			&events.RunEvent{},
			`{"v":1,"run_id":"r1","kind":"group","group":1,"group_name":"fetch","status":"ok"}`,
		},
		{
			"registry event",
			&events.RegistryEvent{Kind: events.KindSkill, Op: events.OpInvalid, File: "a/SKILL.md", Line: 3, Error: "bad"},
			&events.RegistryEvent{},
			`{"v":1,"kind":"skill","op":"invalid","file":"a/SKILL.md","line":3,"error":"bad"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := events.Encode(tt.in)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(b) != tt.json {
				t.Fatalf("Encode = %s; want %s", b, tt.json)
			}
			if err := events.Decode(b, tt.out); err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			b2, _ := json.Marshal(tt.out)
			if string(b2) != tt.json {
				t.Fatalf("re-encoded = %s; want %s", b2, tt.json)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want error
	}{
		{"no version", `{"run_id":"r","sequence":"s"}`, events.ErrVersion},
		{"future version", `{"v":99,"run_id":"r","sequence":"s"}`, events.ErrVersion},
		{"not json", `{"v":1,`, events.ErrBadMessage},
		{"no sequence", `{"v":1,"run_id":"r"}`, events.ErrBadMessage},
		{"both", `{"v":1,"run_id":"r","sequence":"s","inline":{"name":"x"}}`, events.ErrBadMessage},
		{"args not object", `{"v":1,"run_id":"r","sequence":"s","args":[1]}`, events.ErrBadMessage},
		{"run id with dot", `{"v":1,"run_id":"r.1","sequence":"s"}`, events.ErrBadMessage},
		{"bad trigger", `{"v":1,"run_id":"r","sequence":"s","trigger":"cron"}`, events.ErrBadMessage},
		{"unknown field kept compatible", `{"v":1,"run_id":"r","sequence":"s","priority":3}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := events.Decode([]byte(tt.data), &events.RunRequest{})
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Decode(%q) = %v; want %v", tt.data, err, tt.want)
			}
		})
	}
}

func TestHeaderCarrierRoundTrip(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)

	h := nats.Header{}
	events.Inject(ctx, h)
	if got, want := h.Get("traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; got != want {
		t.Fatalf("traceparent = %q; want %q", got, want)
	}
	got := trace.SpanContextFromContext(events.Extract(context.Background(), h))
	if got.TraceID() != tid || got.SpanID() != sid || !got.IsRemote() {
		t.Fatalf("Extract = %v; want trace %s span %s remote", got, tid, sid)
	}
	// Case-insensitive lookup: a header rewritten as Traceparent still works.
	h2 := nats.Header{"Traceparent": h["traceparent"]}
	if got := trace.SpanContextFromContext(events.Extract(context.Background(), h2)); got.TraceID() != tid {
		t.Fatalf("Extract(Traceparent) trace = %s; want %s", got.TraceID(), tid)
	}
	if got := trace.SpanContextFromContext(events.Extract(context.Background(), nil)); got.IsValid() {
		t.Fatalf("Extract(nil) = %v; want invalid", got)
	}
}

// TestRequestPropagatesTrace sends a request through a real server and
// checks that the responder sees the caller's trace.
func TestRequestPropagatesTrace(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	seen := make(chan trace.SpanContext, 1)
	sub, err := nc.Subscribe("echo", func(m *nats.Msg) {
		seen <- trace.SpanContextFromContext(events.Extract(context.Background(), m.Header))
		_ = m.Respond(m.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply, err := events.Request(ctx, nc, &nats.Msg{Subject: "echo", Data: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Data) != "hi" {
		t.Fatalf("reply = %q; want %q", reply.Data, "hi")
	}
	if got := <-seen; got.TraceID() != tid {
		t.Fatalf("responder saw trace %s; want %s", got.TraceID(), tid)
	}

	// No responders is an error, not a hang.
	if _, err := events.Request(ctx, nc, &nats.Msg{Subject: "nobody.home"}); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("Request(nobody.home) error = %v; want nats.ErrNoResponders", err)
	}
}

func provisionCheck(t *testing.T, js jetstream.JetStream, o events.Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o = o.WithDefaults()
	for _, b := range []string{events.BucketSkills, events.BucketSequences, events.BucketRuns, events.BucketSessions} {
		kv, err := js.KeyValue(ctx, b)
		if err != nil {
			t.Fatalf("bucket %s: %v", b, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := time.Duration(0)
		switch b {
		case events.BucketRuns:
			want = o.RunsTTL
		case events.BucketSessions:
			want = o.SessionsTTL
		}
		if st.TTL() != want {
			t.Errorf("bucket %s TTL = %s; want %s", b, st.TTL(), want)
		}
		if st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != o.Replicas {
			t.Errorf("bucket %s replicas = %d; want %d", b, st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas, o.Replicas)
		}
	}
	str, err := js.Stream(ctx, events.StreamSeqRuns)
	if err != nil {
		t.Fatal(err)
	}
	cfg := str.CachedInfo().Config
	if cfg.Retention != jetstream.WorkQueuePolicy || !cfg.AllowMsgSchedules || strings.Join(cfg.Subjects, ",") != "seq.run.>,seq.schedule.>" {
		t.Errorf("SEQ_RUNS config = retention %v, schedules %v, subjects %v; want work queue, true, [seq.run.> seq.schedule.>]", cfg.Retention, cfg.AllowMsgSchedules, cfg.Subjects)
	}
	if _, err := js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker); err != nil {
		t.Errorf("consumer %s: %v", events.ConsumerSeqworker, err)
	}
	ev, err := js.Stream(ctx, events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if ev.CachedInfo().Config.MaxAge != o.EventsMaxAge {
		t.Errorf("EVENTS max age = %s; want %s", ev.CachedInfo().Config.MaxAge, o.EventsMaxAge)
	}
}

func TestProvisionIdempotent(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatalf("first Provision: %v", err)
	}
	// Data written between the calls must survive the second call.
	kv, _ := js.KeyValue(ctx, events.BucketSkills)
	if _, err := kv.Put(ctx, "keep-me", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	provisionCheck(t, js, events.Options{})
	if e, err := kv.Get(ctx, "keep-me"); err != nil || string(e.Value()) != "{}" {
		t.Fatalf("key written before re-provisioning: %v, %v; want it kept", e, err)
	}
	// Changed options update the resources in place.
	o := events.Options{RunsTTL: time.Hour, SessionsTTL: 30 * time.Minute, EventsMaxAge: time.Hour}
	if err := events.Provision(ctx, js, o); err != nil {
		t.Fatalf("Provision with new TTLs: %v", err)
	}
	provisionCheck(t, js, o)
	// A service started with no explicit options (zero fields) keeps what
	// another service set on purpose instead of resetting it to defaults.
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatalf("Provision with unset options after explicit ones: %v", err)
	}
	provisionCheck(t, js, o)
	if st, err := kv.Status(ctx); err != nil || st.TTL() != 0 {
		t.Fatalf("SKILLS bucket TTL = %v (%v); want 0 (no TTL)", st, err)
	}
	// A storage change is refused with a clear error naming the resource.
	err = events.Provision(ctx, js, events.Options{Storage: jetstream.MemoryStorage})
	if !errors.Is(err, events.ErrProvision) || !strings.Contains(err.Error(), events.BucketSkills) {
		t.Fatalf("Provision(memory over file) = %v; want ErrProvision naming %s", err, events.BucketSkills)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name  string
		o     events.Options
		field string
	}{
		{"zero is fine", events.Options{}, ""},
		{"replicas", events.Options{Replicas: 7}, "Replicas"},
		{"negative replicas", events.Options{Replicas: -1}, "Replicas"},
		{"runs ttl", events.Options{RunsTTL: time.Millisecond}, "RunsTTL"},
		{"sessions ttl", events.Options{SessionsTTL: -time.Hour}, "SessionsTTL"},
		{"events bytes", events.Options{EventsMaxBytes: -5}, "EventsMaxBytes"},
		{"max deliver", events.Options{MaxDeliver: -2}, "MaxDeliver"},
		{"storage", events.Options{Storage: 9}, "Storage"},
	}
	for _, tt := range tests {
		err := tt.o.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v; want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, events.ErrOptions) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: Validate() = %v; want ErrOptions naming %s", tt.name, err, tt.field)
		}
	}
}

// TestScheduleTicksReachConsumer checks the arrangement of docs/architecture.md (A scheduled run): a
// schedule on seq.schedule.<name> targeting seq.run.<name> delivers ticks
// to the seqworker consumer, with Nats-Scheduler set.
func TestScheduleTicksReachConsumer(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	sched, _ := events.ScheduleSubject("tick")
	target, _ := events.RunSubject("tick")
	rr, _ := events.Encode(&events.RunRequest{RunID: "scheduled", Sequence: "tick", Trigger: events.TriggerSchedule})
	if _, err := events.Publish(ctx, js, &nats.Msg{Subject: sched, Data: rr},
		jetstream.WithScheduleEvery(time.Second), jetstream.WithScheduleTarget(target)); err != nil {
		t.Fatalf("publish schedule: %v", err)
	}
	cons, err := js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatalf("no schedule tick within 5s: %v", err)
	}
	if msg.Subject() != target || msg.Headers().Get("Nats-Scheduler") != sched {
		t.Fatalf("tick subject %q, Nats-Scheduler %q; want %q, %q", msg.Subject(), msg.Headers().Get("Nats-Scheduler"), target, sched)
	}
	_ = msg.Ack()
}

func TestProvisionCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster in -short mode")
	}
	nodes, err := natsserver.StartCluster(3, "skb", t.TempDir(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { natsserver.ShutdownAll(nodes) })
	nc, err := nodes[1].Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	o := events.Options{Replicas: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		if err := events.Provision(ctx, js, o); err != nil {
			t.Fatalf("Provision #%d on 3 nodes: %v", i+1, err)
		}
	}
	provisionCheck(t, js, o)
}

// FuzzDecode feeds arbitrary bytes to Decode for every message type: it
// never panics, and whatever it accepts encodes and decodes again to the
// same JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"run_id":"r","sequence":"s","args":{"a":1}}`,
		`{"v":1,"agent":"a","boot_id":"b"}`,
		`{"v":1,"run_id":"r","status":"failed","error":"x"}`,
		`{"v":1,"run_id":"r","kind":"group","group":2}`,
		`{"v":1,"kind":"sequence","op":"clash","name":"n","file":"a","other":"b"}`,
		`{"v":2}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []func() events.Message{
			func() events.Message { return &events.RunRequest{} },
			func() events.Message { return &events.RunState{} },
			func() events.Message { return &events.AgentReady{} },
			func() events.Message { return &events.RunEvent{} },
			func() events.Message { return &events.RegistryEvent{} },
		} {
			first := m()
			if events.Decode(data, first) != nil {
				continue
			}
			b, err := events.Encode(first)
			if err != nil {
				t.Fatalf("Decode accepted %q but Encode failed: %v", data, err)
			}
			second := m()
			if err := events.Decode(b, second); err != nil {
				t.Fatalf("Decode(Encode(Decode(%q))) = %v", data, err)
			}
			b2, _ := events.Encode(second)
			if string(b) != string(b2) {
				t.Fatalf("not stable: %s then %s", b, b2)
			}
		}
	})
}

// TestEncodeDefaultsVersionForEveryType covers message types declared in
// any file of the package.
func TestEncodeDefaultsVersionForEveryType(t *testing.T) {
	for _, m := range []events.Message{
		&events.RunRequest{RunID: "r", Sequence: "s"},
		&events.RunState{RunID: "r", Status: events.StatusPending},
		&events.AgentReady{Agent: "a", BootID: "b"},
		&events.RunEvent{RunID: "r", Kind: events.RunStarted},
		&events.RegistryEvent{Kind: events.KindSkill, Op: events.OpPut},
		&events.SeqCallRequest{Group: "g"},
		&events.SeqRunReply{RunID: "r"},
		&events.SeqStatusRequest{RunID: "r"},
	} {
		b, err := events.Encode(m)
		if err != nil || !strings.HasPrefix(string(b), `{"v":1,`) {
			t.Errorf("Encode(%T) = %s, %v; want v 1", m, b, err)
		}
	}
}

func TestRequestDigest(t *testing.T) {
	base := &events.RunRequest{RunID: "a", Sequence: "s", Args: json.RawMessage(`{"x":1,"y":"z"}`)}
	tests := []struct {
		name string
		r    *events.RunRequest
		same bool
	}{
		{"keys reordered and spaced", &events.RunRequest{RunID: "b", Sequence: "s", Args: json.RawMessage(`{ "y": "z", "x": 1 }`)}, true},
		{"other run id and trigger", &events.RunRequest{RunID: "c", Sequence: "s", Trigger: events.TriggerCall, Args: json.RawMessage(`{"x":1,"y":"z"}`)}, true},
		{"other value", &events.RunRequest{RunID: "a", Sequence: "s", Args: json.RawMessage(`{"x":2,"y":"z"}`)}, false},
		{"number spelt differently", &events.RunRequest{RunID: "a", Sequence: "s", Args: json.RawMessage(`{"x":1.0,"y":"z"}`)}, false},
		{"other sequence", &events.RunRequest{RunID: "a", Sequence: "t", Args: json.RawMessage(`{"x":1,"y":"z"}`)}, false},
		{"no args", &events.RunRequest{RunID: "a", Sequence: "s"}, false},
	}
	want := events.RequestDigest(base)
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("RequestDigest = %q; want sha256:<64 hex>", want)
	}
	for _, tc := range tests {
		if got := events.RequestDigest(tc.r); (got == want) != tc.same {
			t.Errorf("%s: RequestDigest equal = %v; want %v", tc.name, got == want, tc.same)
		}
	}
	none := events.RequestDigest(&events.RunRequest{Sequence: "s"})
	for _, args := range []string{`null`, `{}`, ` {} `} {
		if got := events.RequestDigest(&events.RunRequest{Sequence: "s", Args: json.RawMessage(args)}); got != none {
			t.Errorf("RequestDigest(args %s) = %s; want the same as no arguments", args, got)
		}
	}
}

// TestProvisionRetentionAndLegacyAckWait: the size limits are settings
// applied to RUNS, RUN_SLOTS, EVENTS and SEQ_RUNS and kept by a later
// Provision without them; a seqworker consumer left with the ack wait older
// releases created by default (2 minutes) moves to the new default (10 s),
// while any other value is kept.
func TestProvisionRetentionAndLegacyAckWait(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := events.Options{RunsMaxBytes: 64 << 20, RunSlotsMaxBytes: 256 << 20, EventsMaxBytes: 32 << 20, SeqRunsMaxBytes: 16 << 20, AckWait: events.LegacyAckWait}
	if err := events.Provision(ctx, js, o); err != nil {
		t.Fatal(err)
	}
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	for stream, want := range map[string]int64{"KV_" + events.BucketRuns: 64 << 20, "OBJ_" + events.BucketRunSlots: 256 << 20, events.StreamEvents: 32 << 20, events.StreamSeqRuns: 16 << 20} {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CachedInfo().Config.MaxBytes; got != want {
			t.Errorf("%s max_bytes = %d; want %d (set once, kept by a Provision without it)", stream, got, want)
		}
	}
	c, err := js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config.AckWait; got != events.DefaultAckWait {
		t.Errorf("ack wait after a Provision over the legacy 2m = %s; want %s", got, events.DefaultAckWait)
	}
	if err := events.Provision(ctx, js, events.Options{AckWait: 3 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	c, _ = js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker)
	if got := c.CachedInfo().Config.AckWait; got != 3*time.Minute {
		t.Errorf("ack wait set on purpose to 3m became %s after a Provision without it; want it kept", got)
	}
}

// TestRunStateLegacy: states written before the run lifecycle (status
// pending, trigger call, no created time) are read, and Normalize maps them
// onto the current vocabulary; the summary headers round-trip.
func TestRunStateLegacy(t *testing.T) {
	var st events.RunState
	old := `{"v":1,"run_id":"r1","sequence":"s","status":"pending","request":"sha256:x","updated_at":"2026-11-01T00:00:00Z"}`
	if err := events.Decode([]byte(old), &st); err != nil {
		t.Fatalf("Decode(legacy pending state) = %v", err)
	}
	st.Normalize()
	if st.Status != events.StatusQueued || st.Trigger != events.TriggerManual || st.CreatedAt.IsZero() {
		t.Errorf("normalised legacy state: status %q trigger %q created %v; want queued, manual, the update time", st.Status, st.Trigger, st.CreatedAt)
	}
	st = events.RunState{RunID: "r2", Sequence: "开机自检", Status: events.StatusFailed, Trigger: events.TriggerBoot, Worker: "w1", FinishedGroups: 1, Groups: 3, Attempt: 2,
		Error: "line one\nline two", CreatedAt: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC)}
	h := nats.Header{}
	st.Summary().SetHeader(h)
	got, ok := events.SummaryFromHeader("r2", h)
	want := st.Summary()
	want.Error = "line one"
	if !ok || got != want {
		t.Errorf("summary round trip:\n got %+v\nwant %+v", got, want)
	}
	if _, ok := events.SummaryFromHeader("r3", nats.Header{}); ok {
		t.Error("SummaryFromHeader of an entry without headers: ok; want false")
	}
}

// FuzzSummaryFromHeader: any header values read without a panic, and a
// summary written by SetHeader reads back with its status and counts.
func FuzzSummaryFromHeader(f *testing.F) {
	f.Add("running", "seq", "3/5", "2", "2026-11-30T01:02:03Z", "boom")
	f.Add("pending", "", "x/y", "-1", "yesterday", "")
	f.Fuzz(func(t *testing.T, status, sequence, groups, attempt, created, errText string) {
		h := nats.Header{}
		h.Set(events.RunHeaderStatus, status)
		h.Set(events.RunHeaderSequence, sequence)
		h.Set(events.RunHeaderGroups, groups)
		h.Set(events.RunHeaderAttempt, attempt)
		h.Set(events.RunHeaderCreated, created)
		h.Set(events.RunHeaderError, errText)
		s, ok := events.SummaryFromHeader("r", h)
		if ok != (status != "") {
			t.Fatalf("ok = %v for status %q", ok, status)
		}
		if !ok {
			return
		}
		h2 := nats.Header{}
		s.SetHeader(h2)
		back, ok := events.SummaryFromHeader("r", h2)
		if !ok || back.Status != s.Status || back.FinishedGroups != s.FinishedGroups || back.Groups != s.Groups {
			t.Fatalf("round trip of %+v gave %+v", s, back)
		}
	})
}

// TestProvisionOwner checks Options.Owner: a service creates what is
// missing, updates only what it owns, and leaves the seqworker consumer to
// the seqworker — so it never sends an update another service's
// resources, which a least-privilege user may not (docs/security.md).
func TestProvisionOwner(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The registry starts first on an empty server: everything but the
	// seqworker's consumer exists afterwards.
	if err := events.Provision(ctx, js, events.Options{Owner: events.OwnerRegistry}); err != nil {
		t.Fatalf("Provision as the registry on an empty server: %v", err)
	}
	for _, name := range []string{"KV_SKILLS", "KV_SEQUENCES", "KV_RUNS", "KV_SKILLFACE_SESSIONS", "OBJ_RUN_SLOTS", events.StreamSeqRuns, events.StreamEvents} {
		if _, err := js.Stream(ctx, name); err != nil {
			t.Errorf("stream %s after the registry's Provision: %v", name, err)
		}
	}
	if _, err := js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker); err == nil {
		t.Errorf("the registry's Provision created the seqworker consumer; want it left to the seqworker")
	}
	// skillface asks for other TTLs: only its own bucket changes.
	o := events.Options{Owner: events.OwnerSkillface, RunsTTL: time.Hour, SessionsTTL: 30 * time.Minute, EventsMaxAge: time.Hour}
	if err := events.Provision(ctx, js, o); err != nil {
		t.Fatalf("Provision as skillface: %v", err)
	}
	ttl := func(bucket string) time.Duration {
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := kv.Status(ctx)
		return st.TTL()
	}
	if got := ttl(events.BucketSessions); got != 30*time.Minute {
		t.Errorf("SKILLFACE_SESSIONS TTL after skillface's Provision = %v; want 30m (its own)", got)
	}
	if got := ttl(events.BucketRuns); got != events.DefaultRunsTTL {
		t.Errorf("RUNS TTL after skillface's Provision = %v; want %v (the seqworker's to change)", got, events.DefaultRunsTTL)
	}
	ev, _ := js.Stream(ctx, events.StreamEvents)
	if got := ev.CachedInfo().Config.MaxAge; got != events.DefaultEventsMaxAge {
		t.Errorf("EVENTS max age after skillface's Provision = %v; want %v", got, events.DefaultEventsMaxAge)
	}
	// The seqworker applies its own settings and makes its consumer.
	o.Owner = events.OwnerSeqworker
	if err := events.Provision(ctx, js, o); err != nil {
		t.Fatalf("Provision as the seqworker: %v", err)
	}
	if got := ttl(events.BucketRuns); got != time.Hour {
		t.Errorf("RUNS TTL after the seqworker's Provision = %v; want 1h", got)
	}
	if _, err := js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker); err != nil {
		t.Errorf("the seqworker consumer after the seqworker's Provision: %v", err)
	}
	if err := (events.Options{Owner: "tools"}).Validate(); !errors.Is(err, events.ErrOptions) {
		t.Errorf("Validate(Owner tools) = %v; want ErrOptions", err)
	}
	for stream, want := range map[string]string{"KV_SKILLS": "registry", "KV_SEQUENCES": "registry", "KV_SKILLFACE_SESSIONS": "skillface", "KV_RUNS": "seqworker", "OBJ_RUN_SLOTS": "seqworker", "SEQ_RUNS": "seqworker", "EVENTS": "seqworker"} {
		if got := events.OwnerOf(stream); got != want {
			t.Errorf("OwnerOf(%s) = %q; want %q", stream, got, want)
		}
	}
}
