package skill

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileRefText: a file ref's value that is absolute or climbs out of
// the skill's directory is an error of Parse, at the value's line
// (docs/skills.md, "Fields"); before, "../../../../etc/passwd" and
// "/etc/shadow" passed and were rendered for the model.
func TestFileRefText(t *testing.T) {
	for _, tc := range []struct {
		value, want string // want "" = accepted
	}{
		{"../../../../etc/passwd", "leads outside the skill's directory"},
		{"/etc/shadow", "is an absolute path"},
		{"docs/../../x.md", "leads outside the skill's directory"},
		{"..", "leads outside the skill's directory"},
		{`..\..\x.md`, "leads outside the skill's directory"},
		{`\etc\passwd`, "is an absolute path"},
		{`C:\Windows\win.ini`, "is an absolute path"},
		{"docs/guide.md", ""},
		{"./guide.md", ""},
		{"docs/../guide.md", ""},
		{"..guide.md", ""},
	} {
		src := "name: x\ndescription: d\nprompt: p\nrefs:\n  - name: r\n    type: file\n    value: '" + tc.value + "'\n"
		s, _, err := Parse([]byte(src), FormatYAML, "x")
		if tc.want == "" {
			if err != nil || s == nil {
				t.Errorf("file ref %q: %v; want it accepted", tc.value, err)
			}
			continue
		}
		probs := Problems(err)
		if s != nil || len(probs) != 1 || !errors.Is(probs[0], ErrBadValue) || probs[0].Line != 7 || !strings.Contains(probs[0].Message, tc.want) {
			t.Errorf("file ref %q: %v; want one error at line 7 saying it %s", tc.value, err, tc.want)
		}
	}
}

// TestCheckRefs: against the skill's directory on disk, a file ref that
// leads outside through a symlink (to a file, through a directory link) is
// an error, and one to a missing file or a symlink loop a warning kept with
// the skill; refs inside (a file, a link inside) pass. Load applies it.
func TestCheckRefs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "x")
	outside := filepath.Join(base, "outside")
	for _, p := range []string{filepath.Join(dir, "docs"), outside} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{filepath.Join(dir, "docs", "guide.md"): "g\n", filepath.Join(outside, "secret.md"): "s\n"} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"in.md": "docs/guide.md", "out.md": "../outside/secret.md", "shared": "../outside", "loop.md": "loop.md", "dangling.md": "nothing.md"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(v string) string {
		return "  - {name: " + strings.NewReplacer("/", "-", ".", "-").Replace(v) + ", type: file, value: " + v + "}\n"
	}
	src := "name: x\ndescription: d\nprompt: p\nrefs:\n" + ref("docs/guide.md") + ref("in.md") + ref("missing.md") + ref("out.md") + ref("shared/secret.md") + ref("loop.md") + ref("dangling.md") +
		"  - {name: opt, type: file, value: gone.md, optional: true}\n  - {name: u, type: url, value: 'https://example.com/x'}\n"
	if err := os.WriteFile(filepath.Join(dir, "skill.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, err := Parse([]byte(src), FormatYAML, "x")
	if err != nil {
		t.Fatal(err)
	}
	warns, err := CheckRefs(s, dir)
	probs := Problems(err)
	if len(probs) != 2 || probs[0].Line != 8 || !strings.Contains(probs[0].Message, `"out.md" leads outside the skill's directory through a symlink`) ||
		probs[1].Line != 9 || !strings.Contains(probs[1].Message, `"shared/secret.md" leads outside`) || !errors.Is(err, ErrBadValue) {
		t.Errorf("CheckRefs errors = %v; want out.md (line 8) and shared/secret.md (line 9) refused", err)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.String())
	}
	want := []string{
		`skill.yaml:7: warning: refs[3]: file reference "missing.md" does not exist in the skill's directory; the model is told of a file it cannot read (create it, or fix the path)`,
		`skill.yaml:10: warning: refs[6]: file reference "loop.md" is a symlink loop (or goes through too many symlinks); the model is told of a file it cannot read (create it, or fix the path)`,
		`skill.yaml:11: warning: refs[7]: file reference "dangling.md" does not exist in the skill's directory; the model is told of a file it cannot read (create it, or fix the path)`,
		`skill.yaml:12: warning: refs[8]: file reference "gone.md" does not exist in the skill's directory; the model is told of a file it cannot read (create it, or fix the path)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(s.Warnings) != len(want) {
		t.Errorf("CheckRefs warnings =\n%s\nwant\n%s\n(s.Warnings has %d)", strings.Join(got, "\n"), strings.Join(want, "\n"), len(s.Warnings))
	}
	if s, _, err := Load(dir); s != nil || !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), "out.md") {
		t.Errorf("Load(%s) = %v, %v; want the escaping refs refused", dir, s, err)
	}
}
