// Package mcpbridge serves the tools of a Model Context Protocol server on
// NATS: it starts the server as a child process over stdio with the official
// Go SDK (github.com/modelcontextprotocol/go-sdk), lists its tools and serves
// each as a skillbus tool on tool.<prefix>.<name> through pkg/tool, so that
// sequences call MCP tools like any other (docs/tools.md). `skillbus mcp -- CMD
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
//     schema (pkg/tool's "description" and "schema" metadata), and calls
//     are checked against that schema before they reach the server (code
//     "400" naming the argument); a schema pkg/tool cannot compile (an old
//     draft) is published unchecked, with a warning.
//
// When the server announces notifications/tools/list_changed, the bridge
// lists the tools again and serves the new set (the new endpoints start
// before the old ones stop).
//
// # A server that misbehaves
//
//   - Lines of its standard output that are not JSON (a banner, a log line
//     before a reply) are skipped, each reported as a warning with the
//     line; the session goes on.
//   - A server that exits is started again with exponential back-off
//     (Config.RestartMin doubling up to Config.RestartMax; the back-off
//     starts over once a server has run for a minute). Meanwhile its tools
//     stay served and answer code "503", so a sequence's on_error policy
//     (retry) applies rather than its missing policy. After a restart the
//     tools are listed again. With Config.NoRestart the bridge ends instead
//     and Done is closed.
package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"

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
	// ServiceName is the micro service name: the tool provider's name in
	// `skillbus tools` and `nats micro ls`. Default, when Prefix is not
	// set either, "mcp-" + the MCP server's own name from its initialize
	// reply (serverInfo.name, ProviderName), so that the provider is named
	// after the server rather than its launcher (npx); with a Prefix, or
	// for a server that gives no usable name, "mcp-" + Prefix with dots as
	// '-' (docs/mcp.md).
	ServiceName string
	// Site is the edge site the bridge runs at (tool.ServerConfig.Site,
	// docs/edge.md); default none.
	Site string
	// StartTimeout bounds starting the server and listing its tools;
	// default 30 s (npx may download the package first).
	StartTimeout time.Duration
	// NoRestart ends the bridge when the server exits (Done is closed)
	// instead of starting it again.
	NoRestart bool
	// RestartMin is the first wait before restarting a server that
	// exited; it doubles (with ±20% jitter) up to RestartMax. Defaults
	// 500 ms and 30 s.
	RestartMin, RestartMax time.Duration
	// Stderr receives the server's standard error; nil discards it.
	Stderr io.Writer
	// Logger receives the bridge's logs: warnings for skipped output
	// lines, exits and restarts; information on the tools served. nil
	// discards them.
	Logger *slog.Logger
	// Meters is the meter provider the tools' calls are counted on
	// (tool.ServerConfig.Meters); nil = OpenTelemetry's global one.
	Meters metric.MeterProvider
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
	switch {
	case c.StartTimeout < 0:
		return fmt.Errorf("%w: StartTimeout %v is negative", ErrConfig, c.StartTimeout)
	case c.RestartMin < 0:
		return fmt.Errorf("%w: RestartMin %v is negative", ErrConfig, c.RestartMin)
	case c.RestartMax < 0:
		return fmt.Errorf("%w: RestartMax %v is negative", ErrConfig, c.RestartMax)
	case c.RestartMin > 0 && c.RestartMax > 0 && c.RestartMax < c.RestartMin:
		return fmt.Errorf("%w: RestartMax %v is less than RestartMin %v", ErrConfig, c.RestartMax, c.RestartMin)
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
	if c.RestartMin == 0 {
		c.RestartMin = 500 * time.Millisecond
	}
	if c.RestartMax == 0 {
		c.RestartMax = max(30*time.Second, c.RestartMin)
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
	cfg    Config
	nc     *nats.Conn
	client *mcp.Client
	done   chan struct{} // closed when the bridge has ended for good
	quit   chan struct{} // closed by Stop: ends the supervisor's waits

	mu       sync.Mutex         // mu guards the fields below
	session  *mcp.ClientSession // nil while the server is down
	srv      *tool.Server
	names    []string
	listed   string // the served tool list, to tell whether a new one differs
	stopped  bool
	err      error // why the bridge ended (after done is closed)
	restarts int
	exitErr  error // the last exit of the server

	refresh chan struct{}
	wg      sync.WaitGroup
	server  mcp.Implementation // the server's serverInfo at Start; read-only after
}

// ProviderName is the default provider (micro service) name of a bridge
// to the MCP server named name (its serverInfo.name): "mcp-" + name in
// lower case, each run of characters other than a letter, digit, '-' or
// '_' made one '-', '-' and '_' trimmed at both ends, at most 64 bytes;
// "" when nothing is left. "@acme/Kitchen Sink" gives
// "mcp-acme-kitchen-sink".
func ProviderName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	n := strings.Trim(b.String(), "-_")
	if len(n) > 60 {
		n = strings.TrimRight(n[:60], "-_")
	}
	if n == "" {
		return ""
	}
	return "mcp-" + n
}

