package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSeqFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateSequenceFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeSeqFile(t, dir, "good.seq.yaml", "name: good\ngroups:\n  - name: g\n    in: {repo: string}\n    tools: [{tool: t, args: {r: $args.repo}}]\n")
	bad := writeSeqFile(t, dir, "bad.seq.json", `{"name":"bad","groups":[{"name":"fetch","missing":"ignore","tools":"{\"tool\":\"a\"};"},{"name":"fetch","tools":"{\"tool\":\"b\",\"as\":\"x\"};"}]}`)
	writeSeqFile(t, dir, "notes.txt", "not a sequence")

	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"validate", dir}, nil, &out, &errOut)
	if code != ExitFailure {
		t.Errorf("validate exit = %d; want %d (stderr %q)", code, ExitFailure, errOut.String())
	}
	want := []string{
		bad + `: group 1 "fetch": missing: got "ignore"; missing must be one of fail`,
		bad + `: group 2 "fetch": name: the group name "fetch" is already used by group 1`,
		good + ": ok: sequence good (repo: string)",
		"2 file(s) checked, 1 invalid",
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("validate output =\n%s\nwant a line containing %q", out.String(), w)
		}
	}
	if strings.Contains(out.String(), "notes.txt") {
		t.Errorf("validate looked at a file that is not a sequence:\n%s", out.String())
	}
}

func TestValidateSequenceFileOK(t *testing.T) {
	dir := t.TempDir()
	p := writeSeqFile(t, dir, "s.seq.json", `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a\"};"}]}`)
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"validate", p}, nil, &out, &errOut); code != ExitOK {
		t.Errorf("validate(%s) exit = %d; want 0\n%s%s", p, code, out.String(), errOut.String())
	}
	if want := p + ": ok: sequence s ()\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("validate output = %q; want it to start with %q", out.String(), want)
	}
}

func TestValidateExampleSequences(t *testing.T) {
	files, _ := filepath.Glob("../../examples/sequences/*.seq.*")
	if len(files) < 4 {
		t.Fatalf("want at least 4 example sequences, found %d", len(files))
	}
	for _, f := range files {
		probs, summary := validateSequenceFile(f)
		if len(probs) > 0 || !strings.HasPrefix(summary, "sequence ") {
			t.Errorf("validateSequenceFile(%s) = %v, %q; want valid", f, probs, summary)
		}
	}
}
