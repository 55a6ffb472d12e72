package cli

import (
	"os"
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

// TestValidateFileRefs: `skillbus validate` refuses a skill.yaml whose file
// refs leave the skill's directory — by "..", by an absolute path, or
// through a symlink — and warns of one that names a missing file; the same
// skill named as a FILE is judged alike (docs/skills.md, "Fields"). Before,
// all of them passed and were rendered for the model.
func TestValidateFileRefs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret.txt", "s\n")
	writeFile(t, dir, "x/docs/guide.md", "g\n")
	if err := os.Symlink("../secret.txt", filepath.Join(dir, "x", "out.md")); err != nil {
		t.Fatal(err)
	}
	bad := writeFile(t, dir, "x/skill.yaml", "name: x\ndescription: d\nprompt: p\nrefs:\n"+
		"  - {name: a, type: file, value: ../../../../etc/passwd}\n"+
		"  - {name: b, type: file, value: /etc/shadow}\n"+
		"  - {name: c, type: file, value: out.md}\n"+
		"  - {name: d, type: file, value: docs/guide.md}\n")
	warn := writeFile(t, dir, "y/skill.yaml", "name: y\ndescription: d\nprompt: p\nrefs:\n  - {name: m, type: file, value: missing.md}\n")
	want := []string{
		bad + `:5: refs[1]: file reference "../../../../etc/passwd" leads outside the skill's directory; a file ref names a file inside it — copy the file into the skill's directory, or refer to it by url`,
		bad + `:6: refs[2]: file reference "/etc/shadow" is an absolute path; a file ref is a path relative to the skill's directory and inside it — copy the file into the skill's directory, or refer to it by url`,
		warn + `:5: warning: refs[1]: file reference "missing.md" does not exist in the skill's directory; the model is told of a file it cannot read (create it, or fix the path)`,
		warn + ": ok: skill y (skill.yaml, 5 body lines, 1 sections, invocation both)",
		"2 file(s) checked, 1 invalid, 1 warning(s)",
	}
	code, out, errs := runCLI(t, "validate", dir)
	if got := strings.TrimSpace(out); code != ExitFailure || got != strings.Join(want, "\n") {
		t.Errorf("validate = %d (stderr %q), output\n%s\nwant\n%s", code, errs, got, strings.Join(want, "\n"))
	}
	// Once the text is fixed, the symlink out is what remains.
	writeFile(t, dir, "x/skill.yaml", "name: x\ndescription: d\nprompt: p\nrefs:\n  - {name: c, type: file, value: out.md}\n")
	for _, arg := range []string{dir, bad} {
		code, out, _ := runCLI(t, "validate", arg)
		if code != ExitFailure || !strings.Contains(out, bad+`:5: refs[1]: file reference "out.md" leads outside the skill's directory through a symlink (to `) {
			t.Errorf("validate %s = %d, output\n%s\nwant out.md refused", arg, code, out)
		}
	}
}
