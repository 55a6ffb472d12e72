package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateSkills(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good/SKILL.md", "---\nname: good\ndescription: d\nargument-hint: \"[x]\"\n---\n# Use\ntext\n")
	bad := writeFile(t, dir, "Bad_Skill/SKILL.md", "---\nname: Bad_Skill\ndescription: \"\"\nallowed_tools: Read\ncontext: nope\n---\nbody\n")
	cyc := writeFile(t, dir, "rel/skill.yaml", "name: rel\ndescription: d\nsteps:\n  - {name: a, prompt: p, depends: [b]}\n  - {name: b, prompt: p, depends: [a]}\n")
	mismatch := writeFile(t, dir, "template/SKILL.md", "---\nname: template-skill\ndescription: d\n---\nb\n")
	unclosed := writeFile(t, dir, "open/SKILL.md", "---\nname: open\ndescription: d\n")
	code, out, errs := runCLI(t, "validate", dir)
	want := []string{
		bad + `:2: name "Bad_Skill" may hold only lowercase letters a–z, digits and hyphens, and character 1 'B' (U+0042) is not one of them; e.g. "bad-skill"`,
		bad + ":3: description is missing or empty: say what the skill does and when to use it",
		bad + `:4: warning: unknown field "allowed_tools" is ignored; did you mean "allowed-tools"?`,
		bad + `:5: context "nope" is not allowed; use inline (the default) or fork`,
		good + `:4: warning: unknown field "argument-hint" is ignored (not an Agent Skills or skillbus field)`,
		good + ": ok: skill good (SKILL.md, 2 body lines, 1 sections, invocation both)",
		unclosed + `:1: the frontmatter opened on line 1 is never closed: add a line that is exactly "---" after the last field`,
		cyc + ":4: steps form a dependency cycle: a → b → a (each depends on the next); remove one of these depends",
		mismatch + `:2: name "template-skill" differs from its directory "template"; rename one so they match`,
		"5 file(s) checked, 4 invalid, 2 warning(s)",
	}
	if code != ExitFailure {
		t.Errorf("validate = %d (stderr %q); want %d", code, errs, ExitFailure)
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("validate output =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestValidateExampleSkills(t *testing.T) {
	code, out, errs := runCLI(t, "validate", filepath.Join("..", "..", "examples", "skills"))
	if code != ExitOK || strings.Contains(out, "warning") || !strings.Contains(out, "0 invalid") {
		t.Errorf("validate examples/skills = %d\n%s%s", code, out, errs)
	}
}
