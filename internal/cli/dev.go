package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/internal/telemetry"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

func devCommand() command {
	return command{
		summary: "run the all-in-one stack (NATS, registry, seqworker, skillface, tools) until Ctrl-C",
		usage: `Usage: skillbus dev [--dir DIR] [--data DIR] [--port N] [--host HOST] [--auth] [--ui-port N] [--tools-root DIR] [--allow-cmd NAMES] [--agent NAME]
                    [--auth-dir DIR] [--verbose]

Runs all of skillbus in this process until interrupted, like
` + "`temporal server start-dev`" + `: an embedded NATS server with JetStream and a
persistent store, the registry loading and watching DIR (skills and
sequences; edits are picked up live), the seqworker, skillface and the
built-in tools (fs.*, text.render; cmd.run with --allow-cmd) rooted at
--tools-root. It prints the NATS URL: export it as NATS_URL for the other
skillbus commands and for the nats CLI (` + "`nats micro ls`" + `), and the URL of
the web console (runs live, sequences, skills, assembly preview, tools;
docs/console.md), served on the same loopback address. Once everything
serves, it publishes agent_ready for --agent, so boot sequences run.
The test files under DIR (skillbus test, docs/testing.md) run once at the
start and again when one of them or a definition it tests changes; each
run prints "skillbus dev: tests FILE: N passed, N failed" on stderr, with
a line per failing case.

Flags:
  --dir DIR           skills and sequences to load and watch (default .)
  --data DIR          JetStream store, kept across restarts
                      (default $XDG_DATA_HOME/skillbus/dev or ~/.local/share/skillbus/dev)
  --port N            client port (default 4222; 0 picks a free one)
  --host HOST         listen address (default 127.0.0.1); without --auth
                      only a loopback address (127.0.0.1, ::1, localhost):
                      the dev server then has no authentication
  --auth              lock the bus down (docs/security.md): the server
                      trusts the users of a ` + "`skillbus auth`" + ` setup in
                      --auth-dir (made or brought up to date at start), each
                      service connects as its own role, and the creds for
                      your commands are printed
  --auth-dir DIR      the setup --auth uses (default DATA/auth)
  --ui-port N         the web console's port (default 4280; 0 picks a free
                      one; -1 serves no console); always on a loopback
                      address (--host when it is one, else 127.0.0.1); with
                      --auth it connects as the console role
  --tools-root DIR    the built-in tools' root (default .)
  --allow-cmd NAMES   commands cmd.run may run, comma-separated (default none:
                      cmd.run is not served)
  --agent NAME        the agent announced with agent_ready (default dev;
                      "" announces none; a name in any script, as for
                      sequences)
  --verbose           print the services' logs

Examples:
  skillbus dev --dir examples
  skillbus dev --port 0 --data /tmp/sb --allow-cmd git,go
  skillbus dev --auth --host 0.0.0.0     # reachable from other machines, with users
  export NATS_URL=nats://127.0.0.1:4222; skillbus seqs

Ctrl-C or SIGTERM stops the services gracefully (runs in flight get up to
15 s); a second one forces an immediate exit (code 1).

Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 could not start (port in use:
try --port 0; the --data store in use by another process) or forced exit,
2 bad command line.
`,
		run: runDev,
	}
}

// defaultDataDir is the persistent store of `skillbus dev`.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "skillbus", "dev")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "skillbus", "dev")
	}
	return filepath.Join(os.TempDir(), "skillbus-dev")
}

