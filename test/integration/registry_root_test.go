package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skill"
)

// TestRegistryRootGoneKeepsDefinitions removes the registry's whole
// directory (a branch switch, `rm -rf defs && cp -r …`): the stored skills
// and sequences stay, their names stay owned by their files (seq.create
// cannot take one over meanwhile), a tree warning says what happened, and
// the directory made again at the same path is loaded at once — not at
// the next resync. Emptying the directory still removes everything.
// (Before: every definition and its schedule was deleted the moment the
// directory vanished, silently, and the restored one was seen only by the
// resync, ~30 s later.)
func TestRegistryRootGoneKeepsDefinitions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "defs")
	regWrite(t, filepath.Join(dir, "skills/alpha/SKILL.md"), regSkillMD("alpha", "v1", "# Alpha\n\nbody"))
	regWrite(t, filepath.Join(dir, "one.seq.yaml"), regSeqYAML("one", "one-step", "echo"))
	e := regStart(t, nil, dir)
	if regValue(e.skills, "alpha") == "" || regValue(e.seqs, "one") == "" {
		t.Fatalf("initial load: alpha=%q one=%q", regValue(e.skills, "alpha"), regValue(e.seqs, "one"))
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	ev := regWaitEvent(t, e, "tree warning for the gone directory", func(ev *events.RegistryEvent) bool {
		return ev.Kind == events.KindTree && ev.Op == events.OpWarning
	})
	if w := strings.Join(ev.Warnings, "\n"); !strings.Contains(w, "cannot be read") || !strings.Contains(w, "keeping what its 2 file(s) defined") {
		t.Errorf("warning %q; want it to say the directory cannot be read and that 2 files' definitions are kept", w)
	}
	time.Sleep(300 * time.Millisecond) // several debounce windows and polls
	if regValue(e.skills, "alpha") == "" || regValue(e.seqs, "one") == "" {
		t.Fatalf("with the directory gone: alpha=%q one=%q; want both kept", regValue(e.skills, "alpha"), regValue(e.seqs, "one"))
	}
	if body, err := regRequest(t, e.nc, registry.SubjectSeqCreate, regSeqJSON("one", "taken-over")); err == nil || !strings.Contains(err.Error(), "one.seq.yaml") {
		t.Errorf("seq.create of a file's name while its directory is gone = %s, %v; want it refused naming the file", body, err)
	}

	// The directory is made again, with an edit: loaded without waiting for a resync.
	regWrite(t, filepath.Join(dir, "skills/alpha/SKILL.md"), regSkillMD("alpha", "v2", "# Alpha\n\nbody"))
	regWrite(t, filepath.Join(dir, "one.seq.yaml"), regSeqYAML("one", "one-step", "echo"))
	d := regEventually(t, "the restored directory loaded", func() (bool, string) {
		var s skill.Skill
		_ = json.Unmarshal([]byte(regValue(e.skills, "alpha")), &s)
		return s.Description == "v2", "alpha's description " + s.Description
	})
	t.Logf("restored directory loaded in %s", d.Round(time.Millisecond))
	// And it is watched again: a later edit follows.
	regWrite(t, filepath.Join(dir, "two.seq.yaml"), regSeqYAML("two", "two-step", "echo"))
	regEventually(t, "a file added after the restore", func() (bool, string) {
		return regValue(e.seqs, "two") != "", "two absent"
	})

	// A slow removal (a large tree, a loaded machine): one file is seen
	// gone before the directory goes. The registry looks again before it
	// removes anything, and then keeps everything.
	if err := os.Remove(filepath.Join(dir, "two.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond) // past the 50 ms debounce, within the look-again wait
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	regWaitEvent(t, e, "tree warning for the directory gone again", func(ev *events.RegistryEvent) bool {
		return ev.Kind == events.KindTree && ev.Op == events.OpWarning
	})
	time.Sleep(300 * time.Millisecond)
	if regValue(e.seqs, "two") == "" || regValue(e.seqs, "one") == "" || regValue(e.skills, "alpha") == "" {
		t.Errorf("after a slow removal of the directory: one=%q two=%q alpha=%q; want all kept", regValue(e.seqs, "one"), regValue(e.seqs, "two"), regValue(e.skills, "alpha"))
	}
	regWrite(t, filepath.Join(dir, "skills/alpha/SKILL.md"), regSkillMD("alpha", "v2", "# Alpha\n\nbody"))
	regWrite(t, filepath.Join(dir, "one.seq.yaml"), regSeqYAML("one", "one-step", "echo"))
	regWrite(t, filepath.Join(dir, "two.seq.yaml"), regSeqYAML("two", "two-step", "echo"))

	// An emptied directory is a request to remove everything.
	for _, p := range []string{"skills", "one.seq.yaml", "two.seq.yaml"} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	regEventually(t, "an emptied directory removes its definitions", func() (bool, string) {
		return len(regKeys(t, e.skills))+len(regKeys(t, e.seqs)) == 0, strings.Join(append(regKeys(t, e.skills), regKeys(t, e.seqs)...), ",")
	})
}
