package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/registry"
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
	files := exampleSeqFiles(t, "../../examples/sequences")
	if len(files) < 4 {
		t.Fatalf("want at least 4 example sequences, found %d", len(files))
	}
	code, out, errs := runCLI(t, append([]string{"validate", "--strict"}, files...)...)
	if code != ExitOK || strings.Count(out, ": ok: sequence ") != len(files) {
		t.Errorf("validate --strict examples/sequences = %d\n%s%s", code, out, errs)
	}
}

// TestValidateOverPayload: a valid sequence whose stored form does not fit
// in one message of the server is an error, as the registry refuses it;
// --max-payload says how large the server's messages may be.
func TestValidateOverPayload(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: big\ngroups:\n")
	pad := strings.Repeat("p", 990) // seq.MaxGroups groups whose stored form grows past 1 MiB
	for i := range 1000 {
		fmt.Fprintf(&b, "  - {name: g%d, tools: [{tool: t, args: {p: %s}}]}\n", i, pad)
	}
	if b.Len() >= 1<<20-4096 {
		t.Fatalf("the source (%d bytes) must fit the default limit; only its stored form may not", b.Len())
	}
	path := filepath.Join(t.TempDir(), "big.seq.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "validate", path)
	if code != ExitFailure || !strings.Contains(out, "the stored sequence would be") || !strings.Contains(out, "max_payload 1048576") {
		t.Fatalf("validate(1000 large groups) = %d\n%s\nwant exit 1 and the message-size error", code, out)
	}
	code, out, _ = runCLI(t, "validate", path, "--max-payload", "8388608")
	if code != ExitOK || !strings.Contains(out, ": ok: sequence big") {
		t.Errorf("validate --max-payload 8 MiB = %d\n%s", code, out)
	}
	for _, bad := range []string{"0", "4096", "x", "67108865"} {
		if code, _, _ := runCLI(t, "validate", "--max-payload", bad, path); code != ExitUsage {
			t.Errorf("validate --max-payload %s = %d; want %d", bad, code, ExitUsage)
		}
	}
}

// TestValidateForEach: validate reports each for_each mistake with its fix
// at its line, and a for_each call's $item arguments are not checked
// against the tool's schema as literals (fs.read's max_bytes is an integer, "$index" a string until run time).
func TestValidateForEach(t *testing.T) {
	dir := t.TempDir()
	good := writeSeqFile(t, dir, "good.seq.yaml", "name: good\ngroups:\n  - name: g\n    in: {p: array<string>}\n    out: {r: array<object>}\n    tools: [{tool: fs.read, for_each: $args.p, args: {path: $item, max_bytes: $index}, as: r}]\n")
	bad := writeSeqFile(t, dir, "bad.seq.yaml", `name: bad
groups:
  - name: g
    in: {n: integer, l: array<string>}
    out: {r: object, q: array<object>}
    tools:
      - tool: a
        for_each: $args.n
        as: q
      - tool: b
        args: {x: $item}
        as: r
      - tool: c
        for_each: $args.l
        args: {x: $item.name}
`)
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"validate", "--strict", good, bad}, nil, &out, &errOut)
	if code != ExitFailure {
		t.Errorf("validate exit = %d; want %d (stderr %q)", code, ExitFailure, errOut.String())
	}
	for _, w := range []string{
		good + ": ok: sequence good (p: array<string>)",
		bad + `: group 1 "g": tool 1 "a": for_each: reads $args.n, which the group's ` + "`in`" + ` declares as integer; for_each needs a list: declare "n": array<TYPE> (for example array<string>), or call the tool once without for_each (line 8)`,
		bad + `: group 1 "g": tool 2 "b": args: reads $item, but this call has no for_each, so there is no item; add for_each: $args.LIST`,
		bad + `: group 1 "g": tool 3 "c": args: reads $item.name, but the items of $args.l are string, which has no fields; write $item for the whole item, or declare "l": array<object> if its items are objects (line 15)`,
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("validate output =\n%s\nwant a line containing %q", out.String(), w)
		}
	}
	if strings.Contains(out.String(), good+": warning") {
		t.Errorf("the for_each call's $item was checked as a literal:\n%s", out.String())
	}
}

// exampleSeqFiles lists the sequence files of dir as the registry names
// them (*.seq.json, *.seq.yaml, *.seq.yml): an editor's backup beside them
// (my.seq.yaml~, my.seq.yaml.bak) is no example.
func exampleSeqFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.seq.*"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if registry.FileKind(f) == "sequence" {
			files = append(files, f)
		}
	}
	return files
}
