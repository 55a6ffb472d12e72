package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/internal/telemetry"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// EnvNATSURL names the environment variable holding the NATS server URL(s)
// (comma-separated for a cluster), as the nats CLI reads it.
const EnvNATSURL = "NATS_URL"

// requestTimeout bounds one request to a skillbus service.
const requestTimeout = 15 * time.Second

// errNoURL explains what to do when a command needs NATS and neither
// NATS_URL nor a nats CLI context says where it is.
var errNoURL = errors.New("NATS_URL is not set: this command talks to a running skillbus. " +
	"Start one on this machine with `skillbus dev` (it prints the URL to export), " +
	"or export NATS_URL=nats://HOST:4222 for your cluster (or name a nats CLI context with --context NAME)")

// connSettings returns the command's NATS connection settings: the
// connection flags (--context, --creds, --nkey, --tls-cert, --tls-key,
// --tls-ca) over the NATS_* variables (internal/natsconn).
func connSettings(env Env) natsconn.Settings {
	if env.conn != nil {
		return *env.conn
	}
	return natsconn.FromEnv()
}

// remote reports whether the command was told where a running skillbus is
// (NATS_URL or a context): `run` then submits to it instead of starting its
// own stack.
func remote(env Env) bool { return connSettings(env).Given() }

// connect opens a NATS connection as the connection settings say, named
// after the command; opts are added to (and may override) the defaults.
// Errors: errNoURL; natsconn.ErrConfig for unusable settings (exit 2);
// a connect error saying where it tried.
func connect(env Env, command string, opts ...nats.Option) (*nats.Conn, error) {
	s := connSettings(env)
	if !s.Given() {
		return nil, errNoURL
	}
	opts = append([]nats.Option{refusalHandler(env, command)}, opts...)
	credsInUse.Store(s.Creds.V != "" || s.NKey.V != "")
	nc, _, err := natsconn.Connect(s, "skillbus "+command, opts...)
	if err != nil {
		if errors.Is(err, natsconn.ErrConfig) {
			return nil, configError{err}
		}
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("%v: the server wants credentials these settings do not give (or refuses them): give the creds file of your role with --creds FILE or NATS_CREDS (`skillbus dev --auth` prints it; docs/security.md)", err)
		}
		return nil, fmt.Errorf("%v; check the URL, or start a local stack with `skillbus dev`", err)
	}
	return nc, nil
}

// configError is a natsconn.ErrConfig error as a person reads it: the
// settings that cannot work, without the Go package's prefix.
type configError struct{ err error }

func (e configError) Error() string { return errtext.Error(e.err) }
func (e configError) Unwrap() error { return e.err }

// refusalHandler reports what the server refused this command's user
// (docs/security.md: each role may publish and subscribe only to its own
// subjects) on stderr, at once. A refused publish means the command cannot
// do its job: the connection is closed, so the command fails now instead of
// waiting for a reply that cannot come.
func refusalHandler(env Env, command string) nats.Option {
	return nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) {
		if !errors.Is(err, nats.ErrPermissionViolation) {
			return
		}
		what := strings.TrimPrefix(err.Error(), nats.ErrPermissionViolation.Error()+": ")
		fmt.Fprintf(env.Stderr, "skillbus %s: NATS refused it: %s; the credentials in use do not allow it (docs/security.md lists what each role may do)\n", command, what)
		if strings.Contains(err.Error(), "Publish to") {
			if f, ok := rawWriter(env.Stderr).(*refusalFilter); ok {
				f.closed.Store(true)
			}
			nc.Close()
		}
	})
}

// connectExit is the exit code of a connect error: 2 for settings that
// cannot work (a missing creds file, a bad context), else 1.
func connectExit(err error) int {
	if errors.Is(err, natsconn.ErrConfig) {
		return ExitUsage
	}
	return ExitFailure
}

// withConn runs fn with a connection as the connection settings say,
// printing a connection problem on stderr (exit 1; 2 for unusable
// settings). The connection is drained afterwards.
func withConn(env Env, command string, fn func(nc *nats.Conn) int) int {
	nc, err := connect(env, command)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", command, err)
		return connectExit(err)
	}
	defer drainWait(nc, 10*time.Second)
	return fn(nc)
}

