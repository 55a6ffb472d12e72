// Command registry is the skillbus registry service (DESIGN.md §2): it
// loads a directory tree of skills (SKILL.md, skill.yaml) and sequences
// (*.seq.json, *.seq.yaml, *.seq.yml), publishes the valid ones to the
// SKILLS and SEQUENCES buckets, follows the tree, and serves the
// skillbus.registry.* endpoints. The logic lives in internal/registry.
//
// Usage:
//
//	registry [flags] [DIR]
//
// Environment: NATS_URL (default nats://127.0.0.1:4222), NATS_CREDS (a
// credentials file). --embedded starts an in-process nats-server instead.
// SIGINT or SIGTERM stops it gracefully: endpoints stop, then the
// connection is drained.
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
	"github.com/skillbus/skillbus/internal/registry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dir        = fs.String("dir", "", "root of the skills and sequences tree (or give it as the argument); empty = no files, only sequences created over NATS")
		natsURL    = fs.String("nats", envOr("NATS_URL", nats.DefaultURL), "NATS server URL(s), comma separated ($NATS_URL)")
		creds      = fs.String("creds", os.Getenv("NATS_CREDS"), "NATS credentials file ($NATS_CREDS)")
		embedded   = fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead of connecting to --nats")
		port       = fs.Int("embedded-port", 0, "client port of the embedded server (0 = random; printed in the log)")
		store      = fs.String("embedded-store", "", "JetStream store directory of the embedded server (empty = a temporary directory, removed at exit)")
		replicas   = fs.Int("replicas", 0, "replicas of every stream and bucket: 3 on a 3-node cluster (0 = keep what the resources have; 1 when creating them)")
		memory     = fs.Bool("memory", false, "keep streams and buckets in memory instead of files")
		debounce   = fs.Duration("debounce", 100*time.Millisecond, "quiet time after file changes before rescanning")
		resync     = fs.Duration("resync", time.Minute, "full rescan period without events (negative = never)")
		logLevel   = fs.String("log-level", "info", "debug, info, warn or error")
		logJSON    = fs.Bool("log-json", false, "log JSON lines instead of text")
		drainAfter = fs.Duration("drain-timeout", 10*time.Second, "how long shutdown may take")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: registry [flags] [DIR]\n\nLoads skills and sequences from DIR into NATS JetStream, follows changes,\nand serves skillbus.registry.* (see `nats micro info skillbus-registry`).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 1:
		fmt.Fprintf(stderr, "registry: one DIR at most, got %d arguments\n", fs.NArg())
		return 2
	case fs.NArg() == 1 && *dir != "" && *dir != fs.Arg(0):
		fmt.Fprintf(stderr, "registry: DIR given twice (--dir %q and %q)\n", *dir, fs.Arg(0))
		return 2
	case fs.NArg() == 1:
		*dir = fs.Arg(0)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "registry: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if *logJSON {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)

	cfg := registry.Config{Dir: *dir, Debounce: *debounce, Resync: *resync, Logger: log}
	cfg.Provision.Replicas = *replicas
	if *memory {
		cfg.Provision.Storage = jetstream.MemoryStorage
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "registry: %v\n", err)
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
	opts := []nats.Option{nats.Name("skillbus-registry"), nats.MaxReconnects(-1),
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

	reg, err := registry.New(nc, cfg)
	if err == nil {
		err = reg.Run(ctx)
	}
	// Shutdown phase two: drain the connection (pending replies and
	// publishes go out), bounded by --drain-timeout.
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
		log.Error("registry failed", "err", err)
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
