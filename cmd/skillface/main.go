// Command skillface is the skillbus prompt-assembly service
// (docs/skills.md): it watches the SKILLS bucket, keeps session state in the
// SKILLFACE_SESSIONS bucket, and serves skillbus.skillface.assemble and
// skillbus.skillface.info. Run as many replicas as you like: they share the
// work and the sessions. The logic lives in internal/skillfacesvc; the
// process wiring (flags and SKILLBUS_* variables, NATS connection, health,
// metrics, shutdown budget) in internal/servicecmd.
//
// Usage:
//
//	skillface [flags]
//
// Run `skillface --help` for the flags; docs/operations.md for deployment.
// SIGINT or SIGTERM stops it gracefully within --shutdown-budget: not
// ready, the endpoints stop taking requests, requests in flight are
// answered, then the connection is drained.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/skillface"
)

func main() {
	ctx, stop := servicecmd.SignalContext("skillface", os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// configFlags maps the fields of skillfacesvc.Config (and of its
// Provision) onto the flags that set them, for configuration errors.
var configFlags = map[string]string{
	"EntryChars": "entry-chars", "ListingEntries": "listing-entries", "SessionBodies": "session-bodies",
	"BodyBytes": "body-bytes", "MaxRequestBytes": "max-request-bytes", "MaxConcurrent": "max-concurrent",
	"Timeout": "timeout", "SessionsTTL": "session-ttl", "Replicas": "replicas",
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var common servicecmd.Flags
	fs := common.FlagSet(servicecmd.Command{
		Name:     "skillface",
		Synopsis: "skillface [flags]",
		About: "Enriches prompt-assembly requests with skills from the SKILLS bucket and\n" +
			"serves skillbus.skillface.* (see `nats micro info skillbus-skillface`).\n" +
			"Replicas share the work and the sessions (SKILLFACE_SESSIONS bucket).",
		Examples: []string{
			"skillface --session-ttl 12h",
			"NATS_URL=nats://nats:4222 NATS_CREDS=/etc/skillbus/skillface.creds skillface --health-addr :8080",
			"SKILLBUS_MAX_CONCURRENT=128 SKILLBUS_LOG_JSON=true skillface",
		},
	}, stdout, stderr)
	var (
		sessionTTL = fs.Duration("session-ttl", 0, "how long an idle session is kept: the SKILLFACE_SESSIONS bucket TTL (0 = keep the bucket's current TTL; 24h when creating it)")
		entryChars = fs.Int("entry-chars", skillface.DefaultEntryChars, "listing entry budget in characters")
		listing    = fs.Int("listing-entries", skillface.DefaultListingEntries, "how many skills the listing shows")
		bodies     = fs.Int("session-bodies", skillface.DefaultSessionBodies, "how many skill bodies a session holds")
		bodyBytes  = fs.Int("body-bytes", skillface.DefaultBodyBytes, "skill body budget in bytes")
		maxRequest = fs.Int("max-request-bytes", skillfacesvc.DefaultMaxRequestBytes, "largest request accepted, in bytes")
		concurrent = fs.Int("max-concurrent", skillfacesvc.DefaultMaxConcurrent, "requests one replica works on at once")
		timeout    = fs.Duration("timeout", skillfacesvc.DefaultTimeout, "time limit of one request's work")
	)
	if code := common.Parse(fs, args, 0); code >= 0 {
		return code
	}
	log, err := common.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "skillface: %v\n", err)
		return 2
	}
	cfg := skillfacesvc.Config{
		EntryChars: *entryChars, ListingEntries: *listing, SessionBodies: *bodies, BodyBytes: *bodyBytes,
		MaxRequestBytes: *maxRequest, MaxConcurrent: *concurrent, Timeout: *timeout,
		Logger: log, Provision: common.Provision(),
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
		fmt.Fprintf(stderr, "skillface: %s\n", common.ConfigError(err, configFlags))
		return 2
	}

	return common.Run(ctx, log, servicecmd.Spec{
		Provision: &cfg.Provision,
		New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			cfg.Meters = rt.Meters
			cfg.Provisioned = rt.Provisioned // done, with retries: Start does not provision again
			svc, err := skillfacesvc.New(rt.Conn, cfg)
			if err != nil {
				return nil, err
			}
			// Ready once Start has loaded the SKILLS bucket; Stop stops
			// intake, answers the requests in flight, stops the watch.
			return svc, nil
		},
	})
}
