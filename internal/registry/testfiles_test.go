package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillbus/skillbus/pkg/skill"
)

// Test files of `skillbus test` (NAME.test.yaml beside NAME.seq.yaml,
// docs/testing.md) are not definitions: the registry neither loads them
// as sequences nor warns that it ignores them.
func TestTestFilesAreIgnored(t *testing.T) {
	if k := FileKind("flows/survey.test.yaml"); k != kindNone {
		t.Fatalf("FileKind(survey.test.yaml) = %q; want none", k)
	}
	dir := t.TempDir()
	seqText := "name: survey\ngroups:\n  - name: g\n    out: {x: object}\n    tools:\n      - {tool: t.x, as: x}\n"
	testText := "cases:\n  - name: one\n    mocks: {t.x: {result: {}}}\n    expect: {status: succeeded, groups: {g: succeeded}}\n"
	for name, text := range map[string]string{"survey.seq.yaml": seqText, "survey.test.yaml": testText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reports, err := Check([]string{dir}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if filepath.Base(r.Path) == "survey.test.yaml" {
			t.Errorf("the test file was reported: %+v", r)
		}
	}
	if len(reports) != 1 || reports[0].Kind != kindSequence || !reports[0].Valid {
		t.Errorf("reports = %+v; want the one valid sequence", reports)
	}
}

// A skill's test file (skill.test.yaml beside SKILL.md or skill.yaml,
// docs/testing.md) is not a definition either: the registry loads the
// skill alone and does not warn about the test file, and pkg/skill's Load
// of the directory takes the skill file.
func TestSkillTestFilesAreIgnored(t *testing.T) {
	if k := FileKind("skills/deploy/skill.test.yaml"); k != kindNone {
		t.Fatalf("FileKind(skill.test.yaml) = %q; want none", k)
	}
	for _, format := range []string{"SKILL.md", "skill.yaml"} {
		t.Run(format, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "deploy")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			text := "---\nname: deploy\ndescription: Deploys.\n---\n# Deploy\n"
			if format == "skill.yaml" {
				text = "name: deploy\ndescription: Deploys.\nprompt: Deploy.\n"
			}
			testText := "skills: [../other]\ncases:\n  - name: one\n    message: deploy\n    expect: {skills: {deploy: activated}}\n"
			for name, text := range map[string]string{format: text, "skill.test.yaml": testText} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			reports, err := Check([]string{filepath.Dir(dir)}, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || reports[0].Kind != kindSkill || !reports[0].Valid || len(reports[0].Problems) != 0 {
				t.Errorf("reports = %+v; want the one valid skill, no warning", reports)
			}
			if s, _, err := skill.Load(dir); err != nil || s.Format != skill.Format(format) {
				t.Errorf("skill.Load(%s) = %v, %v; want the %s", dir, s, err, format)
			}
		})
	}
}
