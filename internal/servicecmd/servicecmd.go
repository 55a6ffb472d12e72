// Package servicecmd provides the wiring every skillbus service command
// (cmd/registry, cmd/seqworker, cmd/skillface) shares: the NATS and
// logging flags, the logger they describe, an optional embedded
// nats-server, the connection, and the two-phase graceful shutdown of
// DESIGN.md §2 (the service stops when its context ends, then the
// connection is drained under --drain-timeout).
//
// A main stays linear:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	var common servicecmd.Flags
//	fs := common.FlagSet("registry", os.Stderr, "registry [flags] [DIR]", "Loads skills …")
//	… service flags, fs.Parse, common.Logger, the service's Config …
//	code := common.Run(ctx, "registry", log, func(ctx context.Context, nc *nats.Conn) error { … })
package servicecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/telemetry"
	"github.com/skillbus/skillbus/pkg/events"
)

// DefaultDrainTimeout is the default of --drain-timeout.
const DefaultDrainTimeout = 10 * time.Second

// Flags holds the command-line settings every service command shares.
// Register binds them to a flag set; the zero value is not the set of
// defaults (Register sets those).
type Flags struct {
	// NATSURL is --nats: the server URL(s), comma separated. Default
	// $NATS_URL, else nats.DefaultURL (nats://127.0.0.1:4222).
	NATSURL string
	// Creds is --creds: a NATS credentials file. Default $NATS_CREDS;
	// empty connects without credentials.
	Creds string
	// Embedded is --embedded: start an in-process nats-server with
	// JetStream and connect to it instead of NATSURL.
	Embedded bool
	// EmbeddedPort is --embedded-port: the embedded server's client port
	// (0 = a free port, logged at start).
	EmbeddedPort int
	// EmbeddedStore is --embedded-store: the embedded server's JetStream
	// store directory (empty = a temporary directory removed at exit).
	EmbeddedStore string
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
	// DrainTimeout is --drain-timeout: how long draining the connection
	// may take at shutdown before it is closed (default
	// DefaultDrainTimeout).
	DrainTimeout time.Duration
}

// Register defines the shared flags on fs, bound to f, with their
// defaults (reading $NATS_URL and $NATS_CREDS now). Call it before
// fs.Parse; a flag set may take the service's own flags as well.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.NATSURL, "nats", envOr("NATS_URL", nats.DefaultURL), "NATS server URL(s), comma separated ($NATS_URL)")
	fs.StringVar(&f.Creds, "creds", os.Getenv("NATS_CREDS"), "NATS credentials file ($NATS_CREDS)")
	fs.BoolVar(&f.Embedded, "embedded", false, "start an in-process nats-server with JetStream instead of connecting to --nats")
	fs.IntVar(&f.EmbeddedPort, "embedded-port", 0, "client port of the embedded server (0 = random; printed in the log)")
	fs.StringVar(&f.EmbeddedStore, "embedded-store", "", "JetStream store directory of the embedded server (empty = a temporary directory, removed at exit)")
	fs.IntVar(&f.Replicas, "replicas", 0, "replicas of every stream and bucket: 3 on a 3-node cluster (0 = keep what the resources have; 1 when creating them)")
	fs.BoolVar(&f.Memory, "memory", false, "keep streams and buckets in memory instead of files")
	fs.StringVar(&f.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&f.LogJSON, "log-json", false, "log JSON lines instead of text")
	fs.DurationVar(&f.DrainTimeout, "drain-timeout", DefaultDrainTimeout, "how long draining the connection may take at shutdown")
}

// FlagSet returns a flag set named name with the shared flags registered
// on f (see Register). It stops at the first error (flag.ContinueOnError),
// writes errors and help to stderr, and its help is
//
//	Usage: <synopsis>
//
//	<about>
//
//	Flags:
//	<every flag with its default, as flag.PrintDefaults writes them>
//
// The caller adds its own flags, then parses.
func (f *Flags) FlagSet(name string, stderr io.Writer, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, about)
		fs.PrintDefaults()
	}
	f.Register(fs)
	return fs
}

// Logger returns the logger --log-level and --log-json describe, writing
// to w (text lines by default, JSON lines with --log-json). The error,
// for an unknown level, names the flag and the accepted values; the
// caller prefixes its command name and exits 2 (usage).
func (f *Flags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	if f.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
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

// Run connects to NATS as the flags say and runs serve until it returns,
// then shuts down; it returns the process exit code: 0 when serve
// returned nil, 1 when the embedded server did not start, the connection
// failed, or serve returned an error (logged as "<name> failed"), 2 when
// the OTEL_* trace-export settings are unsupported.
//
// Trace export is set up first from the standard OTEL_* variables
// (internal/telemetry) and flushed last, after the drain.
//
// With --embedded it first starts an in-process nats-server (logging
// "embedded nats-server ready" with its URL and store) and shuts it down
// last. The connection is named "skillbus-<name>", reconnects forever,
// logs disconnects and reconnects, and uses --creds when given.
//
// serve is shutdown phase one: it runs the service until ctx ends, stops
// intake and finishes the work in flight, then returns. Phase two is
// Run's: it drains the connection (pending replies, acks and publishes
// go out) and closes it if draining takes longer than --drain-timeout.
func (f *Flags) Run(ctx context.Context, name string, log *slog.Logger, serve func(ctx context.Context, nc *nats.Conn) error) int {
	exporting, flush, err := telemetry.Setup(ctx, name)
	if err != nil {
		log.Error("cannot set up trace export", "err", err)
		return 2
	}
	if exporting {
		log.Info("exporting traces with OTLP/HTTP (OTEL_EXPORTER_OTLP_* settings)")
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := flush(fctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}()
	url := f.NATSURL
	if f.Embedded {
		srv, err := natsserver.Start(natsserver.Options{Port: f.EmbeddedPort, StoreDir: f.EmbeddedStore})
		if err != nil {
			log.Error("cannot start the embedded nats-server", "err", err)
			return 1
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
		log.Info("embedded nats-server ready", "url", url, "store", srv.StoreDir())
	}
	opts := []nats.Option{nats.Name("skillbus-" + name), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrl()) }),
	}
	if f.Creds != "" {
		opts = append(opts, nats.UserCredentials(f.Creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		log.Error("cannot connect to NATS", "url", url, "err", err)
		return 1
	}
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })

	err = serve(ctx, nc)

	if derr := nc.Drain(); derr != nil && !errors.Is(derr, nats.ErrConnectionClosed) {
		log.Warn("drain", "err", derr)
	}
	select {
	case <-closed:
	case <-time.After(f.DrainTimeout):
		log.Warn("connection not drained in time; closing", "timeout", f.DrainTimeout)
		nc.Close()
	}
	if err != nil {
		log.Error(name+" failed", "err", err)
		return 1
	}
	return 0
}

// envOr returns the environment variable key, or def when it is unset or
// empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
