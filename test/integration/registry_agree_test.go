package integration

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestRegistryAgreesWithValidate: on one tree, what registry.Check (the
// rules of `skillbus validate`) accepts is exactly what the registry
// stores, and every file Check rejects is reported by the registry, as an
// invalid file or as the loser of a clash.
func TestRegistryAgreesWithValidate(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"skills/ok/SKILL.md":          regSkillMD("ok", "fine", "body"),
		"skills/warn/SKILL.md":        "---\nname: warn\ndescription: d\nallowed_tools: Read\n---\nb\n",
		"skills/bad/SKILL.md":         "---\nname: bad\ndescription: d\ncontext: nope\n---\nb\n",
		"skills/mismatch/SKILL.md":    regSkillMD("other-name", "d", "b"),
		"a/dup/SKILL.md":              regSkillMD("dup", "first", "b"),
		"b/dup/SKILL.md":              regSkillMD("dup", "second", "b"),
		"both/SKILL.md":               regSkillMD("both", "md", "b"),
		"both/skill.yaml":             "name: both\ndescription: yaml\nprompt: p\n",
		"flows/one.seq.yaml":          regSeqYAML("one", "fetch", "echo"),
		"flows/two.seq.yaml":          regSeqYAML("two", "fetch", "echo"),
		"flows/three.seq.json":        regSeqJSON("one", "other-group"),
		"flows/broken.seq.yaml":       "name: broken\ngroups:\n  - name: g\n    tools:\n      - tool: x\n        args: {p: $args.nope}\n",
		"flows/deploy.yaml":           regSeqYAML("deploy", "deploy-g", "echo"),
		".claude/skills/hid/SKILL.md": regSkillMD("hid", "hidden dir", "b"),
		"node_modules/m/SKILL.md":     regSkillMD("m", "skipped", "b"),
		"flows/big.seq.yaml":          regSeqYAML("big", "big-g", "echo") + "#" + strings.Repeat("x", 1<<20) + "\n",
	}
	for rel, text := range files {
		regWrite(t, filepath.Join(dir, filepath.FromSlash(rel)), text)
	}
	if err := os.Symlink("/", filepath.Join(dir, "skills/root")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("one.seq.yaml", filepath.Join(dir, "flows/alias.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere.seq.yaml", filepath.Join(dir, "flows/dangling.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	reports, err := registry.Check([]string{dir}, registry.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := regStart(t, nil, dir)

	var wantSkills, wantSeqs []string
	for _, r := range reports {
		rel := filepath.ToSlash(strings.TrimPrefix(r.Path, dir+string(filepath.Separator)))
		switch {
		case r.Kind == "":
			continue // ignored by name; validate's warning only
		case r.Valid && r.Kind == "tree":
			// A directory link out of the tree: a warning on both sides.
			ev := regFindEvent(t, e, "warning "+rel, func(ev *events.RegistryEvent) bool { return ev.Op == events.OpWarning && ev.File == rel })
			if w := strings.Join(ev.Warnings, "\n"); !strings.Contains(w, r.Problems[0].Message) {
				t.Errorf("%s: the registry warns %q; validate warns %q", rel, w, r.Problems[0].Message)
			}
		case r.Valid && r.Kind == "skill":
			wantSkills = append(wantSkills, r.Name)
		case r.Valid && r.Kind == "sequence":
			wantSeqs = append(wantSeqs, r.Name)
		case strings.Contains(r.Problems[0].Message, "which the registry keeps"):
			regFindEvent(t, e, "clash of "+rel, func(ev *events.RegistryEvent) bool { return ev.Op == events.OpClash && ev.File == rel })
		default:
			ev := regFindEvent(t, e, "invalid "+rel, func(ev *events.RegistryEvent) bool { return ev.Op == events.OpInvalid && ev.File == rel })
			if !strings.Contains(ev.Error, r.Problems[0].Message) {
				t.Errorf("%s: the registry says %q; validate says %q", rel, ev.Error, r.Problems[0].Message)
			}
		}
	}
	sort.Strings(wantSkills)
	sort.Strings(wantSeqs)
	if got := regKeys(t, e.skills); strings.Join(got, ",") != strings.Join(wantSkills, ",") {
		t.Errorf("SKILLS = %q; validate accepts %q", got, wantSkills)
	}
	if got := regKeys(t, e.seqs); strings.Join(got, ",") != strings.Join(wantSeqs, ",") {
		t.Errorf("SEQUENCES = %q; validate accepts %q", got, wantSeqs)
	}
	// The case list covers each kind of verdict.
	if len(wantSkills) != 5 || len(wantSeqs) != 1 {
		t.Errorf("validate accepts skills %q and sequences %q; the tree was built for 5 and 1", wantSkills, wantSeqs)
	}
}
