package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/cli"
)

// TestToolProvidersThatDisagree serves the built-in tools from two roots
// on one bus, as two `skillbus tools serve` would: the second provider
// warns at start, `skillbus tools` warns and marks the tools; a provider
// with --prefix shares the bus without a conflict, and one with the same
// root and settings joins without a warning.
func TestToolProvidersThatDisagree(t *testing.T) {
	rootA := cliProject(t)
	rootB := t.TempDir()
	if err := os.WriteFile(filepath.Join(rootB, "README.md"), []byte("# B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cliStack(t, "", rootA) // serves the built-in tools rooted at rootA

	// Same configuration as the stack's: no warning.
	out, errOut, _ := cliBackground(t, "tools", "serve", "--root", rootA)
	out.waitFor(t, "tools serve (same root) to start", "serving")
	waitQuiet(t, errOut)
	if strings.Contains(errOut.String(), "disagree") {
		t.Errorf("tools serve with the stack's own root warned: %s", errOut.String())
	}

	// Another root: the provider warns at start, naming both roots.
	_, errOut, _ = cliBackground(t, "tools", "serve", "--root", rootB)
	errOut.waitFor(t, "tools serve (other root) to warn", "fs.read is served by instances that disagree")
	resolvedA, _ := filepath.EvalSymlinks(rootA)
	resolvedB, _ := filepath.EvalSymlinks(rootB)
	if w := errOut.String(); !strings.Contains(w, "root="+resolvedA) || !strings.Contains(w, "root="+resolvedB) {
		t.Errorf("warning = %q; want both roots named", w)
	}

	// A prefixed provider: its tools are its own.
	out, errOut, _ = cliBackground(t, "tools", "serve", "--root", rootB, "--prefix", "b")
	out.waitFor(t, "tools serve --prefix b to start", "b.fs.read")
	waitQuiet(t, errOut)
	if strings.Contains(errOut.String(), "disagree") {
		t.Errorf("tools serve --prefix b warned: %s", errOut.String())
	}

	code, stdout, stderr := cliRun(t, "tools", "--json")
	var list []cli.ToolInfo
	if code != cli.ExitOK || json.Unmarshal([]byte(stdout), &list) != nil {
		t.Fatalf("tools --json = %d, %q, %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: tool fs.read is served by instances that disagree") {
		t.Errorf("tools stderr = %q; want a warning for fs.read", stderr)
	}
	seen := map[string]cli.ToolInfo{}
	for _, ti := range list {
		seen[ti.Tool] = ti
	}
	if ti := seen["fs.read"]; !ti.Disagree || ti.Instances != 3 {
		t.Errorf("tools: fs.read = %+v; want 3 instances that disagree", ti)
	}
	if ti, ok := seen["b.fs.read"]; !ok || ti.Disagree || ti.Instances != 1 || !strings.Contains(string(ti.Schema), `"path"`) {
		t.Errorf("tools: b.fs.read = %+v (found %v); want 1 instance in agreement, with its schema", ti, ok)
	}
	code, stdout, _ = cliRun(t, "tools")
	if code != cli.ExitOK || !strings.Contains(stdout, "(disagree)") {
		t.Errorf("tools = %d, %q; want fs.* marked (disagree)", code, stdout)
	}
}

// waitQuiet gives a starting provider the time of its conflict check
// (it collects answers for 500 ms after it printed "serving") before its
// stderr is read.
func waitQuiet(t *testing.T, errOut *cliBuf) {
	t.Helper()
	time.Sleep(time.Second)
}

// argsSeq calls the built-in tools with literal arguments, two of which do
// not fit the tools' schemas; the $args references are left to run time.
const argsSeq = `name: args-check
groups:
  - name: args-look
    in: {pattern: string, hidden: bool}
    out: {text: object, found: object, listing: object}
    tools:
      - tool: fs.read
        args: {path: 7}
        as: text
      - tool: fs.grep
        args: {pattern: $args.pattern, max_matches: many}
        as: found
      - tool: fs.list
        args: {path: ".", hidden: $args.hidden}
        as: listing
`

// TestValidateChecksArgsAgainstTheCluster: with a cluster named, validate
// warns for each call whose literal arguments its tool's published schema
// refuses, leaves $args references alone, and --strict fails on them.
func TestValidateChecksArgsAgainstTheCluster(t *testing.T) {
	cliStack(t, "", cliProject(t))
	file := filepath.Join(t.TempDir(), "args.seq.yaml")
	if err := os.WriteFile(file, []byte(argsSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cliRun(t, "validate", file)
	if code != cli.ExitOK {
		t.Fatalf("validate = %d; want 0 (warnings only)\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`: warning: group 1 "args-look": tool 1 "fs.read": args: "path": got an integer (7), want a string`,
		`: warning: group 1 "args-look": tool 2 "fs.grep": args: "max_matches": got a string ("many"), want an integer`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"fs.list"`) {
		t.Errorf("validate warned about fs.list, whose only unknown value is $args.hidden:\n%s", out)
	}
	if code, _, _ := cliRun(t, "validate", "--strict", file); code != cli.ExitFailure {
		t.Errorf("validate --strict = %d; want 1 on the argument warnings", code)
	}
	if !strings.Contains(out, "(by the schema skillbus-builtin publishes on the cluster;") {
		t.Errorf("validate output does not name the provider whose schema it used:\n%s", out)
	}
	// Without a cluster the built-in tools' own schemas are used.
	t.Setenv(cli.EnvNATSURL, "")
	code, out, _ = cliRun(t, "validate", file)
	if code != cli.ExitOK || !strings.Contains(out, `tool 1 "fs.read": args: "path": got an integer (7), want a string (by the built-in tool's schema;`) ||
		!strings.Contains(out, `tool 2 "fs.grep": args: "max_matches"`) || strings.Contains(out, `"fs.list"`) {
		t.Errorf("validate without a cluster = %d:\n%s\nwant 0 and the same two warnings by the built-in tools' schemas", code, out)
	}
	if code, _, _ := cliRun(t, "validate", "--strict", file); code != cli.ExitFailure {
		t.Errorf("validate --strict without a cluster = %d; want 1 on the argument warnings", code)
	}
}
