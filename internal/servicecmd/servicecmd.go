// Package servicecmd provides what every skillbus service command
// (cmd/registry, cmd/seqworker, cmd/skillface) shares: the flags and their
// SKILLBUS_* environment variables, the help layout, --version, the logger,
// the NATS connection (internal/natsconn), provisioning with retries, the
// health and metrics endpoint (internal/health, internal/telemetry) and the
// graceful shutdown within one budget. docs/operations.md is the user's
// reference.
//
// A main stays linear:
//
//	ctx, stop := servicecmd.SignalContext("registry", os.Stderr) // a second signal exits at once
//	var common servicecmd.Flags
//	fs := common.FlagSet(servicecmd.Command{Name: "registry", …}, os.Stdout, os.Stderr)
//	… service flags …
//	if code := common.Parse(fs, args, 1); code >= 0 { return code }
//	… common.Logger, the service's Config and its Validate …
//	return common.Run(ctx, log, servicecmd.Spec{Provision: cfg.Provision, New: …})
package servicecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"

	"github.com/skillbus/skillbus/internal/health"
	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/telemetry"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
)

// Service is a service as Run drives it: started once, stopped once.
// internal/registry.Registry, internal/seqworker.Worker and
// internal/skillfacesvc.Service implement it.
type Service interface {
	// Start does the start-up work (for the registry and skillface the
	// first load of their buckets) and starts serving; ctx bounds the
	// start only. When it returns nil the service is ready.
	Start(ctx context.Context) error
	// Stop stops intake, finishes (or hands back) the work in flight
	// within ctx's deadline and returns; it does not close the
	// connection.
	Stop(ctx context.Context) error
}

// Runtime is what Spec.New gets to build its service.
type Runtime struct {
	// Conn is the service's NATS connection, connected (Run drains it).
	Conn *nats.Conn
	// Log is the service's logger.
	Log *slog.Logger
	// Ready is the readiness of /readyz: a service may add its own gates
	// or checks (health.Readiness.Gate) for conditions beyond "started".
	Ready *health.Readiness
	// Meters is the meter provider to create instruments on
	// (internal/metrics).
	Meters metric.MeterProvider
	// Provisioned is true when Spec.Provision has been provisioned (with
	// retries, ProvisionRetry) before New: the service must not provision
	// again in its Start (registry.Config.Provisioned and the like) — a
	// second round of update-then-create calls without retries is what
	// timed out on a fresh cluster.
	Provisioned bool
	// Fail reports that the service can no longer do its job (a child
	// process it bridges has ended for good, say): the process shuts down
	// as at SIGTERM and exits 1 after logging err. Safe to call from any
	// goroutine, more than once (the first error counts) and after the
	// shutdown began (then ignored).
	Fail func(err error)
}

// Spec is the service a command runs.
type Spec struct {
	// Provision, when not nil, is provisioned (events.Provision), with
	// retries, before New is called: the service's own provisioning
	// options. A tool provider, which needs no stream, leaves it nil.
	Provision *events.Options
	// New builds the service; Run starts it.
	New func(rt Runtime) (Service, error)
	// ShowsRefusals says that the service works on with subscriptions the
	// NATS server refuses and tells its users so itself (the web console
	// shows each refusal on its pages, with what it costs them:
	// docs/console.md, "What the credentials do not allow"). A refusal then
	// neither fails /readyz nor ends the process after RefusalPatience; it
	// is logged as a warning. A service that serves nothing without its
	// subscriptions (an endpoint) leaves it false.
	ShowsRefusals bool
}

// Shares of --shutdown-budget, as deadlines from the moment the shutdown
// starts: the service's Stop may take until 70% of the budget, the
// connection's drain until 90%, flushing traces and metrics and closing
// the health endpoint the rest. A phase that ends early leaves its time to
// the next. With the default 25 s: Stop ≤ 17.5 s, drain ≤ 5 s (until
// 22.5 s), flush ≤ 2.5 s.
const (
	StopShare  = 0.7
	DrainShare = 0.9
)