// drainWait drains nc — subscriptions finish what they received, pending
// publishes are flushed — and waits until it is closed, at most d.
func drainWait(nc *nats.Conn, d time.Duration) {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-closed:
	case <-time.After(d):
		nc.Close()
	}
}

// request sends req (JSON-encoded unless it is []byte; an events.Message
// with events.Encode) to subject and decodes the reply into resp (when not
// nil), with pkg/client's Requester, within requestTimeout. Errors:
// *toolcall.Error for an error reply (its Code and Description), a clear
// message for no responders (which service to start) and timeouts.
func request(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	return client.Requester{
		Timeout: requestTimeout,
		Cap:     true,
		NoResponders: func(subject string) error {
			return fmt.Errorf("no service answers on %s: %s", subject, whoServes(subject))
		},
		NoReply: func(subject string, _ time.Duration) error {
			return fmt.Errorf("no reply on %s within %v: the service is busy or stuck; check its logs", subject, requestTimeout)
		},
		ErrorReply: func(_, code string, reply *nats.Msg) error {
			return &toolcall.Error{Code: code, Description: client.ReplyText(reply)}
		},
	}.Do(ctx, nc, subject, req, resp)
}

// refusalFilter is the command line's stderr. Once refusalHandler has
// said what the server refused and closed the connection, the command's
// own report of that closed connection ("nats: connection closed", with
// whatever guess it adds) says nothing more and would mislead: such lines
// are dropped, so the refusal is the one line the user reads.
type refusalFilter struct {
	w      io.Writer
	closed atomic.Bool
}

func (f *refusalFilter) Write(p []byte) (int, error) {
	if f.closed.Load() && bytes.Contains(p, []byte(nats.ErrConnectionClosed.Error())) {
		return len(p), nil
	}
	return f.w.Write(p)
}

// credsInUse records that the command's connection authenticates with
// credentials (a creds file or an nkey), for whoServes.
var credsInUse atomic.Bool

// whoServes says which process serves a subject, for "no responders".
func whoServes(subject string) string {
	// A service that runs is still not reached with credentials of another
	// NATS account (the system account's, say): each account is a bus of
	// its own.
	account := ""
	if credsInUse.Load() {
		account = " (if it runs, the credentials in use may be of another NATS account than skillbus's, such as the system account's: use the creds of a skillbus role)"
	}
	switch {
	case strings.HasPrefix(subject, events.RegistryPrefix):
		return "the registry is not running; start `skillbus dev` or `registry` against this NATS" + account
	case strings.HasPrefix(subject, events.SeqPrefix):
		return "no seqworker is running; start `skillbus dev` or `seqworker` against this NATS" + account
	case strings.HasPrefix(subject, events.SkillfacePrefix):
		return "skillface is not running; start `skillbus dev` or `skillface` against this NATS" + account
	case strings.HasPrefix(subject, events.ToolPrefix):
		return "no provider serves this tool; list the tools with `skillbus tools`"
	}
	return "nobody listens"
}

// parseInterleaved parses args with fs the way kubectl, docker and the nats
// CLI do: flags may come before, between or after the positional
// arguments (`run FILE --arg k=v`, `sections --json FILE`), as --flag
// value, --flag=value or -flag value; "--" ends the flags, and everything
// after it is positional (`mcp -- npx -y server`, `sections -- --odd.md`).
// It returns the positional arguments in order. Errors are fs.Parse's
// (an unknown flag, a missing or malformed value, flag.ErrHelp), already
// printed with the command's usage on fs's output.
//
// Every command parses its flags here: `skillbus completion` and the
// flags-anywhere tests read each command's flags through it (inspect).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	flags, pos := splitArgs(fs, args)
	err := fs.Parse(flags)
	if err == nil {
		// Only a lone "-" can be left over; it is positional.
		pos = append(fs.Args(), pos...)
	}
	if h := takeInspector(fs); h != nil {
		h(fs, pos, err)
		return nil, errInspected
	}
	r, _ := reporters.LoadAndDelete(fs)
	if err != nil {
		if report, ok := r.(func(error)); ok {
			report(err)
		}
		return nil, err
	}
	return pos, nil
}

