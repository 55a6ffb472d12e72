package servicecmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/telemetry"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
)

// DefaultShutdownBudget is the default of --shutdown-budget: below
// Kubernetes' default 30 s termination grace period, so the whole
// sequence ends before the kubelet's SIGKILL.
const DefaultShutdownBudget = 25 * time.Second

// EnvPrefix starts the environment variable of every flag: --health-addr
// is also SKILLBUS_HEALTH_ADDR.
const EnvPrefix = "SKILLBUS_"

// EnvName returns the environment variable of the flag named flag:
// SKILLBUS_ plus the name in upper case with dashes as underscores.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Command describes a service binary for its help text.
type Command struct {
	// Name is the binary's name ("registry"); it prefixes its messages.
	Name string
	// Synopsis is the usage line without "Usage: " ("registry [flags] [DIR]").
	Synopsis string
	// About says what the service does, a paragraph.
	About string
	// Examples are command lines, one per line, shown under "Examples:".
	Examples []string
}

// Flags holds the command-line settings every service command shares.
// FlagSet binds them to a flag set with their defaults.
type Flags struct {
	// Conn are the NATS connection settings (--nats, --context, --creds,
	// --nkey, --tls-cert, --tls-key, --tls-ca and the NATS_* variables):
	// internal/natsconn.
	Conn natsconn.Settings
	// Replicas is --replicas: replicas of every stream and bucket
	// (0 = keep what the resources have; 1 when creating them). The
	// service's Config.Validate checks the range.
	Replicas int
	// Memory is --memory: keep streams and buckets in memory instead of
	// files.
	Memory bool
	// LogLevel is --log-level: debug, info (default), warn or error.
	LogLevel string
	// LogJSON is --log-json: log JSON lines instead of text.
	LogJSON bool
	// HealthAddr is --health-addr: the address of /livez, /readyz and
	// /metrics (internal/health); empty (default) serves none.
	HealthAddr string
	// ShutdownBudget is --shutdown-budget: how long the whole graceful
	// shutdown may take (see Run); default DefaultShutdownBudget.
	ShutdownBudget time.Duration

	cmd        Command
	stdout     io.Writer
	stderr     io.Writer
	version    bool
	shared     []string          // names of the shared flags, for the help
	unknownEnv []string          // SKILLBUS_* variables that name no flag
	fromEnv    map[string]string // flag → the SKILLBUS_* variable that set it (not overridden)
	set        *flag.FlagSet     // the flag set FlagSet returned
	started    time.Time         // when FlagSet was called: about the process start
}

// FlagSet returns a flag set for cmd with the shared flags registered on f
// (reading the NATS_* variables now). The caller adds its own flags, then
// calls Parse. Help goes to stdout, errors to stderr.
func (f *Flags) FlagSet(cmd Command, stdout, stderr io.Writer) *flag.FlagSet {
	f.cmd, f.stdout, f.stderr, f.started = cmd, stdout, stderr, time.Now()
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	f.set = fs
	fs.SetOutput(stderr)
	fs.Usage = func() { f.usage(fs, stdout) }
	before := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
	fs.StringVar(&f.HealthAddr, "health-addr", "", "serve /livez, /readyz and /metrics on this `ADDR`, e.g. :8080 (empty = none)")
	fs.DurationVar(&f.ShutdownBudget, "shutdown-budget", DefaultShutdownBudget, "the whole graceful shutdown at SIGTERM: stop intake and finish work, then drain NATS, then flush telemetry (keep it below the orchestrator's grace period)")
	fs.IntVar(&f.Replicas, "replicas", 0, "replicas of every stream and bucket: 3 on a 3-node cluster (0 = keep what the resources have; 1 when creating them)")
	fs.BoolVar(&f.Memory, "memory", false, "keep streams and buckets in memory instead of files")
	fs.StringVar(&f.LogLevel, "log-level", "info", "`LEVEL`: debug, info, warn or error")
	fs.BoolVar(&f.LogJSON, "log-json", false, "log JSON lines (with trace_id and span_id inside a trace) instead of text")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	f.Conn.Register(fs, true)
	fs.VisitAll(func(fl *flag.Flag) {
		if !before[fl.Name] {
			f.shared = append(f.shared, fl.Name)
		}
	})
	return fs
}

