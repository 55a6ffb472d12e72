package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
	"gopkg.in/yaml.v3"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// Names with a precomposed letter: the registry stores them in NFC; the
// tests type them decomposed (NFD), as some keyboards and file systems do.
const (
	nfcSeq   = "café-survey"
	nfcGroup = "café-list"
)

// readStack starts an all-in-one skillbus loading one sequence named in
// NFC and one skill, with the built-in tools rooted at a small project;
// NATS_URL points at it.
func readStack(t *testing.T) *devstack.Stack {
	t.Helper()
	clearNATSEnv(t)
	base := t.TempDir()
	defs := filepath.Join(base, "defs")
	root := filepath.Join(base, "root")
	for name, text := range map[string]string{
		"defs/cafe.seq.yaml": "name: " + nfcSeq + "\ndescription: Lists the root, for the read commands' tests.\ngroups:\n  - name: " + nfcGroup +
			"\n    in: {root: string}\n    out: {top: object}\n    tools:\n      - tool: fs.list\n        args: {path: $args.root}\n        as: top\n",
		"defs/skills/read-demo/SKILL.md": "---\nname: read-demo\ndescription: A skill for the read commands' tests, with a description longer than eighty characters so that wide shows more.\n---\n# Usage\n\nRead it.\n\n# Limits\n\nNone.\n",
		"root/a.txt":                     "a\n",
	} {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stack, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Dir: defs, Tools: builtin.Config{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = stack.Stop(sctx)
	})
	t.Setenv("NATS_URL", stack.URL())
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, _ := runMain(t, "seqs")
		if code == ExitOK && strings.Contains(out, nfcSeq) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not load the definitions: seqs = %d %q", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stack
}

// sameData decodes a JSON and a YAML text and reports whether they hold the
// same data (numbers compared by their text).
func sameData(t *testing.T, jsonText, yamlText string) bool {
	t.Helper()
	var j, y any
	d := json.NewDecoder(strings.NewReader(jsonText))
	d.UseNumber()
	if err := d.Decode(&j); err != nil {
		t.Errorf("not JSON: %v\n%s", err, jsonText)
		return false
	}
	if err := yaml.Unmarshal([]byte(yamlText), &y); err != nil {
		t.Errorf("not YAML: %v\n%s", err, yamlText)
		return false
	}
	// Through JSON again, so both sides have the same Go types.
	yb, err := json.Marshal(y)
	if err != nil {
		t.Errorf("YAML data cannot be JSON: %v", err)
		return false
	}
	var y2 any
	d = json.NewDecoder(bytes.NewReader(yb))
	d.UseNumber()
	if err := d.Decode(&y2); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(j, y2)
}