// Run runs the service spec describes until ctx ends (SIGTERM, Ctrl-C) or
// its NATS connection closes for good, and returns the process exit code.
// Start-up, in order:
//
//  1. trace and metric export from the OTEL_* variables (exit 2 when
//     unsupported);
//  2. the connection settings (exit 2 when unusable) and, with
//     --health-addr, the health endpoint (exit 1 when the address is in
//     use): /livez answers from here on, /readyz fails until step 6;
//  3. the NATS connection: when no server answers yet the service waits,
//     retrying with back-off and saying so in the log;
//  4. provisioning of spec.Provision, retried with back-off until it
//     succeeds (exit 2 for invalid options; exit 1 at once, with the fix,
//     for a stream or bucket the server will not change to these
//     settings), so services started together on a fresh cluster all come
//     up;
//  5. spec.New and the service's Start (exit 1 when either fails);
//  6. ready: the log says "ready" with the time since the process started.
//
// Shutdown, within --shutdown-budget (shares: StopShare, DrainShare):
// /readyz fails at once; the service's Stop stops intake and finishes or
// hands back its work; the connection is drained; traces and metrics are
// flushed and the health endpoint closes. Exit 0 — or 1 when the
// connection was closed for good (credentials refused, for one), so an
// orchestrator restarts the process rather than keep one that serves
// nothing.
func (f *Flags) Run(ctx context.Context, log *slog.Logger, spec Spec) int {
	return Serve(ctx, log, Options{Name: f.cmd.Name, Conn: f.Conn, HealthAddr: f.HealthAddr, ShutdownBudget: f.ShutdownBudget, Started: f.started}, spec)
}

// Options are the process settings Serve needs; Flags.Run fills them from
// the flags. The skillbus command's long-running providers (`tools serve`,
// `mcp`) fill them from their own flags.
type Options struct {
	// Name names the process in logs, the connection name
	// ("skillbus-<name>") and the telemetry service.name.
	Name string
	// Conn are the NATS connection settings.
	Conn natsconn.Settings
	// HealthAddr is the health endpoint's address; empty serves none.
	HealthAddr string
	// ShutdownBudget bounds the whole shutdown; 0 means
	// DefaultShutdownBudget.
	ShutdownBudget time.Duration
	// Started is when the process started, for the "ready" log line; zero
	// means when Serve was called.
	Started time.Time
	// RefusalPatience is how long a subscription the NATS server refuses
	// (permissions) may stay refused, the process not ready meanwhile,
	// before the process exits 1 naming it and the credentials in use; a
	// reconnect (which sends every subscription again, with the creds file
	// read again) is tried in between. 0 means DefaultRefusalPatience.
	RefusalPatience time.Duration
}

// DefaultRefusalPatience is Options.RefusalPatience's default: long enough
// for a creds Secret or the server's permissions being updated to reach
// the process, short enough that an orchestrator soon sees the failure.
const DefaultRefusalPatience = 30 * time.Second

