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
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/skillface"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	var common servicecmd.Flags
	fs := common.FlagSet("skillface", stderr, "skillface [flags]",
		"Enriches prompt-assembly requests with skills from the SKILLS bucket and\n"+
			"serves skillbus.skillface.* (see `nats micro info skillbus-skillface`).")
	var (
		sessionTTL  = fs.Duration("session-ttl", 0, "how long an idle session is kept: the SKILLFACE_SESSIONS bucket TTL (0 = keep the bucket's current TTL; 24h when creating it)")
		entryChars  = fs.Int("entry-chars", skillface.DefaultEntryChars, "listing entry budget in characters")
		listing     = fs.Int("listing-entries", skillface.DefaultListingEntries, "how many skills the listing shows")
		bodies      = fs.Int("session-bodies", skillface.DefaultSessionBodies, "how many skill bodies a session holds")
		bodyBytes   = fs.Int("body-bytes", skillface.DefaultBodyBytes, "skill body budget in bytes")
		maxRequest  = fs.Int("max-request-bytes", skillfacesvc.DefaultMaxRequestBytes, "largest request accepted, in bytes")
		concurrent  = fs.Int("max-concurrent", skillfacesvc.DefaultMaxConcurrent, "requests one replica works on at once")
		timeout     = fs.Duration("timeout", skillfacesvc.DefaultTimeout, "time limit of one request's work")
		showVersion = fs.Bool("version", false, "print the version and exit")
	)
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
	log, err := common.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "skillface: %v\n", err)
		return 2
	}
	cfg := skillfacesvc.Config{
		EntryChars: *entryChars, ListingEntries: *listing, SessionBodies: *bodies, BodyBytes: *bodyBytes,
		MaxRequestBytes: *maxRequest, MaxConcurrent: *concurrent, Timeout: *timeout,
		Logger: log, Version: version, Provision: common.Provision(),
	}
	cfg.Provision.SessionsTTL = *sessionTTL
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
	if *sessionTTL < 0 || common.Replicas < 0 {
		fmt.Fprintf(stderr, "skillface: --session-ttl and --replicas must not be negative (0 keeps the current value)\n")
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "skillface: %v\n", err)
		return 2
	}

	return common.Run(ctx, "skillface", log, func(ctx context.Context, nc *nats.Conn) error {
		svc, err := skillfacesvc.New(nc, cfg)
		if err != nil {
			return err
		}
		// Phase one (in Run, after ctx ends): stop intake, answer the
		// requests in flight, stop the skills watch.
		return svc.Run(ctx)
	})
}