// TestReadCommandsOutput runs every read command against a real stack with
// each output format: -o json and --json print the same JSON, -o yaml the
// same data as YAML, -o wide more columns than the table.
func TestReadCommandsOutput(t *testing.T) {
	readStack(t)
	nfd := norm.NFD.String(nfcSeq)
	if nfd == nfcSeq {
		t.Fatal("test name has no decomposition")
	}
	// A run to list and show (typed in NFD: run NAME normalises).
	code, out, errb := runMain(t, "run", nfd, "--arg", "root=.", "--quiet", "--run-id", "read-run-1", "-o", "json")
	if code != ExitOK {
		t.Fatalf("run %q = %d\n%s\n%s", nfd, code, out, errb)
	}
	var st events.RunState
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Sequence != nfcSeq || st.Status != events.StatusSucceeded {
		t.Fatalf("run -o json: %v %+v", err, st)
	}

	for _, tc := range []struct {
		cmd      []string
		wide     string // a header only -o wide shows ("" for no wide)
		jsonPart string // a part of the JSON output
	}{
		{[]string{"seqs"}, "DESCRIPTION", `"name": "` + nfcSeq + `"`},
		{[]string{"seqs", "ls"}, "DESCRIPTION", `"groups": [`},
		{[]string{"seqs", "show", nfd}, "", `"name": "` + nfcGroup + `"`},
		{[]string{"skills"}, "WARNINGS", `"name": "read-demo"`},
		{[]string{"skills", "info", "read-demo", "limits"}, "", `"section": "limits"`},
		{[]string{"runs"}, "WORKER", `"run_id": "read-run-1"`},
		{[]string{"runs", "ls", "--sequence", nfd}, "WORKER", `"run_id": "read-run-1"`},
		{[]string{"runs", "show", "read-run-1"}, "", `"status": "succeeded"`},
		{[]string{"tools"}, "ARGUMENTS", `"tool": "fs.list"`},
		{[]string{"call", norm.NFD.String(nfcGroup), "--arg", "root=."}, "", `"group": "` + nfcGroup + `"`},
	} {
		name := strings.Join(tc.cmd, " ")
		code, jsonOut, errb := runMain(t, append(tc.cmd, "-o", "json")...)
		if code != ExitOK || !strings.Contains(jsonOut, tc.jsonPart) {
			t.Errorf("%s -o json = %d, lacks %q:\n%s\n%s", name, code, tc.jsonPart, jsonOut, errb)
			continue
		}
		// --json first, -o json at the end: the same output.
		alias := append([]string{tc.cmd[0], "--json"}, tc.cmd[1:]...)
		if code, out, _ := runMain(t, alias...); code != ExitOK || (out != jsonOut && tc.cmd[0] != "call") {
			t.Errorf("%q = %d; want the output of -o json:\n%s\nvs\n%s", alias, code, out, jsonOut)
		}
		code, yamlOut, errb := runMain(t, append(tc.cmd, "--output=yaml")...)
		if code != ExitOK || strings.HasPrefix(strings.TrimSpace(yamlOut), "{") {
			t.Errorf("%s -o yaml = %d:\n%s\n%s", name, code, yamlOut, errb)
			continue
		}
		if tc.cmd[0] != "call" && !sameData(t, jsonOut, yamlOut) {
			t.Errorf("%s: -o yaml holds other data than -o json:\n%s\nvs\n%s", name, yamlOut, jsonOut)
		}
		code, table, _ := runMain(t, tc.cmd...)
		if code != ExitOK {
			t.Errorf("%s = %d", name, code)
		}
		if tc.wide == "" {
			if code, _, errb := runMain(t, append(tc.cmd, "-o", "wide")...); code != ExitUsage || !strings.Contains(errb, "want json or yaml") {
				t.Errorf("%s -o wide = %d %q; want 2: no wider table", name, code, errb)
			}
			continue
		}
		code, wide, errb := runMain(t, append(tc.cmd, "-o", "wide")...)
		if code != ExitOK || !strings.Contains(wide, tc.wide) || strings.Contains(table, tc.wide) {
			t.Errorf("%s -o wide = %d; want the %s column only there:\n%s\ntable:\n%s\n%s", name, code, tc.wide, wide, table, errb)
		}
	}

	// YAML keeps exact integers and puts text as literal blocks.
	var b bytes.Buffer
	writeYAML(&b, map[string]any{"n": json.Number("9007199254740993"), "text": "line 1\nline 2\n", "s": "123"})
	if got := b.String(); !strings.Contains(got, "n: 9007199254740993\n") || !strings.Contains(got, "text: |\n  line 1\n  line 2\n") || !strings.Contains(got, `s: "123"`) {
		t.Errorf("writeYAML = %q", got)
	}
}

// TestNamesNormalised: a name typed in NFD finds the NFC one the registry
// stores, in every command that takes a sequence or group name.
func TestNamesNormalised(t *testing.T) {
	stack := readStack(t)
	nfd := norm.NFD.String(nfcSeq)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"seqs", "show", nfd}, nfcSeq + " (root: string)"},
		{[]string{"seqs", "graph", nfd}, "flowchart"},
		{[]string{"run", nfd, "--arg", "root=.", "--quiet"}, "succeeded"},
		{[]string{"call", norm.NFD.String(nfcGroup), "--arg", "root=."}, "Group " + nfcGroup + " of " + nfcSeq + ": succeeded"},
		{[]string{"runs", "ls", "--sequence", nfd}, nfcSeq},
	} {
		code, out, errb := runMain(t, tc.args...)
		if code != ExitOK || !strings.Contains(out, tc.want) {
			t.Errorf("%q = %d; want %q in:\n%s\n%s", tc.args, code, tc.want, out, errb)
		}
	}
	// seqs rm: a sequence created over NATS under the NFC name, removed by
	// its NFD spelling.
	created := "scratch-" + nfcSeq
	body := `{"name":"` + created + `","groups":[{"name":"scratch-` + nfcGroup + `","tools":[{"tool":"fs.list","args":{"path":"."}}]}]}`
	code, out, errb := runMain(t, "seqs", "rm", norm.NFD.String(created))
	if code != ExitFailure {
		t.Fatalf("seqs rm of a sequence not created yet = %d %q %q", code, out, errb)
	}
	if err := seqCreate(stack.URL(), body); err != nil {
		t.Fatal(err)
	}
	if code, out, errb := runMain(t, "seqs", "rm", norm.NFD.String(created)); code != ExitOK || !strings.Contains(out, "deleted sequence "+created) {
		t.Errorf("seqs rm NFD = %d %q %q", code, out, errb)
	}
}