// Server describes the MCP server for messages: its serverInfo name and
// version from the initialize reply, with the command that started it
// ("secure-filesystem-server 0.2.0 (npx)"); the command alone when the
// server gave no name.
func (b *Bridge) Server() string {
	if b.server.Name == "" {
		return b.cfg.Command
	}
	s := b.server.Name
	if b.server.Version != "" {
		s += " " + b.server.Version
	}
	return s + " (" + b.cfg.Command + ")"
}

// ServiceName returns the provider (micro service) name the tools are
// served under (Config.ServiceName).
func (b *Bridge) ServiceName() string { return b.cfg.ServiceName }

// Start starts the MCP server, lists its tools and serves them on nc.
// ctx bounds the start only. Errors: ErrConfig, ErrNameClash, the server's
// failure to start or initialize (with what it printed, when Stderr is
// set), a name in Only the server lacks, pkg/tool's Serve errors. Once
// started, the bridge restarts the server whenever it exits (see the
// package documentation) until Stop.
func Start(ctx context.Context, nc *nats.Conn, cfg Config) (_ *Bridge, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fromServer := cfg.ServiceName == "" && cfg.Prefix == ""
	cfg = cfg.withDefaults()
	b := &Bridge{cfg: cfg, nc: nc, done: make(chan struct{}), quit: make(chan struct{}), refresh: make(chan struct{}, 1)}
	b.client = mcp.NewClient(&mcp.Implementation{Name: "skillbus-mcp-bridge", Version: version.String()}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case b.refresh <- struct{}{}:
			default:
			}
		},
	})
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	session, err := b.connect(sctx)
	if err != nil {
		return nil, err
	}
	if ir := session.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		b.server = *ir.ServerInfo
	}
	if n := ProviderName(b.server.Name); fromServer && n != "" {
		b.cfg.ServiceName = n
	}
	if err := b.serveTools(sctx, session); err != nil {
		_ = session.Close()
		return nil, err
	}
	b.mu.Lock()
	b.session = session
	b.mu.Unlock()
	b.wg.Add(2)
	go b.supervise(session)
	go b.refreshLoop()
	return b, nil
}

// connect starts the server and initializes an MCP session with it.
func (b *Bridge) connect(ctx context.Context) (*mcp.ClientSession, error) {
	cmd := exec.Command(b.cfg.Command, b.cfg.Args...)
	cmd.Dir, cmd.Env = b.cfg.Dir, b.cfg.Env
	if b.cfg.Stderr != nil {
		cmd.Stderr = b.cfg.Stderr
	}
	t := &commandTransport{cmd: cmd, terminate: 2 * time.Second, warn: func(line string) {
		b.cfg.Logger.Warn("the MCP server wrote a line that is not JSON-RPC to its standard output; skipped", "command", b.cfg.Command, "line", line)
	}}
	session, err := b.client.Connect(ctx, t, nil)
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		return nil, fmt.Errorf("mcpbridge: start the MCP server %q: %w", b.cfg.Command, err)
	}
	return session, nil
}

// supervise waits for the server to exit and starts it again with
// back-off (or ends the bridge under NoRestart), until Stop.
func (b *Bridge) supervise(session *mcp.ClientSession) {
	defer b.wg.Done()
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = b.cfg.RestartMin, b.cfg.RestartMax, 0
	bo.RandomizationFactor, bo.Multiplier = 0.2, 2
	bo.Reset()
	for {
		started := time.Now()
		err := session.Wait()
		_ = session.Close()
		b.mu.Lock()
		b.session, b.exitErr = nil, exitError(err)
		stopped := b.stopped
		b.mu.Unlock()
		if stopped {
			return
		}
		if b.cfg.NoRestart {
			b.end(fmt.Errorf("the MCP server exited: %v", exitError(err)))
			return
		}
		if time.Since(started) > time.Minute {
			bo.Reset()
		}
		b.cfg.Logger.Warn("the MCP server exited; its tools answer 503 until it has been started again", "command", b.cfg.Command, "err", exitError(err))
		for attempt := 1; ; attempt++ {
			wait := bo.NextBackOff()
			select {
			case <-b.quit:
				return
			case <-time.After(wait):
			}
			session, err = b.restart()
			if err == nil {
				break
			}
			b.cfg.Logger.Warn("the MCP server could not be started again; retrying", "command", b.cfg.Command, "attempt", attempt, "err", err)
			if errors.Is(err, errStopped) {
				return
			}
		}
	}
}

