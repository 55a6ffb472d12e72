package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/tool"
)

// project builds a small project tree under a temp dir, with a secret file
// beside it (outside the root) and symlinks pointing in and out:
//
//	outside/secret.txt
//	root/README.md, root/main.go, root/lib/util.go, root/lib/notes.md,
//	root/.git/config, root/bin.dat (binary),
//	root/link-out -> ../outside/secret.txt, root/dir-out -> ../outside,
//	root/link-in -> README.md
func project(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	files := map[string]string{
		"outside/secret.txt": "top secret\n",
		"root/README.md":     "# Demo\n\nA demo project.\n",
		"root/main.go":       "package main\n\n// TODO: handle flags\nfunc main() {}\n",
		"root/lib/util.go":   "package lib\n\n// FIXME: slow\nfunc F() {}\n// todo lower case is not matched\n",
		"root/lib/notes.md":  "notes\nTODO later",
		"root/.git/config":   "[core]\n# TODO hidden\n",
		"root/bin.dat":       "a\x00b TODO",
	}
	for name, text := range files {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link-out": "../outside/secret.txt", "dir-out": "../outside", "link-in": "README.md"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

func newProvider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// call calls the tool named name of p with args and returns its result as
// JSON, or its error code and text.
func call(t *testing.T, p *Provider, name, args string) (json.RawMessage, string, error) {
	t.Helper()
	for _, tl := range p.Tools() {
		if tl.Name != name {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := tl.Func(ctx, json.RawMessage(args))
		if err != nil {
			var te *tool.Error
			if errors.As(err, &te) {
				return nil, te.Code, err
			}
			return nil, "", err
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b, "", nil
	}
	t.Fatalf("tool %s is not served", name)
	return nil, "", nil
}

func TestConfinement(t *testing.T) {
	root, _ := project(t)
	p := newProvider(t, Config{Root: root, AllowCommands: []string{"ls"}})
	cases := []struct {
		name, tool, args, code string
	}{
		{"read dotdot", "fs.read", `{"path":"../outside/secret.txt"}`, "403"},
		{"read dotdot inside path", "fs.read", `{"path":"lib/../../outside/secret.txt"}`, "403"},
		{"read absolute", "fs.read", `{"path":"/etc/passwd"}`, "403"},
		{"read absolute to root", "fs.read", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "README.md")), "403"},
		{"read symlink out", "fs.read", `{"path":"link-out"}`, "403"},
		{"read through dir symlink out", "fs.read", `{"path":"dir-out/secret.txt"}`, "403"},
		{"stat symlink out", "fs.stat", `{"path":"link-out"}`, "403"},
		{"stat dotdot", "fs.stat", `{"path":".."}`, "403"},
		{"list dir symlink out", "fs.list", `{"path":"dir-out"}`, "403"},
		{"list absolute", "fs.list", `{"path":"/"}`, "403"},
		{"grep dotdot", "fs.grep", `{"pattern":"secret","path":".."}`, "403"},
		{"grep dir symlink out", "fs.grep", `{"pattern":"secret","path":"dir-out"}`, "403"},
		{"lines dotdot", "fs.lines", `{"path":"../outside"}`, "403"},
		{"glob dotdot", "fs.glob", `{"pattern":"../outside/*"}`, "403"},
		{"glob absolute", "fs.glob", `{"pattern":"/etc/*"}`, "403"},
		{"cmd not allowed", "cmd.run", `{"command":"cat","args":["/etc/passwd"]}`, "403"},
		{"cmd path of allowed name", "cmd.run", `{"command":"/bin/ls"}`, "403"},
		{"cmd dir dotdot", "cmd.run", `{"command":"ls","dir":".."}`, "403"},
		{"cmd dir symlink out", "cmd.run", `{"command":"ls","dir":"dir-out"}`, "403"},
		{"read missing", "fs.read", `{"path":"nope.txt"}`, "404"},
		{"read directory", "fs.read", `{"path":"lib"}`, "400"},
		{"read binary", "fs.read", `{"path":"bin.dat"}`, "415"},
		{"unknown field", "fs.read", `{"path":"README.md","max":1}`, "400"},
		{"wrong type", "fs.read", `{"path":7}`, "400"},
		{"bad regexp", "fs.grep", `{"pattern":"("}`, "400"},
		{"bad glob", "fs.glob", `{"pattern":"[a"}`, "400"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, code, err := call(t, p, tc.tool, tc.args)
			if code != tc.code {
				t.Fatalf("%s(%s) = %s, code %q (%v); want code %q", tc.tool, tc.args, res, code, err, tc.code)
			}
			if strings.Contains(fmt.Sprint(err), "top secret") {
				t.Fatalf("%s(%s): error leaks the secret: %v", tc.tool, tc.args, err)
			}
		})
	}
}

// TestWalksDoNotLeaveTheRoot checks that glob, grep and lines never report
// a file reached through a symlink leading out of the root.
func TestWalksDoNotLeaveTheRoot(t *testing.T) {
	root, _ := project(t)
	p := newProvider(t, Config{Root: root})
	for _, tc := range []struct{ tool, args string }{
		{"fs.glob", `{"pattern":"**/*.txt"}`},
		{"fs.glob", `{"pattern":"**","hidden":true}`},
		{"fs.grep", `{"pattern":"secret","hidden":true}`},
		{"fs.lines", `{"hidden":true}`},
	} {
		res, _, err := call(t, p, tc.tool, tc.args)
		if err != nil {
			t.Fatalf("%s(%s): %v", tc.tool, tc.args, err)
		}
		if strings.Contains(string(res), "secret") && tc.tool != "fs.grep" || strings.Contains(string(res), "outside/") {
			t.Errorf("%s(%s) = %s; reaches outside the root", tc.tool, tc.args, res)
		}
		if tc.tool == "fs.grep" && strings.Contains(string(res), `"path":"dir-out`) {
			t.Errorf("%s(%s) = %s; searched through a symlink", tc.tool, tc.args, res)
		}
	}
}

func TestFileTools(t *testing.T) {
	root, _ := project(t)
	p := newProvider(t, Config{Root: root, MaxReadBytes: 10})
	cases := []struct {
		name, tool, args, want string
	}{
		{"read cut at limit", "fs.read", `{"path":"README.md"}`, `{"path":"README.md","size":24,"content":"# Demo\n\nA ","truncated":true}`},
		{"read max_bytes", "fs.read", `{"path":"README.md","max_bytes":3}`, `{"path":"README.md","size":24,"content":"# D","truncated":true}`},
		{"read symlink inside", "fs.read", `{"path":"link-in","max_bytes":6}`, `{"path":"link-in","size":24,"content":"# Demo","truncated":true}`},
		{"list root", "fs.list", `{"path":"lib"}`, `{"path":"lib","entries":[{"name":"notes.md","type":"file","size":16},{"name":"util.go","type":"file","size":74}]}`},
		{"glob go", "fs.glob", `{"pattern":"**/*.go"}`, `{"pattern":"**/*.go","matches":["lib/util.go","main.go"]}`},
		{"glob dot prefix", "fs.glob", `{"pattern":"./lib/*.md"}`, `{"pattern":"./lib/*.md","matches":["lib/notes.md"]}`},
		{"grep todo", "fs.grep", `{"pattern":"\\b(TODO|FIXME)\\b"}`,
			`{"pattern":"\\b(TODO|FIXME)\\b","matches":[{"path":"lib/notes.md","line":2,"text":"TODO later"},{"path":"lib/util.go","line":3,"text":"// FIXME: slow"},{"path":"main.go","line":3,"text":"// TODO: handle flags"}],"count":3,"files_searched":4}`},
		{"grep include and case", "fs.grep", `{"pattern":"todo","ignore_case":true,"include":"*.go"}`,
			`{"pattern":"todo","matches":[{"path":"lib/util.go","line":5,"text":"// todo lower case is not matched"},{"path":"main.go","line":3,"text":"// TODO: handle flags"}],"count":2,"files_searched":2}`},
		{"grep max", "fs.grep", `{"pattern":"TODO","max_matches":1}`,
			`{"pattern":"TODO","matches":[{"path":"lib/notes.md","line":2,"text":"TODO later"}],"count":1,"files_searched":4,"truncated":true}`},
		{"grep hidden", "fs.grep", `{"pattern":"TODO hidden","hidden":true}`,
			`{"pattern":"TODO hidden","matches":[{"path":".git/config","line":2,"text":"# TODO hidden"}],"count":1,"files_searched":5}`},
		{"lines", "fs.lines", `{}`,
			`{"path":".","files":4,"lines":14,"languages":[{"language":"Go","files":2,"lines":9},{"language":"Markdown","files":2,"lines":5}]}`},
		{"render", "text.render", `{"template":"{{.name}} has {{len .files}} files: {{join \", \" .files}}","data":{"name":"demo","files":["a","b"]}}`, `"demo has 2 files: a, b"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, code, err := call(t, p, tc.tool, tc.args)
			if err != nil {
				t.Fatalf("%s(%s): code %s: %v", tc.tool, tc.args, code, err)
			}
			if string(res) != tc.want {
				t.Errorf("%s(%s) =\n%s\nwant\n%s", tc.tool, tc.args, res, tc.want)
			}
		})
	}
	if res, _, err := call(t, p, "fs.stat", `{"path":"lib"}`); err != nil || !strings.Contains(string(res), `"type":"dir"`) {
		t.Errorf("fs.stat(lib) = %s, %v; want a dir", res, err)
	}
}

// TestTrailingSlashOnAFile checks that a path ending in / names a
// directory, as the OS has it: "README.md/" is not read as "README.md".
func TestTrailingSlashOnAFile(t *testing.T) {
	root, _ := project(t)
	p := newProvider(t, Config{Root: root})
	for _, tc := range []struct{ tool, args string }{
		{"fs.read", `{"path":"README.md/"}`},
		{"fs.read", `{"path":"lib/util.go/"}`},
		{"fs.read", `{"path":"link-in/"}`},
		{"fs.read", `{"path":"README.md/."}`},
		{"fs.stat", `{"path":"README.md/"}`},
		{"fs.grep", `{"pattern":"TODO","path":"main.go/"}`},
		{"fs.lines", `{"path":"main.go/"}`},
	} {
		res, code, err := call(t, p, tc.tool, tc.args)
		if code != "400" || !strings.Contains(fmt.Sprint(err), "not a directory") || !strings.Contains(fmt.Sprint(err), "drop the trailing slash") {
			t.Errorf("%s(%s) = %s, code %q, %v; want code 400 saying it is not a directory", tc.tool, tc.args, res, code, err)
		}
	}
	for _, tc := range []struct{ tool, args string }{
		{"fs.stat", `{"path":"lib/"}`},
		{"fs.lines", `{"path":"lib/"}`},
		{"fs.grep", `{"pattern":"FIXME","path":"lib/"}`},
		{"fs.list", `{"path":"lib/"}`},
	} {
		if res, _, err := call(t, p, tc.tool, tc.args); err != nil {
			t.Errorf("%s(%s) = %s, %v; want a result (a directory may end in /)", tc.tool, tc.args, res, err)
		}
	}
}

func TestListAFile(t *testing.T) {
	root, _ := project(t)
	p := newProvider(t, Config{Root: root})
	for _, path := range []string{"README.md", "lib/util.go", "link-in"} {
		args := fmt.Sprintf(`{"path":%q}`, path)
		_, code, err := call(t, p, "fs.list", args)
		if code != "400" || err == nil || !strings.Contains(err.Error(), "is a file") || !strings.Contains(err.Error(), "fs.read") {
			t.Errorf("fs.list(%s) = code %q, %v; want code 400 saying it is a file and to use fs.read or fs.stat", args, code, err)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	p := newProvider(t, Config{Root: t.TempDir()})
	for _, args := range []string{`{}`, `{"template":"{{.x"}`, `{"template":"{{index .x 5}}","data":{"x":[1]}}`} {
		if _, code, _ := call(t, p, "text.render", args); code != "400" {
			t.Errorf("text.render(%s) code %q; want 400", args, code)
		}
	}
}

func TestCmdRun(t *testing.T) {
	for _, c := range []string{"sh", "sleep", "echo"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed", c)
		}
	}
	root, _ := project(t)
	p := newProvider(t, Config{Root: root, AllowCommands: []string{"sh", "sleep", "echo"}, CommandTimeout: 2 * time.Second, MaxOutputBytes: 8})

	res, _, err := call(t, p, "cmd.run", `{"command":"sh","args":["-c","pwd; echo x >&2"],"dir":"lib"}`)
	if err != nil {
		t.Fatal(err)
	}
	var r RunResult
	json.Unmarshal(res, &r)
	if r.ExitCode != 0 || !r.Truncated || r.Stdout != filepath.Join(root, "lib")[:8] || r.Stderr != "x\n" {
		t.Errorf("cmd.run(sh pwd in lib) = %+v; want exit 0, stdout cut to 8 bytes of the lib dir, stderr x", r)
	}
	if _, code, err := call(t, p, "cmd.run", `{"command":"sh","args":["-c","echo boom >&2; exit 3"]}`); code != "500" || !strings.Contains(err.Error(), "status 3") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("cmd.run(exit 3) = code %q, %v; want 500 naming status 3 and stderr", code, err)
	}
	res, _, err = call(t, p, "cmd.run", `{"command":"sh","args":["-c","exit 3"],"check":false}`)
	if err != nil || !strings.Contains(string(res), `"exit_code":3`) {
		t.Errorf("cmd.run(exit 3, check false) = %s, %v; want exit_code 3", res, err)
	}
	start := time.Now()
	if _, code, _ := call(t, p, "cmd.run", `{"command":"sleep","args":["30"],"timeout":"300ms"}`); code != "504" {
		t.Errorf("cmd.run(sleep 30, timeout 300ms) code %q; want 504", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cmd.run(sleep 30) took %v; the timeout did not kill it", d)
	}
	if _, code, _ := call(t, p, "cmd.run", `{"command":"echo","timeout":"soon"}`); code != "400" {
		t.Errorf("cmd.run(timeout soon) code %q; want 400", code)
	}
}

func TestCmdRunOffByDefault(t *testing.T) {
	p := newProvider(t, Config{Root: t.TempDir()})
	for _, tl := range p.Tools() {
		if tl.Name == "cmd.run" {
			t.Fatal("cmd.run is served with an empty allow-list")
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no root", Config{}},
		{"negative read", Config{Root: ".", MaxReadBytes: -1}},
		{"command with args", Config{Root: ".", AllowCommands: []string{"git log"}}},
		{"relative path command", Config{Root: ".", AllowCommands: []string{"bin/tool"}}},
		{"empty command", Config{Root: ".", AllowCommands: []string{""}}},
	} {
		if err := tc.cfg.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate(%+v) = %v; want ErrConfig", tc.name, tc.cfg, err)
		}
	}
	if _, err := New(Config{Root: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("New with a missing root succeeded")
	}
}

func ExampleLanguage() {
	for _, n := range []string{"cmd/main.go", "web/App.TSX", "Makefile", "go.mod", "notes.xyz"} {
		fmt.Printf("%s: %q\n", n, Language(n))
	}
	// Output:
	// cmd/main.go: "Go"
	// web/App.TSX: "TypeScript"
	// Makefile: "Makefile"
	// go.mod: "Go Module"
	// notes.xyz: ""
}
