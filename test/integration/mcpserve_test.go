package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
	"github.com/skillbus/skillbus/pkg/tool"
)

// mcpServeChildArgs names the variable holding, as a JSON array, the
// arguments of the `skillbus` command TestMCPServeChild runs in a child
// process (the test binary itself), with the process's real stdin and
// stdout: what an MCP client starts.
const mcpServeChildArgs = "SKILLBUS_TEST_MCP_SERVE_ARGS"

// TestMCPServeChild is not a test of its own: it is the `skillbus`
// command in a child process for the stdio tests (run only when
// mcpServeChildArgs is set).
func TestMCPServeChild(t *testing.T) {
	raw := os.Getenv(mcpServeChildArgs)
	if raw == "" {
		t.Skip("runs only as the child process of the MCP stdio tests")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(cli.Main(context.Background(), args, os.Stdin, os.Stdout, os.Stderr))
}

// mcpServeCommand returns the command that runs `skillbus ARGS` as a
// child process speaking MCP on its stdio.
func mcpServeCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPServeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), mcpServeChildArgs+"="+string(b))
	return cmd
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestMCPServeStdio runs `skillbus mcp serve --local DIR` as a child
// process, as an agent runtime does, and has the official Go SDK's client
// go through the model-style exchange over stdio.
func TestMCPServeStdio(t *testing.T) {
	defs, root := mcpservertest.Fixture(t)
	cmd := mcpServeCommand(t, "mcp", "serve", "--local", defs, "--tools-root", root)
	var stderr cliBuf
	cmd.Stderr = &stderr
	r := &mcpservertest.Recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := mcpservertest.NewClient(r).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to skillbus mcp serve over stdio: %v; stderr: %s", err, stderr.String())
	}
	mcpservertest.Exchange(t, cs, r, defs)
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !strings.Contains(stderr.String(), "embedded skillbus at NATS_URL=nats://127.0.0.1:") {
		t.Errorf("stderr %q; want the embedded stack's URL", stderr.String())
	}
	if t.Failed() {
		t.Logf("server stderr:\n%s", stderr.String())
	}
}

// TestMCPServeHTTP runs `skillbus mcp serve --listen` against a dev stack
// at NATS_URL and goes through the exchange over streamable HTTP.
func TestMCPServeHTTP(t *testing.T) {
	defs, root := mcpservertest.Fixture(t)
	stack := cliStack(t, defs, root)
	t.Setenv("NATS_URL", stack.URL())
	port := freePort(t)
	_, stderr, stop := cliBackground(t, "mcp", "serve", "--listen", ":"+strconv.Itoa(port))
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	stderr.waitFor(t, "the HTTP server", url)
	r := &mcpservertest.Recorder{}
	cs, err := mcpservertest.NewClient(r).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect over HTTP: %v; stderr %s", err, stderr.String())
	}
	mcpservertest.Exchange(t, cs, r, defs)
	_ = cs.Close()
	if code := stop(); code != cli.ExitOK {
		t.Errorf("mcp serve --listen exit %d after Ctrl-C; want 0; stderr %s", code, stderr.String())
	}
}

