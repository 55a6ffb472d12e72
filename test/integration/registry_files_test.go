package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
)

// regMkfifo makes a named pipe, or skips the test where it cannot.
func regMkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a named pipe here: %v", err)
	}
}

// regFindEvent takes the first registry event matching pred, among those
// passed over so far by regFindEvent or arriving within regFollowBound
// (unlike regWaitEvent, it keeps the events it passes over for later
// calls; the one it returns is taken).
func regFindEvent(t testing.TB, e *regEnv, what string, pred func(*events.RegistryEvent) bool) *events.RegistryEvent {
	t.Helper()
	for i, ev := range e.seen {
		if pred(ev) {
			e.seen = append(e.seen[:i:i], e.seen[i+1:]...)
			return ev
		}
	}
	deadline := time.After(regFollowBound)
	for {
		select {
		case ev := <-e.events:
			if pred(ev) {
				return ev
			}
			e.seen = append(e.seen, ev)
		case <-deadline:
			t.Fatalf("no registry event %s within %s", what, regFollowBound)
			return nil
		}
	}
}

// regWantInvalid waits for the invalid event of file and checks its kind
// and text.
func regWantInvalid(t *testing.T, e *regEnv, file, kind, text string) {
	t.Helper()
	ev := regFindEvent(t, e, "invalid "+file, func(ev *events.RegistryEvent) bool {
		return ev.Op == events.OpInvalid && ev.File == file
	})
	if ev.Kind != kind || !strings.Contains(ev.Error, text) {
		t.Errorf("invalid event of %s = kind %q, error %q; want kind %q and %q", file, ev.Kind, ev.Error, kind, text)
	}
}

// regWantWarning waits for the tree warning of file (a directory symlink
// out of the tree: not followed, said as a warning).
func regWantWarning(t *testing.T, e *regEnv, file, text string) {
	t.Helper()
	ev := regFindEvent(t, e, "warning "+file, func(ev *events.RegistryEvent) bool {
		return ev.Op == events.OpWarning && ev.File == file
	})
	if ev.Kind != events.KindTree || !strings.Contains(strings.Join(ev.Warnings, "\n"), text) {
		t.Errorf("warning event of %s = kind %q, warnings %q; want kind tree and %q", file, ev.Kind, ev.Warnings, text)
	}
}

