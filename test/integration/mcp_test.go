package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// mcpEnvFilesystem names the variable pointing at the reference MCP
// filesystem server's entry point (node_modules/@modelcontextprotocol/
// server-filesystem/dist/index.js); .ci/run installs the package with npm and
// sets it.
const mcpEnvFilesystem = "SKILLBUS_MCP_FS_SERVER"

// mcpFilesystemServer finds the npm-installed reference filesystem server,
// or skips the test saying how to install it.
func mcpFilesystemServer(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the MCP bridge test runs the reference server @modelcontextprotocol/server-filesystem from npm (.ci/run installs it)")
	}
	script = os.Getenv(mcpEnvFilesystem)
	if script == "" {
		if home, err := os.UserHomeDir(); err == nil {
			script = filepath.Join(home, ".cache", "skillbus-mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
		}
	}
	if _, err := os.Stat(script); err != nil {
		t.Skipf("the reference MCP server is not installed (%s=%q): run .ci/run, or `npm install --prefix ~/.cache/skillbus-mcp @modelcontextprotocol/server-filesystem`", mcpEnvFilesystem, script)
	}
	return node, script
}

// mcpSurvey is a sequence whose tools are the reference server's tools,
// served by the bridge under the prefix "files".
const mcpSurvey = `name: mcp-files-survey
groups:
  - name: mcp-look
    in: {dir: string, readme: string}
    out: {listing: object, text: object, found: object}
    tools:
      - tool: files.list_directory
        args: {path: $args.dir}
        as: listing
      - tool: files.read_text_file
        args: {path: $args.readme}
        as: text
      - tool: files.search_files
        args: {path: $args.dir, pattern: "**/*.go"}
        as: found
  - name: mcp-report
    in: {listing: object, text: object}
    out: {info: object}
    when: $args.text != null
    tools:
      - tool: files.list_allowed_directories
        as: info
`

// TestMCPFilesystemServer bridges the reference MCP filesystem server from
// npm (a server we did not write) with `skillbus mcp`, checks its tools are
// discoverable with their schemas, runs a sequence made of its tools, and
// checks that the server's own confinement reaches the run as a tool error.
func TestMCPFilesystemServer(t *testing.T) {
	node, script := mcpFilesystemServer(t)
	proj := cliProject(t)
	proj, _ = filepath.EvalSymlinks(proj)
	cliStack(t, "", "")

	stdout, stderr, stop := cliBackground(t, "mcp", "--prefix", "files", "--", node, script, proj)
	cliEventually(t, "the bridge to serve the tools", func() bool {
		return strings.Contains(stdout.String(), "files.read_text_file") || strings.Contains(stderr.String(), "skillbus mcp:")
	})
	if strings.Contains(stderr.String(), "skillbus mcp:") {
		t.Fatalf("skillbus mcp failed: %s", stderr.String())
	}

	code, out, errOut := cliRun(t, "tools", "--json")
	var tools []cli.ToolInfo
	if code != 0 || json.Unmarshal([]byte(out), &tools) != nil {
		t.Fatalf("tools --json = %d, %q, %q", code, out, errOut)
	}
	schemas := map[string]string{}
	for _, ti := range tools {
		if ti.Provider == "mcp-files" {
			schemas[ti.Tool] = string(ti.Schema)
		}
	}
	for _, name := range []string{"files.read_text_file", "files.list_directory", "files.search_files", "files.write_file"} {
		if !strings.Contains(schemas[name], `"path"`) {
			t.Errorf("tool %s schema = %q; want the MCP input schema with a path property", name, schemas[name])
		}
	}

	seqFile := filepath.Join(t.TempDir(), "mcp-files.seq.yaml")
	os.WriteFile(seqFile, []byte(mcpSurvey), 0o644)
	code, out, errOut = cliRun(t, "run", seqFile, "--arg", "dir="+proj, "--arg", "readme="+filepath.Join(proj, "README.md"), "--json", "--quiet")
	if code != cli.ExitOK {
		t.Fatalf("run over MCP tools = %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var st events.RunState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	slot := func(name string) string {
		var v struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(st.Slots[name], &v); err != nil {
			t.Fatalf("slot %s = %s: %v", name, st.Slots[name], err)
		}
		return v.Content
	}
	if got := slot("text"); got != "# Widget\n\nWidgets for everyone.\n" {
		t.Errorf("read_text_file README.md = %q; want the file's text", got)
	}
	if got := slot("listing"); !strings.Contains(got, "[FILE] README.md") || !strings.Contains(got, "[DIR] internal") {
		t.Errorf("list_directory = %q; want README.md and internal", got)
	}
	if got := slot("found"); !strings.Contains(got, filepath.Join(proj, "main.go")) || !strings.Contains(got, filepath.Join(proj, "internal", "w", "w.go")) {
		t.Errorf("search_files **/*.go = %q; want both Go files", got)
	}
	if got := slot("info"); !strings.Contains(got, proj) {
		t.Errorf("list_allowed_directories = %q; want %s", got, proj)
	}

	// The server refuses a path outside its directory: the run fails with
	// the server's own message.
	code, _, errOut = cliRun(t, "run", seqFile, "--arg", "dir="+proj, "--arg", "readme="+filepath.Join(filepath.Dir(proj), "secret.txt"), "--quiet")
	if code != cli.ExitFailure || !strings.Contains(errOut, "files.read_text_file") || !strings.Contains(strings.ToLower(errOut), "access denied") {
		t.Errorf("run reading outside the MCP server's directory = %d, %q; want 1 and the server's refusal", code, errOut)
	}

	// The server dies (SIGKILL): the bridge starts it again and its tools
	// answer as before.
	if pid := mcpChild(t, script); pid > 0 {
		t.Logf("killing the MCP server (pid %d)", pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(os.Getenv(cli.EnvNATSURL))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c, _ := tool.NewClient(nc, tool.WithDefaultTimeout(10*time.Second))
		cliEventually(t, "the bridge to restart the killed MCP server", func() bool {
			res, err := c.Call(context.Background(), "files.list_allowed_directories", nil)
			return err == nil && strings.Contains(string(res), proj) && mcpChild(t, script) != pid
		})
		if !strings.Contains(stderr.String(), "exited") {
			t.Errorf("skillbus mcp stderr = %q; want a warning that the server exited", stderr.String())
		}
	}

	if code := stop(); code != cli.ExitOK {
		t.Errorf("skillbus mcp stopped with %d; want 0 (stderr %q)", code, stderr.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, out, _ = cliRun(t, "tools")
		if code != cli.ExitOK || !strings.Contains(out, "files.") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != cli.ExitOK {
		// Without this, a failing `skillbus tools` (no output) would pass
		// the check below for the wrong reason.
		t.Errorf("tools after the bridge stopped exited %d; want 0:\n%s", code, out)
	} else if strings.Contains(out, "files.") {
		t.Errorf("tools after the bridge stopped still lists MCP tools:\n%s", out)
	}
}

// mcpChild returns the pid of this process's child running script (the
// bridged MCP server), or 0 (and a log line) when /proc cannot tell.
func mcpChild(t *testing.T, script string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Logf("no /proc: the restart of a killed MCP server is not checked")
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), script) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// stat: pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && fields[0] != "Z" {
			return pid
		}
	}
	return 0
}
