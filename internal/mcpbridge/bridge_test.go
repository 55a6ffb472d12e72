package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// envServer makes the test binary act as an MCP server on stdio (the
// bridge starts it as its child process).
const envServer = "MCPBRIDGE_TEST_SERVER"

// envNoise makes the test server misbehave on stdout: "banner" prints a
// line of text before serving, "chatty" a line of text before every message
// it sends. envRefuse names a file whose presence makes the server exit at
// once (a server that cannot start).
const (
	envNoise  = "MCPBRIDGE_TEST_NOISE"
	envRefuse = "MCPBRIDGE_TEST_REFUSE"
)

// envList changes the server's tools/list: "loop" answers every page with
// the same nextCursor (a server whose paging never ends); "long" pages
// two tools at a time and adds the tool "long" whose description is
// longDescription.
const envList = "MCPBRIDGE_TEST_LIST"

// envName sets the server's own name (serverInfo.name); default
// "test-server".
const envName = "MCPBRIDGE_TEST_NAME"

func TestMain(m *testing.M) {
	if os.Getenv(envServer) == "1" {
		if f := os.Getenv(envRefuse); f != "" {
			if _, err := os.Stat(f); err == nil {
				fmt.Fprintln(os.Stderr, "test server: refusing to start")
				os.Exit(3)
			}
		}
		serveTestMCP()
		return
	}
	os.Exit(m.Run())
}

// chattyStdout writes a line of text before every message.
type chattyStdout struct{ io.Writer }

func (w chattyStdout) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.Writer, "log: sending a message, hold on\n"); err != nil {
		return 0, err
	}
	return w.Writer.Write(p)
}

func (w chattyStdout) Close() error { return nil }

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}
type echoOut struct {
	Said string `json:"said"`
}

// serveTestMCP is a small MCP server written with the same SDK: a typed
// tool with structured output, a raw text tool whose name needs
// sanitizing, a tool reporting isError, one that adds a tool at run time
// (list_changed), and one that exits the process.
func serveTestMCP() {
	var sopts *mcp.ServerOptions
	if os.Getenv(envList) == "long" {
		sopts = &mcp.ServerOptions{PageSize: 2}
	}
	name := "test-server"
	if n := os.Getenv(envName); n != "" {
		name = n
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, sopts)
	switch os.Getenv(envList) {
	case "loop":
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if lr, ok := req.(*mcp.ListToolsRequest); ok && lr.Params != nil && lr.Params.Cursor == "page-again" {
					lr.Params.Cursor = "" // the first page again, for ever
				}
				res, err := next(ctx, method, req)
				if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					lt.NextCursor = "page-again"
				}
				return res, err
			}
		})
	case "long":
		s.AddTool(&mcp.Tool{Name: "long", Description: longDescription, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
		return nil, echoOut{Said: in.Text}, nil
	})
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "shout/loud", Description: "Shout.", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in echoIn
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}, &mcp.TextContent{Text: "!"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk on fire"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "late", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here"}}}, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "exit", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(0)
		return nil, nil
	})
	// count returns an integer above 2^53 as structured content and, as
	// the specification recommends, as JSON text too.
	s.AddTool(&mcp.Tool{Name: "count", Description: "A big exact integer.", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out := `{"n": 9007199254740993, "label": "2^53+1"}`
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(out), Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
	})
	var t mcp.Transport = &mcp.StdioTransport{}
	switch os.Getenv(envNoise) {
	case "banner":
		fmt.Println("kitchen-sink MCP server 1.0 starting (press Ctrl-C to quit)")
	case "chatty":
		fmt.Println("kitchen-sink MCP server 1.0 starting")
		t = &mcp.IOTransport{Reader: os.Stdin, Writer: chattyStdout{os.Stdout}}
	}
	_ = s.Run(context.Background(), t)
}

