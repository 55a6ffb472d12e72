package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/tool"
)

// ErrConfig is returned by New for a Config field out of range; the
// message names the field.
var ErrConfig = errors.New("mcpserver: invalid configuration")

// Defaults and bounds of Config.
const (
	// DefaultRunWait is how long seq_run waits for a run's result when the
	// model gives no wait_seconds.
	DefaultRunWait = 60 * time.Second
	// MaxRunWait bounds wait_seconds of seq_run and seq_status: a tool
	// call that blocks longer than this is cut by most clients anyway.
	MaxRunWait = 10 * time.Minute
	// DefaultToolsRefresh is how often the re-exported tools are
	// discovered again.
	DefaultToolsRefresh = 30 * time.Second
	// DefaultResync is how often the skills are read again besides the
	// registry's events (a safety net for events missed while the
	// connection was down).
	DefaultResync = time.Minute
)

// Config configures a Server. The zero value serves every model-facing
// tool, the skills as prompts and resources, and no re-exported tools.
type Config struct {
	// Name and Version are the implementation the server announces;
	// defaults "skillbus" and version.String().
	Name    string
	Version string
	// ReadOnly serves only the tools that list and read: skill_list,
	// skill_info, seq_list, seq_show and seq_status (and no re-exported
	// tools, whose effects are unknown). Default false.
	ReadOnly bool
	// Tools are the prefixes of the cluster's tools to re-export (tool
	// names as `skillbus tools` lists them): "fs" re-exports fs.read,
	// fs.list, ...; "fs.read" that tool alone. Default none.
	Tools []string
	// RunWait is how long seq_run waits for a result when the model gives
	// no wait_seconds; default DefaultRunWait, at most MaxRunWait.
	RunWait time.Duration
	// ToolsRefresh is the period of the re-exported tools' discovery;
	// default DefaultToolsRefresh.
	ToolsRefresh time.Duration
	// Resync is the period of a full re-read of the skills; default
	// DefaultResync.
	Resync time.Duration
	// Timeout bounds one request to a skillbus service; default
	// client.DefaultTimeout.
	Timeout time.Duration
	// Logger receives the server's logs; nil discards them. Over stdio the
	// logs must not go to stdout (the protocol's channel).
	Logger *slog.Logger
}

// Validate checks c and returns an error wrapping ErrConfig naming the bad
// field.
func (c Config) Validate() error {
	switch {
	case c.RunWait < 0 || c.RunWait > MaxRunWait:
		return fmt.Errorf("%w: run wait %s; want 0 (default %s) to %s", ErrConfig, c.RunWait, DefaultRunWait, MaxRunWait)
	case c.ToolsRefresh < 0:
		return fmt.Errorf("%w: tools refresh %s; want a positive duration", ErrConfig, c.ToolsRefresh)
	case c.Resync < 0:
		return fmt.Errorf("%w: resync %s; want a positive duration", ErrConfig, c.Resync)
	case c.Timeout != 0 && c.Timeout < 100*time.Millisecond:
		return fmt.Errorf("%w: timeout %s; want at least 100ms", ErrConfig, c.Timeout)
	}
	for _, p := range c.Tools {
		if p == "" || strings.ContainsAny(p, " *>") || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") {
			return fmt.Errorf("%w: tools prefix %q; want a tool name or its first parts, such as fs or fs.read", ErrConfig, p)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "skillbus"
	}
	if c.Version == "" {
		c.Version = version.String()
	}
	if c.RunWait == 0 {
		c.RunWait = DefaultRunWait
	}
	if c.ToolsRefresh == 0 {
		c.ToolsRefresh = DefaultToolsRefresh
	}
	if c.Resync == 0 {
		c.Resync = DefaultResync
	}
	if c.Timeout == 0 {
		c.Timeout = client.DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Server is skillbus as an MCP server on one NATS connection. It is safe
// for concurrent use by any number of MCP sessions.
type Server struct {
	cfg   Config
	nc    *nats.Conn
	c     *client.Client
	tools *tool.Client
	mcp   *mcp.Server
	log   *slog.Logger
	perm  *permissions
	own   map[string]bool // the model-facing tools' names

	cat  catalog  // the skills as prompts and resources (skills.go)
	bus  busTools // the re-exported tools (bustools.go)
	stop context.CancelFunc
	wg   sync.WaitGroup // the goroutines of Start
}

// New returns a server on nc (the caller's: never closed here) with every
// tool of cfg registered; nothing is sent on NATS until Start. Errors:
// ErrConfig; a nil connection.
func New(nc *nats.Conn, cfg Config) (*Server, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil NATS connection", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c, err := client.New(nc, client.WithTimeout(cfg.Timeout))
	if err != nil {
		return nil, err
	}
	tc, err := tool.NewClient(nc)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, nc: nc, c: c, tools: tc, log: cfg.Logger, perm: watchPermissions(nc)}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "skillbus", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions(cfg.ReadOnly),
		Logger:       cfg.Logger,
		// Prompts and resources come and go with the skills: announce
		// the capabilities (with list-changed) even before the first one.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.own = map[string]bool{}
	for _, t := range s.modelTools() {
		s.own[t.tool.Name] = true
		if cfg.ReadOnly && !t.readOnly {
			continue
		}
		s.mcp.AddTool(t.tool, t.handler)
	}
	s.cat.init(s)
	return s, nil
}

// MCP returns the MCP server: run it over stdio with its Run method and
// an *mcp.StdioTransport, or serve it over HTTP with HTTPHandler.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Start reads the skills into prompts and resources (waiting at most the
// request timeout for the registry: a registry that does not answer yet is
// read again later), follows the registry's events, and starts the
// discovery of the re-exported tools. The goroutines stop with Stop or
// when ctx ends. Errors: the subscription to the registry's events cannot
// be made (a closed connection, a permission the credentials lack).
func (s *Server) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	s.stop = cancel
	if err := s.cat.start(ctx, &s.wg); err != nil {
		cancel()
		return err
	}
	if len(s.cfg.Tools) > 0 && !s.cfg.ReadOnly {
		s.bus.start(ctx, s, &s.wg)
	}
	return nil
}

// Stop ends what Start began and waits for it. Safe to call more than
// once, and without Start.
func (s *Server) Stop() {
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
	s.perm.close()
}

// instructions is the text the server gives a client at initialization,
// which many clients show the model: what skillbus is and where to start.
func instructions(readOnly bool) string {
	text := `skillbus serves reusable skills (instructions, read with skill_list and skill_info) and tool sequences (named multi-step tool flows: groups run one after another, the tool calls inside a group run in parallel).
Start with skill_list and seq_list to see what exists. Read a long skill section by section with skill_info.`
	if readOnly {
		return text + "\nThis server is read-only: it lists and reads, it does not create or run anything."
	}
	return text + `
Run a stored sequence with seq_run (it waits for the result, or returns a run_id to follow with seq_status); run one group alone with seq_call.
Store a new sequence with seq_create (its groups' "tools" is one string of JSON objects each followed by ";"), then run it with seq_run.`
}
