package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skill"
)

// TestRegistryRechecksFileRefs: a running registry judges a skill.yaml's
// file refs against the files on disk as they change, not only when the
// skill.yaml does (docs/skills.md, "File refs"): a ref to a missing file
// is a warning kept with the skill until the file is created; a ref file
// replaced by a symlink out of the skill's directory makes the skill
// invalid (its last good version kept) until the link is removed.
func TestRegistryRechecksFileRefs(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	regWrite(t, outside, "secret\n")
	regWrite(t, filepath.Join(dir, "skills/r/skill.yaml"), "name: r\ndescription: d\nprompt: p\nrefs:\n  - {name: notes, type: file, value: notes.md}\n")
	e := regStart(t, nil, dir)
	warnings := func() (bool, string) {
		var s skill.Skill
		if err := json.Unmarshal([]byte(regValue(e.skills, "r")), &s); err != nil {
			return false, fmt.Sprintf("skill r: %v", err)
		}
		return len(s.Warnings) == 0, fmt.Sprintf("skill r stored with warnings %v", s.Warnings)
	}
	if ok, what := warnings(); ok {
		t.Fatalf("a ref to a missing file: %s; want its warning", what)
	}
	regWrite(t, filepath.Join(dir, "skills/r/notes.md"), "notes\n")
	regEventually(t, "the warning gone once notes.md exists", warnings)

	if err := os.Remove(filepath.Join(dir, "skills/r/notes.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "skills/r/notes.md")); err != nil {
		t.Fatal(err)
	}
	regWantInvalid(t, e, "skills/r/skill.yaml", events.KindSkill, `file reference "notes.md" leads outside the skill's directory through a symlink`)
	if regValue(e.skills, "r") == "" {
		t.Errorf("skill r was removed; want its last good version kept")
	}
}
