// Package integration holds end-to-end tests of the skillbus services
// against a real embedded nats-server (random port, t.TempDir() store).
package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/corpus"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/skill"
)

// regFollowBound is how long a file change may take to reach the KV: the
// debounce (50 ms in these tests) plus writing, with a wide margin for a
// loaded CI machine under -race.
const regFollowBound = 5 * time.Second

// regEnv is a running registry over a real embedded server.
type regEnv struct {
	srv    *natsserver.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	skills jetstream.KeyValue
	seqs   jetstream.KeyValue
	reg    *registry.Registry
	dir    string
	events chan *events.RegistryEvent
	seen   []*events.RegistryEvent // read from events by regFindEvent
}

// regStart starts a registry on dir (which may be "") against srv (a new
// server when nil) and stops it at cleanup.
func regStart(t testing.TB, srv *natsserver.Server, dir string) *regEnv {
	t.Helper()
	if srv == nil {
		srv = natsserver.StartTB(t, natsserver.Options{})
	}
	e := &regEnv{srv: srv, dir: dir, events: make(chan *events.RegistryEvent, 4096)}
	e.nc = natsserver.ConnectTB(t, srv)
	// Registry events are watched from the start on a core subscription.
	if _, err := e.nc.Subscribe(events.SubjectRegistryEventsAll, func(m *nats.Msg) {
		var ev events.RegistryEvent
		if events.Decode(m.Data, &ev) == nil {
			select {
			case e.events <- &ev:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	regNC := natsserver.ConnectTB(t, srv)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	reg, err := registry.New(regNC, registry.Config{Dir: dir, Debounce: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := reg.Start(ctx); err != nil {
		t.Fatalf("registry Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := reg.Stop(ctx); err != nil {
			t.Errorf("registry Stop: %v", err)
		}
	})
	e.reg = reg
	e.js, _ = jetstream.New(e.nc)
	e.skills, err = e.js.KeyValue(ctx, events.BucketSkills)
	if err != nil {
		t.Fatal(err)
	}
	e.seqs, err = e.js.KeyValue(ctx, events.BucketSequences)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func regKeys(t testing.TB, kv jetstream.KeyValue) []string {
	t.Helper()
	keys, err := kv.Keys(context.Background())
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

// regKVUntil watches key in kv and returns, with the time it took, once
// cond holds for its value ("" when the key is absent or deleted): cond is
// checked on the stored value when the watch starts and on every write
// after it, so a test waits on the write itself. It fails t past
// regFollowBound (a bound for a loaded machine, not a time the registry
// must meet), naming what and the last value seen.
func regKVUntil(t testing.TB, kv jetstream.KeyValue, key, what string, cond func(value string) bool) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), regFollowBound)
	defer cancel()
	w, err := kv.Watch(ctx, key)
	if err != nil {
		t.Fatalf("watch %s %s: %v", kv.Bucket(), key, err)
	}
	defer func() { _ = w.Stop() }()
	value, caughtUp := "", false
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				t.Fatalf("%s: not reached within %s; the watch of %s %s ended; last value: %q", what, regFollowBound, kv.Bucket(), key, value)
			}
			if e == nil {
				caughtUp = true
			} else if e.Operation() == jetstream.KeyValuePut {
				value = string(e.Value())
			} else {
				value = ""
			}
			if caughtUp && cond(value) {
				return time.Since(start)
			}
		case <-ctx.Done():
			t.Fatalf("%s: not reached within %s; last value of %s %s: %q", what, regFollowBound, kv.Bucket(), key, value)
		}
	}
}

// regEventually polls cond until it holds or regFollowBound passes.
// It is for conditions no single key's watch answers (a request's reply,
// several keys); regKVUntil waits on one key's writes.
func regEventually(t testing.TB, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < regFollowBound {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not reached within %s; last state: %s", what, regFollowBound, last)
	return 0
}

// regValue returns the KV value of key, or "" when absent.
func regValue(kv jetstream.KeyValue, key string) string {
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		return ""
	}
	return string(e.Value())
}

// regWaitEvent waits for a registry event matching pred.
func regWaitEvent(t testing.TB, e *regEnv, what string, pred func(*events.RegistryEvent) bool) *events.RegistryEvent {
	t.Helper()
	deadline := time.After(regFollowBound)
	for {
		select {
		case ev := <-e.events:
			if pred(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no registry event %s within %s", what, regFollowBound)
			return nil
		}
	}
}

func regWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func regSkillMD(name, description, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n%s\n", name, description, body)
}

func regSeqYAML(name, group, tool string) string {
	return fmt.Sprintf("name: %s\ndescription: test sequence %s\ngroups:\n  - name: %s\n    tools:\n      - tool: %s\n", name, name, group, tool)
}

// regRepoRoot returns the module root (two levels up from this package).
func regRepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// TestRegistryLoadsExamples loads examples/ in place and checks that every
// file that pkg/skill and pkg/seq accept on their own is in the KV, decoded
// back to the same definition.
func TestRegistryLoadsExamples(t *testing.T) {
	dir := filepath.Join(regRepoRoot(t), "examples")
	e := regStart(t, nil, dir)

	var wantSkills, wantSeqs []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch registry.FileKind(p) {
		case "skill":
			if s, _, err := skill.Load(p); err == nil {
				wantSkills = append(wantSkills, s.Name)
			} else {
				t.Logf("example skill %s is invalid (not expected in KV): %v", p, err)
			}
		case "sequence":
			data, _ := os.ReadFile(p)
			if s, err := seq.ParseFile(p, data); err == nil {
				wantSeqs = append(wantSeqs, events.KeyFor(s.Name))
			} else {
				t.Logf("example sequence %s is invalid (not expected in KV): %v", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(wantSkills) == 0 || len(wantSeqs) == 0 {
		t.Fatalf("examples/ holds %d valid skills and %d valid sequences; want some of each", len(wantSkills), len(wantSeqs))
	}
	sort.Strings(wantSkills)
	sort.Strings(wantSeqs)
	if got := regKeys(t, e.skills); strings.Join(got, ",") != strings.Join(wantSkills, ",") {
		t.Errorf("SKILLS keys = %q; want %q", got, wantSkills)
	}
	if got := regKeys(t, e.seqs); strings.Join(got, ",") != strings.Join(wantSeqs, ",") {
		t.Errorf("SEQUENCES keys = %q; want %q", got, wantSeqs)
	}
	for _, k := range wantSeqs {
		v := regValue(e.seqs, k)
		s, err := seq.Decode([]byte(v))
		if err != nil {
			t.Errorf("SEQUENCES/%s does not decode: %v", k, err)
			continue
		}
		if again, _ := seq.Encode(s); string(again) != v {
			t.Errorf("SEQUENCES/%s is not the canonical encoding", k)
		}
	}
	for _, k := range wantSkills {
		var s skill.Skill
		if err := json.Unmarshal([]byte(regValue(e.skills, k)), &s); err != nil || s.Name != k || s.Body == "" || !strings.HasPrefix(s.Fingerprint, "sha256:") {
			t.Errorf("SKILLS/%s = name %q, body %d bytes, fingerprint %q, err %v; want the full record", k, s.Name, len(s.Body), s.Fingerprint, err)
		}
		if !strings.HasPrefix(s.Source, "skills/") {
			t.Errorf("SKILLS/%s source = %q; want a path relative to the root", k, s.Source)
		}
	}
}

// TestRegistryLoadsCorpus loads the public skills corpus in place: every
// SKILL.md that pkg/skill accepts is stored, and the one real name clash
// (two skill-creator folders) is resolved by path order and reported.
func TestRegistryLoadsCorpus(t *testing.T) {
	dir := corpus.Skills(t)
	srv := natsserver.StartTB(t, natsserver.Options{})
	// Subscribe to clash events before the registry starts.
	nc := natsserver.ConnectTB(t, srv)
	clashes := make(chan *events.RegistryEvent, 64)
	sub, err := nc.Subscribe("events.registry.skill.clash", func(m *nats.Msg) {
		var ev events.RegistryEvent
		if events.Decode(m.Data, &ev) == nil {
			clashes <- &ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = nc.Flush()

	// Expected: every valid SKILL.md, first path (byte order) per name.
	firstByName := map[string]string{}
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && registry.FileKind(p) == "skill" {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	dupNames := map[string][]string{}
	for _, p := range paths {
		s, _, err := skill.Load(p)
		if err != nil {
			t.Logf("corpus skill %s is invalid: %v", p, err)
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		dupNames[s.Name] = append(dupNames[s.Name], rel)
		if _, ok := firstByName[s.Name]; !ok {
			firstByName[s.Name] = rel
		}
	}

	e := regStart(t, srv, dir)
	got := regKeys(t, e.skills)
	if len(got) != len(firstByName) {
		t.Fatalf("SKILLS holds %d keys; want %d (every valid corpus skill once)", len(got), len(firstByName))
	}
	nClash := 0
	for name, src := range firstByName {
		var s skill.Skill
		if err := json.Unmarshal([]byte(regValue(e.skills, name)), &s); err != nil || s.Source != src {
			t.Errorf("SKILLS/%s source = %q (err %v); want %q", name, s.Source, err, src)
		}
		if files := dupNames[name]; len(files) > 1 {
			nClash += len(files) - 1
			select {
			case ev := <-clashes:
				if ev.Name != name || ev.Kept != files[0] || ev.File != files[1] || !strings.Contains(ev.Error, files[0]) || !strings.Contains(ev.Error, files[1]) {
					t.Errorf("clash event = %+v; want %s kept over %s, both named", ev, files[0], files[1])
				}
			case <-time.After(regFollowBound):
				t.Errorf("no clash event for %q (%v)", name, files)
			}
		}
	}
	t.Logf("corpus: %d skills stored, %d clashes", len(got), nClash)
}

// TestRegistryFollowsTree edits, adds, renames and deletes files and checks
// that the KV follows each change within regFollowBound.
func TestRegistryFollowsTree(t *testing.T) {
	dir := t.TempDir()
	regWrite(t, filepath.Join(dir, "skills/alpha/SKILL.md"), regSkillMD("alpha", "first version", "# Alpha\n\nv1"))
	regWrite(t, filepath.Join(dir, "seqs/one.seq.yaml"), regSeqYAML("one", "one-step", "echo"))
	e := regStart(t, nil, dir)
	if regValue(e.skills, "alpha") == "" || regValue(e.seqs, "one") == "" {
		t.Fatalf("initial load: alpha=%q one=%q", regValue(e.skills, "alpha"), regValue(e.seqs, "one"))
	}
	skillDesc := func(name string) string {
		var s skill.Skill
		_ = json.Unmarshal([]byte(regValue(e.skills, name)), &s)
		return s.Description
	}
	want := func(what, name, desc string) {
		t.Helper()
		d := regEventually(t, what, func() (bool, string) {
			got := skillDesc(name)
			return got == desc, fmt.Sprintf("%s description %q", name, got)
		})
		t.Logf("%s: %s", what, d.Round(time.Millisecond))
	}

	t.Run("edit in place", func(t *testing.T) {
		regWrite(t, filepath.Join(dir, "skills/alpha/SKILL.md"), regSkillMD("alpha", "second version", "# Alpha\n\nv2"))
		want("edit", "alpha", "second version")
	})
	t.Run("editor rename-save", func(t *testing.T) {
		tmp := filepath.Join(dir, "skills/alpha/.SKILL.md.swp")
		regWrite(t, tmp, regSkillMD("alpha", "saved by rename", "# Alpha\n\nv3"))
		if err := os.Rename(tmp, filepath.Join(dir, "skills/alpha/SKILL.md")); err != nil {
			t.Fatal(err)
		}
		want("rename-save", "alpha", "saved by rename")
	})
	t.Run("new directory after start", func(t *testing.T) {
		regWrite(t, filepath.Join(dir, "skills/deep/nested/beta/SKILL.md"), regSkillMD("beta", "new skill", "body"))
		want("new nested dir", "beta", "new skill")
	})
	t.Run("burst of writes", func(t *testing.T) {
		p := filepath.Join(dir, "skills/alpha/SKILL.md")
		for i := range 50 {
			regWrite(t, p, regSkillMD("alpha", fmt.Sprintf("burst %d", i), "body"))
		}
		want("burst", "alpha", "burst 49")
	})
	t.Run("symlinked skill folder", func(t *testing.T) {
		// A folder linked from inside the tree is loaded through the link.
		regWrite(t, filepath.Join(dir, "library/gamma/SKILL.md"), regSkillMD("gamma", "linked in", "body"))
		if err := os.Symlink(filepath.Join(dir, "library"), filepath.Join(dir, "skills/shelf")); err != nil {
			t.Fatal(err)
		}
		want("symlink", "gamma", "linked in")
		// A loop must not hang the watcher or duplicate anything.
		if err := os.Symlink(dir, filepath.Join(dir, "skills/loop")); err != nil {
			t.Fatal(err)
		}
		regWrite(t, filepath.Join(dir, "library/gamma/SKILL.md"), regSkillMD("gamma", "edited through the link", "body"))
		want("edit behind symlink", "gamma", "edited through the link")
		// A folder outside the tree is not followed: the link is reported
		// as a warning.
		outside := t.TempDir()
		regWrite(t, filepath.Join(outside, "omega/SKILL.md"), regSkillMD("omega", "outside", "body"))
		if err := os.Symlink(filepath.Join(outside, "omega"), filepath.Join(dir, "skills/omega")); err != nil {
			t.Fatal(err)
		}
		ev := regWaitEvent(t, e, "outside link refused", func(ev *events.RegistryEvent) bool {
			return ev.Op == events.OpWarning && ev.Kind == events.KindTree && ev.File == "skills/omega"
		})
		if !strings.Contains(strings.Join(ev.Warnings, "\n"), "not followed: a symlink to the directory "+filepath.Join(outside, "omega")+", outside the tree") {
			t.Errorf("outside link event = %+v", ev)
		}
		if v := regValue(e.skills, "omega"); v != "" {
			t.Errorf("SKILLS/omega = %s; a skill outside the tree was loaded", v)
		}
	})
	t.Run("sequence add and delete", func(t *testing.T) {
		p := filepath.Join(dir, "seqs/two.seq.yaml")
		regWrite(t, p, regSeqYAML("two", "two-step", "echo"))
		regKVUntil(t, e.seqs, "two", "sequence added", func(v string) bool { return v != "" })
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		regKVUntil(t, e.seqs, "two", "sequence deleted", func(v string) bool { return v == "" })
		regWaitEvent(t, e, "sequence delete", func(ev *events.RegistryEvent) bool {
			return ev.Op == events.OpDelete && ev.Kind == events.KindSequence && ev.Name == "two" && ev.File == "seqs/two.seq.yaml"
		})
	})
	t.Run("directory removed", func(t *testing.T) {
		if err := os.RemoveAll(filepath.Join(dir, "skills/deep")); err != nil {
			t.Fatal(err)
		}
		regKVUntil(t, e.skills, "beta", "skill of removed dir deleted", func(v string) bool { return v == "" })
	})
}

// TestRegistryInvalidEditKeepsLastGood breaks a skill and a sequence and
// checks that the old versions stay, the problems are reported with file
// and line, and a restart does not lose them either.
func TestRegistryInvalidEditKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	skillPath := filepath.Join(dir, "delta/SKILL.md")
	seqPath := filepath.Join(dir, "flows/f.seq.yaml")
	regWrite(t, skillPath, regSkillMD("delta", "good", "# D"))
	regWrite(t, seqPath, regSeqYAML("flow", "flow-step", "echo"))
	srv := natsserver.StartTB(t, natsserver.Options{})
	e := regStart(t, srv, dir)
	goodSkill, goodSeq := regValue(e.skills, "delta"), regValue(e.seqs, "flow")
	if goodSkill == "" || goodSeq == "" {
		t.Fatal("initial load failed")
	}

	// invocation: sometimes is not a legal value (line 4).
	regWrite(t, skillPath, "---\nname: delta\ndescription: broken\ninvocation: sometimes\n---\n# D\n")
	ev := regWaitEvent(t, e, "skill invalid", func(ev *events.RegistryEvent) bool { return ev.Op == events.OpInvalid && ev.Kind == events.KindSkill })
	if ev.File != "delta/SKILL.md" || ev.Line != 4 || ev.Name != "delta" || !strings.Contains(ev.Error, "invocation") {
		t.Errorf("invalid event = %+v; want file delta/SKILL.md line 4 naming invocation, name delta", ev)
	}
	// An unknown field in a sequence.
	regWrite(t, seqPath, regSeqYAML("flow", "flow-step", "echo")+"    colour: blue\n")
	ev = regWaitEvent(t, e, "sequence invalid", func(ev *events.RegistryEvent) bool {
		return ev.Op == events.OpInvalid && ev.Kind == events.KindSequence
	})
	if ev.File != "flows/f.seq.yaml" || ev.Name != "flow" || !strings.Contains(ev.Error, "colour") {
		t.Errorf("invalid event = %+v; want file flows/f.seq.yaml naming colour", ev)
	}
	if ev.Line == 0 {
		t.Errorf("invalid sequence event has no line: %+v", ev)
	}
	time.Sleep(200 * time.Millisecond) // past the debounce: nothing may change
	if got := regValue(e.skills, "delta"); got != goodSkill {
		t.Errorf("SKILLS/delta changed after an invalid edit: %s", got)
	}
	if got := regValue(e.seqs, "flow"); got != goodSeq {
		t.Errorf("SEQUENCES/flow changed after an invalid edit: %s", got)
	}

	// A second registry (a restart) on the same server keeps them too.
	e2 := regStart(t, srv, dir)
	_ = e2
	if got := regValue(e.skills, "delta"); got != goodSkill {
		t.Errorf("after restart SKILLS/delta = %q; want the last good version", got)
	}
	if got := regValue(e.seqs, "flow"); got != goodSeq {
		t.Errorf("after restart SEQUENCES/flow = %q; want the last good version", got)
	}

	// Fixing the file publishes the new version.
	regWrite(t, skillPath, regSkillMD("delta", "fixed", "# D"))
	regKVUntil(t, e.skills, "delta", "fixed skill", func(v string) bool {
		return strings.Contains(v, `"description":"fixed"`)
	})
}

// TestRegistryRestartDeletesRemovedFiles: a file deleted while the
// registry was down is removed from the KV at the next start; sequences
// created over NATS survive.
func TestRegistryRestartDeletesRemovedFiles(t *testing.T) {
	dir := t.TempDir()
	regWrite(t, filepath.Join(dir, "a/SKILL.md"), regSkillMD("a", "a", "x"))
	regWrite(t, filepath.Join(dir, "b/SKILL.md"), regSkillMD("b", "b", "x"))
	srv := natsserver.StartTB(t, natsserver.Options{})
	e := regStart(t, srv, dir)
	if _, err := regRequest(t, e.nc, registry.SubjectSeqCreate, regSeqJSON("made-live", "live-step")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.reg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	e2 := regStart(t, srv, dir)
	if got := regKeys(t, e2.skills); strings.Join(got, ",") != "a" {
		t.Errorf("after restart SKILLS keys = %q; want [a]", got)
	}
	if regValue(e2.seqs, "made-live") == "" {
		t.Errorf("sequence created with seq.create lost across a restart")
	}
}

// TestRegistryGroupClash: two sequence files sharing a group name; the
// first path is stored, the other reported naming both files.
func TestRegistryGroupClash(t *testing.T) {
	dir := t.TempDir()
	regWrite(t, filepath.Join(dir, "b.seq.yaml"), regSeqYAML("second", "shared-group", "echo"))
	regWrite(t, filepath.Join(dir, "a.seq.yaml"), regSeqYAML("first", "shared-group", "echo"))
	e := regStart(t, nil, dir)
	if regValue(e.seqs, "first") == "" || regValue(e.seqs, "second") != "" {
		t.Fatalf("keys = %q; want only first (a.seq.yaml sorts before b.seq.yaml)", regKeys(t, e.seqs))
	}
	// Renaming the group in the loser resolves the clash.
	regWrite(t, filepath.Join(dir, "b.seq.yaml"), regSeqYAML("second", "own-group", "echo"))
	regKVUntil(t, e.seqs, "second", "clash resolved", func(v string) bool { return v != "" })
}

func regSeqJSON(name, group string) string {
	return fmt.Sprintf(`{"name":%q,"description":"made over NATS","groups":[{"name":%q,"tools":"{\"tool\":\"echo\",\"args\":{\"x\":1}};"}]}`, name, group)
}

// regRequest calls a registry endpoint and returns the reply body, or an
// error "CODE: description" for an error reply.
func regRequest(t testing.TB, nc *nats.Conn, subject, body string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := events.Request(ctx, nc, &nats.Msg{Subject: subject, Data: []byte(body)})
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		var er registry.ErrorReply
		if err := json.Unmarshal(m.Data, &er); err != nil || er.Code != code || er.Error == "" {
			t.Errorf("error reply body %s does not match header code %s", m.Data, code)
		}
		return m.Data, fmt.Errorf("%s: %s", code, m.Header.Get(micro.ErrorHeader))
	}
	return m.Data, nil
}

// TestRegistryEndpoints calls every endpoint with good and bad input.
func TestRegistryEndpoints(t *testing.T) {
	dir := t.TempDir()
	long := "# Long skill\n\nintro\n\n## Install\n\nsteps\n\n## Usage\n\n" + strings.Repeat("line\n", 250)
	regWrite(t, filepath.Join(dir, "skills/longer/SKILL.md"), regSkillMD("longer", "a long skill", long))
	regWrite(t, filepath.Join(dir, "skills/short/SKILL.md"), regSkillMD("short", "a short skill", "# Short\n\ntext"))
	regWrite(t, filepath.Join(dir, "file-seq.seq.yaml"), regSeqYAML("from-file", "file-group", "echo"))
	e := regStart(t, nil, dir)

	tests := []struct {
		name, subject, body string
		code                string // "" = success
		contains            string // in the reply (success) or error text
	}{
		{"skill.list", registry.SubjectSkillList, ``, "", `"name":"longer"`},
		{"skill.list rejects fields", registry.SubjectSkillList, `{"x":1}`, "400", "unknown field"},
		{"skill.get", registry.SubjectSkillGet, `{"name":"short"}`, "", `"description":"a short skill"`},
		{"skill.get unknown", registry.SubjectSkillGet, `{"name":"nope"}`, "404", `"nope"`},
		{"skill.get no name", registry.SubjectSkillGet, `{}`, "400", `"name" is required`},
		{"skill.get not json", registry.SubjectSkillGet, `{"name":`, "400", "not valid JSON"},
		{"skill.get wrong type", registry.SubjectSkillGet, `{"name":3}`, "400", "wrong type"},
		{"skill.get trailing data", registry.SubjectSkillGet, `{"name":"short"} {}`, "400", "after the JSON"},
		{"skill.get section not allowed", registry.SubjectSkillGet, `{"name":"short","section":"x"}`, "400", "only allowed for skill.info"},
		{"skill.info short whole", registry.SubjectSkillInfo, `{"name":"short"}`, "", `# Short`},
		{"skill.info long gives toc", registry.SubjectSkillInfo, `{"name":"longer"}`, "", `Usage`},
		{"skill.info section", registry.SubjectSkillInfo, `{"name":"longer","section":"install"}`, "", `steps`},
		{"skill.info unknown section", registry.SubjectSkillInfo, `{"name":"longer","section":"Deploy"}`, "404", "Install"},
		{"skill.info unknown skill", registry.SubjectSkillInfo, `{"name":"nope"}`, "404", "nope"},
		{"seq.list", registry.SubjectSeqList, `{}`, "", `"from-file"`},
		{"seq.get", registry.SubjectSeqGet, `{"name":"from-file"}`, "", `"file-group"`},
		{"seq.get unknown", registry.SubjectSeqGet, `{"name":"nope"}`, "404", "nope"},
		{"seq.create", registry.SubjectSeqCreate, regSeqJSON("made", "made-group"), "", `"name":"made"`},
		{"seq.create replaces", registry.SubjectSeqCreate, regSeqJSON("made", "made-group-2"), "", `"replaced":true`},
		{"seq.create empty", registry.SubjectSeqCreate, ``, "400", "JSON form"},
		{"seq.create unknown field", registry.SubjectSeqCreate, `{"name":"x","colour":"red","groups":[{"name":"g","tools":"{\"tool\":\"t\"};"}]}`, "400", "colour"},
		{"seq.create bad tools string", registry.SubjectSeqCreate, `{"name":"x","groups":[{"name":"g","tools":"{\"tool\":\"t\"}"}]}`, "400", "group 1"},
		{"seq.create not json", registry.SubjectSeqCreate, `name: x`, "400", "invalid sequence"},
		{"seq.create group clash", registry.SubjectSeqCreate, regSeqJSON("other", "file-group"), "409", "file-seq.seq.yaml"},
		{"seq.create over a file", registry.SubjectSeqCreate, regSeqJSON("from-file", "whatever"), "409", "file-seq.seq.yaml"},
		{"seq.delete file-owned", registry.SubjectSeqDelete, `{"name":"from-file"}`, "409", "delete that file"},
		{"seq.delete unknown", registry.SubjectSeqDelete, `{"name":"nope"}`, "404", "nope"},
		{"seq.delete no name", registry.SubjectSeqDelete, `[]`, "400", "bad request"},
		{"seq.delete", registry.SubjectSeqDelete, `{"name":"made"}`, "", `"deleted":true`},
		{"seq.delete twice", registry.SubjectSeqDelete, `{"name":"made"}`, "404", "made"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := regRequest(t, e.nc, tt.subject, tt.body)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("%s(%s) = error %v; want success", tt.subject, tt.body, err)
				}
				if !strings.Contains(string(body), tt.contains) {
					t.Fatalf("%s(%s) = %.300s; want it to contain %q", tt.subject, tt.body, body, tt.contains)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.code+":") {
				t.Fatalf("%s(%s) = %v (%.200s); want error code %s", tt.subject, tt.body, err, body, tt.code)
			}
			if !strings.Contains(err.Error()+string(body), tt.contains) {
				t.Fatalf("%s(%s) error = %v; want it to mention %q", tt.subject, tt.body, err, tt.contains)
			}
		})
	}
	// The created-then-deleted sequence is gone from the KV; the problems
	// of an invalid seq.create are structured.
	if regValue(e.seqs, "made") != "" {
		t.Errorf("SEQUENCES/made still present after seq.delete")
	}
	body, _ := regRequest(t, e.nc, registry.SubjectSeqCreate, `{"name":"x","groups":[{"name":"g","timeout":"soon","tools":"{\"tool\":\"t\"};"}]}`)
	var er registry.ErrorReply
	if err := json.Unmarshal(body, &er); err != nil || len(er.Problems) == 0 || er.Problems[0].Where == "" {
		t.Errorf("seq.create error reply = %s; want problems with a location", body)
	}
	// The service is discoverable as a micro service.
	m, err := e.nc.Request("$SRV.INFO."+events.ServiceRegistry, nil, 2*time.Second)
	if err != nil {
		t.Fatalf("micro info: %v", err)
	}
	var info micro.Info
	_ = json.Unmarshal(m.Data, &info)
	if len(info.Endpoints) != 7 {
		t.Errorf("registry endpoints = %d; want 7", len(info.Endpoints))
	}
}

// TestRegistryOversizeAndHiddenDirs: a skill too large for one NATS
// message is reported as invalid and keeps its last good version; skills
// under .claude/ are loaded while .git/ is skipped.
func TestRegistryOversizeAndHiddenDirs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".claude/skills/huge/SKILL.md")
	regWrite(t, p, regSkillMD("huge", "small for now", "# Huge"))
	regWrite(t, filepath.Join(dir, ".git/skills/ignored/SKILL.md"), regSkillMD("ignored", "in .git", "x"))
	srv := natsserver.StartTB(t, natsserver.Options{MaxPayload: 16 << 10})
	e := regStart(t, srv, dir)
	if got := regKeys(t, e.skills); strings.Join(got, ",") != "huge" {
		t.Fatalf("SKILLS keys = %q; want [huge] (.claude loaded, .git skipped)", got)
	}
	good := regValue(e.skills, "huge")
	regWrite(t, p, regSkillMD("huge", "now too big", "# Huge\n\n"+strings.Repeat("All work and no play. ", 1500)))
	ev := regWaitEvent(t, e, "oversize invalid", func(ev *events.RegistryEvent) bool { return ev.Op == events.OpInvalid })
	if ev.File != ".claude/skills/huge/SKILL.md" || !strings.Contains(ev.Error, "max_payload") {
		t.Errorf("invalid event = %+v; want the file and a max_payload explanation", ev)
	}
	if got := regValue(e.skills, "huge"); got != good {
		t.Errorf("SKILLS/huge replaced by an oversize version")
	}
}

// TestRegistryReplicasAgree runs two registry replicas on one server (they
// share requests through the queue group) and checks that a sequence
// created or deleted through either is seen by both.
func TestRegistryReplicasAgree(t *testing.T) {
	dir := t.TempDir()
	regWrite(t, filepath.Join(dir, "f.seq.yaml"), regSeqYAML("from-file", "file-group", "echo"))
	srv := natsserver.StartTB(t, natsserver.Options{})
	a := regStart(t, srv, dir)
	regStart(t, srv, dir)
	listed := func(name string) (all, none bool) {
		all, none = true, true
		for range 20 { // the queue group spreads these over both replicas
			body, err := regRequest(t, a.nc, registry.SubjectSeqList, `{}`)
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(string(body), `"name":"`+name+`"`)
			all = all && has
			none = none && !has
		}
		return all, none
	}
	if _, err := regRequest(t, a.nc, registry.SubjectSeqCreate, regSeqJSON("shared", "shared-group")); err != nil {
		t.Fatal(err)
	}
	regEventually(t, "both replicas list the created sequence", func() (bool, string) {
		all, _ := listed("shared")
		return all, "some replica does not list it"
	})
	// Either replica now refuses a clashing group name.
	for range 4 {
		if _, err := regRequest(t, a.nc, registry.SubjectSeqCreate, regSeqJSON("other", "shared-group")); err == nil || !strings.HasPrefix(err.Error(), "409") {
			t.Fatalf("seq.create with a clashing group = %v; want 409 from every replica", err)
		}
	}
	if _, err := regRequest(t, a.nc, registry.SubjectSeqDelete, `{"name":"shared"}`); err != nil {
		t.Fatal(err)
	}
	regEventually(t, "both replicas forget the deleted sequence", func() (bool, string) {
		_, none := listed("shared")
		return none, "some replica still lists it"
	})
	if all, _ := listed("from-file"); !all {
		t.Errorf("the file sequence is missing from some replica")
	}
}