// TestMCPServeCommandLine checks the command line of mcp serve and that
// the bridge keeps both of its forms.
func TestMCPServeCommandLine(t *testing.T) {
	t.Setenv("NATS_URL", "")
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"serve help", []string{"mcp", "serve", "--help"}, 0, "Usage: skillbus mcp serve", ""},
		{"mcp help names both", []string{"mcp", "--help"}, 0, "skillbus mcp [bridge] [--prefix P]", ""},
		{"bridge help", []string{"help", "mcp"}, 0, "mcp serve serves skillbus itself", ""},
		{"no NATS_URL, no --local", []string{"mcp", "serve"}, 1, "", "--local DIR"},
		{"--local not a dir", []string{"mcp", "serve", "--local", filepath.Join(dir, "nope")}, 2, "", "is not a directory"},
		{"public listen without a token", []string{"mcp", "serve", "--local", dir, "--listen", "0.0.0.0:0"}, 2, "", "a token is required"},
		{"short token", []string{"mcp", "serve", "--local", dir, "--listen", ":0", "--token-file", writeTemp(t, "short")}, 2, "", "at least 16"},
		{"stack flag without --local", []string{"mcp", "serve", "--data", dir}, 2, "", "go with --local"},
		{"bad tools prefix", []string{"mcp", "serve", "--local", dir, "--tools", "fs.*"}, 2, "", "tools prefix"},
		{"unknown flag", []string{"mcp", "serve", "--bogus"}, 2, "", "-bogus"},
		{"bridge needs a command", []string{"mcp", "bridge", "--prefix", "p"}, 2, "", "give the MCP server's command after --"},
		{"old bridge form needs a command", []string{"mcp", "--prefix", "p"}, 2, "", "give the MCP server's command after --"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cliRun(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("skillbus %s = %d, stdout %q, stderr %q; want %d with %q / %q", strings.Join(tt.args, " "), code, clipTest(out), clipTest(errOut), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestMCPBridgeBothForms serves an MCP server's tools on NATS through
// `skillbus mcp bridge` and the old `skillbus mcp` form alike: the server
// here is skillbus's own `mcp serve --local`, started by the bridge.
func TestMCPBridgeBothForms(t *testing.T) {
	defs, root := mcpservertest.Fixture(t)
	stack := cliStack(t, t.TempDir(), root)
	t.Setenv("NATS_URL", stack.URL())
	for _, form := range [][]string{{"mcp", "bridge"}, {"mcp"}} {
		t.Run(strings.Join(form, " "), func(t *testing.T) {
			prefix := "inner" + strconv.Itoa(len(form))
			b, _ := json.Marshal([]string{"mcp", "serve", "--local", defs, "--tools-root", root})
			args := append(slices.Clone(form), "--prefix", prefix, "--no-restart", "--", "env", mcpServeChildArgs+"="+string(b),
				os.Args[0], "-test.run=^TestMCPServeChild$", "-test.count=1")
			out, stderr, stop := cliBackground(t, args...)
			out.waitFor(t, "the bridge to serve", fmt.Sprintf("serving %d tool(s)", len(mcpservertest.ModelTools)))
			code, listed, _ := cliRun(t, "tools")
			if code != 0 || !strings.Contains(listed, prefix+".skill_list") {
				t.Fatalf("skillbus tools = %d %q; want %s.skill_list; bridge stderr %s", code, listed, prefix, stderr.String())
			}
			nc, err := nats.Connect(stack.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			tc, _ := tool.NewClient(nc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := tc.Call(ctx, prefix+".skill_info", json.RawMessage(`{"name": "handbook", "section": "rollback"}`))
			if err != nil || !strings.Contains(string(res), "Revert the last release") {
				t.Errorf("%s.skill_info over NATS = %s, %v; want the section", prefix, res, err)
			}
			if code := stop(); code != cli.ExitOK {
				t.Errorf("bridge exit %d; want 0", code)
			}
		})
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func clipTest(s string) string {
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

// TestMCPServeRoles serves skillbus over MCP with the credentials of each
// client role `skillbus auth` generates (docs/security.md), on a locked-down
// stack: an agent may store and run sequences, a runner may run but not
// store (refused at once, naming the subject), a reader with --read-only
// lists and reads. The NATS server logs no other permission violation.
func TestMCPServeRoles(t *testing.T) {
	e := authStart(t)
	serve := func(t *testing.T, role string, extra ...string) *mcp.ClientSession {
		t.Helper()
		e.as(t, role)
		port := freePort(t)
		args := append([]string{"mcp", "serve", "--listen", "127.0.0.1:" + strconv.Itoa(port)}, extra...)
		_, stderr, _ := cliBackground(t, args...)
		url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
		stderr.waitFor(t, "the HTTP server", url)
		cs, err := mcpservertest.NewClient(&mcpservertest.Recorder{}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("connect as %s: %v; stderr %s", role, err, stderr.String())
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	text := mcpservertest.Text
	denied := func(subject string) string {
		return `permission denied: the NATS credentials of this MCP server may not publish on "` + subject + `"`
	}
	const seqJSON = `{"name": "role-made", "groups": [{"name": "role-made-list", "tools": "{\"tool\":\"fs.list\",\"args\":{\"path\":\".\"}};"}]}`

	t.Run("agent", func(t *testing.T) {
		mark := e.log.mark()
		cs := serve(t, "agent")
		if res := mcpservertest.Call(t, cs, "seq_create", seqJSON); res.IsError {
			t.Errorf("agent seq_create: %s", text(res))
		}
		if res := mcpservertest.Call(t, cs, "seq_run", `{"sequence": "role-made"}`); res.IsError || !strings.Contains(text(res), "succeeded") {
			t.Errorf("agent seq_run: %s", text(res))
		}
		if res := mcpservertest.Call(t, cs, "seq_delete", `{"name": "role-made"}`); res.IsError {
			t.Errorf("agent seq_delete: %s", text(res))
		}
		if v := e.log.violations(mark); len(v) > 0 {
			t.Errorf("the server logged permission violations for the agent: %q", v)
		}
	})
	t.Run("runner", func(t *testing.T) {
		cs := serve(t, "runner")
		start := time.Now()
		res := mcpservertest.Call(t, cs, "seq_create", seqJSON)
		if !res.IsError || !strings.Contains(text(res), denied("skillbus.registry.seq.create")) || time.Since(start) > 10*time.Second {
			t.Errorf("runner seq_create after %s: %q; want at once %q", time.Since(start), text(res), denied("skillbus.registry.seq.create"))
		}
		if res := mcpservertest.Call(t, cs, "seq_run", `{"sequence": "project-survey", "args": {"root": "."}, "wait_seconds": 120}`); res.IsError || !strings.Contains(text(res), "Project survey") {
			t.Errorf("runner seq_run: %s", clipTest(text(res)))
		}
		if res := mcpservertest.Call(t, cs, "skill_info", `{"name": "jetstream-incident", "section": "consumer state"}`); res.IsError {
			t.Errorf("runner skill_info: %s", text(res))
		}
	})
	t.Run("reader", func(t *testing.T) {
		mark := e.log.mark()
		cs := serve(t, "reader", "--read-only")
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != len(mcpservertest.ReadOnlyTools) {
			t.Errorf("reader --read-only tools = %v, %v", tools, err)
		}
		if res := mcpservertest.Call(t, cs, "seq_list", `{}`); res.IsError || !strings.Contains(text(res), "project-survey") {
			t.Errorf("reader seq_list: %s", text(res))
		}
		prompts, err := cs.ListPrompts(context.Background(), nil)
		if err != nil || len(prompts.Prompts) != 1 {
			t.Errorf("reader prompts = %v, %v; want jetstream-incident", prompts, err)
		}
		if v := e.log.violations(mark); len(v) > 0 {
			t.Errorf("the server logged permission violations for the reader: %q", v)
		}
		cs = serve(t, "reader")
		res := mcpservertest.Call(t, cs, "seq_run", `{"sequence": "project-survey", "args": {"root": "."}}`)
		if !res.IsError || !strings.Contains(text(res), denied("skillbus.seq.run")) {
			t.Errorf("reader seq_run = %q; want %q", text(res), denied("skillbus.seq.run"))
		}
	})
}
