package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// validateWithin runs validate and fails the test when it does not return
// within d (a FIFO opened for reading, or /dev/zero read to the end, would
// hang it).
func validateWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := runCLI(t, append([]string{"validate"}, args...)...)
		done <- res{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(d):
		t.Fatalf("validate %q did not return within %s", args, d)
		return 0, "", ""
	}
}

// TestValidateCrossFile: the registry's clash rules are validate's.
func TestValidateCrossFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a/pdf/SKILL.md", "---\nname: pdf\ndescription: first\n---\nbody\n")
	writeFile(t, dir, "b/pdf/SKILL.md", "---\nname: pdf\ndescription: second\n---\nbody\n")
	writeFile(t, dir, "flows/one.seq.yaml", "name: one\ngroups:\n  - name: fetch\n    tools: [{tool: t}]\n")
	writeFile(t, dir, "flows/two.seq.yaml", "name: two\ngroups:\n  - name: post\n    tools: [{tool: t}]\n  - name: fetch\n    tools: [{tool: t}]\n")
	writeFile(t, dir, "more/one.seq.json", `{"name": "one", "groups": [{"name": "other", "tools": "{\"tool\": \"t\"};"}]}`)
	code, out, errs := runCLI(t, "validate", dir)
	if code != ExitFailure {
		t.Errorf("validate = %d; want 1 (stderr %q)", code, errs)
	}
	for _, want := range []string{
		filepath.Join(dir, "a/pdf/SKILL.md") + ": ok: skill pdf",
		filepath.Join(dir, "b/pdf/SKILL.md") + `: skill name "pdf" is also defined by ` + filepath.Join(dir, "a/pdf/SKILL.md") + ", which the registry keeps (the first file path in byte order wins)",
		filepath.Join(dir, "flows/one.seq.yaml") + ": ok: sequence one",
		filepath.Join(dir, "flows/two.seq.yaml") + `: group name "fetch" is also used by sequence "one" in ` + filepath.Join(dir, "flows/one.seq.yaml"),
		filepath.Join(dir, "more/one.seq.json") + `: sequence name "one" is also defined by ` + filepath.Join(dir, "flows/one.seq.yaml"),
		"5 file(s) checked, 3 invalid",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output =\n%s\nwant a line containing %q", out, want)
		}
	}
	// A file given again beside its directory is checked once (no clash
	// with itself); a symlink is a file of its own, as in the registry.
	code, again, _ := runCLI(t, "validate", dir, filepath.Join(dir, "flows", "..", "flows", "one.seq.yaml"))
	if code != ExitFailure || !strings.Contains(again, "5 file(s) checked, 3 invalid") {
		t.Errorf("validate DIR DIR/flows/one.seq.yaml =\n%s\nwant the same 5 files", again)
	}
	if err := os.Symlink("one.seq.yaml", filepath.Join(dir, "flows", "alias.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	_, linked, _ := runCLI(t, "validate", dir)
	if !strings.Contains(linked, filepath.Join(dir, "flows/one.seq.yaml")+`: sequence name "one" is also defined by `+filepath.Join(dir, "flows/alias.seq.yaml")) {
		t.Errorf("validate with a symlinked sequence =\n%s\nwant the clash the registry would report", linked)
	}
}

// TestValidateNaming: files that `skillbus run` accepts (or that look like
// skills) but the registry ignores are reported; --strict fails on them.
func TestValidateNaming(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.seq.yaml", "name: ok\ngroups:\n  - name: g\n    tools: [{tool: t}]\n")
	writeFile(t, dir, "ci/deploy.yaml", "name: deploy\ngroups:\n  - name: d\n    tools: [{tool: t}]\n")
	writeFile(t, dir, "k8s/values.yaml", "replicas: 3\n")
	writeFile(t, dir, "notes/skill.md", "---\nname: notes\ndescription: d\n---\nb\n")
	writeFile(t, dir, ".git/x.seq.yaml", "broken: [")
	writeFile(t, dir, "node_modules/p/skill.yaml", "broken: [")

	code, out, _ := runCLI(t, "validate", dir)
	if code != ExitOK {
		t.Errorf("validate = %d; want 0 (warnings only)\n%s", code, out)
	}
	for _, want := range []string{
		filepath.Join(dir, "ci/deploy.yaml") + ": warning: `skillbus run` takes this file as a sequence (it has name and groups), but the registry loads only files named *.seq.json, *.seq.yaml or *.seq.yml, so `skillbus dev` and the registry ignore it: rename it to deploy.seq.yaml",
		filepath.Join(dir, "notes/skill.md") + ": warning: the registry loads only files named exactly SKILL.md",
		"1 file(s) checked, 0 invalid, 2 warning(s)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output =\n%s\nwant a line containing %q", out, want)
		}
	}
	for _, not := range []string{"values.yaml", ".git", "node_modules"} {
		if strings.Contains(out, not) {
			t.Errorf("validate output mentions %s:\n%s", not, out)
		}
	}
	if code, out, _ := runCLI(t, "validate", dir, "--strict"); code != ExitFailure || !strings.Contains(out, "(--strict: warnings fail)") {
		t.Errorf("validate --strict = %d\n%s\nwant 1", code, out)
	}
	// An explicit file the registry would not load is checked, with a warning.
	code, out, _ = runCLI(t, "validate", filepath.Join(dir, "ci/deploy.yaml"))
	if code != ExitOK || !strings.Contains(out, "deploy.yaml: ok: sequence deploy") || !strings.Contains(out, "rename it to deploy.seq.yaml") {
		t.Errorf("validate deploy.yaml = %d\n%s", code, out)
	}
	// Only ignored files: nothing to check.
	only := t.TempDir()
	writeFile(t, only, "deploy.yml", "name: d\ngroups: []\n")
	code, out, errs := runCLI(t, "validate", only)
	if code != ExitUsage || !strings.Contains(out, "rename it to deploy.seq.yml") || !strings.Contains(errs, "no sequence") {
		t.Errorf("validate (only a misnamed file) = %d\n%s%s", code, out, errs)
	}
}

