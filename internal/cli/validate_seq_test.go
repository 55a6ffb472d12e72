package cli

import (
	"bytes"
	"context"
	"fmt"
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

// TestValidateWarnsOverDefaultPayload: a valid sequence whose stored form
// does not fit in one message of a default NATS server is valid but gets a
// warning, so the registry's refusal is no surprise.
func TestValidateWarnsOverDefaultPayload(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: big\ngroups:\n")
	for i := range 9000 {
		fmt.Fprintf(&b, "  - name: g%d\n    description: %q\n    tools: [{tool: t.a, args: {p: %q}}]\n", i, strings.Repeat("x", 60), strings.Repeat("y", 40))
	}
	path := filepath.Join(t.TempDir(), "big.seq.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	probs, summary := validateSequenceFile(path)
	if summary == "" || len(probs) != 1 || !probs[0].Warning || !strings.Contains(probs[0].Message, "1 MiB") {
		t.Fatalf("validateSequenceFile(9000 groups) = %v, %q; want one warning about the 1 MiB message limit and a valid summary", probs, summary)
	}
	small := filepath.Join(t.TempDir(), "small.seq.yaml")
	if err := os.WriteFile(small, []byte("name: s\ngroups:\n  - name: g\n    tools: [{tool: t}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if probs, _ := validateSequenceFile(small); len(probs) != 0 {
		t.Errorf("validateSequenceFile(small) = %v; want no problem", probs)
	}
}