// errStopped: the bridge was stopped during a restart.
var errStopped = errors.New("mcpbridge: stopped")

// restart starts the server again, serves its (possibly changed) tools
// and makes the new session current.
func (b *Bridge) restart() (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.StartTimeout)
	defer cancel()
	go func() { // Stop ends a start under way
		select {
		case <-b.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	session, err := b.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.serveTools(ctx, session); err != nil {
		_ = session.Close()
		return nil, err
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		_ = session.Close()
		return nil, errStopped
	}
	b.session = session
	b.restarts++
	n := b.restarts
	b.mu.Unlock()
	b.cfg.Logger.Info("the MCP server was started again", "command", b.cfg.Command, "restarts", n)
	return session, nil
}

// exitError describes how a session ended.
func exitError(err error) error {
	if err == nil {
		return errors.New("it closed its standard output")
	}
	return err
}

// end ends the bridge for good with err (Done is closed).
func (b *Bridge) end(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.done:
	default:
		b.err = err
		close(b.done)
	}
}

// current returns the session of the running server, or nil while it is
// down.
func (b *Bridge) current() *mcp.ClientSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session
}

// serveTools lists the tools of session's server and serves them,
// replacing the previous set unless it is the same (names, descriptions
// and schemas).
func (b *Bridge) serveTools(ctx context.Context, session *mcp.ClientSession) error {
	list, err := listTools(ctx, session)
	if err != nil {
		return err
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
		unchecked := false
		if schema != nil {
			if _, err := tool.CompileSchema(schema); err != nil {
				unchecked = true
				b.cfg.Logger.Warn("the MCP tool's input schema cannot be checked here; it is published, and calls go to the server unchecked", "tool", t.Name, "err", err)
			}
		}
		tools = append(tools, tool.Tool{Name: name, Description: desc, Schema: schema, Unvalidated: unchecked, Func: b.caller(t.Name)})
		names = append(names, name)
	}
	sort.Strings(names)
	type described struct {
		Name, Description string
		Schema            json.RawMessage
	}
	desc := make([]described, len(tools))
	for i, t := range tools {
		desc[i] = described{t.Name, t.Description, t.Schema}
	}
	listed, _ := json.Marshal(desc)
	b.mu.Lock()
	same := b.srv != nil && string(listed) == b.listed
	b.mu.Unlock()
	if same {
		return nil
	}
	srv, err := tool.Serve(b.nc, tool.ServerConfig{Name: b.cfg.ServiceName, Version: version.String(), Description: "MCP tools of " + b.Server(), QueueGroup: b.cfg.ServiceName, Metadata: b.metadata(), Site: b.cfg.Site, Meters: b.cfg.Meters}, tools...)
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
	b.srv, b.names, b.listed = srv, names, string(listed)
	b.mu.Unlock()
	if old != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = old.Stop(stopCtx)
		cancel()
	}
	b.cfg.Logger.Info("serving MCP tools", "tools", names)
	return nil
}

// MaxListPages bounds the pages of one tools/list walk (docs/mcp.md,
// "Bridging an MCP server"): a server that pages further, or that gives a
// nextCursor it gave before, is in a loop, and the walk ends with an
// error saying so instead of paging for ever.
const MaxListPages = 1000

// listTools reads every page of the server's tools/list. Errors: the
// session's; a cursor repeated or more than MaxListPages pages (the
// server's paging loops).
func listTools(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	seen := map[string]int{} // cursor → the page that gave it
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		res, err := session.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("mcpbridge: list the MCP server's tools (page %d): %w", page, err)
		}
		list = append(list, res.Tools...)
		next := res.NextCursor
		if next == "" {
			return list, nil
		}
		if first, ok := seen[next]; ok {
			return nil, fmt.Errorf("mcpbridge: list the MCP server's tools: page %d of tools/list gave the nextCursor %q that page %d gave already, so paging would never end; the server's paging is broken (fix or update the server)", page, cut(next, 80), first)
		}
		if page == MaxListPages {
			return nil, fmt.Errorf("mcpbridge: list the MCP server's tools: tools/list still gave a nextCursor after %d pages (%d tools); stopped there, the server's paging does not end (fix or update the server)", MaxListPages, len(list))
		}
		seen[next] = page
		params = &mcp.ListToolsParams{Cursor: next}
	}
}

// cut shortens s to at most n bytes for a message (on a rune boundary).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func (b *Bridge) refreshLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.quit:
			return
		case <-b.done:
			return
		case <-b.refresh:
			session := b.current()
			if session == nil {
				continue // a restart lists the tools anyway
			}
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.StartTimeout)
			if err := b.serveTools(ctx, session); err != nil {
				b.cfg.Logger.Warn("tool list changed but could not be served; keeping the previous tools", "err", err)
			}
			cancel()
		}
	}
}