// TestValidateFilesAreFiles: a FIFO, a link to /dev/zero or a file outside
// and an oversize file are refused with a problem line, at once; a link to
// / or to .. (a directory outside) is not followed, with a warning.
func TestValidateFilesAreFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "good/SKILL.md", "---\nname: good\ndescription: d\n---\nb\n")
	writeFile(t, dir, "huge.seq.yaml", "name: huge\n#"+strings.Repeat("x", 70000)+"\n")
	mkfifo(t, filepath.Join(dir, "x.seq.yaml"))
	for target, name := range map[string]string{"/dev/zero": "zero/SKILL.md", "/": "all", "..": "up", "/etc/hostname": "host.seq.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := validateWithin(t, 20*time.Second, dir, "--max-payload", "65536")
	if code != ExitFailure {
		t.Errorf("validate = %d; want 1 (stderr %q)", code, errs)
	}
	for _, want := range []string{
		filepath.Join(dir, "x.seq.yaml") + ": not read: a named pipe (FIFO), not a regular file",
		filepath.Join(dir, "zero/SKILL.md") + ": not followed: a symlink to /dev/zero, outside the tree",
		// A directory link out of the tree is a warning: repositories hold
		// such links with no definition behind them.
		filepath.Join(dir, "all") + ": warning: not followed: a symlink to the directory /, outside the tree",
		filepath.Join(dir, "up") + ": warning: not followed: a symlink to the directory " + filepath.Dir(dir),
		filepath.Join(dir, "host.seq.yaml") + ": not followed: a symlink to /etc/hostname",
		filepath.Join(dir, "huge.seq.yaml") + ": not read: the file has 70013 bytes or more; a definition is stored as one NATS message, so a file may have at most 61440 bytes here",
		filepath.Join(dir, "good/SKILL.md") + ": ok: skill good",
		"7 file(s) checked, 4 invalid, 2 warning(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output =\n%s\nwant a line containing %q", out, want)
		}
	}
	// A FIFO named on the command line is refused too.
	code, out, _ = validateWithin(t, 20*time.Second, filepath.Join(dir, "x.seq.yaml"))
	if code != ExitFailure || !strings.Contains(out, "a named pipe (FIFO), not a regular file") {
		t.Errorf("validate FIFO = %d\n%s", code, out)
	}
}