// seqCreate stores a sequence over NATS (seq_create) in its JSON form.
func seqCreate(url, body string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	c, err := client.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = c.SeqCreate(ctx, []byte(body))
	return err
}

// TestRunPlaceFlags: flags that the place a run happens would ignore are
// refused, saying why and how; --local runs here even with NATS_URL set.
// So are the flags other commands would ignore (a file read without NATS,
// an embedded stack, a Secret namespace without Secrets).
func TestRunPlaceFlags(t *testing.T) {
	clearNATSEnv(t)
	seqFile := filepath.Join("..", "..", "examples", "sequences", "project-survey.seq.yaml")
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "README.md"), []byte("# Here\n"), 0o644)
	// NATS_URL at a port where nothing listens: the refusals come first.
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	for _, f := range [][]string{{"--tools-root", root}, {"--allow-cmd", "git"}, {"--data", t.TempDir()}, {"--tools-root=."}} {
		args := append([]string{"run", seqFile, "--arg", "root=."}, f...)
		code, _, errb := runMain(t, args...)
		name := strings.SplitN(f[0], "=", 2)[0]
		if code != ExitUsage || !strings.Contains(errb, name+" only applies to a run in this process") || !strings.Contains(errb, "NATS_URL is set") || !strings.Contains(errb, "unset NATS_URL") || !strings.Contains(errb, "--local") {
			t.Errorf("%q with NATS_URL = %d %q; want 2, saying why and how", args, code, errb)
		}
	}
	// --context names a cluster too.
	t.Setenv("NATS_URL", "")
	code, _, errb := runMain(t, "run", seqFile, "--context", "somewhere", "--tools-root", root)
	if code != ExitUsage || !strings.Contains(errb, "a nats context is given (--context)") {
		t.Errorf("run --context --tools-root = %d %q; want 2 naming the context", code, errb)
	}
	// Connection flags without a cluster, or with --local, are refused.
	code, _, errb = runMain(t, "run", seqFile, "--creds", "x.creds")
	if code != ExitUsage || !strings.Contains(errb, "--creds is a NATS connection setting") {
		t.Errorf("run --creds without NATS_URL = %d %q; want 2", code, errb)
	}
	code, _, errb = runMain(t, "bench", "--runs", "1", "--nkey", "x.nk")
	if code != ExitUsage || !strings.Contains(errb, "--nkey is a NATS connection setting, but no NATS_URL") {
		t.Errorf("bench --nkey without NATS_URL = %d %q; want 2", code, errb)
	}
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	code, _, errb = runMain(t, "run", seqFile, "--local", "--context", "x")
	if code != ExitUsage || !strings.Contains(errb, "--context and --local contradict") {
		t.Errorf("run --local --context = %d %q; want 2", code, errb)
	}
	code, _, errb = runMain(t, "run", seqFile, "--local", "--detach")
	if code != ExitUsage || !strings.Contains(errb, "--detach needs NATS_URL (and no --local)") {
		t.Errorf("run --local --detach = %d %q; want 2", code, errb)
	}
	// The other commands' flags that would be ignored.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"seqs", "show", seqFile, "--context", "prod"}, "is a file, read from disk without NATS, so --context would be ignored"},
		{[]string{"seqs", "graph", "--creds", "x.creds", seqFile}, "so --creds would be ignored"},
		{[]string{"mcp", "serve", "--local", root, "--context", "prod"}, "--context and --local contradict"},
		{[]string{"mcp", "serve", "--read-only", "--wait", "5m"}, "--read-only leaves seq_run out"},
		{[]string{"auth", "--dir", t.TempDir(), "--namespace", "skillbus"}, "only -o k8s prints"},
	} {
		if code, _, errb := runMain(t, tc.args...); code != ExitUsage || !strings.Contains(errb, tc.want) {
			t.Errorf("%q = %d %q; want 2 and %q", tc.args, code, errb, tc.want)
		}
	}
	// --local: the in-process stack, with its flags, although NATS_URL is
	// set (to a port where nothing listens).
	code, out, errb := runMain(t, "run", seqFile, "--arg", "root=.", "--local", "--tools-root", root, "--quiet", "-o", "yaml")
	if code != ExitOK || !strings.Contains(out, "status: succeeded") || !strings.Contains(out, "# Here") {
		t.Errorf("run --local --tools-root with NATS_URL set = %d\n%s\n%s", code, out, errb)
	}
}

