package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileArgumentsAreReadAsInTheTree: a file named on the command line
// (validate, run, seqs show) is read through a symlink only when the link
// leads inside the directory named or the current directory — a link to
// /etc/passwd is refused, and its content never printed — and a skill
// given to run is said to be a skill.
func TestFileArgumentsAreReadAsInTheTree(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.seq.yaml", "name: ok\ngroups:\n  - name: g\n    tools: [{tool: t}]\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.seq.yaml", filepath.Join(dir, "alias.seq.yaml")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	passwd, _ := os.ReadFile("/etc/passwd")
	firstLine, _, _ := strings.Cut(string(passwd), "\n")
	for _, args := range [][]string{
		{"validate", filepath.Join(dir, "link.seq.yaml")},
		{"run", filepath.Join(dir, "link.seq.yaml")},
		{"seqs", "show", filepath.Join(dir, "link.seq.yaml")},
	} {
		code, out, errs := validateOrRun(t, args...)
		if code != ExitFailure || !strings.Contains(out+errs, "not followed: a symlink to /etc/passwd, outside the directory "+dir) {
			t.Errorf("%q = %d\nstdout %s\nstderr %s\nwant exit 1 and the refusal", args, code, out, errs)
		}
		if firstLine != "" && strings.Contains(out+errs, firstLine[:min(len(firstLine), 8)]) {
			t.Errorf("%q printed the content of /etc/passwd:\n%s%s", args, out, errs)
		}
	}
	if code, out, errs := validateOrRun(t, "validate", filepath.Join(dir, "alias.seq.yaml")); code != ExitOK {
		t.Errorf("validate of a link inside its directory = %d\n%s%s", code, out, errs)
	}
	skill := writeFile(t, dir, "s/SKILL.md", "---\nname: s\ndescription: d\n---\n# Use\n\nSome text: here\n")
	code, out, errs := validateOrRun(t, "run", skill)
	if code != ExitUsage || !strings.Contains(errs, skill+" is a skill, not a sequence") || strings.Contains(errs, "YAML document") {
		t.Errorf("run SKILL.md = %d\nstdout %s\nstderr %s\nwant exit 2 saying it is a skill", code, out, errs)
	}
}

// validateOrRun runs the command line with NATS_URL unset, failing the
// test if it does not return within a minute.
func validateOrRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("NATS_URL", "")
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := runCLI(t, args...)
		done <- res{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(time.Minute):
		t.Fatalf("%q did not return within a minute", args)
		return 0, "", ""
	}
}