// Serve is Run with explicit Options: see Run.
func Serve(ctx context.Context, log *slog.Logger, o Options, spec Spec) int {
	if o.ShutdownBudget <= 0 {
		o.ShutdownBudget = DefaultShutdownBudget
	}
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	if o.RefusalPatience <= 0 {
		o.RefusalPatience = DefaultRefusalPatience
	}
	name := o.Name
	exporting, flushTraces, err := telemetry.Setup(ctx, name)
	if err != nil {
		log.Error("cannot set up trace export", "err", err)
		return 2
	}
	if exporting {
		log.Info("exporting traces with OTLP/HTTP (OTEL_EXPORTER_OTLP_* settings)")
	}
	mets, err := telemetry.SetupMetrics(ctx, name)
	if err != nil {
		log.Error("cannot set up metrics", "err", err)
		_ = flushTraces(context.Background())
		return 2
	}
	// Final phase, whatever happens: flush traces and metrics, close the
	// health endpoint. finalDeadline is set by the shutdown.
	finalDeadline := time.Now().Add(5 * time.Second)
	var hs *health.Server
	defer func() {
		fctx, cancel := context.WithDeadline(context.Background(), finalDeadline)
		defer cancel()
		if err := flushTraces(fctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
		if err := mets.Shutdown(fctx); err != nil {
			log.Warn("flushing metrics", "err", err)
		}
		if hs != nil {
			_ = hs.Shutdown(fctx)
		}
	}()

	cfg, err := o.Conn.Resolve()
	if err != nil {
		log.Error("bad NATS connection settings", "err", err)
		return 2
	}
	// Every readiness condition is registered, not holding, before the
	// health endpoint serves its first probe: /readyz is never 200 before
	// the service is (docs/operations.md, "Health").
	var (
		ready       health.Readiness
		connected   atomic.Pointer[natsconn.Conn]
		provisioned *health.Gate
	)
	ready.Check("nats", func() error {
		conn := connected.Load()
		if conn == nil {
			return errors.New("not dialled yet")
		}
		if conn.IsConnected() {
			return nil
		}
		return errors.New(strings.ToLower(conn.Status().String()))
	})
	if spec.Provision != nil {
		provisioned = ready.Gate("provisioned")
	}
	started := ready.Gate("started")
	ready.Check("subscriptions", func() error {
		if conn := connected.Load(); conn != nil && !spec.ShowsRefusals {
			return conn.RefusedError()
		}
		return nil
	})
	if o.HealthAddr != "" {
		if hs, err = health.Listen(o.HealthAddr, &ready, mets.Handler()); err != nil {
			log.Error("cannot serve the health endpoint", "err", err)
			return 1
		}
		log.Info("health endpoint listening", "addr", hs.Addr(), "paths", "/livez /readyz /metrics")
	}
	log.Info("starting", "version", version.String(), "nats", cfg.Describe(), "metrics", mets.Exporters())

	conn, err := natsconn.Dial(cfg, "skillbus-"+name, log)
	if err != nil {
		log.Error("bad NATS connection settings", "err", err)
		return 2
	}
	connected.Store(conn)
	if spec.Provision != nil && spec.Provision.Owner == "" && cfg.Creds.V != "" {
		// A user of `skillbus auth` may update only what its role owns
		// (docs/security.md): provision as that owner.
		if role, err := natsconn.RoleOf(cfg.Creds.V); err == nil && (events.Options{Owner: role}).Validate() == nil {
			spec.Provision.Owner = role
		}
	}
	if reg, err := metrics.ObserveConn(mets.Provider(), conn.Conn); err != nil {
		log.Warn("NATS connection metrics unavailable", "err", err)
	} else {
		defer func() { _ = reg.Unregister() }()
	}
	// runCtx ends at SIGTERM or when the connection is lost for good.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Runtime.Fail: the first call before the shutdown counts.
	var (
		failOnce sync.Once
		failErr  error
		failed   = make(chan struct{})
	)
	fail := func(err error) {
		if ctx.Err() != nil {
			return // stopping anyway (SIGTERM): what the service reports now is the stop
		}
		if err == nil {
			err = errors.New("the service reported a failure")
		}
		failOnce.Do(func() { failErr = err; close(failed) })
	}
	go func() {
		select {
		case <-conn.Lost():
			cancel()
		case <-failed:
			cancel()
		case <-runCtx.Done():
		}
	}()

	code, svc := start(runCtx, log, o, conn, spec, &ready, mets, provisioned, started, fail)
	if code < 0 {
		if !spec.ShowsRefusals {
			go watchRefusals(runCtx, log, o, conn, fail)
		} else {
			go logLateRefusals(runCtx, log, conn)
		}
		<-runCtx.Done()
	}
	// Shutdown, within the budget.
	begin := time.Now()
	failOnce.Do(func() {}) // from here on Fail is ignored; failErr is settled
	finalDeadline = begin.Add(o.ShutdownBudget)
	ready.Stopping()
	lost := conn.LostErr() != nil
	if ctx.Err() != nil {
		log.Info("stopping", "budget", o.ShutdownBudget)
	}
	if svc != nil {
		sctx, scancel := context.WithDeadline(context.Background(), begin.Add(time.Duration(float64(o.ShutdownBudget)*StopShare)))
		if err := svc.Stop(sctx); err != nil {
			log.Warn("service stop", "err", err)
		}
		scancel()
	}
	dctx, dcancel := context.WithDeadline(context.Background(), begin.Add(time.Duration(float64(o.ShutdownBudget)*DrainShare)))
	if err := conn.Drain(dctx); err != nil {
		log.Warn("connection not drained in time; closed", "err", err)
	}
	dcancel()
	switch {
	case lost:
		log.Error(name+" stopped: its NATS connection is closed for good; exiting so that it is restarted", "err", conn.LostErr())
		return 1
	case code > 0:
		return code
	}
	if failErr != nil {
		log.Error(name+" failed", "err", failErr)
		return 1
	}
	log.Info(name+" exited", "shutdown", time.Since(begin).Round(time.Millisecond))
	return 0
}

// start waits for the connection, provisions, builds and starts the
// service. It returns code -1 and the started service, or the exit code
// (0 when ctx ended first) and the service to stop, if any.
func start(ctx context.Context, log *slog.Logger, o Options, conn *natsconn.Conn, spec Spec, ready *health.Readiness, mets *telemetry.Metrics, provisioned, started *health.Gate, fail func(error)) (int, Service) {
	if err := conn.WaitConnected(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		log.Error("cannot connect to NATS", "err", err)
		return 1, nil
	}
	if spec.Provision != nil {
		js, err := jetstream.New(conn.Conn)
		if err != nil {
			log.Error("JetStream", "err", err)
			return 1, nil
		}
		// /readyz says what provisioning waits for: "provisioned: waiting
		// (attempt 2 failed): events: provisioning failed: stream EVENTS: …".
		attempts := 0
		waiting := func(err error) {
			attempts++
			provisioned.Fail(fmt.Errorf("waiting (attempt %d failed): %w", attempts, err))
		}
		if err := provisionRetry(ctx, log, js, *spec.Provision, waiting); err != nil {
			if ctx.Err() != nil {
				return 0, nil
			}
			var ie *events.IncompatibleError
			if errors.As(err, &ie) {
				// Not the command line's fault, and no retry gets past it:
				// say what is wrong and how to fix it, and exit 1 (could
				// not start; docs/operations.md, "Provisioning errors").
				log.Error("cannot provision "+ie.Resource+": "+ie.Reason, "fix", ProvisionFix(ie), "server_error", ie.Err)
				return 1, nil
			}
			log.Error("cannot provision the streams and buckets", "err", err)
			return 2, nil
		}
		provisioned.Open()
	}
	svc, err := spec.New(Runtime{Conn: conn.Conn, Log: log, Ready: ready, Meters: mets.Provider(), Fail: fail, Provisioned: spec.Provision != nil})
	if err != nil {
		log.Error(o.Name+" failed", "err", err)
		return 1, nil
	}
	if err := svc.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return 0, svc
		}
		if errors.Is(err, nats.ErrPermissionViolation) {
			// A tool provider's Serve reports its refused subscriptions
			// itself (pkg/tool ErrRefused): say whose credentials.
			log.Error(o.Name+" failed: the NATS server refused what it needs with these credentials", "credentials", conn.Credentials(), "err", err)
			return 1, svc
		}
		log.Error(o.Name+" failed", "err", err)
		return 1, svc
	}
	// A round trip to the server: every subscription the service made
	// (its endpoints) is registered there when the PONG comes back —
	// or refused, which the connection has recorded by then.
	if err := conn.FlushRefused(10 * time.Second); err != nil {
		log.Warn("the NATS server did not confirm the endpoints' subscriptions", "err", err)
	}
	started.Open()
	if err := conn.RefusedError(); err != nil {
		if spec.ShowsRefusals {
			log.Warn("ready without some of its subscriptions, as the NATS server refuses them: "+err.Error(), "credentials", conn.Credentials())
		} else {
			log.Error("not ready: "+err.Error(), "retrying_for", o.RefusalPatience)
			return -1, svc
		}
	}
	log.Info("ready", "startup", time.Since(o.Started).Round(time.Millisecond))
	return -1, svc
}

