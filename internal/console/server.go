// Package console is skillbus's web console (docs/console.md): one HTTP
// server, in the skillbus binary, that shows runs live, starts, cancels and
// reruns them, browses sequences, skills and tools, and previews prompt
// assembly. `skillbus dev` serves it next to its stack and `skillbus ui`
// against any cluster.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary (web/),
// with no build step. Everything it shows or does goes through the
// endpoints the command line uses — pkg/client for runs (seq.run,
// seq.status, seq.cancel, seq.rerun, seq.retry), the registry's endpoints for skills
// and sequences, NATS micro discovery and pkg/tool for tools — so the page
// shows the same errors as the CLI. Live updates reach the page as
// server-sent events from two feeds held once per server, never per page:
// a subscription to the EVENTS subjects (events.>) and a headers-only
// watch of the RUNS bucket (every entry carries its run's summary in
// Skillbus-Run-* headers, pkg/events), so no page polls NATS.
//
// Security (docs/console.md, "Security"): the server binds to 127.0.0.1 by
// default and then only answers requests whose Host is a loopback name
// (DNS rebinding); on any other address it needs a token. Every action is
// a POST with a JSON body and the X-Skillbus-Console header, from the
// page's own origin (CSRF).
package console

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/httplimit"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// DefaultListen is the address the console serves on unless told
// otherwise: loopback only.
const DefaultListen = "127.0.0.1:4280"

// ErrConfig reports a Config that cannot work (a non-loopback address
// without a token, a malformed address, a TLS key without a certificate).
var ErrConfig = errors.New("console: bad configuration")

//go:embed web
var webFS embed.FS