func runDev(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "dev", devCommand)
	dir := fs.String("dir", ".", "skills and sequences to load and watch")
	data := fs.String("data", "", "JetStream store directory")
	port := fs.Int("port", 4222, "client port (0 = free port)")
	uiPort := fs.Int("ui-port", 4280, "web console port (0 = free port, -1 = none)")
	host := fs.String("host", "127.0.0.1", "listen address")
	toolsRoot := fs.String("tools-root", ".", "built-in tools' root")
	var allow stringList
	allow.split = true
	fs.Var(&allow, "allow-cmd", "commands cmd.run may run")
	agent := fs.String("agent", "dev", "agent announced with agent_ready")
	verbose := fs.Bool("verbose", false, "print the services' logs")
	lock := fs.Bool("auth", false, "lock the bus down with a skillbus auth setup")
	authDir := fs.String("auth-dir", "", "the setup of --auth")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "skillbus dev: unexpected argument %q (give the directory with --dir)\n", pos[0])
		return ExitUsage
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(env.Stderr, "skillbus dev: --port %d is not a port (0-65535)\n", *port)
		return ExitUsage
	}
	if *uiPort < -1 || *uiPort > 65535 {
		fmt.Fprintf(env.Stderr, "skillbus dev: --ui-port %d is not a port (0-65535, or -1 for no console)\n", *uiPort)
		return ExitUsage
	}
	if *authDir != "" && !*lock {
		fmt.Fprintln(env.Stderr, "skillbus dev: --auth-dir is only used with --auth; add --auth")
		return ExitUsage
	}
	if !*lock {
		if err := loopbackOnly(*host); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: %v\n", err)
			return ExitUsage
		}
	}
	if *agent != "" {
		*agent = seq.NormalizeName(*agent)
		if err := seq.CheckName(*agent); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: --agent: %v\n", err)
			return ExitUsage
		}
	}
	if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
		fmt.Fprintf(env.Stderr, "skillbus dev: --dir %s is not a directory; give the directory of your skills and sequences (default .)\n", *dir)
		return ExitUsage
	}
	if code := checkBuiltin(env, "dev", "tools-root", builtin.Config{Root: *toolsRoot, AllowCommands: allow.values}); code >= 0 {
		return code
	}
	if *port != 0 {
		// The embedded server would wait its whole ready timeout on a port
		// in use; say so at once.
		l, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: cannot listen on %s:%d (%v): another skillbus dev or NATS server may be running there; pick another port with --port N, or a free one with --port 0\n", *host, *port, err)
			return ExitFailure
		}
		l.Close()
	}
	if *data == "" {
		*data = defaultDataDir()
	}
	if err := os.MkdirAll(*data, 0o755); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus dev: --data %s: %v\n", *data, err)
		return ExitFailure
	}
	var setup *auth.Setup
	if *lock {
		if *authDir == "" {
			*authDir = filepath.Join(*data, "auth")
		}
		if setup, err = auth.Generate(auth.Options{Dir: *authDir, URL: "nats://" + net.JoinHostPort(clientHost(*host), strconv.Itoa(*port))}); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: --auth: %v\n", err)
			return ExitFailure
		}
	}
	var log *slog.Logger
	if *verbose {
		log = slog.New(slog.NewTextHandler(env.Stderr, nil))
	}
	// Trace export from the standard OTEL_* variables, as the services do.
	exporting, flush, err := telemetry.Setup(ctx, "dev")
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus dev: %v\n", err)
		return ExitUsage
	}
	if exporting {
		fmt.Fprintln(env.Stderr, "skillbus dev: exporting traces with OTLP/HTTP (OTEL_EXPORTER_OTLP_* settings)")
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = flush(fctx)
	}()
	problemsSince := time.Now() // registry problems from here on go to stderr
	stack, err := devstack.Start(ctx, devstack.Config{
		DataDir: *data, Host: *host, Port: *port, Dir: *dir, Logger: log,
		Tools: builtin.Config{Root: *toolsRoot, AllowCommands: allow.values},
		Auth:  setup,
		// A long-running stack polls less often than a single run.
		FetchWait: 2 * time.Second,
	})
	if err != nil {
		if ctx.Err() != nil {
			// Ctrl-C or SIGTERM while starting: a stop, not a failure.
			fmt.Fprintln(env.Stderr, "skillbus dev: stopped while starting")
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "skillbus dev: %v\n", err)
		return ExitFailure
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), devStopBudget)
		defer cancel()
		// Say what a slow stop waits for (runs in flight finishing their
		// group), once it is slow.
		slow := time.AfterFunc(time.Second, func() {
			fmt.Fprintf(env.Stderr, "skillbus dev: stopping: runs in flight get up to %s to finish their group, then are handed back (they resume when dev starts again on this --data); Ctrl-C again to stop at once\n", devStopBudget)
		})
		defer slow.Stop()
		if err := stack.Stop(stopCtx); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: stop: %v\n", err)
		}
		fmt.Fprintln(env.Stderr, "skillbus dev: stopped")
	}()
	url := dialURL(stack.URL())
	var readerOpts, runnerOpts, consoleOpts []nats.Option
	consoleCreds := ""
	if setup != nil {
		if *port == 0 {
			// The contexts name the port the server got.
			if s, err := auth.Generate(auth.Options{Dir: *authDir, URL: url}); err == nil {
				setup = s
			}
		}
		readerOpts, _ = auth.ConnectOptions(setup.CredsFile(auth.RoleReader))
		runnerOpts, _ = auth.ConnectOptions(setup.CredsFile(auth.RoleRunner))
		consoleCreds = setup.CredsFile(auth.RoleConsole)
		consoleOpts, _ = auth.ConnectOptions(consoleCreds)
	}
	// Registry problems (invalid files, clashes): devproblems.go.
	if stopProblems, err := reportRegistryProblems(ctx, env.Stderr, url, problemsSince, readerOpts...); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus dev: registry problems will not be shown (`skillbus watch` shows them): %v\n", err)
	} else {
		defer stopProblems()
	}
	defer watchTests(ctx, env.Stderr, *dir, devTestsEvery)() // skillbus test on change: devtests.go
	uiURL := ""
	if *uiPort >= 0 {
		uiHost := *host
		if !console.IsLoopback(uiHost) {
			uiHost = "127.0.0.1" // the console stays on this machine (docs/console.md)
		}
		stopUI, u, err := startConsole(ctx, url, net.JoinHostPort(uiHost, strconv.Itoa(*uiPort)), consoleCreds, log, consoleOpts...)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: the web console is not served: %v (pick another port with --ui-port N, a free one with --ui-port 0)\n", err)
		} else {
			defer stopUI()
			uiURL = u
		}
	}
	absDir, _ := filepath.Abs(*dir)
	fmt.Fprintf(env.Stdout, "skillbus dev is running.\n\n  NATS_URL=%s\n", url)
	if uiURL != "" {
		fmt.Fprintf(env.Stdout, "  console:    %s\n", uiURL)
	}
	fmt.Fprintf(env.Stdout, "  store:      %s\n  definitions: %s (watched)\n  tools root: %s\n\n", stack.StoreDir(), absDir, stack.ToolsRoot())
	if setup == nil {
		fmt.Fprintf(env.Stdout, "In another shell:\n  export NATS_URL=%s\n  skillbus seqs          # the stored sequences\n  skillbus tools         # the tool providers\n  nats micro ls          # the services, with the nats CLI\n\n", url)
	} else {
		printDevAuth(env, url, setup, uiURL != "")
	}
	if *agent != "" {
		if err := announce(ctx, url, *agent, runnerOpts...); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus dev: agent_ready not published: %v\n", err)
		} else {
			fmt.Fprintf(env.Stdout, "Published agent_ready for agent %q: boot sequences run now.\n", *agent)
		}
	}
	fmt.Fprintln(env.Stdout, "Press Ctrl-C to stop.")
	<-ctx.Done()
	return ExitOK
}