func startBridge(t *testing.T, cfg Config, env ...string) (*Bridge, *nats.Conn, *tool.Client) {
	t.Helper()
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	cfg.Command = os.Args[0]
	cfg.Args = []string{"-test.run=^$"}
	cfg.Env = append(append(os.Environ(), envServer+"=1"), env...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Start(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Stop(ctx)
	})
	c, err := tool.NewClient(natsserver.ConnectTB(t, srv), tool.WithDefaultTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return b, nc, c
}

func TestBridge(t *testing.T) {
	b, nc, c := startBridge(t, Config{Prefix: "t"})
	want := []string{"t.count", "t.echo", "t.exit", "t.fail", "t.grow", "t.shout_loud"}
	if got := b.Tools(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Tools() = %q; want %q", got, want)
	}
	ctx := context.Background()
	cases := []struct {
		tool, args, want, code string
	}{
		{"t.echo", `{"text":"hi"}`, `{"said":"hi"}`, ""},
		{"t.shout_loud", `{"text":"hi"}`, `"HI\n!"`, ""},
		{"t.fail", `{}`, "", "500"},
		{"t.echo", `{"text":5}`, "", "400"}, // checked against the server's input schema before it is sent
	}
	for _, tc := range cases {
		res, err := c.Call(ctx, tc.tool, json.RawMessage(tc.args))
		var te *toolcall.Error
		switch {
		case tc.code != "":
			if !errors.As(err, &te) || te.Code != tc.code {
				t.Errorf("Call(%s, %s) = %s, %v; want a tool error with code %s", tc.tool, tc.args, res, err, tc.code)
			}
		case err != nil || string(res) != tc.want:
			t.Errorf("Call(%s, %s) = %s, %v; want %s", tc.tool, tc.args, res, err, tc.want)
		}
	}
	if _, err := c.Call(ctx, "t.fail", nil); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Call(t.fail) error = %v; want the tool's text", err)
	}

	// The endpoint metadata carries the input schema and description.
	msg, err := nc.Request("$SRV.INFO.mcp-t", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ep := range info.Endpoints {
		if ep.Subject == "tool.t.echo" {
			found = true
			if !strings.Contains(ep.Metadata["schema"], `"text"`) || ep.Metadata["description"] != "Echo the text back." {
				t.Errorf("endpoint tool.t.echo metadata = %v; want the input schema and description", ep.Metadata)
			}
		}
	}
	if !found {
		t.Errorf("$SRV.INFO.mcp-t endpoints = %+v; want tool.t.echo", info.Endpoints)
	}

	// list_changed: a tool added by the server is served soon after.
	if _, err := c.Call(ctx, "t.grow", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := c.Call(ctx, "t.late", nil)
		if err == nil {
			if string(res) != `"here"` {
				t.Errorf("Call(t.late) = %s; want \"here\"", res)
			}
			break
		}
		if !errors.Is(err, toolcall.ErrMissing) || time.Now().After(deadline) {
			t.Fatalf("Call(t.late) after list_changed: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // between real calls: nothing outside the bridge tells when it serves t.late
	}

	// Structured content keeps integers exact.
	if res, err := c.Call(ctx, "t.count", nil); err != nil || string(res) != `{"n":9007199254740993,"label":"2^53+1"}` {
		t.Errorf("Call(t.count) = %s, %v; want the exact integer 9007199254740993", res, err)
	}
}

// TestBridgeRestartsTheServer makes the server exit, then keeps it from
// starting for a while: its tools answer 503 meanwhile (not "missing"),
// the bridge keeps trying with back-off, and once the server starts again
// the tools answer as before.
func TestBridgeRestartsTheServer(t *testing.T) {
	refuse := filepath.Join(t.TempDir(), "refuse")
	var logs syncBuffer
	b, _, c := startBridge(t, Config{Prefix: "r", RestartMin: 50 * time.Millisecond, RestartMax: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, envRefuse+"="+refuse)
	ctx := context.Background()
	if err := os.WriteFile(refuse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Call(ctx, "r.exit", nil) // the server exits; restarts fail while refuse exists
	deadline := time.Now().Add(10 * time.Second)
	if !logs.waitFor("could not be started again", 10*time.Second) {
		t.Fatalf("no failed restart logged 10 s after the server exited; logs:\n%s", logs.String())
	}
	_, err := c.Call(ctx, "r.echo", json.RawMessage(`{"text":"hi"}`))
	var te *toolcall.Error
	if !errors.As(err, &te) || te.Code != "503" || !strings.Contains(te.Description, "started again") {
		t.Fatalf("Call(r.echo) while the server is down = %v; want code 503 saying it is being started again", err)
	}
	select {
	case <-b.Done():
		t.Fatal("Done closed although the bridge restarts the server")
	default:
	}
	os.Remove(refuse)
	for {
		res, err := c.Call(ctx, "r.echo", json.RawMessage(`{"text":"back"}`))
		if err == nil {
			if string(res) != `{"said":"back"}` {
				t.Errorf("Call(r.echo) after the restart = %s", res)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Call(r.echo) 10 s after the server could start again: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // between real calls, while the bridge's back-off starts the server again
	}
	if b.Restarts() != 1 {
		t.Errorf("Restarts() = %d; want 1", b.Restarts())
	}
}

// TestBridgeNoRestart: with NoRestart the server exiting ends the bridge.
func TestBridgeNoRestart(t *testing.T) {
	b, _, c := startBridge(t, Config{Prefix: "n", NoRestart: true})
	_, _ = c.Call(context.Background(), "n.exit", nil)
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the MCP server exited under NoRestart")
	}
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Err() = %v; want the server's exit", err)
	}
}

// TestBridgeSkipsStrayOutput runs servers that print text on stdout — a
// banner before serving, and a line before every message — and checks the
// bridge starts, serves every call, and warns with each line.
func TestBridgeSkipsStrayOutput(t *testing.T) {
	for _, noise := range []string{"banner", "chatty"} {
		t.Run(noise, func(t *testing.T) {
			var logs syncBuffer
			_, _, c := startBridge(t, Config{Prefix: "s", Logger: slog.New(slog.NewTextHandler(&logs, nil))}, envNoise+"="+noise)
			for i := range 20 {
				res, err := c.Call(context.Background(), "s.echo", json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i)))
				if err != nil || string(res) != fmt.Sprintf(`{"said":"%d"}`, i) {
					t.Fatalf("call %d: %s, %v", i, res, err)
				}
			}
			want := "kitchen-sink MCP server 1.0 starting"
			if !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "not JSON-RPC") {
				t.Errorf("logs = %q; want a warning showing %q", logs.String(), want)
			}
			if noise == "chatty" && strings.Count(logs.String(), "hold on") < 20 {
				t.Errorf("logs hold %d chatty lines; want one per message", strings.Count(logs.String(), "hold on"))
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu      sync.Mutex // mu guards b and written
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil until waitFor asks
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// waitFor reports whether the text written holds want within limit,
// woken by each Write.
func (s *syncBuffer) waitFor(want string, limit time.Duration) bool {
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		found := strings.Contains(s.b.String(), want)
		if s.written == nil {
			s.written = make(chan struct{})
		}
		next := s.written
		s.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-next:
		case <-timeout.C:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBridgeOnly(t *testing.T) {
	b, _, c := startBridge(t, Config{Prefix: "o", Only: []string{"echo"}})
	if got := b.Tools(); len(got) != 1 || got[0] != "o.echo" {
		t.Fatalf("Tools() = %q; want [o.echo]", got)
	}
	if _, err := c.Call(context.Background(), "o.fail", nil); !errors.Is(err, toolcall.ErrMissing) {
		t.Errorf("Call(o.fail) = %v; want a missing tool (left out by Only)", err)
	}
}

func TestStartErrors(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	ctx := context.Background()
	if _, err := Start(ctx, nc, Config{Command: "/nonexistent/mcp-server"}); err == nil {
		t.Error("Start with a missing command succeeded")
	}
	_, err := Start(ctx, nc, Config{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: append(os.Environ(), envServer+"=1"), Only: []string{"nope"}})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "echo") {
		t.Errorf("Start(Only nope) = %v; want ErrConfig listing the server's tools", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"minimal", Config{Command: "x"}, true},
		{"dotted prefix", Config{Command: "x", Prefix: "gh.v2"}, true},
		{"no command", Config{}, false},
		{"bad prefix", Config{Command: "x", Prefix: "a b"}, false},
		{"empty part", Config{Command: "x", Prefix: "a..b"}, false},
		{"wildcard", Config{Command: "x", Prefix: "*"}, false},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate(%+v) = %v; want ok %v", tc.name, tc.cfg, err, tc.ok)
		}
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ prefix, name, want string }{
		{"fs", "read_file", "fs.read_file"},
		{"gh", "get/issue", "gh.get_issue"},
		{"x", "a.b c*>", "x.a_b_c__"},
		{"x", "naïve", "x.na_ve"},
	} {
		if got := ToolName(tc.prefix, tc.name); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q; want %q", tc.prefix, tc.name, got, tc.want)
		}
	}
}

func TestResult(t *testing.T) {
	img := &mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"}
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
		err  string
	}{
		{"structured wins", &mcp.CallToolResult{StructuredContent: map[string]any{"a": 1}, Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}, `{"a":1}`, ""},
		{"texts joined", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, `"a\nb"`, ""},
		{"no content", &mcp.CallToolResult{}, `""`, ""},
		{"mixed content as list", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, img}}, `[{"type":"text","text":"a"},{"type":"image","mimeType":"image/png","data":"cG5n"}]`, ""},
		{"isError", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad"}}}, "", "bad"},
		{"isError without text", &mcp.CallToolResult{IsError: true}, "", "the MCP tool reported an error without text"},
	} {
		v, err := Result(tc.res)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: Result = %v, %v; want error %q", tc.name, v, err, tc.err)
			}
			continue
		}
		b, _ := json.Marshal(v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: Result = %s, %v; want %s", tc.name, b, err, tc.want)
		}
	}
}

// TestProviderNamedAfterServer: without --name and --prefix the provider
// is named after the MCP server's own name (serverInfo.name of its
// initialize reply), sanitized, not after the command that started it;
// with a prefix it stays mcp-<prefix>.
func TestProviderNamedAfterServer(t *testing.T) {
	b, nc, c := startBridge(t, Config{}, envName+"=@acme/Kitchen Sink")
	if got := b.ServiceName(); got != "mcp-acme-kitchen-sink" {
		t.Errorf("ServiceName() = %q; want mcp-acme-kitchen-sink", got)
	}
	if got := b.Server(); got != "@acme/Kitchen Sink 1.0.0 ("+os.Args[0]+")" {
		t.Errorf("Server() = %q; want the server's name and version, then the command", got)
	}
	msg, err := nc.Request("$SRV.INFO.mcp-acme-kitchen-sink", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("no provider named mcp-acme-kitchen-sink on the bus: %v", err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil || !strings.Contains(info.Description, "@acme/Kitchen Sink 1.0.0") {
		t.Errorf("provider info = %+v (%v); want its description to name the server", info, err)
	}
	if _, err := c.Call(context.Background(), "mcp.echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
		t.Errorf("Call(mcp.echo) under the default prefix: %v", err)
	}

	if b, _, _ := startBridge(t, Config{Prefix: "files"}, envName+"=Kitchen"); b.ServiceName() != "mcp-files" {
		t.Errorf("with a prefix: ServiceName() = %q; want mcp-files", b.ServiceName())
	}
	if b, _, _ := startBridge(t, Config{}, envName+"=???"); b.ServiceName() != "mcp-mcp" {
		t.Errorf("a server name with nothing usable: ServiceName() = %q; want mcp-mcp", b.ServiceName())
	}
}

func TestProviderName(t *testing.T) {
	for in, want := range map[string]string{
		"secure-filesystem-server": "mcp-secure-filesystem-server",
		"@acme/Kitchen Sink":       "mcp-acme-kitchen-sink",
		"GitHub MCP Server":        "mcp-github-mcp-server",
		"Ünïcode ✓ tools":          "mcp-n-code-tools",
		"__x__":                    "mcp-x",
		"":                         "",
		"!!!":                      "",
		strings.Repeat("a", 100):   "mcp-" + strings.Repeat("a", 60),
	} {
		if got := ProviderName(in); got != want {
			t.Errorf("ProviderName(%q) = %q; want %q", in, got, want)
		}
	}
}