// TestRegistryReadsFilesAsFiles: a FIFO named like a sequence, a symlink to
// /dev/zero, to / and to .. and a file larger than a message neither hang
// nor grow the registry, nor make it walk outside its tree: each is an
// invalid event, the good files load, at start and while it runs.
func TestRegistryReadsFilesAsFiles(t *testing.T) {
	dir := t.TempDir()
	regWrite(t, filepath.Join(dir, "good/SKILL.md"), regSkillMD("good", "fine", "body"))
	regWrite(t, filepath.Join(dir, "flows/ok.seq.yaml"), regSeqYAML("ok", "ok-step", "echo"))
	regMkfifo(t, filepath.Join(dir, "flows/x.seq.yaml"))
	if err := os.MkdirAll(filepath.Join(dir, "zero"), 0o755); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{"/dev/zero": "zero/SKILL.md", "/": "everything", "..": "parent"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// 8 KiB server messages: a 9,000-byte sequence file is too large.
	regWrite(t, filepath.Join(dir, "flows/big.seq.yaml"), regSeqYAML("big", "big-step", "echo")+"#"+strings.Repeat("x", 9000)+"\n")
	srv := natsserver.StartTB(t, natsserver.Options{MaxPayload: 8192})

	start := time.Now()
	e := regStart(t, srv, dir)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("registry Start took %s with hostile files in the tree", d)
	}
	if regValue(e.skills, "good") == "" || regValue(e.seqs, "ok") == "" {
		t.Fatalf("good files not loaded: skills %q, sequences %q", regKeys(t, e.skills), regKeys(t, e.seqs))
	}
	regWantInvalid(t, e, "flows/x.seq.yaml", events.KindSequence, "not read: a named pipe (FIFO), not a regular file")
	regWantInvalid(t, e, "zero/SKILL.md", events.KindSkill, "not followed: a symlink to /dev/zero, outside the tree")
	regWantWarning(t, e, "everything", "not followed: a symlink to the directory /, outside the tree")
	regWantWarning(t, e, "parent", "not followed: a symlink to the directory "+filepath.Dir(dir))
	regWantInvalid(t, e, "flows/big.seq.yaml", events.KindSequence, "a file may have at most 4096 bytes here (max_payload 8192")
	if v := regValue(e.seqs, "big"); v != "" {
		t.Errorf("SEQUENCES/big = %s; want nothing stored", v)
	}

	// The same kinds appearing while the registry runs.
	regMkfifo(t, filepath.Join(dir, "good/later.seq.yaml"))
	regWantInvalid(t, e, "good/later.seq.yaml", events.KindSequence, "a named pipe (FIFO)")
	if err := os.Symlink("/", filepath.Join(dir, "good/root")); err != nil {
		t.Fatal(err)
	}
	regWantWarning(t, e, "good/root", "a symlink to the directory /")
	// A good file replaced by a FIFO keeps its last good version.
	before := regValue(e.seqs, "ok")
	if err := os.Remove(filepath.Join(dir, "flows/ok.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	regMkfifo(t, filepath.Join(dir, "flows/ok.seq.yaml"))
	ev := regWaitEvent(t, e, "ok became a FIFO", func(ev *events.RegistryEvent) bool {
		return ev.Op == events.OpInvalid && ev.File == "flows/ok.seq.yaml"
	})
	if ev.Name != "ok" || ev.Kept != "flows/ok.seq.yaml" {
		t.Errorf("event = %+v; want the last good version of ok kept", ev)
	}
	if got := regValue(e.seqs, "ok"); got != before {
		t.Errorf("SEQUENCES/ok = %q after its file became a FIFO; want the last good version", got)
	}
	// The registry still follows ordinary edits.
	regWrite(t, filepath.Join(dir, "good/SKILL.md"), regSkillMD("good", "still followed", "body"))
	regKVUntil(t, e.skills, "good", "an edit after the hostile files", func(v string) bool {
		return strings.Contains(v, "still followed")
	})
}

// TestRegistryWarnings: a skill that loads with a warning (allowed_tools
// for allowed-tools, which drops a restriction) is published as a warning
// event at start and after each edit, and its warnings are in skill.list
// and skill.info; an invalid file's event carries its warnings too.
func TestRegistryWarnings(t *testing.T) {
	dir := t.TempDir()
	typo := "---\nname: typo\ndescription: d\nallowed_tools: Read\n---\n# Use\nbody\n"
	regWrite(t, filepath.Join(dir, "typo/SKILL.md"), typo)
	regWrite(t, filepath.Join(dir, "clean/SKILL.md"), regSkillMD("clean", "no warning", "body"))
	e := regStart(t, nil, dir)
	ev := regWaitEvent(t, e, "warning at start", func(ev *events.RegistryEvent) bool { return ev.Op == events.OpWarning })
	if ev.Kind != events.KindSkill || ev.Name != "typo" || ev.File != "typo/SKILL.md" || ev.Line != 4 || len(ev.Warnings) != 1 ||
		ev.Warnings[0] != `typo/SKILL.md:4: unknown field "allowed_tools" is ignored; did you mean "allowed-tools"?` {
		t.Errorf("warning event = %+v", ev)
	}

	list, err := regRequest(t, e.nc, registry.SubjectSkillList, "{}")
	if err != nil {
		t.Fatal(err)
	}
	var sl registry.SkillList
	if err := json.Unmarshal(list, &sl); err != nil || len(sl.Skills) != 2 {
		t.Fatalf("skill.list = %s (%v)", list, err)
	}
	if len(sl.Skills[0].Warnings) != 0 || len(sl.Skills[1].Warnings) != 1 || !strings.Contains(sl.Skills[1].Warnings[0], "allowed_tools") {
		t.Errorf("skill.list warnings = %+v; want only typo's", sl.Skills)
	}
	info, err := regRequest(t, e.nc, registry.SubjectSkillInfo, `{"name": "typo"}`)
	var si registry.SkillInfo
	if err != nil || json.Unmarshal(info, &si) != nil || len(si.Warnings) != 1 || strings.Contains(si.Text, "allowed_tools") {
		t.Errorf("skill.info = %s (%v); want the warning beside the text, not in it", info, err)
	}

	// A second warning after an edit; then none after the fix.
	regWrite(t, filepath.Join(dir, "typo/SKILL.md"), strings.Replace(typo, "description: d\n", "description: d\nmodle: opus\n", 1))
	ev = regWaitEvent(t, e, "warning after an edit", func(ev *events.RegistryEvent) bool {
		return ev.Op == events.OpWarning && len(ev.Warnings) == 2
	})
	if !strings.Contains(ev.Warnings[0], `typo/SKILL.md:4: unknown field "modle" is ignored; did you mean "model"?`) {
		t.Errorf("warnings = %q", ev.Warnings)
	}
	regWrite(t, filepath.Join(dir, "typo/SKILL.md"), strings.Replace(typo, "allowed_tools", "allowed-tools", 1))
	regEventually(t, "warnings gone from skill.list", func() (bool, string) {
		list, _ := regRequest(t, e.nc, registry.SubjectSkillList, "{}")
		return !strings.Contains(string(list), "warnings"), string(list)
	})
	// An invalid file: its warnings come with the invalid event.
	regWrite(t, filepath.Join(dir, "typo/SKILL.md"), "---\nname: typo\ndescription: d\nallowed_tools: Read\ncontext: nope\n---\nb\n")
	ev = regWaitEvent(t, e, "invalid with a warning", func(ev *events.RegistryEvent) bool { return ev.Op == events.OpInvalid })
	if !strings.Contains(ev.Error, `typo/SKILL.md:5: context "nope" is not allowed`) || len(ev.Warnings) != 1 || !strings.Contains(ev.Warnings[0], "allowed_tools") {
		t.Errorf("invalid event = %+v", ev)
	}
}

// TestRegistrySkillInfoCap: one huge section, and a short skill of very
// long lines, come back cut at MaxInfoBytes with a note, never as a reply
// too large to send.
func TestRegistrySkillInfoCap(t *testing.T) {
	dir := t.TempDir()
	huge := "# Huge\n\nintro\n\n## Reference\n\n" + strings.Repeat("a line of reference text that goes on\n", 20000) + "\n## After\n\nend\n"
	regWrite(t, filepath.Join(dir, "huge/SKILL.md"), regSkillMD("huge", "a huge section", huge))
	regWrite(t, filepath.Join(dir, "wide/SKILL.md"), regSkillMD("wide", "few long lines", strings.Repeat(strings.Repeat("é", 30000)+"\n", 5)))
	nested := "# Guide\n\n" + strings.Repeat("a line of the guide's introduction\n", 20000) + "\n## Part one\n\nx\n"
	regWrite(t, filepath.Join(dir, "nested/SKILL.md"), regSkillMD("nested", "a huge section with a subsection", nested))
	e := regStart(t, nil, dir)
	// The note says how to read the rest: by subsection when the part has
	// some, in the file when it has none (not "ask for one of its
	// subsections" of a section that has none).
	for _, tt := range []struct{ body, note string }{
		{`{"name": "huge", "section": "reference"}`, "more line(s) are not shown. It has no subsections to ask for one by one"},
		{`{"name": "wide"}`, "more line(s) are not shown. It has no subsections"},
		{`{"name": "nested", "section": "guide"}`, "more line(s) are not shown. Ask for one of its subsections by title"},
	} {
		data, err := regRequest(t, e.nc, registry.SubjectSkillInfo, tt.body)
		if err != nil {
			t.Fatalf("skill.info %s: %v", tt.body, err)
		}
		var si registry.SkillInfo
		if err := json.Unmarshal(data, &si); err != nil {
			t.Fatal(err)
		}
		if len(si.Text) > registry.MaxInfoBytes || !strings.Contains(si.Text, "[Cut here:") || !strings.Contains(si.Text, tt.note) {
			t.Errorf("skill.info %s: %d bytes, note %q; want at most %d bytes with a cut note saying %q", tt.body, len(si.Text), lastLine(si.Text), registry.MaxInfoBytes, tt.note)
		}
		if !json.Valid(data) || strings.ContainsRune(si.Text, '\uFFFD') {
			t.Errorf("skill.info %s: cut inside a character", tt.body)
		}
	}
	// A small section is not touched.
	data, err := regRequest(t, e.nc, registry.SubjectSkillInfo, `{"name": "huge", "section": "after"}`)
	if err != nil || !strings.Contains(string(data), `"text":"## After\n\nend\n`) {
		t.Errorf("skill.info after = %s, %v", data, err)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestRegistryHalfWrittenSaves: with the default settings, a file that is
// invalid only for a moment while it is being saved (the first half of a
// write, 15 ms before the rest) is not reported as invalid — each finished
// version is stored — while a file left invalid is reported.
func TestRegistryHalfWrittenSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "half/SKILL.md")
	regWrite(t, path, regSkillMD("half", "v0", "body"))
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	invalid := make(chan string, 100)
	if _, err := nc.Subscribe("events.registry.skill.invalid", func(m *nats.Msg) { invalid <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(natsserver.ConnectTB(t, srv), registry.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop(context.Background()) })
	js, _ := jetstream.New(nc)
	kv, _ := js.KeyValue(context.Background(), events.BucketSkills)

	const saves = 20
	for i := 1; i <= saves; i++ {
		regWrite(t, path, "---\nname: half\n") // the first half: no description, no closing line
		time.Sleep(15 * time.Millisecond)      // longer than the 10 ms debounce: a rescan sees it
		regWrite(t, path, regSkillMD("half", fmt.Sprintf("v%d", i), "body"))
		time.Sleep(15 * time.Millisecond)
	}
	regKVUntil(t, kv, "half", "the last version stored", func(v string) bool {
		return strings.Contains(v, fmt.Sprintf(`"description":"v%d"`, saves))
	})
	time.Sleep(300 * time.Millisecond) // past the settle time: a late report would be here
	// A loaded machine may stall a rescan past the settle time now and
	// then; without the settle rule every save would be reported.
	if n := len(invalid); n > saves/5 {
		t.Errorf("%d invalid events for %d saves that were invalid only while half-written; want at most %d", n, saves, saves/5)
	}
	for len(invalid) > 0 {
		<-invalid
	}
	// Left invalid, it is reported.
	regWrite(t, path, "---\nname: half\n")
	select {
	case ev := <-invalid:
		if !strings.Contains(ev, "half/SKILL.md") {
			t.Errorf("invalid event = %s", ev)
		}
	case <-time.After(regFollowBound):
		t.Fatalf("a file left invalid was not reported within %s", regFollowBound)
	}
}

// regKubeletSwap lays out files in dir as the kubelet does for a ConfigMap
// volume, or updates it as the kubelet does: the files in a new
// dir/..<timestamp>/ directory, a new link dir/..data_tmp renamed over
// dir/..data (atomic), each top-level name a link through ..data, and the
// previous timestamped directory removed.
func regKubeletSwap(t *testing.T, dir, stamp string, files map[string]string) {
	t.Helper()
	ts := "..2026_01_02_15_04_05." + stamp
	for rel, text := range files {
		regWrite(t, filepath.Join(dir, ts, filepath.FromSlash(rel)), text)
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for rel := range files {
		top := strings.SplitN(rel, "/", 2)[0]
		if err := os.Symlink(filepath.Join("..data", top), filepath.Join(dir, top)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRegistryConfigMapVolume: the registry given the mount point of a
// ConfigMap volume (--dir=/etc/skillbus/library) reads each file once,
// under the name the ConfigMap gives it — not again through the kubelet's
// "..data" link and "..<timestamp>" directory, which made every top-level
// file clash with itself — and sees a ConfigMap update (the kubelet's
// atomic swap of "..data") at once, through its watch of the mount point.
func TestRegistryConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	regKubeletSwap(t, dir, "1", map[string]string{
		"smoke.seq.yaml":        regSeqYAML("smoke", "smoke-step", "echo"),
		"skills/hello/SKILL.md": regSkillMD("hello", "says hello", "body"),
	})
	e := regStart(t, nil, dir)
	for _, want := range []struct{ kind, name, file string }{
		{events.KindSequence, "smoke", "smoke.seq.yaml"},
		{events.KindSkill, "hello", "skills/hello/SKILL.md"},
	} {
		ev := regFindEvent(t, e, "put "+want.name, func(ev *events.RegistryEvent) bool {
			return ev.Op == events.OpPut && ev.Name == want.name
		})
		if ev.Kind != want.kind || ev.File != want.file {
			t.Errorf("put event of %s = %s from %q; want %s from %q", want.name, ev.Kind, ev.File, want.kind, want.file)
		}
	}
	for { // the events of the start that arrive late
		select {
		case ev := <-e.events:
			e.seen = append(e.seen, ev)
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	for _, ev := range e.seen {
		if ev.Op == events.OpClash || ev.Op == events.OpInvalid || strings.Contains(ev.File, "..") {
			t.Errorf("registry event %+v on a ConfigMap volume; want none naming the kubelet's entries", ev)
		}
	}

	// A ConfigMap update: seen without waiting for a resync.
	regKubeletSwap(t, dir, "2", map[string]string{
		"smoke.seq.yaml":        regSeqYAML("smoke", "smoke-step-2", "echo"),
		"skills/hello/SKILL.md": regSkillMD("hello", "says hello again", "body"),
	})
	regEventually(t, "the swapped ConfigMap", func() (bool, string) {
		s, k := regValue(e.seqs, "smoke"), regValue(e.skills, "hello")
		return strings.Contains(s, "smoke-step-2") && strings.Contains(k, "says hello again"), s + "\n" + k
	})
}

// TestRegistryGroupClashKeepsStored: a new sequence file whose group name
// is taken by a sequence already stored does not drop that sequence,
// although its path sorts first: the stored one stays, the new file is
// reported with both paths and the fix. An edit of a stored file that
// makes it clash keeps its stored version.
func TestRegistryGroupClashKeepsStored(t *testing.T) {
	dir := t.TempDir()
	regWrite(t, filepath.Join(dir, "b.seq.yaml"), regSeqYAML("beta", "fetch", "echo"))
	e := regStart(t, nil, dir)
	regEventually(t, "beta stored", func() (bool, string) {
		v := regValue(e.seqs, events.KeyFor("beta"))
		return v != "", v
	})
	regWrite(t, filepath.Join(dir, "a.seq.yaml"), regSeqYAML("alpha", "fetch", "echo"))
	ev := regWaitEvent(t, e, "clash of a.seq.yaml", func(ev *events.RegistryEvent) bool { return ev.Op == events.OpClash })
	for _, want := range []string{"a.seq.yaml", "b.seq.yaml", `keeping b.seq.yaml (sequence "beta")`, `rename the group "fetch" in a.seq.yaml`} {
		if !strings.Contains(ev.Error, want) {
			t.Errorf("clash event %q lacks %q", ev.Error, want)
		}
	}
	if ev.File != "a.seq.yaml" || ev.Kept != "b.seq.yaml" || ev.Name != "alpha" {
		t.Errorf("clash event: file %q kept %q name %q; want a.seq.yaml, b.seq.yaml, alpha", ev.File, ev.Kept, ev.Name)
	}
	// The event comes from the apply that chose: the buckets hold its choice.
	if regValue(e.seqs, events.KeyFor("beta")) == "" || regValue(e.seqs, events.KeyFor("alpha")) != "" {
		t.Fatalf("after the clash: sequences %v; want beta kept and alpha not stored", regKeys(t, e.seqs))
	}

	// An edit of b.seq.yaml that clashes with another stored file (alpha,
	// once renamed)
	// keeps the version stored before.
	regWrite(t, filepath.Join(dir, "a.seq.yaml"), regSeqYAML("alpha", "list", "echo"))
	regEventually(t, "alpha stored once its group is renamed", func() (bool, string) {
		return regValue(e.seqs, events.KeyFor("alpha")) != "", fmt.Sprint(regKeys(t, e.seqs))
	})
	before := regValue(e.seqs, events.KeyFor("beta"))
	regWrite(t, filepath.Join(dir, "b.seq.yaml"), "name: beta\ndescription: test sequence beta\ngroups:\n  - name: fetch\n    tools:\n      - tool: echo\n  - name: list\n    tools:\n      - tool: echo\n")
	ev = regWaitEvent(t, e, "clash of the edited b.seq.yaml", func(ev *events.RegistryEvent) bool { return ev.Op == events.OpClash && ev.File == "b.seq.yaml" })
	if !strings.Contains(ev.Error, "the version of b.seq.yaml stored before this change stays stored") {
		t.Errorf("clash event of the edit %q does not say that the stored version stays", ev.Error)
	}
	if got := regValue(e.seqs, events.KeyFor("beta")); got != before || regValue(e.seqs, events.KeyFor("alpha")) == "" {
		t.Errorf("after the clashing edit: beta %q (before %q), alpha %q; want both kept as stored", got, before, regValue(e.seqs, events.KeyFor("alpha")))
	}
}