// Config configures a Server. The zero value serves on DefaultListen
// without a token.
type Config struct {
	// Listen is the TCP address, HOST:PORT; default DefaultListen. Port 0
	// picks a free port (URL tells which). A host that is not a loopback
	// address ("", 0.0.0.0, a LAN address) needs Token.
	Listen string
	// Token, when set, must be presented by every request: once through
	// the login form or ?token= (then kept in an HttpOnly, SameSite=Strict
	// cookie), or as "Authorization: Bearer TOKEN". Required when Listen is
	// not loopback.
	Token string
	// TLSCert and TLSKey, both or neither, serve HTTPS with this
	// certificate and key (PEM files).
	TLSCert, TLSKey string
	// NATSURL is shown in the page's header (with secrets removed by the
	// caller); informational.
	NATSURL string
	// User is recorded as who asked when the page cancels a run (the
	// cancel's "by"), signals one, or pauses, unpauses, triggers or
	// backfills a schedule entry; default "skillbus console".
	User string
	// Creds is the creds file the console's NATS connection uses, when it
	// uses one (optional): the console reads its user's role (the
	// skillbus-role tag of `skillbus auth`) and publish permissions from
	// it, so the pages say at once what the credentials do not allow
	// (calling tools, for the console role) instead of trying it.
	Creds string
	// Credentials describes the connection's credentials in messages, as
	// natsconn.Config.Credentials does ("creds FILE (NATS_CREDS), role
	// console"); default from Creds.
	Credentials string
	// DiscoverWait is how long tool discovery collects answers; default
	// 500 ms, as `skillbus tools`.
	DiscoverWait time.Duration
	// MaxStreams caps the event streams open at once (GET /api/stream,
	// one per open page); default httplimit.DefaultMaxStreams (64). One
	// more is answered 503 naming --max-streams (docs/console.md).
	MaxStreams int
	// BodyTimeout is how long a request body may take to arrive; default
	// httplimit.DefaultBodyTimeout (10 s). A body still arriving then is
	// answered 408 and its connection closed (docs/console.md).
	BodyTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server is a running console. Create it with New, then Start.
type Server struct {
	cfg  Config
	nc   *nats.Conn
	js   jetstream.JetStream
	runs *client.Client
	tc   *tool.Client
	log  *slog.Logger
	mux  *http.ServeMux

	loopback bool
	access   *access
	streams  *httplimit.Gate // the open event streams
	hub      *hub
	index    *runIndex
	skills   *skillCache
	natsw    *natsWatch // the console's own connection (natsstate.go)

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a console on the NATS connection nc (the caller's; the
// server never closes it). It chains its own error handler onto nc's, to
// see the permission violations the server reports (the previous handler
// still gets every error; Stop puts it back). Errors: ErrConfig (wrapped,
// naming the setting).
func New(nc *nats.Conn, cfg Config) (*Server, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrConfig)
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.User == "" {
		cfg.User = "skillbus console"
	}
	if cfg.DiscoverWait <= 0 {
		cfg.DiscoverWait = 500 * time.Millisecond
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = httplimit.DefaultMaxStreams
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = httplimit.DefaultBodyTimeout
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("%w: listen address %q: %v; write HOST:PORT, e.g. 127.0.0.1:4280", ErrConfig, cfg.Listen, err)
	}
	loop := IsLoopback(host)
	if !loop && cfg.Token == "" {
		return nil, fmt.Errorf("%w: listen address %q is not a loopback address, so the console would be open to the network: set a token (SKILLBUS_TOKEN or --token-file), or listen on 127.0.0.1", ErrConfig, cfg.Listen)
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, fmt.Errorf("%w: give both a TLS certificate and its key, or neither", ErrConfig)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	rc, err := client.New(nc)
	if err != nil {
		return nil, err
	}
	tc, err := tool.NewClient(nc)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, nc: nc, js: js, runs: rc, tc: tc, log: log, loopback: loop, access: newAccess(cfg)}
	s.streams = httplimit.NewGate(cfg.MaxStreams, "event streams (console pages)", "--max-streams")
	s.hub = newHub()
	s.hub.refused = s.eventsRefused
	s.hub.onRegistry = s.onRegistry
	s.index = newRunIndex(s)
	s.hub.indexLive = s.index.live
	s.skills = newSkillCache(s)
	s.natsw = &natsWatch{nc: nc}
	s.routes()
	// Last: from here on the connection's violations reach the console
	// (perms.go); Stop puts the previous error handler back.
	s.access.watch = natsconn.WatchPermissions(nc, s.access.credentials, s.note)
	return s, nil
}

// IsLoopback reports whether host (a host name or IP address, with or
// without brackets) names this machine only: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler returns the console's HTTP handler (with its security checks),
// for tests and for embedding in another server.
func (s *Server) Handler() http.Handler {
	return s.secure(httplimit.Body(s.mux, s.cfg.BodyTimeout, 0, "--body-timeout"))
}

// Start listens on Config.Listen, starts the live feeds (the EVENTS
// subscription and the RUNS watch) and serves until Stop or until ctx is
// done. A feed that cannot start (a NATS user without the permission) is
// logged and the page says updates are not live; it is not an error.
// Errors: the listener's (an address in use).
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("console: listen on %s: %w", s.cfg.Listen, err)
	}
	if s.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCert, s.cfg.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("%w: TLS certificate %s and key %s: %v", ErrConfig, s.cfg.TLSCert, s.cfg.TLSKey, err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	ctx, cancel := context.WithCancel(ctx)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: httplimit.DefaultIdleTimeout, BaseContext: func(net.Listener) context.Context { return ctx }}
	s.mu.Lock()
	s.ln, s.srv, s.cancel, s.done = ln, srv, cancel, make(chan struct{})
	s.mu.Unlock()
	if err := s.hub.subscribe(s.nc); err != nil {
		s.log.Warn("console: no live events (the page will not update by itself)", "err", err)
	}
	go s.index.run(ctx)
	go s.natsw.run(ctx, s.hub)
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("console: serve", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}

// URL returns the console's address (http://HOST:PORT/, https with TLS),
// once started; "" before.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	scheme := "http"
	if s.cfg.TLSCert != "" {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	if h, _, _ := net.SplitHostPort(s.cfg.Listen); h == "localhost" {
		host = h
	} else if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// Stop ends the live feeds and the open event streams, then shuts the
// server down, waiting for requests in flight until ctx is done. Safe to
// call more than once and before Start.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	srv, cancel, done := s.srv, s.cancel, s.done
	s.mu.Unlock()
	s.hub.close()
	defer s.access.watch.Close()
	if srv == nil {
		return nil
	}
	cancel()
	err := srv.Shutdown(ctx)
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.index.wait(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// routes registers the pages and the API. The API is described in
// docs/console.md ("API").
func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web")
	files := http.FileServerFS(static)
	m.Handle("GET /", noStore(files))
	m.HandleFunc("POST /login", s.login)

	m.HandleFunc("GET /api/info", s.apiInfo)
	m.HandleFunc("GET /api/stream", s.apiStream)

	// Each request that talks to NATS fails at once when the server
	// refuses one of its subjects (perms.go); the run page's slots and
	// timeline, and a tool call, watch their own.
	regRead := []string{events.RegistrySkillListSubject, events.RegistrySkillGetSubject, events.RegistrySkillInfoSubject, events.RegistrySeqListSubject, events.RegistrySeqGetSubject}
	m.HandleFunc("GET /api/runs", s.watched(s.apiRuns, events.SeqListSubject))
	m.HandleFunc("GET /api/runs/{id}", s.watched(s.apiRun, events.SeqStatusSubject, events.RegistrySeqGetSubject))
	m.HandleFunc("POST /api/runs/{id}/cancel", s.needsNATS(s.watched(s.apiCancel, events.SeqCancelSubject)))
	m.HandleFunc("POST /api/runs/{id}/rerun", s.needsNATS(s.watched(s.apiRerun, events.SeqRerunSubject)))
	m.HandleFunc("POST /api/runs/{id}/retry", s.needsNATS(s.watched(s.apiRetry, events.SeqRetrySubject)))
	m.HandleFunc("POST /api/runs/{id}/signal", s.needsNATS(s.watched(s.apiSignal, events.SeqStatusSubject, events.SeqSignalSubject)))

	m.HandleFunc("GET /api/seqs", s.watched(s.apiSeqs, regRead...))
	m.HandleFunc("GET /api/seqs/{name}", s.watched(s.apiSeq, append(slices.Clone(regRead), natsconn.JetStreamAPI(events.StreamEvents)...)...))
	m.HandleFunc("POST /api/seqs/{name}/run", s.needsNATS(s.watched(s.apiSeqRun, events.RegistrySeqGetSubject, events.SeqRunSubject)))

	m.HandleFunc("GET /api/schedules", s.watched(s.apiSchedules, events.SeqSchedulesListSubject))
	m.HandleFunc("GET /api/schedules/{seq}/{entry}", s.watched(s.apiSchedule, events.SeqSchedulesShowSubject))
	m.HandleFunc("POST /api/schedules/{seq}/{entry}/pause", s.needsNATS(s.watched(s.apiSchedulePause(true), events.SeqSchedulesPauseSubject, events.SeqSchedulesShowSubject)))
	m.HandleFunc("POST /api/schedules/{seq}/{entry}/unpause", s.needsNATS(s.watched(s.apiSchedulePause(false), events.SeqSchedulesUnpauseSubject, events.SeqSchedulesShowSubject)))
	m.HandleFunc("POST /api/schedules/{seq}/{entry}/trigger", s.needsNATS(s.watched(s.apiScheduleTrigger, events.SeqSchedulesTriggerSubject)))
	m.HandleFunc("POST /api/schedules/{seq}/{entry}/backfill", s.needsNATS(s.watched(s.apiScheduleBackfill, events.SeqSchedulesBackfillSubject)))

	m.HandleFunc("GET /api/skills", s.watched(s.apiSkills, regRead...))
	m.HandleFunc("GET /api/skills/{name}", s.watched(s.apiSkill, regRead...))
	m.HandleFunc("POST /api/preview", s.watched(s.apiPreview, regRead...))

	m.HandleFunc("GET /api/tools", s.watched(s.apiTools, "$SRV.INFO"))
	m.HandleFunc("POST /api/tools/{name}/call", s.needsNATS(s.apiToolCall))
	s.mux = m
}

// noStore makes the browser revalidate the embedded files, so a page
// served after an upgrade never mixes old and new scripts.
func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
