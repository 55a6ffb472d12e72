// Package mcpbridge serves the tools of a Model Context Protocol server on
// NATS: it starts the server as a child process over stdio with the official
// Go SDK (github.com/modelcontextprotocol/go-sdk), lists its tools and serves
// each as a skillbus tool on tool.<prefix>.<name> through pkg/tool, so that
// sequences call MCP tools like any other (DESIGN.md §3). `skillbus mcp -- CMD
// ARGS...` is a thin command around it.
//
// # Mapping
//
//   - Name: tool.<prefix>.<name>, every character of the MCP name other
//     than a letter, digit, '-' or '_' replaced by '_' (ToolName).
//   - Arguments: the request's JSON object is sent as the MCP arguments.
//   - Result: the structuredContent when the server gives one; otherwise,
//     when every content item is text, the texts joined with newlines as one
//     JSON string; otherwise the content list as JSON.
//   - Errors: a result with isError is a tool error with code "500" and the
//     result's text; a protocol error (unknown tool, invalid params) is
//     code "502"; a server that has gone is code "503".
//   - Metadata: each endpoint carries the tool's description and its input
//     schema (pkg/tool's "description" and "schema" metadata).
//
// When the server announces notifications/tools/list_changed, the bridge
// lists the tools again and serves the new set (the new endpoints start
// before the old ones stop). When the server exits, Done is closed.
package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/tool"
)

// ErrConfig is returned by Config.Validate; the message names the field.
var ErrConfig = errors.New("mcpbridge: invalid configuration")

// ErrNameClash: two MCP tool names map onto the same skillbus tool name.
var ErrNameClash = errors.New("mcpbridge: tool name clash")

// Config configures a Bridge.
type Config struct {
	// Command and Args start the MCP server (stdio transport); Command is
	// required.
	Command string
	Args    []string
	// Dir is the server's working directory; "" = the current one.
	Dir string
	// Env, when not nil, is the server's environment (KEY=VALUE); nil
	// inherits this process's environment.
	Env []string
	// Prefix is the middle part of tool.<prefix>.<name>; default "mcp".
	// Dots separate parts; letters, digits, '-' and '_' within parts.
	Prefix string
	// Only, when not empty, lists the MCP tool names to serve; the others
	// are left out. A name that the server does not have is an error at
	// Start.
	Only []string
	// ServiceName is the micro service name; default "mcp-" + Prefix with
	// dots as '-'.
	ServiceName string
	// StartTimeout bounds starting the server and listing its tools;
	// default 30 s (npx may download the package first).
	StartTimeout time.Duration
	// Stderr receives the server's standard error; nil discards it.
	Stderr io.Writer
	// Logger receives the bridge's logs; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field. Errors: ErrConfig.
func (c Config) Validate() error {
	if c.Command == "" {
		return fmt.Errorf("%w: Command is empty: give the MCP server's command", ErrConfig)
	}
	p := c.Prefix
	if p == "" {
		p = "mcp"
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" || sanitize(part) != part {
			return fmt.Errorf("%w: prefix %q: use letters, digits, '-' and '_', with dots between parts", ErrConfig, c.Prefix)
		}
	}
	if c.StartTimeout < 0 {
		return fmt.Errorf("%w: StartTimeout %v is negative", ErrConfig, c.StartTimeout)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "mcp"
	}
	if c.ServiceName == "" {
		c.ServiceName = "mcp-" + strings.ReplaceAll(c.Prefix, ".", "-")
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// sanitize replaces every character that cannot appear in a tool name part
// with '_'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// ToolName returns the skillbus tool name of MCP tool name under prefix:
// prefix + "." + name with every character other than a letter, digit, '-'
// or '_' replaced by '_' (read_file → fs.read_file, "get/issue" →
// gh.get_issue).
func ToolName(prefix, name string) string { return prefix + "." + sanitize(name) }

// Bridge is a running MCP bridge.
type Bridge struct {
	cfg     Config
	nc      *nats.Conn
	session *mcp.ClientSession
	done    chan struct{}
	waitErr error // set before done is closed

	mu      sync.Mutex // mu guards srv, names and stopped
	srv     *tool.Server
	names   []string
	stopped bool

	refresh chan struct{}
	wg      sync.WaitGroup
}

// Start starts the MCP server, lists its tools and serves them on nc.
// ctx bounds the start only. Errors: ErrConfig, ErrNameClash, the server's
// failure to start or initialize (with what it printed, when Stderr is
// set), a name in Only the server lacks, pkg/tool's Serve errors.
func Start(ctx context.Context, nc *nats.Conn, cfg Config) (_ *Bridge, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bridge{cfg: cfg, nc: nc, done: make(chan struct{}), refresh: make(chan struct{}, 1)}
	client := mcp.NewClient(&mcp.Implementation{Name: "skillbus-mcp-bridge", Version: version.String()}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case b.refresh <- struct{}{}:
			default:
			}
		},
	})
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	if cfg.Stderr != nil {
		cmd.Stderr = cfg.Stderr
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	b.session, err = client.Connect(sctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: start the MCP server %q: %w", cfg.Command, err)
	}
	defer func() {
		if err != nil {
			_ = b.session.Close()
		}
	}()
	if err := b.serveTools(sctx); err != nil {
		return nil, err
	}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		b.waitErr = b.session.Wait()
		close(b.done)
	}()
	go b.refreshLoop()
	return b, nil
}

