package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/httplimit"
	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

func uiCommand() command {
	return command{
		summary: "serve the web console (runs live, sequences, skills, assembly preview, tools)",
		usage: `Usage: skillbus ui [--listen HOST:PORT] [--token-file FILE] [flags]

Serves the web console against the skillbus at NATS_URL until Ctrl-C: runs
newest first and live (start, cancel, rerun), each run drawn as its
sequence's shape with its calls' status, the stored sequences (with a run
form checked like --arg), the skills with their warnings and sections, an
assembly preview (what skillface would list, activate and inject for a
turn), and the tools with a form to call one. Every action uses the same
endpoints as the skillbus command, with the same errors. docs/console.md
describes the pages. ` + "`skillbus dev`" + ` serves it too, on 127.0.0.1:4280.

Security: by default the console listens on 127.0.0.1 only and answers only
to localhost, so only this machine's users reach it — anyone who can open
it can start and cancel runs (and call tools, when its credentials allow)
with this command's NATS credentials. On a locked-down bus give it the
console role's creds (` + "`skillbus auth`" + ` writes creds/console.creds;
docs/security.md): the runs list is then live, queued runs included; the
Tools page's form needs ` + "`skillbus auth --console-calls-tools`" + `. With
credentials that lack some permissions it starts and serves what they
allow: what a creds file does not allow is said up front on every page
(unavailable pages, disabled buttons), and anything else the server refuses
fails at once, naming the subject and the creds, on the page where it was
tried.

--listen on any other address (0.0.0.0:4280, a LAN address) REQUIRES a
token, from the environment (SKILLBUS_TOKEN) or a file (--token-file), as
` + "`skillbus mcp serve`" + ` takes its own: never on the command line, where every user
of the machine can read it, and never printed. Without one the console
refuses to start. The token is asked for once on the login page and kept in
a cookie (or sent as "Authorization: Bearer TOKEN").
Actions are refused from other web sites (same-origin and CSRF checks).
Over a network, serve HTTPS (--https-cert, --https-key) or put a TLS proxy
in front, so the token does not travel in clear.

Flags:
  --listen HOST:PORT   where to serve (default 127.0.0.1:4280; port 0 picks
                       a free one)
  --token-file FILE    the token every browser must present, read from FILE
                       (or SKILLBUS_TOKEN); required unless --listen is a
                       loopback address; at least 16 characters
  --https-cert FILE    serve HTTPS with this certificate (PEM) ...
  --https-key FILE     ... and its private key (PEM)
  --user NAME          recorded as who cancels runs from the page (default
                       "skillbus console ($USER)")
  --max-streams N      most live event streams (open pages) at once
                       (default 64); one more is answered 503
  --body-timeout D     how long a request body may take to arrive (default
                       10s); a slower one is answered 408
  --health-addr ADDR   serve /livez, /readyz and /metrics on ADDR (e.g. :8080)
  --shutdown-budget D  the whole graceful shutdown at SIGTERM (default 25s)
  --log-json           log JSON lines
  --log-level LEVEL    debug, info, warn or error (default info)
Every flag also comes from SKILLBUS_<FLAG> (SKILLBUS_LISTEN, SKILLBUS_TOKEN_FILE).
Like the services it waits for NATS at start and reconnects for ever.

Examples:
  export NATS_URL=nats://127.0.0.1:4222; skillbus ui
  skillbus ui --creds ./auth/creds/console.creds
  skillbus ui --listen 127.0.0.1:0
  SKILLBUS_TOKEN=$(openssl rand -hex 24) skillbus ui --listen 0.0.0.0:4280 --https-cert c.pem --https-key k.pem
  skillbus ui --listen 0.0.0.0:4280 --token-file /run/secrets/console-token

Exit codes: 0 stopped with Ctrl-C or SIGTERM; 1 NATS unreachable for good,
the address in use; 2 bad command line (a non-loopback --listen without a
token, or a token under 16 characters there).
`,
		run: runUI,
	}
}

