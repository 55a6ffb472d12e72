package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
)

// mcpEnvInspector names the variable pointing at the reference MCP
// Inspector's launcher (node_modules/@modelcontextprotocol/inspector/
// clients/launcher/build/index.js); .ci/run installs the package with npm
// next to the filesystem server and sets it.
const mcpEnvInspector = "SKILLBUS_MCP_INSPECTOR"

// mcpInspector finds the npm-installed MCP Inspector, or skips the test
// saying how to install it.
func mcpInspector(t *testing.T) (node, launcher string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: node is not installed: this test runs the reference MCP Inspector (npm @modelcontextprotocol/inspector; .ci/run installs it)")
	}
	launcher = os.Getenv(mcpEnvInspector)
	if launcher == "" {
		if home, err := os.UserHomeDir(); err == nil {
			launcher = filepath.Join(home, ".cache", "skillbus-mcp", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
		}
	}
	if _, err := os.Stat(launcher); err != nil {
		t.Skipf("SKIPPED: the MCP Inspector is not installed (%s=%q): run .ci/run, or `npm install --prefix ~/.cache/skillbus-mcp @modelcontextprotocol/inspector`", mcpEnvInspector, launcher)
	}
	return node, launcher
}

// inspect runs the Inspector in CLI mode with args and returns its stdout
// (one JSON document) and stderr; a non-zero exit fails the test.
func inspect(t *testing.T, node, launcher string, args ...string) (map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{launcher, "--cli"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, clipTest(stdout.String()), stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("inspector %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, clipTest(stdout.String()))
	}
	return out, stderr.String()
}

// inspectorText returns the text content of a tools/call answer.
func inspectorText(out map[string]any) string {
	var parts []string
	content, _ := out["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// TestMCPInspector has the reference MCP Inspector (a client nobody here
// wrote) list skillbus's tools — with its portability checks of their
// schemas — and call skill_info and seq_run, against `skillbus mcp serve
// --local` over stdio and against `skillbus mcp serve --listen` over
// streamable HTTP.
func TestMCPInspector(t *testing.T) {
	node, launcher := mcpInspector(t)
	defs, root := mcpservertest.Fixture(t)
	b, _ := json.Marshal([]string{"mcp", "serve", "--local", defs, "--tools-root", root})
	stdio := []string{"-e", mcpServeChildArgs + "=" + string(b), "--", os.Args[0], "-test.run=^TestMCPServeChild$", "-test.count=1"}

	stack := cliStack(t, defs, root)
	t.Setenv("NATS_URL", stack.URL())
	port := freePort(t)
	_, serveErr, _ := cliBackground(t, "mcp", "serve", "--listen", "127.0.0.1:"+strconv.Itoa(port))
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	serveErr.waitFor(t, "the HTTP server", url)
	http := []string{"--transport", "http", "--server-url", url}

	for _, tr := range []struct {
		name   string
		target []string
	}{{"stdio", stdio}, {"http", http}} {
		t.Run(tr.name, func(t *testing.T) {
			target := func(args ...string) []string {
				if tr.name == "stdio" {
					return append(args, tr.target...) // the command comes last
				}
				return append(slices.Clone(tr.target), args...)
			}
			out, stderr := inspect(t, node, launcher, target("--method", "tools/list", "--strict")...)
			var names []string
			tools, _ := out["tools"].([]any)
			for _, tl := range tools {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			slices.Sort(names)
			if !slices.Equal(names, mcpservertest.ModelTools) {
				t.Errorf("inspector tools/list = %v; want %v", names, mcpservertest.ModelTools)
			}
			if strings.Contains(stderr, "Warning") || strings.Contains(stderr, "Error:") {
				t.Errorf("inspector --strict reports schema portability problems:\n%s", stderr)
			}

			out, _ = inspect(t, node, launcher, target("--method", "tools/call", "--tool-name", "skill_info",
				"--tool-arg", "name=handbook", "section=install steps")...)
			if text := inspectorText(out); out["isError"] == true || !strings.Contains(text, "Copy the bundle") || strings.Contains(text, "Revert") {
				t.Errorf("inspector skill_info = %v", out)
			}

			out, _ = inspect(t, node, launcher, target("--method", "tools/call", "--tool-name", "seq_run",
				"--tool-arg", "sequence=tree-survey", `args={"root":"."}`)...)
			sc, _ := out["structuredContent"].(map[string]any)
			if text := inspectorText(out); out["isError"] == true || sc["status"] != "succeeded" || !strings.Contains(text, "tree-say: succeeded") {
				t.Errorf("inspector seq_run = %v", out)
			}

			out, _ = inspect(t, node, launcher, target("--method", "prompts/get", "--prompt-name", "handbook", "--prompt-args", "task=ship it")...)
			if b, _ := json.Marshal(out); !strings.Contains(string(b), "Task: ship it") {
				t.Errorf("inspector prompts/get handbook = %s", b)
			}
		})
	}
}