// TestValidateJSONAndFlagsAnywhere: --json's documented shape, flags after
// the paths, and -- ending the flags.
func TestValidateJSONAndFlagsAnywhere(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "x/SKILL.md", "---\nname: x\ndescription: d\nallowed_tools: Read\ncontext: nope\n---\nb\n")
	good := writeFile(t, dir, "s.seq.yaml", "name: s\ngroups:\n  - name: g\n    in: {repo: string}\n    tools: [{tool: t, args: {r: $args.repo}}]\n")
	for _, args := range [][]string{
		{"validate", "--json", dir},
		{"validate", dir, "--json"},
		{"validate", dir, "--strict", "--json"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != ExitFailure {
			t.Errorf("%q = %d; want 1 (stderr %q)", args, code, errs)
		}
		var rep struct {
			Files []struct {
				File     string `json:"file"`
				Kind     string `json:"kind"`
				Name     string `json:"name"`
				Summary  string `json:"summary"`
				Valid    bool   `json:"valid"`
				Problems []struct {
					File    string `json:"file"`
					Line    int    `json:"line"`
					Message string `json:"message"`
					Warning bool   `json:"warning"`
				} `json:"problems"`
			} `json:"files"`
			Checked, Sequences, Skills, Tests, Invalid, Warnings int
			Strict, OK                                           bool
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil {
			t.Fatalf("%q: not the documented JSON: %v\n%s", args, err, out)
		}
		if rep.Checked != 2 || rep.Invalid != 1 || rep.Warnings != 1 || rep.OK || len(rep.Files) != 2 {
			t.Errorf("%q = %+v", args, rep)
			continue
		}
		f0, f1 := rep.Files[0], rep.Files[1]
		if f0.File != good || f0.Kind != "sequence" || f0.Name != "s" || !f0.Valid || f0.Summary != "sequence s (repo: string)" || len(f0.Problems) != 0 {
			t.Errorf("%q: first file = %+v", args, f0)
		}
		if f1.File != bad || f1.Kind != "skill" || f1.Valid || len(f1.Problems) != 2 ||
			!f1.Problems[0].Warning || f1.Problems[0].Line != 4 || !strings.Contains(f1.Problems[0].Message, `did you mean "allowed-tools"`) ||
			f1.Problems[1].Warning || f1.Problems[1].Line != 5 || f1.Problems[1].File != bad {
			t.Errorf("%q: second file = %+v", args, f1)
		}
	}
	// --strict with a valid file that has a warning: exit 1, ok false.
	warn := t.TempDir()
	writeFile(t, warn, "w/SKILL.md", "---\nname: w\ndescription: d\nallowed_tools: Read\n---\nb\n")
	if code, out, _ := runCLI(t, "validate", warn, "--json", "--strict"); code != ExitFailure || !strings.Contains(out, `"ok": false`) || !strings.Contains(out, `"strict": true`) {
		t.Errorf("validate --strict (warning only) = %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "validate", warn, "--json"); code != ExitOK {
		t.Errorf("validate (warning only) = %d; want 0", code)
	}
	// After --, "--json" is a path.
	if code, _, errs := runCLI(t, "validate", warn, "--", "--json"); code != ExitUsage || !strings.Contains(errs, "--json") {
		t.Errorf("validate DIR -- --json = %d (%q); want 2 naming the missing path --json", code, errs)
	}
}

// TestValidateDanglingLink: a symlink named like a definition that leads to
// nothing is a warning (it loads nothing), not silently absent.
func TestValidateDanglingLink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.seq.yaml", "name: ok\ngroups:\n  - name: ok-g\n    tools: [{tool: fs.list}]\n")
	if err := os.Symlink("gone.seq.yaml", filepath.Join(dir, "alias.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	code, out, errs := validateWithin(t, 20*time.Second, dir)
	if code != ExitOK || !strings.Contains(out, filepath.Join(dir, "alias.seq.yaml")+": warning: not loaded: a symlink to gone.seq.yaml, which does not exist") || !strings.Contains(out, "2 file(s) checked, 0 invalid, 1 warning(s)") {
		t.Errorf("validate = %d\n%s%s\nwant 0 and the dangling link as a warning", code, out, errs)
	}
	if code, _, _ := validateWithin(t, 20*time.Second, dir, "--strict"); code != ExitFailure {
		t.Errorf("validate --strict = %d; want 1 on the warning", code)
	}
}

// TestValidateMissingPath: a PATH that does not exist is said in words
// (which part is missing), not as a system call's error.
func TestValidateMissingPath(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "nope.seq.yaml"), filepath.Join(dir, "nope.seq.yaml") + " does not exist; give the sequence files"},
		{filepath.Join(dir, "gone", "x.seq.yaml"), "does not exist (there is no directory " + filepath.Join(dir, "gone") + ")"},
	} {
		code, _, errb := runMain(t, "validate", tc.path)
		if code != ExitUsage || !strings.Contains(errb, tc.want) || strings.Contains(errb, "stat ") {
			t.Errorf("validate %s = %d %q; want 2 and %q, no 'stat'", tc.path, code, errb, tc.want)
		}
	}
}
