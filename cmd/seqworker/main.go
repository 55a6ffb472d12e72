// Command seqworker is the skillbus sequence runner (DESIGN.md §2): it
// takes run requests from the SEQ_RUNS work queue (shared with every other
// replica), runs them group by group against the tools on tool.<name>,
// checkpoints every finished group in RUNS, starts boot sequences on
// agent_ready, keeps the server-side schedules of scheduled sequences, and
// serves skillbus.seq.* (seq_call, run, status). The logic lives in
// internal/seqworker.
//
// Usage:
//
//	seqworker [flags]
//
// Environment: NATS_URL (default nats://127.0.0.1:4222), NATS_CREDS (a
// credentials file). --embedded starts an in-process nats-server instead.
// SIGINT or SIGTERM stops it gracefully: no new runs are taken, running
// groups get --shutdown-timeout to finish (unfinished runs resume on
// another replica from their last checkpoint), then the connection is
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
	"github.com/skillbus/skillbus/internal/seqworker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("seqworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		natsURL     = fs.String("nats", envOr("NATS_URL", nats.DefaultURL), "NATS server URL(s), comma separated ($NATS_URL)")
		creds       = fs.String("creds", os.Getenv("NATS_CREDS"), "NATS credentials file ($NATS_CREDS)")
		embedded    = fs.Bool("embedded", false, "start an in-process nats-server with JetStream instead of connecting to --nats")
		port        = fs.Int("embedded-port", 0, "client port of the embedded server (0 = random; printed in the log)")
		store       = fs.String("embedded-store", "", "JetStream store directory of the embedded server (empty = a temporary directory, removed at exit)")
		replicas    = fs.Int("replicas", 0, "replicas of every stream and bucket: 3 on a 3-node cluster (0 = keep what the resources have; 1 when creating them)")
		memory      = fs.Bool("memory", false, "keep streams and buckets in memory instead of files")
		concurrency = fs.Int("concurrency", seqworker.DefaultConcurrency, "runs (and seq_call requests) this replica executes at once")
		ackWait     = fs.Duration("ack-wait", 0, "how long a silent worker keeps a run before it is redelivered (0 = 2m)")
		maxDeliver  = fs.Int("max-deliver", 0, "deliveries of one run request before it is recorded as failed (0 = 10, -1 = unlimited)")
		redelivery  = fs.Duration("redelivery-delay", seqworker.DefaultRedeliveryDelay, "first delay before redelivering a run after a passing failure (doubles per delivery)")
		redelivMax  = fs.Duration("redelivery-max-delay", seqworker.DefaultRedeliveryMaxDelay, "largest redelivery delay")
		shutdown    = fs.Duration("shutdown-timeout", seqworker.DefaultShutdownTimeout, "how long running groups may take to finish at shutdown")
		logLevel    = fs.String("log-level", "info", "debug, info, warn or error")
		logJSON     = fs.Bool("log-json", false, "log JSON lines instead of text")
		drainAfter  = fs.Duration("drain-timeout", 10*time.Second, "how long draining the connection may take at shutdown")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: seqworker [flags]\n\nRuns skillbus tool sequences from the SEQ_RUNS work queue and serves\nskillbus.seq.* (see `nats micro info skillbus-seq`).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "seqworker: unexpected arguments %q (flags only)\n", fs.Args())
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "seqworker: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	if *logJSON {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(h)

	cfg := seqworker.Config{
		Concurrency:        *concurrency,
		RedeliveryDelay:    *redelivery,
		RedeliveryMaxDelay: *redelivMax,
		ShutdownTimeout:    *shutdown,
		Logger:             log,
	}
	cfg.Provision.Replicas = *replicas
	cfg.Provision.AckWait = *ackWait
	cfg.Provision.MaxDeliver = *maxDeliver
	if *memory {
		cfg.Provision.Storage = jetstream.MemoryStorage
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "%v\n", err) // already says "seqworker: …"
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
	opts := []nats.Option{nats.Name("skillbus-seqworker"), nats.MaxReconnects(-1),
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

	w, err := seqworker.New(nc, cfg)
	if err == nil {
		err = w.Run(ctx)
	}
	// Shutdown phase two: drain the connection (pending acks, state
	// writes and event publishes go out), bounded by --drain-timeout.
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
		log.Error("seqworker failed", "err", err)
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
