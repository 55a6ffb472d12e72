package integration

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/corpus"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// sfEnv is one embedded server with skillface replicas.
type sfEnv struct {
	srv      *natsserver.Server
	nc       *nats.Conn // the agent runtime's connection
	skills   jetstream.KeyValue
	replicas []*skillfacesvc.Service
}

// sfStart starts a server, provisions it, stores skills in SKILLS and
// starts n skillface replicas (each on its own connection) with cfg.
func sfStart(t *testing.T, n int, cfg skillfacesvc.Config, skills []skill.Skill) *sfEnv {
	t.Helper()
	e := &sfEnv{srv: natsserver.StartTB(t, natsserver.Options{})}
	e.nc = natsserver.ConnectTB(t, e.srv)
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := events.Provision(ctx, js, cfg.Provision); err != nil {
		t.Fatal(err)
	}
	if e.skills, err = js.KeyValue(ctx, events.BucketSkills); err != nil {
		t.Fatal(err)
	}
	for _, s := range skills {
		sfPut(t, e.skills, s)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for i := range n {
		nc := natsserver.ConnectTB(t, e.srv, nats.Name(fmt.Sprintf("skillface-%d", i)))
		svc, err := skillfacesvc.New(nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatalf("start replica %d: %v", i, err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := svc.Stop(sctx); err != nil {
				t.Errorf("stop replica %d: %v", i, err)
			}
		})
		e.replicas = append(e.replicas, svc)
	}
	return e
}

// sfPut stores s in SKILLS as the registry does (key events.KeyFor(name))
// and returns the bucket revision.
func sfPut(t testing.TB, kv jetstream.KeyValue, s skill.Skill) uint64 {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(context.Background(), events.KeyFor(s.Name), b)
	if err != nil {
		t.Fatalf("put skill %q: %v", s.Name, err)
	}
	return rev
}

// sfAssemble sends req over NATS; rev, when non-zero, is passed in the
// skills revision header.
func sfAssemble(t testing.TB, nc *nats.Conn, req skillface.Request, rev uint64) skillface.Response {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: skillfacesvc.SubjectAssemble, Data: b, Header: nats.Header{}}
	if rev != 0 {
		msg.Header.Set(skillfacesvc.SkillsRevisionHeader, strconv.FormatUint(rev, 10))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reply, err := events.Request(ctx, nc, msg)
	if err != nil {
		t.Errorf("assemble session %q round %d: %v", req.SessionID, req.Round, err)
		return skillface.Response{}
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Errorf("assemble session %q round %d: error %s: %s", req.SessionID, req.Round, code, reply.Data)
		return skillface.Response{}
	}
	var resp skillface.Response
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		t.Errorf("assemble reply is not a response: %v", err)
	}
	return resp
}

// sfSkill builds a skill record with a content fingerprint.
func sfSkill(name, body string, triggers []string, paths ...string) skill.Skill {
	return skill.Skill{
		Name: name, Description: "Helps with " + strings.ReplaceAll(name, "-", " ") + ".", Version: 1,
		Invocation: skill.InvocationBoth, Context: skill.ContextInline, Format: skill.FormatMarkdown,
		Triggers: triggers, Paths: paths, Body: body,
		Fingerprint: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(body))),
	}
}

// sfSkills is the skill set of the tests: hand-made skills with triggers
// and paths, plus the public SKILL.md corpus when it is present.
func sfSkills(t *testing.T) []skill.Skill {
	t.Helper()
	out := []skill.Skill{
		sfSkill("sf-deploy", "# Deploy\n\n1. Build.\n2. Ship with `make deploy`.\n", []string{"deploy", "ship it"}),
		sfSkill("sf-lint", "# Lint\n\nRun `golangci-lint run` and fix everything.\n", []string{"lint"}),
		sfSkill("sf-sql", "# SQL\n\nNever run migrations by hand.\n", nil, "db/**/*.sql"),
		sfSkill("sf-docs", "# Docs\n\nWrite in plain English.\n", []string{"document", "docs"}),
		sfSkill("sf-release", "# Release\n\nTag, then publish notes.\n", []string{"release"}),
	}
	out[1].AllowedTools = []string{"Bash(golangci-lint:*)", "Read"}
	out[4].DisallowedTools = []string{"Write"}
	if root, ok := corpus.Find(); ok {
		_ = filepath.WalkDir(filepath.Join(root, "skills"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "SKILL.md" || len(out) >= 40 {
				return nil
			}
			if s, _, err := skill.Load(p); err == nil && !strings.HasPrefix(s.Name, "sf-") &&
				!slices.ContainsFunc(out, func(o skill.Skill) bool { return o.Name == s.Name }) {
				out = append(out, *s)
			}
			return nil
		})
	}
	return out
}