// watchRefusals keeps an eye on the subscriptions the NATS server refuses
// (natsconn.Conn.Refused; /readyz fails meanwhile through the
// "subscriptions" condition). While some are refused it reconnects now
// and then — a reconnect sends every subscription again and reads the
// creds file again, so a corrected Secret or server configuration takes
// effect — and when they are still refused after o.RefusalPatience it
// calls fail with an error naming the subjects and the credentials: the
// process exits 1 rather than serve nothing while looking alive. It
// returns when ctx ends.
// logLateRefusals logs, for a service that works on without them
// (Spec.ShowsRefusals), each subscription the NATS server refuses after
// the service is ready — one it makes later, such as a page's watch —
// once, as the ready line does for those refused at start.
func logLateRefusals(ctx context.Context, log *slog.Logger, conn *natsconn.Conn) {
	seen := map[string]bool{}
	for _, r := range conn.Refused() {
		seen[r.Subject] = true // in the ready line already
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-conn.Refusals():
		}
		for _, r := range conn.Refused() {
			if !seen[r.Subject] {
				seen[r.Subject] = true
				log.Warn("the NATS server refuses a subscription; working on without it", "subject", r.Subject, "credentials", conn.Credentials(), "err", r.Err)
			}
		}
	}
}

func watchRefusals(ctx context.Context, log *slog.Logger, o Options, conn *natsconn.Conn, fail func(error)) {
	tick := time.NewTicker(min(time.Second, o.RefusalPatience/8))
	defer tick.Stop()
	var since, retry time.Time // since: when the refusal began (zero: none)
	wait := o.RefusalPatience / 4
	for {
		select {
		case <-ctx.Done():
			return
		case <-conn.Refusals():
		case <-tick.C:
		}
		err := conn.RefusedError()
		switch {
		case err == nil && since.IsZero():
			continue
		case err == nil:
			log.Info("ready: the NATS server accepts every subscription now", "refused_for", time.Since(since).Round(time.Millisecond))
			since, wait = time.Time{}, o.RefusalPatience/4
			continue
		case since.IsZero():
			since, retry = time.Now(), time.Now().Add(wait)
		}
		if time.Since(since) >= o.RefusalPatience {
			fail(fmt.Errorf("%w, still after %s and a reconnect; give that user permission to subscribe there, or give the process the creds of a role that has it (docs/security.md)", err, o.RefusalPatience.Round(time.Millisecond)))
			return
		}
		if time.Now().After(retry) && conn.IsConnected() {
			log.Warn("reconnecting, so the server checks the refused subscriptions again", "refused_for", time.Since(since).Round(time.Millisecond))
			if rerr := conn.ForceReconnect(); rerr != nil {
				log.Warn("reconnect", "err", rerr)
			}
			wait = min(2*wait, o.RefusalPatience)
			retry = time.Now().Add(wait)
		}
	}
}