// stringList is a repeatable string flag; each value may also be a
// comma-separated list when split is true.
type stringList struct {
	values []string
	split  bool
}

func (s *stringList) String() string { return strings.Join(s.values, ",") }

func (s *stringList) Set(v string) error {
	if !s.split {
		s.values = append(s.values, v)
		return nil
	}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			s.values = append(s.values, p)
		}
	}
	return nil
}

// newFlags returns a flag set whose errors parseInterleaved prints on
// stderr in the words of servicecmd.FlagError (the flag, the value, what it
// takes), then a one-line pointer to the command's --help rather than the
// whole usage, so the error stays on the screen. For a command that talks
// to NATS (connects) it also defines the connection flags (connUsage),
// bound to the command's settings. While the command is only being
// inspected (inspect), the flag set prints nothing and parseInterleaved
// hands it to the inspector instead of returning.
func newFlags(env Env, name string, c func() command) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if env.conn != nil && connects(name) {
		env.conn.Register(fs, false)
	}
	if env.inspect != nil {
		inspectors.Store(fs, env.inspect)
		return fs
	}
	reporters.Store(fs, func(err error) {
		if errors.Is(err, flag.ErrHelp) {
			if c != nil {
				fmt.Fprint(env.Stdout, usageOf(name, c()))
			}
			return
		}
		fmt.Fprintf(env.Stderr, "skillbus %s: %s\n", name, servicecmd.FlagError(fs, err))
		fmt.Fprintln(env.Stderr, helpHint(name))
	})
	return fs
}

// reporters maps each flag set made by newFlags to the function that
// prints its parse error, until parseInterleaved takes it.
var reporters sync.Map // *flag.FlagSet → func(error)

// helpHint is the line printed under a command line error: where the
// usage is, instead of the usage itself.
func helpHint(name string) string {
	return "Run `skillbus " + name + " --help` for the usage and examples."
}

// gotArgs writes the positional arguments a command was given, for a
// message that says they are wrong: "none", or the quoted list.
func gotArgs(pos []string) string {
	if len(pos) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q", pos)
}

// unknownSubcommand prints that the first of pos is no subcommand of
// command (subs, with their operands in list: "ls, show NAME and rm
// NAME"), with the one it most likely misspells (for 3 letters or more:
// any shorter word is within reach of ls); exit 2. A listing
// command (seqs, skills, runs, tools) takes no operands, so one is
// taken as a mistyped subcommand.
func unknownSubcommand(env Env, command string, pos []string, subs []string, list string) int {
	hint := ""
	if m := suggest.Closest(pos[0], subs); m != "" && len(pos[0]) >= 3 {
		hint = fmt.Sprintf(" (did you mean %s?)", m)
	}
	fmt.Fprintf(env.Stderr, "skillbus %s: unknown subcommand %q%s; the subcommands are %s\n%s\n", command, pos[0], hint, list, helpHint(command))
	return ExitUsage
}

// connects reports whether the command (or subcommand, "tools serve")
// named name talks to NATS and so takes the connection flags.
func connects(name string) bool {
	switch strings.Fields(name + " x")[0] {
	case "validate", "sections", "dev", "help", "auth", "version", "completion", "test":
		return false
	}
	return true
}

// usageOf returns a command's usage text, with the connection flags added
// for a command that connects.
func usageOf(name string, c command) string {
	if !connects(name) {
		return c.usage
	}
	return strings.TrimRight(c.usage, "\n") + "\n" + connUsage
}

// connUsage documents the connection flags every connecting command takes.
const connUsage = `
NATS connection (as the nats CLI reads it; docs/operations.md):
  NATS_URL            server URL(s), comma separated; user:password@ may
                      be part of a URL
  --context NAME      a nats CLI context (~/.config/nats/context/NAME.json)
                      or the path of a context file ($NATS_CONTEXT); its url,
                      credentials and TLS files apply where nothing else is set
  --creds FILE        credentials file: user JWT and seed ($NATS_CREDS)
  --nkey FILE         nkey seed file ($NATS_NKEY)
  --tls-cert FILE     TLS client certificate, PEM ($NATS_CERT; with --tls-key)
  --tls-key FILE      its private key, PEM ($NATS_KEY)
  --tls-ca FILE       CA certificates to trust for the server, PEM ($NATS_CA)
`