// TestSkillfaceReplicasMatchInProcess: one session whose turns are served
// by two replicas gives, turn for turn, the same responses as one
// in-process Assembler with a memory store; a skill edited in SKILLS
// changes the next turn's body.
func TestSkillfaceReplicasMatchInProcess(t *testing.T) {
	skills := sfSkills(t)
	e := sfStart(t, 2, skillfacesvc.Config{}, skills)
	ref, err := skillface.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.SetSkills(skills); err != nil {
		t.Fatal(err)
	}
	var corpusSkill string
	if len(skills) > 5 {
		corpusSkill = skills[5].Name
	}
	t.Logf("%d skills (%d from the public corpus); round 5 mounts %q", len(skills), len(skills)-5, corpusSkill)

	tools := []string{"Read", "Write", "Bash", "WebFetch"}
	history := []skillface.Message{{Role: "system", Content: "You are a careful engineer."}}
	turn := func(round int64, text string, mods func(*skillface.Request)) skillface.Request {
		history = append(history, skillface.Message{Role: "user", Content: text})
		req := skillface.Request{SessionID: "conv:42/alice", Round: round, Messages: slices.Clone(history), Tools: tools}
		if mods != nil {
			mods(&req)
		}
		history = append(history, skillface.Message{Role: "assistant", Content: "ok (" + strconv.FormatInt(round, 10) + ")"})
		return req
	}
	served := func() []uint64 {
		var out []uint64
		for _, r := range e.replicas {
			out = append(out, r.Stats().Requests)
		}
		return out
	}
	texts := []string{
		"hello there",
		"please lint the repo",
		"now deploy to staging",
		"what does the schema look like?",
		"write the docs",
		"ship it",
		"release v2",
		"thanks, one more lint pass",
		"done?",
	}
	var editRound int64 = 6
	var byReplica [2]int
	switches, last := 0, -1
	var skillsRev uint64
	for i := 0; i < 40 && (i < len(texts) || switches < 2); i++ {
		round := int64(i + 1)
		text := texts[i%len(texts)]
		req := turn(round, text, func(r *skillface.Request) {
			if round == 4 {
				r.WorkFiles = []string{"db/migrations/001_init.sql"}
			}
			if round == 5 && corpusSkill != "" {
				r.Mounts = []string{corpusSkill}
			}
		})
		if round == editRound {
			// The registry edits sf-deploy (active since round 3).
			edited := sfSkill("sf-deploy", "# Deploy (v2)\n\n1. Build.\n2. Canary first, then `make deploy`.\n", []string{"deploy", "ship it"})
			skillsRev = sfPut(t, e.skills, edited)
			if err := ref.PutSkill(edited); err != nil {
				t.Fatal(err)
			}
		}
		before := served()
		got := sfAssemble(t, e.nc, req, skillsRev)
		after := served()
		who := -1
		for k := range after {
			if after[k] > before[k] {
				who = k
			}
		}
		if who < 0 {
			t.Fatalf("round %d: no replica counted the request", round)
		}
		byReplica[who]++
		if last >= 0 && who != last {
			switches++
		}
		last = who
		want, err := ref.Assemble(context.Background(), req)
		if err != nil {
			t.Fatalf("in-process round %d: %v", round, err)
		}
		gj, _ := json.MarshalIndent(got, "", " ")
		wj, _ := json.MarshalIndent(want, "", " ")
		if string(gj) != string(wj) {
			t.Fatalf("round %d (%q) served by replica %d differs from in-process Assemble:\nover NATS: %s\nin-process: %s", round, text, who, gj, wj)
		}
		if round == editRound {
			if !sfHasText(got.Messages, "Canary first") || sfHasText(got.Messages, "2. Ship with `make deploy`") {
				t.Fatalf("round %d after editing sf-deploy: the body is not the new one:\n%s", round, gj)
			}
		}
	}
	if byReplica[0] == 0 || byReplica[1] == 0 || switches < 2 {
		t.Fatalf("turns per replica %v, %d switches; want both replicas serving turns of the session", byReplica, switches)
	}
	t.Logf("turns per replica %v, %d switches between replicas", byReplica, switches)
}

// TestSkillfaceConcurrentTurnsLoseNothing: concurrent turns of one session,
// each mounting a different skill, spread over two replicas: every skill is
// activated exactly once and the session ends with all of them.
func TestSkillfaceConcurrentTurnsLoseNothing(t *testing.T) {
	const n = 16
	var skills []skill.Skill
	for i := range n {
		skills = append(skills, sfSkill(fmt.Sprintf("sf-c%02d", i), fmt.Sprintf("# Skill %d\n\nBody %d.\n", i, i), nil))
	}
	e := sfStart(t, 2, skillfacesvc.Config{SessionBodies: n}, skills)
	var wg sync.WaitGroup
	var mu sync.Mutex
	activated := map[string]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := skillface.Request{SessionID: "busy session", Round: int64(i + 1), Mounts: []string{skills[i].Name},
				Messages: []skillface.Message{{Role: "user", Content: "turn " + strconv.Itoa(i)}}}
			resp := sfAssemble(t, e.nc, req, 0)
			mu.Lock()
			for _, a := range resp.Activated {
				activated[a]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, s := range skills {
		if activated[s.Name] != 1 {
			t.Errorf("skill %s was activated %d times across the concurrent turns; want exactly 1", s.Name, activated[s.Name])
		}
	}
	final := sfAssemble(t, e.nc, skillface.Request{SessionID: "busy session", Round: n + 1,
		Messages: []skillface.Message{{Role: "user", Content: "status?"}}}, 0)
	got := slices.Clone(final.Active)
	sort.Strings(got)
	var want []string
	for _, s := range skills {
		want = append(want, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("session after %d concurrent turns holds %d skills %q; want all %d %q", n, len(got), got, n, want)
	}
	var conflicts uint64
	for _, r := range e.replicas {
		conflicts += r.Stats().Assembler.Conflicts
	}
	t.Logf("compare-and-set conflicts retried: %d", conflicts)
}

func sfHasText(msgs []skillface.Message, text string) bool {
	return slices.ContainsFunc(msgs, func(m skillface.Message) bool { return strings.Contains(m.Content, text) })
}