// devStopBudget bounds `skillbus dev`'s stop: the seqworker lets running
// groups finish within it, then hands their runs back.
const devStopBudget = 15 * time.Second

// startConsole serves the web console (internal/console) on listen, a
// loopback address, with a connection of its own to the dev stack (creds
// and opts: the console role's credentials on a locked-down stack,
// docs/security.md), and returns the function that stops it and its URL.
// The connection's asynchronous errors go to log (the page shows the
// permission refusals), never raw to stderr.
func startConsole(ctx context.Context, natsURL, listen, creds string, log *slog.Logger, opts ...nats.Option) (func(), string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	errs := nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		log.Warn("console: NATS error", "subject", subject, "err", err)
	})
	nc, err := nats.Connect(natsURL, append([]nats.Option{nats.Name("skillbus dev console"), nats.MaxReconnects(-1), errs}, opts...)...)
	if err != nil {
		return nil, "", err
	}
	user := "skillbus dev"
	if u := os.Getenv("USER"); u != "" {
		user += " (" + u + ")"
	}
	srv, err := console.New(nc, console.Config{Listen: listen, NATSURL: natsURL, User: user, Logger: log, Creds: creds})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		nc.Close()
		return nil, "", err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Stop(sctx)
		drainWait(nc, 2*time.Second)
	}, srv.URL(), nil
}