// flagExit maps a flag parse error onto an exit code: --help is success.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// serveFlags are the process flags of a command that serves until it is
// stopped (`tools serve`, `mcp`), as every skillbus service has them
// (docs/operations.md): health endpoint, shutdown budget, logs.
type serveFlags struct {
	healthAddr string
	budget     time.Duration
	logJSON    bool
	logLevel   string
	// showsRefusals is set by a command whose service works on with
	// refused subscriptions and shows them itself (servicecmd.Spec's
	// ShowsRefusals; `skillbus ui`); not a flag.
	showsRefusals bool
}

// register defines the flags on fs.
func (s *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.healthAddr, "health-addr", "", "serve /livez, /readyz and /metrics on this address")
	fs.DurationVar(&s.budget, "shutdown-budget", servicecmd.DefaultShutdownBudget, "the whole graceful shutdown")
	fs.BoolVar(&s.logJSON, "log-json", false, "log JSON lines")
	fs.StringVar(&s.logLevel, "log-level", "info", "debug, info, warn or error")
}

// errBadEnv marks a malformed SKILLBUS_* variable, already reported; it is
// a usage error (flagExit: exit 2).
var errBadEnv = errors.New("malformed SKILLBUS_* variable")

// parse sets fs's flags from their SKILLBUS_* variables, then parses args
// (parseInterleaved): a flag on the command line wins. A malformed
// variable is reported on stderr and returned as errBadEnv.
func (s *serveFlags) parse(env Env, fs *flag.FlagSet, args []string) ([]string, error) {
	if _, err := servicecmd.ApplyEnv(fs); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", fs.Name(), err)
		return nil, errBadEnv
	}
	return parseInterleaved(fs, args)
}

// serveService runs a provider the way the skillbus services run
// (servicecmd.Serve): it waits for NATS at start, reconnects for ever,
// serves the health endpoint, stops within the shutdown budget at SIGTERM,
// and exits 1 when the connection is closed for good. start begins
// serving on nc and returns the function that stops it (called with the
// stop share of the budget); it may call fail, from any goroutine, when
// serving cannot go on (the process then stops and exits 1). Logs go to
// stderr.
func serveService(ctx context.Context, env Env, name string, sf *serveFlags, start startFunc) int {
	if !remote(env) {
		fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", name, errNoURL)
		return ExitFailure
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(sf.logLevel)); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus %s: --log-level %q: want debug, info, warn or error\n", name, sf.logLevel)
		return ExitUsage
	}
	if sf.budget < time.Second {
		fmt.Fprintf(env.Stderr, "skillbus %s: --shutdown-budget %v: want at least 1s\n", name, sf.budget)
		return ExitUsage
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(env.Stderr, opts)
	if sf.logJSON {
		h = slog.NewJSONHandler(env.Stderr, opts)
	}
	log := slog.New(telemetry.LogHandler(h))
	o := servicecmd.Options{Name: strings.Fields(name)[0], Conn: connSettings(env), HealthAddr: sf.healthAddr, ShutdownBudget: sf.budget}
	return servicecmd.Serve(ctx, log, o, servicecmd.Spec{ShowsRefusals: sf.showsRefusals, New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
		return &funcService{rt: rt, start: start}, nil
	}})
}

// startFunc starts serving on rt.Conn (recording its metrics on
// rt.Meters, reporting a failure with rt.Fail); see serveService.
type startFunc func(ctx context.Context, rt servicecmd.Runtime) (stop func(context.Context) error, err error)

// funcService adapts a startFunc to servicecmd.Service.
type funcService struct {
	rt    servicecmd.Runtime
	start startFunc
	stop  func(context.Context) error
}

func (s *funcService) Start(ctx context.Context) error {
	stop, err := s.start(ctx, s.rt)
	s.stop = stop
	return err
}

func (s *funcService) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	return s.stop(ctx)
}
