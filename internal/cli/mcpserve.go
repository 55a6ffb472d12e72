package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/httplimit"
	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/natsconn"
)

// envMCPToken names the variable holding the bearer token of `mcp serve
// --listen` (the command line would show it to every user of the machine).
const envMCPToken = "SKILLBUS_MCP_TOKEN"

func mcpServeCommand() command {
	return command{
		summary: "serve skillbus to agent runtimes as an MCP server (stdio or HTTP)",
		usage: `Usage: skillbus mcp serve [--local DIR] [--listen ADDR] [--read-only] [--tools PREFIXES] [flags]

Serves skillbus as a Model Context Protocol server, so that an agent runtime
(Claude Code, Codex, Gemini CLI, an IDE agent...) reaches it with one line of
configuration (docs/mcp.md):

  tools      seq_create, seq_list, seq_show, seq_delete, seq_run, seq_status,
             seq_cancel, seq_retry, seq_call, skill_list, skill_info (and with --tools,
             the cluster's own tools)
  prompts    one per user-invocable skill (arguments: task, section)
  resources  skill://NAME (a skill's text) and skill://NAME/SECTION (one
             section, percent-encoded title), with list-changed
             notifications when the skills change

It talks to the skillbus at NATS_URL with the connection's credentials
(--creds ...: what the model may do is what they allow), or with --local DIR
to an embedded stack of its own — NATS, the registry loading and watching DIR,
the seqworker and the built-in tools — so that
` + "`skillbus mcp serve --local ./skills`" + ` is a complete setup for one developer.

Over stdio (the default) the client starts this command and speaks MCP on
its stdin and stdout; logs go to stderr. With --listen it serves the
streamable HTTP transport at http://ADDR/mcp instead, until Ctrl-C.

Flags:
  --local DIR          run an embedded skillbus loading DIR (no NATS_URL needed)
  --tools-root DIR     with --local: the built-in tools' root (default .)
  --allow-cmd NAMES    with --local: commands cmd.run may run (comma list)
  --data DIR           with --local: keep the JetStream store (runs, sequences
                       made with seq_create) in DIR (default: a temporary one)
  --listen ADDR        serve HTTP on ADDR (HOST:PORT or :PORT; a missing host
                       is 127.0.0.1). Any other host needs a token
  --token-file FILE    require "Authorization: Bearer TOKEN" with the token in
                       FILE (or $` + envMCPToken + `); at least 16 characters
  --read-only          only listing and reading: skill_list, skill_info,
                       seq_list, seq_show, seq_status
  --tools PREFIXES     also serve the cluster's tools whose names start with
                       these (comma list: fs,text or fs.read), with the schemas
                       their providers publish
  --wait D             how long seq_run waits for a result by default (60s)
  --log-level LEVEL    debug, info, warn (default) or error, on stderr
  --max-sessions N     with --listen: most MCP sessions open at once (default
                       256); a new one beyond is answered 503
  --body-timeout D     with --listen: how long a request body may take to
                       arrive (default 10s); a slower one is answered 408

Examples:
  skillbus mcp serve --local ./skills
  NATS_URL=nats://nats:4222 skillbus mcp serve --creds agent.creds
  NATS_URL=nats://nats:4222 skillbus mcp serve --creds reader.creds --read-only
  skillbus mcp serve --local . --listen :8931
  claude mcp add skillbus -- skillbus mcp serve --local ./skills

Exit codes: 0 the client disconnected or Ctrl-C, 1 skillbus could not be
reached or started, 2 bad command line.
`,
		run: runMCPServe,
	}
}