// loopbackOnly refuses a listen address other than loopback: the dev stack
// runs its NATS server without authentication, so anyone who could reach it
// could store sequences, run the built-in tools (cmd.run with --allow-cmd)
// and read the assembled prompts. docs/operations.md ("skillbus dev is for
// one machine").
func loopbackOnly(host string) error {
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--host %q is not a loopback address: without --auth skillbus dev runs NATS without authentication, so anyone who can reach %q could store and run sequences, call the tools (cmd.run included) and read prompts; "+
		"keep the default 127.0.0.1 (or ::1, localhost), or add --auth to lock the bus down with one NATS user per role (docs/security.md)", host, host)
}

// printDevAuth tells which creds the user's commands take on a locked-down
// dev stack, and the web console's (consoleServed: dev serves one).
func printDevAuth(env Env, url string, s *auth.Setup, consoleServed bool) {
	fmt.Fprintf(env.Stdout, "The bus is locked down (docs/security.md): every service connects as its own\nNATS user, and so must your commands. Users and server configuration: %s\n\n", s.Dir)
	fmt.Fprintf(env.Stdout, "In another shell:\n  export NATS_URL=%s\n  export NATS_CREDS=%s   # runs, prompts, seq_create, seqs rm\n  skillbus seqs && skillbus tools\n", url, s.CredsFile(auth.RoleAgent))
	fmt.Fprintf(env.Stdout, "  # narrower: %s (start, watch, cancel runs), %s (read only)\n", s.CredsFile(auth.RoleRunner), s.CredsFile(auth.RoleReader))
	fmt.Fprintf(env.Stdout, "  nats --context %s micro ls   # the nats CLI (the context sets the user's inbox prefix)\n", s.ContextFile(auth.RoleReader))
	if consoleServed {
		fmt.Fprintf(env.Stdout, "  # the console above connects as the console role: %s\n\n", s.CredsFile(auth.RoleConsole))
	} else {
		fmt.Fprintf(env.Stdout, "  skillbus ui --creds %s   # the web console, as the console role\n\n", s.CredsFile(auth.RoleConsole))
	}
}

// dialURL returns the server's client URL with a wildcard listen address
// (--host 0.0.0.0) replaced by the loopback, so the URL printed can be
// dialled as it is.
func dialURL(u string) string {
	for _, w := range []string{"//0.0.0.0:", "//[::]:"} {
		u = strings.Replace(u, w, "//127.0.0.1:", 1)
	}
	return u
}

// clientHost is the host clients dial for a listen address: a wildcard
// address becomes the loopback.
func clientHost(host string) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		return "127.0.0.1"
	}
	return host
}

// announce publishes agent_ready for agent with a new boot id, connecting
// with opts (a user's credentials on a locked-down stack).
func announce(ctx context.Context, url, agent string, opts ...nats.Option) error {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("skillbus dev agent_ready")}, opts...)...)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = publishAgentReady(ctx, nc, agent, nuid.Next())
	return err
}

// publishAgentReady publishes an AgentReady event to the EVENTS stream with
// the boot id as message id, and returns the event.
func publishAgentReady(ctx context.Context, nc *nats.Conn, agent, bootID string) (*events.AgentReady, error) {
	subj, err := events.AgentReadySubject(agent)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %v", agent, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ev := &events.AgentReady{Agent: agent, BootID: bootID, At: time.Now().UTC()}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if _, err := events.PublishMessage(ctx, js, subj, ev, jetstream.WithMsgID("agent_ready-"+agent+"-"+bootID)); err != nil {
		return nil, fmt.Errorf("publish on %s: %v (is the EVENTS stream provisioned? a skillbus service creates it at start)", subj, err)
	}
	return ev, nil
}