// Parse sets every flag of fs from its SKILLBUS_* variable (EnvName), then
// parses args: a flag on the command line wins. It returns exit < 0 to go
// on, or the exit code to return now: 0 after --help or --version (printed
// on stdout), 2 for a bad flag (the error, then a one-line pointer to
// --help: the error is not lost above the help), a malformed variable (the
// message names the variable), a --health-addr that is no address, or
// stray arguments when maxArgs (-1 = any) is exceeded.
func (f *Flags) Parse(fs *flag.FlagSet, args []string, maxArgs int) (exit int) {
	unknown, fromEnv, err := applyEnv(fs, os.LookupEnv, os.Environ())
	f.unknownEnv = unknown
	if err != nil {
		fmt.Fprintf(f.stderr, "%s: %v\n", f.cmd.Name, err)
		return 2
	}
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.usage(fs, f.stdout)
			return 0
		}
		fmt.Fprintf(f.stderr, "%s: %s\nRun `%s --help` for the flags and examples.\n", f.cmd.Name, FlagError(fs, err), f.cmd.Name)
		return 2
	}
	// A variable overridden on the command line is no longer the source.
	for _, name := range commandLineFlags(args[:len(args)-fs.NArg()]) {
		delete(fromEnv, name)
	}
	f.fromEnv = fromEnv
	if f.version {
		fmt.Fprintf(f.stdout, "%s %s\n", f.cmd.Name, version.String())
		return 0
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		if maxArgs == 0 {
			fmt.Fprintf(f.stderr, "%s: unexpected arguments %q; all settings are flags (see --help)\n", f.cmd.Name, fs.Args())
		} else {
			fmt.Fprintf(f.stderr, "%s: at most %d argument(s), got %q (see --help)\n", f.cmd.Name, maxArgs, fs.Args())
		}
		return 2
	}
	if f.ShutdownBudget < time.Second {
		fmt.Fprintf(f.stderr, "%s: %s: want at least 1s\n", f.cmd.Name, f.Source("shutdown-budget"))
		return 2
	}
	if f.HealthAddr != "" {
		if err := CheckListenAddr(f.HealthAddr); err != nil {
			fmt.Fprintf(f.stderr, "%s: %s: %v\n", f.cmd.Name, f.Source("health-addr"), err)
			return 2
		}
	}
	return -1
}

// Source names where the value of the flag called name came from, with
// the value, for a message about it: `--log-level "verbose"` when it was
// given on the command line (or is the default), `SKILLBUS_LOG_LEVEL="verbose"
// (the environment form of --log-level)` when its SKILLBUS_* variable set
// it. Call it after Parse.
func (f *Flags) Source(name string) string {
	fl := f.flagSet().Lookup(name)
	v := ""
	if fl != nil {
		v = fl.Value.String()
	}
	if env, ok := f.fromEnv[name]; ok {
		return fmt.Sprintf("%s=%q (the environment form of --%s)", env, v, name)
	}
	return fmt.Sprintf("--%s %q", name, v)
}

// flagSet returns the flag set FlagSet made (for Source).
func (f *Flags) flagSet() *flag.FlagSet {
	if f.set == nil {
		return flag.NewFlagSet("", flag.ContinueOnError)
	}
	return f.set
}

// commandLineFlags returns the names of the flags written in args (the
// arguments fs.Parse consumed): each token starting with '-' before "--".
// A flag's value that starts with '-' is counted too, which can only make
// Source name the command line where the variable was overridden anyway.
func commandLineFlags(args []string) []string {
	var names []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' {
			n := strings.TrimLeft(a, "-")
			n, _, _ = strings.Cut(n, "=")
			names = append(names, n)
		}
	}
	return names
}

// CheckListenAddr checks that addr is an address a server can listen on
// (HOST:PORT or :PORT, the port a number or a service name), without
// listening: a mistyped --health-addr is a configuration error (exit 2),
// while an address in use is only found when listening (exit 1).
func CheckListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return fmt.Errorf("%s; want HOST:PORT or :PORT, such as :8080 or 127.0.0.1:8080", ae.Err)
		}
		return fmt.Errorf("want HOST:PORT or :PORT, such as :8080 or 127.0.0.1:8080")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is not a port number; want HOST:PORT or :PORT, such as :8080", port)
	}
	return nil
}

// ApplyEnv sets every flag of fs (but --version and --help) from its
// SKILLBUS_* variable (EnvName) when the variable is set; call it before
// parsing the command line, which then wins. It returns the SKILLBUS_*
// variables of the environment that name no flag of fs (sorted), and an
// error naming the variable for a malformed value.
func ApplyEnv(fs *flag.FlagSet) (unknown []string, err error) {
	unknown, _, err = applyEnv(fs, os.LookupEnv, os.Environ())
	return unknown, err
}

// applyEnv is ApplyEnv also returning the flags it set: flag name →
// variable name.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool), environ []string) (unknown []string, set map[string]string, err error) {
	known := map[string]bool{}
	set = map[string]string{}
	fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name == "version" || fl.Name == "help" || fl.Name == "h" {
			return
		}
		name := EnvName(fl.Name)
		known[name] = true
		v, ok := lookup(name)
		if !ok || err != nil {
			return
		}
		var e error
		if s, ok := fl.Value.(interface{ SetFrom(v, source string) error }); ok {
			e = s.SetFrom(v, name)
		} else {
			e = fs.Set(fl.Name, v)
		}
		if e != nil {
			err = fmt.Errorf("%s=%q: %v (the environment form of --%s; unset it or fix the value)", name, v, valueHint(fl, e), fl.Name)
			return
		}
		set[fl.Name] = name
	})
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) && !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	return unknown, set, err
}

