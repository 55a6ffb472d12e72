package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/pkg/tool"
)

// hostile is text from others that would drive a terminal printed raw: it
// writes the clipboard (OSC 52), sets the window title (OSC 0), clears the
// screen, starts a C1 CSI, rings the bell and reverses what follows (a
// bidi override and an isolate).
const hostile = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil\u2066x\u2069 end"

// hostileYAML is hostile as a YAML double-quoted string.
const hostileYAML = `"\e]52;c;cHduZWQ=\a\e]0;pwned\a\e[2J\x9b31m\u202eevil\u2066x\u2069 end"`

// rawControl returns the first control byte or character a terminal would
// act on in s (ESC, BEL, another C0 but newline and tab, DEL, C1, a bidi
// embedding, override or isolate), or 0.
func rawControl(s string) rune {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
			return r
		}
	}
	return 0
}

// hostileStack starts an all-in-one skillbus whose sequences, skill and
// tool carry hostile text in their descriptions, outputs and errors:
// sequence evil-out calls evil.echo (its output is hostile), evil-fail
// calls evil.fail (its error is hostile); the skill evil-skill's
// description and body are hostile; the tools' descriptions are.
func hostileStack(t *testing.T) *devstack.Stack {
	t.Helper()
	clearNATSEnv(t)
	base := t.TempDir()
	defs := filepath.Join(base, "defs")
	root := filepath.Join(base, "root")
	for name, text := range map[string]string{
		"defs/out.seq.yaml":               "name: evil-out\ndescription: " + hostileYAML + "\ngroups:\n  - name: evil-echo\n    out: {said: string}\n    tools:\n      - tool: evil.echo\n        as: said\n",
		"defs/fail.seq.yaml":              "name: evil-fail\ndescription: " + hostileYAML + "\ngroups:\n  - name: evil-boom\n    tools:\n      - tool: evil.fail\n",
		"defs/skills/evil-skill/SKILL.md": "---\nname: evil-skill\ndescription: " + hostileYAML + "\n---\n# Usage " + hostile + "\n\n" + hostile + "\n",
		"root/a.txt":                      "a\n",
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
	nc, err := nats.Connect(stack.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	srv, err := tool.Serve(nc, tool.ServerConfig{Name: "evil", Description: hostile},
		tool.Tool{Name: "evil.echo", Description: hostile, Func: func(context.Context, json.RawMessage) (any, error) { return hostile, nil }},
		tool.Tool{Name: "evil.fail", Description: hostile, Func: func(context.Context, json.RawMessage) (any, error) { return nil, tool.Errorf("500", "%s", hostile) }},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	t.Setenv("NATS_URL", stack.URL())
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, _ := runMain(t, "seqs")
		if code == ExitOK && strings.Contains(out, "evil-fail") && strings.Contains(out, "evil-out") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not load the definitions: seqs = %d %q", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stack
}

// TestNoRawControlReachesTheTerminal runs every read command, run and
// watch, validate and the commands' errors against definitions, tool
// outputs and tool errors full of terminal escapes and bidi controls: none
// reaches stdout or stderr raw (each is shown escaped, \x1b, \u202e), while
// -o json stays exact.
func TestNoRawControlReachesTheTerminal(t *testing.T) {
	hostileStack(t)
	code, out, errb := runMain(t, "run", "evil-out", "--run-id", "evil-run-1")
	if code != ExitOK || !shownEscaped(out+errb) {
		t.Fatalf("run evil-out = %d; want 0 and its output shown escaped:\n%s\n%s", code, out, errb)
	}
	checkNoRaw(t, "run evil-out", out, errb)
	code, out, errb = runMain(t, "run", "evil-fail", "--run-id", "evil-run-2")
	if code == ExitOK || !shownEscaped(out+errb) {
		t.Errorf("run evil-fail = %d; want a failure showing the tool's error escaped:\n%s\n%s", code, out, errb)
	}
	checkNoRaw(t, "run evil-fail", out, errb)

	dir := t.TempDir()
	badSeq := filepath.Join(dir, "bad.seq.yaml")
	if err := os.WriteFile(badSeq, []byte("name: bad\ndescription: "+hostileYAML+"\ngroups:\n  - name: g\n    "+hostileYAML+": 1\n    tools: [{tool: t}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd   []string
		shows bool // the output carries some of the hostile text
	}{
		{[]string{"seqs"}, false}, {[]string{"seqs", "-o", "wide"}, true}, {[]string{"seqs", "show", "evil-out"}, true},
		{[]string{"seqs", "graph", "evil-out"}, false},
		{[]string{"skills"}, true}, {[]string{"skills", "-o", "wide"}, true},
		{[]string{"skills", "info", "evil-skill"}, true}, {[]string{"skills", "info", "evil-skill", "usage"}, true},
		{[]string{"runs"}, false}, {[]string{"runs", "-o", "wide"}, false},
		{[]string{"runs", "show", "evil-run-1"}, true}, {[]string{"runs", "show", "evil-run-2"}, true},
		{[]string{"watch", "evil-run-1"}, false}, {[]string{"watch", "evil-run-2"}, true},
		{[]string{"tools"}, true}, {[]string{"tools", "-o", "wide"}, true},
		{[]string{"call", "evil-echo"}, true}, {[]string{"call", "evil-boom"}, true},
		{[]string{"validate", badSeq}, true}, {[]string{"seqs", "show", badSeq}, true},
	} {
		name := strings.Join(tc.cmd, " ")
		code, out, errb := runMain(t, tc.cmd...)
		if code != ExitOK && code != ExitFailure {
			t.Errorf("%s = %d\n%s\n%s", name, code, out, errb)
		}
		if tc.shows && !shownEscaped(out+errb) {
			t.Errorf("%s shows none of the hostile text (escaped); the test does not test it:\n%s\n%s", name, out, errb)
		}
		checkNoRaw(t, name, out, errb)
	}
	// -o json is exact: the description as the registry holds it.
	code, out, _ = runMain(t, "seqs", "show", "evil-out", "-o", "json")
	var v struct{ Description string }
	if err := json.Unmarshal([]byte(out), &v); code != ExitOK || err != nil || v.Description != hostile {
		t.Errorf("seqs show -o json = %d, %v, description %q; want exactly %q", code, err, v.Description, hostile)
	}
}

// shownEscaped reports whether s shows some of hostile escaped: \x1b (or
// JSON's \u001b), \x07 or \u202e.
func shownEscaped(s string) bool {
	for _, e := range []string{`\x1b`, `\u001b`, `\x07`, `\u202e`} {
		if strings.Contains(s, e) {
			return true
		}
	}
	return false
}

func checkNoRaw(t *testing.T, name, out, errb string) {
	t.Helper()
	if r := rawControl(out); r != 0 {
		t.Errorf("%s: stdout holds the raw control %U:\n%q", name, r, out)
	}
	if r := rawControl(errb); r != 0 {
		t.Errorf("%s: stderr holds the raw control %U:\n%q", name, r, errb)
	}
}