// serveTools lists the server's tools and serves them, replacing the
// previous set.
func (b *Bridge) serveTools(ctx context.Context) error {
	var list []*mcp.Tool
	for t, err := range b.session.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcpbridge: list the MCP server's tools: %w", err)
		}
		list = append(list, t)
	}
	if len(b.cfg.Only) > 0 {
		have := map[string]bool{}
		for _, t := range list {
			have[t.Name] = true
		}
		for _, n := range b.cfg.Only {
			if !have[n] {
				names := make([]string, 0, len(have))
				for k := range have {
					names = append(names, k)
				}
				sort.Strings(names)
				return fmt.Errorf("%w: --only %q: the MCP server has no such tool; it has: %s", ErrConfig, n, strings.Join(names, ", "))
			}
		}
		list = slices.DeleteFunc(list, func(t *mcp.Tool) bool { return !slices.Contains(b.cfg.Only, t.Name) })
	}
	tools := make([]tool.Tool, 0, len(list))
	names := make([]string, 0, len(list))
	seen := map[string]string{}
	for _, t := range list {
		name := ToolName(b.cfg.Prefix, t.Name)
		if other, ok := seen[name]; ok {
			return fmt.Errorf("%w: MCP tools %q and %q are both served as %s; serve one with --only", ErrNameClash, other, t.Name, name)
		}
		seen[name] = t.Name
		var schema json.RawMessage
		if t.InputSchema != nil {
			if s, err := json.Marshal(t.InputSchema); err == nil && len(s) > 0 && s[0] == '{' {
				schema = s
			}
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		tools = append(tools, tool.Tool{Name: name, Description: oneLine(desc), Schema: schema, Func: b.caller(t.Name)})
		names = append(names, name)
	}
	sort.Strings(names)
	srv, err := tool.Serve(b.nc, tool.ServerConfig{Name: b.cfg.ServiceName, Version: version.String(), Description: "MCP tools of " + b.cfg.Command, QueueGroup: b.cfg.ServiceName}, tools...)
	if err != nil {
		return fmt.Errorf("mcpbridge: serve the tools: %w", err)
	}
	b.mu.Lock()
	if b.stopped { // a refresh that raced with Stop
		b.mu.Unlock()
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Stop(stopCtx)
	}
	old := b.srv
	b.srv, b.names = srv, names
	b.mu.Unlock()
	if old != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = old.Stop(stopCtx)
		cancel()
	}
	b.cfg.Logger.Info("serving MCP tools", "tools", names)
	return nil
}

func (b *Bridge) refreshLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.done:
			return
		case <-b.refresh:
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.StartTimeout)
			if err := b.serveTools(ctx); err != nil {
				b.cfg.Logger.Warn("tool list changed but could not be served; keeping the previous tools", "err", err)
			}
			cancel()
		}
	}
}

// caller returns the tool function forwarding to MCP tool name.
func (b *Bridge) caller(name string) tool.Func {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		res, err := b.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			if errors.Is(err, mcp.ErrConnectionClosed) {
				return nil, tool.Errorf("503", "the MCP server behind this tool has exited")
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, tool.Errorf("502", "MCP tool %q: %v", name, err)
		}
		return Result(res)
	}
}

// Result maps an MCP tool result onto a skillbus tool result (see the
// package documentation): isError → a tool error "500"; structured content;
// all-text content as one string; else the content list.
func Result(res *mcp.CallToolResult) (any, error) {
	text, allText := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the MCP tool reported an error without text"
		}
		return nil, tool.Errorf("500", "%s", text)
	}
	if res.StructuredContent != nil {
		return res.StructuredContent, nil
	}
	if allText {
		return text, nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, tool.Errorf("500", "MCP result cannot be encoded: %v", err)
	}
	return json.RawMessage(b), nil
}

func contentText(cs []mcp.Content) (string, bool) {
	var parts []string
	for _, c := range cs {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			return strings.Join(parts, "\n"), false
		}
		parts = append(parts, t.Text)
	}
	return strings.Join(parts, "\n"), true
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300]
		for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// Tools returns the served tool names (without the "tool." prefix), sorted.
func (b *Bridge) Tools() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.names)
}

// Done is closed when the MCP server's session ended (the process exited
// or the bridge was stopped).
func (b *Bridge) Done() <-chan struct{} { return b.done }

// Err returns why the session ended, after Done is closed (nil for a
// clean stop).
func (b *Bridge) Err() error {
	select {
	case <-b.done:
		if b.waitErr == nil {
			return errors.New("the MCP server exited")
		}
		return b.waitErr
	default:
		return nil
	}
}

// Stop stops serving (endpoints drained, calls in flight finished until
// ctx is done), then closes the MCP session, which ends the server process.
// Safe to call more than once. It does not close nc.
func (b *Bridge) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	srv := b.srv
	b.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Stop(ctx)
	}
	_ = b.session.Close()
	b.wg.Wait()
	return err
}