// TestStoredNameDidYouMean: a stored name that is not found (a sequence
// to run or show, a group to call, a skill) is answered with the closest
// stored name, when one is near, before how to list them; a name near
// nothing gets the listing hint alone.
func TestStoredNameDidYouMean(t *testing.T) {
	readStack(t)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"run", "cafe-survey"}, `did you mean "` + nfcSeq + `"? (list the stored sequences with ` + "`skillbus seqs`)"},
		{[]string{"seqs", "show", "café-survy"}, `did you mean "` + nfcSeq + `"? (list the stored sequences with`},
		{[]string{"call", "café-lst", "--arg", "root=."}, `did you mean "` + nfcGroup + `"? (list the sequences and their groups with`},
		{[]string{"skills", "info", "read-dmo"}, `did you mean "read-demo"? (list the skills with`},
		{[]string{"skills", "info", "zzzzzzzzzz"}, "; list the skills with `skillbus skills`"},
		{[]string{"runs", "--sequence", "cafe-survey"}, `no runs of sequence "cafe-survey", and no sequence of that name is stored: did you mean "` + nfcSeq + `"? (list the stored sequences with`},
		{[]string{"runs", "ls", "--sequence", "zzzzzzzzzz"}, "no sequence of that name is stored: list the stored sequences with `skillbus seqs`"},
	} {
		code, _, errb := runMain(t, tc.cmd...)
		if code != ExitFailure || !strings.Contains(errb, tc.want) {
			t.Errorf("%q = %d %q; want 1 and %q", tc.cmd, code, errb, tc.want)
		}
		if strings.Contains(errb, "did you mean") && strings.Contains(tc.cmd[len(tc.cmd)-1], "zzz") {
			t.Errorf("%q suggests a name far from it: %q", tc.cmd, errb)
		}
	}
	// A stored sequence without runs is an empty list, not an error.
	if code, out, errb := runMain(t, "runs", "--sequence", nfcSeq); code != ExitOK || !strings.Contains(out, "RUN ID") || !strings.Contains(errb, "no runs match") {
		t.Errorf("runs --sequence %s (stored, no runs) = %d %q %q; want 0, the table head and \"no runs match\"", nfcSeq, code, out, errb)
	}
}

// TestArgsOverMaxPayload: run and call with a 5 MiB --args-file say the
// request's size, the server's max_payload and what to do, not nats.go's
// bare "maximum payload exceeded".
func TestArgsOverMaxPayload(t *testing.T) {
	readStack(t)
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"root":"`+strings.Repeat("x", 5<<20)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"run", nfcSeq, "--args-file", big}, {"call", nfcGroup, "--args-file", big}} {
		code, _, errb := runMain(t, cmd...)
		for _, want := range []string{"is 5.0 MiB (", "--args-file " + big + " is 5.0 MiB (5242891 bytes)", "max_payload of 1.0 MiB (1048576 bytes)", "fs.read", "object store", "raise max_payload"} {
			if code != ExitFailure || !strings.Contains(errb, want) {
				t.Errorf("%s %s --args-file (5 MiB) = %d %q; want 1 and %q", cmd[0], cmd[1], code, errb, want)
			}
		}
		if strings.Contains(errb, "maximum payload exceeded") {
			t.Errorf("%s: %q still shows the bare nats.go error", cmd[0], errb)
		}
	}
}