// caller returns the tool function forwarding to MCP tool name.
func (b *Bridge) caller(name string) tool.Func {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		session := b.current()
		if session == nil {
			return nil, b.unavailable()
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, mcp.ErrConnectionClosed) || b.current() != session {
				return nil, b.unavailable()
			}
			return nil, tool.Errorf("502", "MCP tool %q: %v", name, err)
		}
		return Result(res)
	}
}

// unavailable is the error of a call while the server is down.
func (b *Bridge) unavailable() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg.NoRestart || b.stopped {
		return tool.Errorf("503", "the MCP server behind this tool has exited (%v)", b.exitErr)
	}
	return tool.Errorf("503", "the MCP server behind this tool has exited (%v) and is being started again; call again in a moment", b.exitErr)
}

// Result maps an MCP tool result onto a skillbus tool result (see the
// package documentation): isError → a tool error "500"; structured content;
// all-text content as one string; else the content list.
//
// Structured content reaches the bridge decoded by the MCP SDK, with every
// number a float64, so integers above 2^53 would come out rounded. Servers
// usually send the same value as JSON text too (the MCP specification
// recommends it): when a text item holds JSON equal to the structured
// content, that text is returned as it is, digit for digit.
func Result(res *mcp.CallToolResult) (any, error) {
	text, allText := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the MCP tool reported an error without text"
		}
		return nil, tool.Errorf("500", "%s", text)
	}
	if res.StructuredContent != nil {
		if exact := exactStructured(res); exact != nil {
			return exact, nil
		}
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

// exactStructured returns the text item of res that holds the structured
// content as JSON (compacted), or nil.
func exactStructured(res *mcp.CallToolResult) json.RawMessage {
	want, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil
	}
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || !json.Valid([]byte(t.Text)) {
			continue
		}
		var v any // decoded the way the SDK decodes: float64 numbers
		if json.Unmarshal([]byte(t.Text), &v) != nil {
			continue
		}
		if got, err := json.Marshal(v); err != nil || !bytes.Equal(got, want) {
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(t.Text)) != nil {
			continue
		}
		return buf.Bytes()
	}
	return nil
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

// Tools returns the served tool names (without the "tool." prefix), sorted.
func (b *Bridge) Tools() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.names)
}

// metadata is the micro service metadata: the bridge's configuration
// (command, arguments, prefix, tools left out, version) and its
// fingerprint, so that instances bridging different servers under one
// prefix can be told apart (tool.Conflicts).
func (b *Bridge) metadata() map[string]string {
	q := make([]string, len(b.cfg.Args))
	for i, a := range b.cfg.Args {
		q[i] = strconv.Quote(a)
	}
	only := slices.Clone(b.cfg.Only)
	slices.Sort(only)
	cfg := fmt.Sprintf("command=%q args=[%s] prefix=%s only=%s version=%s", b.cfg.Command, strings.Join(q, " "), b.cfg.Prefix, strings.Join(only, ","), version.String())
	return map[string]string{tool.MetadataConfig: cfg, tool.MetadataFingerprint: tool.Fingerprint(cfg)}
}

// Conflicts returns the conflicts (tool.Conflict) between the tools this
// bridge serves and other instances on the bus, discovered within wait.
func (b *Bridge) Conflicts(ctx context.Context, wait time.Duration) ([]tool.Conflict, error) {
	b.mu.Lock()
	srv := b.srv
	b.mu.Unlock()
	if srv == nil {
		return nil, nil
	}
	return srv.Conflicts(ctx, wait)
}

// Restarts returns how many times the server has been started again.
func (b *Bridge) Restarts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restarts
}

// Done is closed when the bridge has ended for good: Stop was called, or
// the server exited under Config.NoRestart.
func (b *Bridge) Done() <-chan struct{} { return b.done }

// Err returns why the bridge ended, after Done is closed (nil for Stop);
// nil before.
func (b *Bridge) Err() error {
	select {
	case <-b.done:
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.err
	default:
		return nil
	}
}

// Stop stops serving (endpoints drained, calls in flight finished until
// ctx is done), then closes the MCP session, which ends the server process,
// and stops restarting it. Safe to call more than once. It does not close
// nc.
func (b *Bridge) Stop(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	srv, session := b.srv, b.session
	b.mu.Unlock()
	close(b.quit)
	var err error
	if srv != nil {
		err = srv.Stop(ctx)
	}
	if session != nil {
		_ = session.Close()
	}
	b.wg.Wait()
	b.end(nil)
	return err
}
