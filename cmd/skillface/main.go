// Command skillface is the skillbus prompt-assembly service (DESIGN.md §2,
// §6): it watches the SKILLS bucket, keeps session state in the
// SKILLFACE_SESSIONS bucket, and serves skillbus.skillface.assemble and
// skillbus.skillface.info. Run as many replicas as you like: they share the
// work and the sessions. The logic lives in internal/skillfacesvc.
//
// Usage:
//
//	skillface [flags]
//
// Environment: NATS_URL (default nats://127.0.0.1:4222), NATS_CREDS (a
// credentials file). --embedded starts an in-process nats-server instead.
// SIGINT or SIGTERM stops it gracefully: the endpoints stop taking
// requests, requests in flight are answered, then the connection is
// drained.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skillface"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("skillface", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		natsURL     = fs.String("nats", envOr("NATS_URL", nats.DefaultURL), "NATS server URL(s), comma separated ($NATS_URL)")
		creds       = fs.String("creds", os.Getenv("NATS_CREDS"), "NATS credentials file ($NATS_CREDS)")
		embedded    = fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead of connecting to --nats")
		port        = fs.Int("embedded-port", 0, "client port of the embedded server (0 = random; printed in the log)")
		store       = fs.String("embedded-store", "", "JetStream store directory of the embedded server (empty = a temporary directory, removed at exit)")
		replicas    = fs.Int("replicas", 0, "replicas of every stream and bucket: 3 on a 3-node cluster (0 = keep what the resources have; 1 when creating them)")
		memory      = fs.Bool("memory", false, "keep streams and buckets in memory instead of files")
		sessionTTL  = fs.Duration("session-ttl", 0, "how long an idle session is kept: the SKILLFACE_SESSIONS bucket TTL (0 = keep the bucket's current TTL; 24h when creating it)")
		entryChars  = fs.Int("entry-chars", skillface.DefaultEntryChars, "listing entry budget in characters")
		listing     = fs.Int("listing-entries", skillface.DefaultListingEntries, "how many skills the listing shows")
		bodies      = fs.Int("session-bodies", skillface.DefaultSessionBodies, "how many skill bodies a session holds")
		bodyBytes   = fs.Int("body-bytes", skillface.DefaultBodyBytes, "skill body budget in bytes")
		maxRequest  = fs.Int("max-request-bytes", skillfacesvc.DefaultMaxRequestBytes, "largest request accepted, in bytes")
		concurrent  = fs.Int("max-concurrent", skillfacesvc.DefaultMaxConcurrent, "requests one replica works on at once")
		timeout     = fs.Duration("timeout", skillfacesvc.DefaultTimeout, "time limit of one request's work")
		logLevel    = fs.String("log-level", "info", "debug, info, warn or error")
		logJSON     = fs.Bool("log-json", false, "log JSON lines instead of text")
		drainAfter  = fs.Duration("drain-timeout", 10*time.Second, "how long shutdown may take")
		showVersion = fs.Bool("version", false, "print the version and exit")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: skillface [flags]\n\nEnriches prompt-assembly requests with skills from the SKILLS bucket and\nserves skillbus.skillface.* (see `nats micro info skillbus-skillface`).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "skillface: unexpected arguments %q; all settings are flags (see -h)\n", fs.Args())
		return 2
	}
	const version = "0.1.0"
	if *showVersion {
		fmt.Fprintln(stderr, "skillface", version)
		return 0
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "skillface: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if *logJSON {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)

	cfg := skillfacesvc.Config{
		EntryChars: *entryChars, ListingEntries: *listing, SessionBodies: *bodies, BodyBytes: *bodyBytes,
		MaxRequestBytes: *maxRequest, MaxConcurrent: *concurrent, Timeout: *timeout,
		Logger: log, Version: version,
	}
	cfg.Provision.Replicas = *replicas
	cfg.Provision.SessionsTTL = *sessionTTL
	if *memory {
		cfg.Provision.Storage = jetstream.MemoryStorage
	}
	// Flags have explicit defaults, so a 0 given on the command line is a
	// mistake rather than "the default".
	for _, f := range []struct {
		flag string
		v    int64
	}{{"entry-chars", int64(*entryChars)}, {"listing-entries", int64(*listing)}, {"session-bodies", int64(*bodies)},
		{"body-bytes", int64(*bodyBytes)}, {"max-request-bytes", int64(*maxRequest)}, {"max-concurrent", int64(*concurrent)},
		{"timeout", int64(*timeout)}} {
		if f.v <= 0 {
			fmt.Fprintf(stderr, "skillface: --%s must be positive\n", f.flag)
			return 2
		}
	}
	if *sessionTTL < 0 || *replicas < 0 {
		fmt.Fprintf(stderr, "skillface: --session-ttl and --replicas must not be negative (0 keeps the current value)\n")
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "skillface: %v\n", err)
		return 2
	}

	url := *natsURL
	if *embedded {
		srv, err := natsserver.Start(natsserver.Options{Port: *port, StoreDir: *store})
		if err != nil {
			log.Error("cannot start the embedded nats-server", "err", err)
			return 1
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
		log.Info("embedded nats-server ready", "url", url, "store", srv.StoreDir())
	}
	opts := []nats.Option{nats.Name(events.ServiceSkillface), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrl()) }),
	}
	if *creds != "" {
		opts = append(opts, nats.UserCredentials(*creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		log.Error("cannot connect to NATS", "url", url, "err", err)
		return 1
	}
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })

	svc, err := skillfacesvc.New(nc, cfg)
	if err == nil {
		// Phase one (in Run, after ctx ends): stop intake, answer the
		// requests in flight, stop the skills watch.
		err = svc.Run(ctx)
	}
	// Phase two: drain the connection (pending replies go out), bounded by
	// --drain-timeout.
	if derr := nc.Drain(); derr != nil && !errors.Is(derr, nats.ErrConnectionClosed) {
		log.Warn("drain", "err", derr)
	}
	select {
	case <-closed:
	case <-time.After(*drainAfter):
		log.Warn("connection not drained in time; closing", "timeout", *drainAfter)
		nc.Close()
	}
	if err != nil {
		log.Error("skillface failed", "err", err)
		return 1
	}
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