func runUI(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "ui", uiCommand)
	listen := fs.String("listen", console.DefaultListen, "where to serve, HOST:PORT")
	tokenFile := fs.String("token-file", "", "file holding the token browsers must present")
	cert := fs.String("https-cert", "", "HTTPS certificate (PEM)")
	key := fs.String("https-key", "", "HTTPS private key (PEM)")
	user := fs.String("user", "", "recorded as who cancels runs")
	maxStreams := fs.Int("max-streams", httplimit.DefaultMaxStreams, "most live event streams (open pages) at once")
	bodyTimeout := fs.Duration("body-timeout", httplimit.DefaultBodyTimeout, "how long a request body may take to arrive")
	// --health-addr, --shutdown-budget, logs; SKILLBUS_* (natsclient.go).
	// The console works on with credentials that lack some permissions
	// and shows what they do not allow on its pages (docs/console.md), so
	// a refused subscription does not end it.
	sf := serveFlags{showsRefusals: true}
	sf.register(fs)
	pos, err := sf.parse(env, fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "skillbus ui: unexpected argument %q\n%s\n", pos[0], helpHint("ui"))
		return ExitUsage
	}
	host, port, err := net.SplitHostPort(*listen)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("the port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus ui: --listen %q: write HOST:PORT, e.g. 127.0.0.1:4280 (%v)\n", *listen, err)
		return ExitUsage
	}
	// One rule with `skillbus mcp serve`: the token comes from the
	// environment or a file, never the command line (ps shows it to every
	// user), and is never printed.
	tok := strings.TrimSpace(os.Getenv(envUIToken))
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus ui: --token-file: %v\n", err)
			return ExitUsage
		}
		tok = strings.TrimSpace(string(b))
	}
	token := &tok
	if !console.IsLoopback(host) {
		switch {
		case *token == "":
			fmt.Fprintf(env.Stderr, "skillbus ui: --listen %s is not a loopback address, so the console needs a token: put one in %s or in a file given with --token-file (for example `export %s=$(openssl rand -hex 24)`)\n", *listen, envUIToken, envUIToken)
			return ExitUsage
		case len(*token) < mcpserver.MinTokenLength:
			// The same floor as `skillbus mcp serve`: the console can start
			// runs and call tools (cmd.run among them) for whoever has it.
			fmt.Fprintf(env.Stderr, "skillbus ui: the token is %d characters; on %s, which is not loopback, use at least %d random characters (for example `openssl rand -hex 24`)\n", len(*token), *listen, mcpserver.MinTokenLength)
			return ExitUsage
		}
	}
	if *maxStreams < 1 || *bodyTimeout < 100*time.Millisecond {
		fmt.Fprintf(env.Stderr, "skillbus ui: --max-streams %d, --body-timeout %s: want at least 1 and 100ms\n", *maxStreams, *bodyTimeout)
		return ExitUsage
	}
	if *user == "" {
		*user = "skillbus console"
		if u := os.Getenv("USER"); u != "" {
			*user += " (" + u + ")"
		}
	}
	cfg := console.Config{Listen: *listen, Token: *token, TLSCert: *cert, TLSKey: *key, User: *user, NATSURL: natsconn.Redact(connSettings(env).URL.V),
		MaxStreams: *maxStreams, BodyTimeout: *bodyTimeout}
	// The console names its credentials (and their role) when the server
	// refuses something, and reads what a creds file allows (the Tools
	// page's form). Unusable settings are reported by serveService.
	if c, err := connSettings(env).Resolve(); err == nil {
		cfg.Creds, cfg.Credentials = c.Creds.V, c.Credentials()
	}
	return serveService(ctx, env, "ui", &sf, func(ctx context.Context, rt servicecmd.Runtime) (func(context.Context) error, error) {
		cfg.Logger = rt.Log
		srv, err := console.New(rt.Conn, cfg)
		if err != nil {
			return nil, err
		}
		if err := srv.Start(ctx); err != nil {
			return nil, err
		}
		url := srv.URL()
		switch {
		case *token != "":
			fmt.Fprintf(env.Stdout, "skillbus console: %s (log in with the token)\n", url)
		default:
			fmt.Fprintf(env.Stdout, "skillbus console: %s\n", url)
		}
		return srv.Stop, nil
	})
}

// envUIToken names the variable holding the console's token (docs/console.md).
const envUIToken = "SKILLBUS_TOKEN"