// usage writes the help text: synopsis, about, the service's own flags,
// the shared flags, the NATS connection flags, the environment rule,
// examples and exit codes.
func (f *Flags) usage(fs *flag.FlagSet, w io.Writer) {
	conn := natsconn.FlagNames()
	var own, shared, natsFlags []*flag.Flag
	fs.VisitAll(func(fl *flag.Flag) {
		switch {
		case slices.Contains(conn, fl.Name):
			natsFlags = append(natsFlags, fl)
		case slices.Contains(f.shared, fl.Name):
			shared = append(shared, fl)
		default:
			own = append(own, fl)
		}
	})
	slices.SortFunc(natsFlags, func(a, b *flag.Flag) int { return slices.Index(conn, a.Name) - slices.Index(conn, b.Name) })
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", f.cmd.Synopsis, strings.TrimRight(f.cmd.About, "\n"))
	section := func(title string, flags []*flag.Flag, defaults bool) {
		if len(flags) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s:\n", title)
		for _, fl := range flags {
			writeFlag(&b, fl, defaults)
		}
	}
	section("Flags", own, true)
	section("Service flags (every skillbus service)", shared, true)
	section("NATS connection (as the nats CLI reads it)", natsFlags, false)
	fmt.Fprintf(&b, "\nEvery flag can also be set in the environment as %s<FLAG>, upper case\n"+
		"with dashes as underscores (--health-addr: %s); a flag on the\n"+
		"command line wins. NATS_URL, NATS_CREDS, NATS_NKEY, NATS_CERT, NATS_KEY,\n"+
		"NATS_CA and NATS_CONTEXT are read as the nats CLI reads them.\n"+
		"docs/operations.md describes health, metrics, logs and the shutdown budget.\n", EnvPrefix, EnvName("health-addr"))
	if len(f.cmd.Examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range f.cmd.Examples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	b.WriteString("\nExit codes: 0 stopped by SIGTERM or Ctrl-C (and --help, --version); 1 could not\n" +
		"start or failed: the health address in use, the NATS connection closed for\n" +
		"good (credentials refused), the service failed; 2 bad command line or\n" +
		"configuration: a flag, a SKILLBUS_* or OTEL_* value, a connection setting.\n")
	fmt.Fprint(w, b.String())
}

// writeFlag writes one flag's help line, in the double-dash style of the
// skillbus command.
func writeFlag(b *strings.Builder, fl *flag.Flag, defaults bool) {
	typ, usage := flag.UnquoteUsage(fl)
	switch typ {
	case "value":
		typ = "VALUE"
	case "string":
		typ = "STRING"
	case "duration":
		typ = "DURATION"
	case "int":
		typ = "N"
	}
	head := "  --" + fl.Name
	if typ != "" {
		head += " " + typ
	}
	if defaults && fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" && fl.DefValue != "0s" {
		usage += " (default " + fl.DefValue + ")"
	}
	lines := wrap(usage, 78-26)
	if len(head) < 26 {
		fmt.Fprintf(b, "%-26s%s\n", head, lines[0])
		lines = lines[1:]
	} else {
		fmt.Fprintf(b, "%s\n", head)
	}
	for _, l := range lines {
		fmt.Fprintf(b, "%26s%s\n", "", l)
	}
}

// wrap splits text into lines of at most width characters at spaces (a
// longer word stays whole).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}

// Logger returns the logger --log-level and --log-json describe, writing
// to w (text lines by default, JSON lines with --log-json), with trace_id
// and span_id on lines logged inside a span (telemetry.LogHandler). It
// warns about SKILLBUS_* variables that name no flag of this command. The
// error, for an unknown level, names the flag and the accepted values; the
// caller prefixes its command name and exits 2 (usage).
func (f *Flags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, fmt.Errorf("%s: want debug, info, warn or error", f.Source("log-level"))
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if f.LogJSON {
		h = slog.NewJSONHandler(w, opts)
	}
	log := slog.New(telemetry.LogHandler(h))
	for _, name := range f.unknownEnv {
		log.Warn("environment variable names no flag of this command; ignored", "var", name, "command", f.cmd.Name)
	}
	return log, nil
}

// Provision returns the provisioning options --replicas and --memory
// describe (events.Options; file storage unless --memory). A service
// sets its own fields (TTLs, ack wait) on the result.
func (f *Flags) Provision() events.Options {
	var o events.Options
	o.Replicas = f.Replicas
	if f.Memory {
		o.Storage = jetstream.MemoryStorage
	}
	return o
}