func runMCPServe(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "mcp serve", mcpServeCommand)
	local := fs.String("local", "", "embedded stack loading DIR")
	toolsRoot := fs.String("tools-root", ".", "built-in tools' root (with --local)")
	var allow stringList
	allow.split = true
	fs.Var(&allow, "allow-cmd", "commands cmd.run may run (with --local)")
	data := fs.String("data", "", "JetStream store directory (with --local)")
	listen := fs.String("listen", "", "serve HTTP on ADDR")
	tokenFile := fs.String("token-file", "", "bearer token file")
	readOnly := fs.Bool("read-only", false, "only listing and reading")
	var prefixes stringList
	prefixes.split = true
	fs.Var(&prefixes, "tools", "re-export the cluster's tools with these prefixes")
	wait := fs.Duration("wait", mcpserver.DefaultRunWait, "seq_run's default wait")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	maxSessions := fs.Int("max-sessions", httplimit.DefaultMaxSessions, "with --listen: most MCP sessions open at once")
	bodyTimeout := fs.Duration("body-timeout", httplimit.DefaultBodyTimeout, "with --listen: how long a request body may take to arrive")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: "+format+"\n", a...)
		return ExitUsage
	}
	if len(pos) > 0 {
		return bad("unexpected argument %q (the skills directory goes with --local DIR)", pos[0])
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return bad("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	if *local == "" && (len(allow.values) > 0 || *data != "" || *toolsRoot != ".") {
		return bad("--tools-root, --allow-cmd and --data go with --local DIR")
	}
	if *local != "" {
		if f := givenAny(fs, natsconn.FlagNames()...); f != "" {
			return bad("%s and --local contradict each other: --local serves an embedded skillbus with its own NATS server, so %s would be ignored; leave one out", f, f)
		}
		if st, err := os.Stat(*local); err != nil || !st.IsDir() {
			return bad("--local %s is not a directory", *local)
		}
	}
	if *readOnly && givenAny(fs, "wait") != "" {
		return bad("--wait sets how long seq_run waits, and --read-only leaves seq_run out; leave one of them out")
	}
	token := os.Getenv(envMCPToken)
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return bad("--token-file: %v", err)
		}
		token = strings.TrimSpace(string(b))
	}
	addr := ""
	if *listen != "" {
		if addr, err = mcpserver.ListenAddr(*listen, token); err != nil {
			return bad("%v", err)
		}
	} else if token != "" && *tokenFile != "" {
		return bad("--token-file goes with --listen (over stdio the client starts this process itself)")
	} else if f := givenAny(fs, "max-sessions", "body-timeout"); f != "" {
		return bad("%s goes with --listen (over stdio there is one session, the client's)", f)
	}
	if *maxSessions < 1 {
		return bad("--max-sessions %d: want at least 1", *maxSessions)
	}
	if *bodyTimeout < 100*time.Millisecond {
		return bad("--body-timeout %s: want at least 100ms", *bodyTimeout)
	}
	cfg := mcpserver.Config{ReadOnly: *readOnly, Tools: prefixes.values, RunWait: *wait, Logger: log}
	if err := cfg.Validate(); err != nil {
		return bad("%v", err)
	}

	var nc *nats.Conn
	if *local != "" {
		stack, stopProblems, code := startLocalStack(ctx, env, *local, *toolsRoot, *data, allow.values, log)
		if stack == nil {
			return code
		}
		defer func() {
			stopProblems()
			stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = stack.Stop(stopCtx)
		}()
		url := stack.URL()
		if nc, err = nats.Connect(url, nats.Name("skillbus mcp serve"), nats.MaxReconnects(-1)); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v\n", err)
			return ExitFailure
		}
	} else {
		if !remote(env) {
			fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v; or serve an embedded skillbus of its own with --local DIR\n", errNoURL)
			return ExitFailure
		}
		// Keep trying to connect (and to reconnect): a client may start
		// this server before skillbus is up; tools answer "not reachable"
		// meanwhile.
		nc, _, err = natsconn.Connect(connSettings(env), "skillbus mcp serve", nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v\n", err)
			return connectExit(err)
		}
	}
	defer drainWait(nc, 5*time.Second)

	srv, err := mcpserver.New(nc, cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v\n", err)
		return ExitUsage
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v\n", err)
		return ExitFailure
	}
	defer srv.Stop()
	if !nc.IsConnected() {
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: warning: not connected to NATS at %s yet; retrying (tools answer that skillbus is not reachable meanwhile)\n", nc.Opts.Url)
	}

	if addr == "" {
		// stdio: the session ends when the client closes our stdin.
		// A line that is not a JSON-RPC message is answered with an error
		// and skipped; it does not end the session.
		t := mcpserver.StdioTransport(env.Stdin, rawWriter(env.Stdout))
		if err := srv.MCP().Run(ctx, t); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
			fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v\n", err)
			return ExitFailure
		}
		return ExitOK
	}
	return serveMCPHTTP(ctx, env, srv, addr, mcpserver.HTTPOptions{Token: token, MaxSessions: *maxSessions, BodyTimeout: *bodyTimeout})
}

// serveMCPHTTP serves srv on addr until ctx ends.
func serveMCPHTTP(ctx context.Context, env Env, srv *mcpserver.Server, addr string, o mcpserver.HTTPOptions) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: cannot listen on %s: %v\n", addr, err)
		return ExitFailure
	}
	hs := &http.Server{Handler: srv.HTTPHandler(o), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: httplimit.DefaultIdleTimeout}
	auth := "no token (this machine only)"
	if o.Token != "" {
		auth = "a bearer token required"
	}
	fmt.Fprintf(env.Stderr, "skillbus mcp serve: serving MCP (streamable HTTP) at http://%s%s, %s; Ctrl-C to stop\n", l.Addr(), mcpserver.HTTPPath, auth)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	select {
	case err := <-done:
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: %v\n", err)
		return ExitFailure
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	return ExitOK
}

// startLocalStack starts the embedded stack of --local and reports the
// registry's problems with DIR's files on stderr until stopProblems is
// called. It returns a nil stack and the exit code when it cannot start.
func startLocalStack(ctx context.Context, env Env, dir, toolsRoot, data string, allow []string, log *slog.Logger) (_ *devstack.Stack, stopProblems func(), _ int) {
	if code := checkBuiltin(env, "mcp serve", "tools-root", builtin.Config{Root: toolsRoot, AllowCommands: allow}); code >= 0 {
		return nil, nil, code
	}
	since := time.Now()
	stack, err := devstack.Start(ctx, devstack.Config{
		Dir: dir, DataDir: data, Host: "127.0.0.1", Port: 0,
		Tools:     builtin.Config{Root: toolsRoot, AllowCommands: allow},
		FetchWait: time.Second, Logger: log,
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus mcp serve: --local: %s\n", errtext.Error(err))
		if errors.Is(err, builtin.ErrConfig) {
			return nil, nil, ExitUsage
		}
		return nil, nil, ExitFailure
	}
	w := &prefixWriter{w: env.Stderr, old: []byte("skillbus dev: "), new: []byte("skillbus mcp serve: ")}
	stopProblems = func() {}
	if stop, err := reportRegistryProblems(ctx, w, stack.URL(), since); err == nil {
		stopProblems = stop
	}
	fmt.Fprintf(env.Stderr, "skillbus mcp serve: embedded skillbus at NATS_URL=%s (definitions %s, tools root %s)\n", stack.URL(), dir, stack.ToolsRoot())
	return stack, stopProblems, ExitOK
}

// prefixWriter rewrites a prefix in what it writes (the registry problem
// lines of `skillbus dev`, shown under this command's name).
type prefixWriter struct {
	w        io.Writer
	old, new []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(bytes.ReplaceAll(b, p.old, p.new)); err != nil {
		return 0, err
	}
	return len(b), nil
}
