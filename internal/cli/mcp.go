package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/skillbus/skillbus/internal/mcpbridge"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

func mcpCommand() command {
	return command{
		summary: "MCP both ways: serve skillbus to agent runtimes (mcp serve), or an MCP server's tools on NATS (mcp bridge)",
		usage: `Usage: skillbus mcp serve [--local DIR] [--listen ADDR] ...   (see skillbus mcp serve --help)
       skillbus mcp [bridge] [--prefix P] [--only NAMES] [--name NAME] [flags] -- COMMAND [ARGS...]

mcp serve serves skillbus itself as an MCP server to agent runtimes
(docs/mcp.md). mcp bridge (the word may be left out) does the opposite:

Starts COMMAND as a Model Context Protocol server over stdio, lists its
tools and serves each on tool.<P>.<name> (characters other than letters,
digits, - and _ become _), forwarding the arguments and returning the
result: the structured content when the server gives one, else the text
content (one string), else the content list. A tool's isError result is a
tool error (code 500) with its text. Each endpoint carries the tool's input
schema and description in its metadata (` + "`skillbus tools --json`" + `). When the
server announces a changed tool list, the endpoints follow it.

Lines COMMAND prints on stdout that are not JSON (a banner, log lines) are
skipped with a warning on stderr showing the line. When COMMAND exits it is
started again with back-off (0.5 s doubling up to 30 s); meanwhile its tools
answer code 503. With --no-restart the bridge stops instead, exit code 1.
Needs NATS_URL (or --context). Like the skillbus services (docs/operations.md)
it waits for NATS at start, reconnects for ever and exits 1 if its connection
is closed for good; every flag can also be set as SKILLBUS_<FLAG>.

Flags:
  --prefix P      subject prefix of the tools (default mcp)
  --only NAMES    serve only these MCP tools (comma-separated MCP names)
  --name NAME     the provider's micro service name (default mcp-<the MCP
                  server's own name, from its initialize reply>; with
                  --prefix, mcp-<prefix>)
  --site SITE     the edge site this bridge runs at, shown by skillbus tools
                  (default none: the NATS server's name is shown; docs/edge.md)
  --no-restart    stop when the MCP server exits instead of starting it again
  --verbose       log the bridge's activity on stderr (warnings are always shown)
  --health-addr ADDR   serve /livez, /readyz and /metrics on ADDR (e.g. :8080)
  --shutdown-budget D  the whole graceful shutdown at SIGTERM (default 25s)
  --log-json           log JSON lines
  --log-level LEVEL    debug, info, warn or error (default info)

Examples:
  skillbus mcp --prefix files -- npx -y @modelcontextprotocol/server-filesystem /srv/data
  skillbus mcp --prefix gh --only search_issues,get_issue -- github-mcp-server stdio

Exit codes: 0 stopped by Ctrl-C, 1 the server could not start (or exited,
with --no-restart), 2 bad command line.
`,
		run:      runMCP,
		operands: operandCommand,
		subs: func() map[string]command {
			return map[string]command{"serve": mcpServeCommand(), "bridge": mcpBridgeCommand()}
		},
	}
}

// mcpBridgeCommand is `skillbus mcp bridge`: the same as `skillbus mcp`
// without a subcommand.
func mcpBridgeCommand() command {
	c := mcpCommand()
	c.subs = nil
	return c
}

func runMCP(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "mcp", mcpCommand)
	prefix := fs.String("prefix", "mcp", "subject prefix")
	var only stringList
	only.split = true
	fs.Var(&only, "only", "serve only these MCP tools")
	name := fs.String("name", "", "micro service name")
	site := fs.String("site", "", "the edge site this bridge runs at")
	verbose := fs.Bool("verbose", false, "log on stderr")
	noRestart := fs.Bool("no-restart", false, "stop when the MCP server exits")
	var sf serveFlags // --health-addr, --shutdown-budget, logs; SKILLBUS_* (natsclient.go)
	sf.register(fs)
	pos, err := sf.parse(env, fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) == 0 {
		fmt.Fprintf(env.Stderr, "skillbus mcp: give the MCP server's command after --, for example: skillbus mcp -- npx -y @modelcontextprotocol/server-filesystem .\n")
		return ExitUsage
	}
	if err := checkSite(*site); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus mcp: %v\n", err)
		return ExitUsage
	}
	cfg := mcpbridge.Config{Prefix: *prefix, Only: only.values, ServiceName: *name, Site: *site, Command: pos[0], Args: pos[1:], Stderr: env.Stderr, NoRestart: *noRestart}
	if !given(fs, "prefix") {
		cfg.Prefix = "" // the default (mcp), and the provider is named after the server
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus mcp: %v\n", err)
		return ExitUsage
	}
	return serveService(ctx, env, "mcp", &sf, func(ctx context.Context, rt servicecmd.Runtime) (func(context.Context) error, error) {
		cfg.Meters = rt.Meters
		b, err := mcpbridge.Start(ctx, rt.Conn, cfg)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus mcp: %v\n", err)
			return nil, err
		}
		fmt.Fprintf(env.Stdout, "serving %d tool(s) of %s as %s: %v; Ctrl-C to stop\n", len(b.Tools()), termSafe(b.Server()), b.ServiceName(), b.Tools())
		if conflicts, err := b.Conflicts(ctx, 500*time.Millisecond); err == nil {
			for _, c := range conflicts {
				fmt.Fprintf(env.Stderr, "skillbus mcp: warning: %s\n", c)
			}
		}
		go func() {
			<-b.Done() // the MCP server ended for good (--no-restart), or Stop
			rt.Fail(fmt.Errorf("the MCP server ended: %v", b.Err()))
		}()
		return b.Stop, nil
	})
}
