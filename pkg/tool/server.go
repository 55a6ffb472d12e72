package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/metric"

	"github.com/skillbus/skillbus/pkg/events"
)

// DeadlineHeader carries the caller's deadline (RFC 3339 with nanoseconds,
// UTC) so a provider stops working when nobody waits for the answer.
const DeadlineHeader = "Skillbus-Deadline"

// Func is a tool's implementation. args is the request's JSON object
// ("{}" when the request was empty). The result is marshaled with
// encoding/json (a json.RawMessage or []byte holding JSON is sent as is;
// nil becomes null). ctx ends when the caller's deadline passes or the
// server stops.
type Func func(ctx context.Context, args json.RawMessage) (any, error)

// Tool describes one tool to serve.
type Tool struct {
	// Name is the tool's name; it is served on tool.<Name>. Dots separate
	// parts (fs.read); letters, digits, '-' and '_' within parts.
	Name string
	// Description is a one-line summary (endpoint metadata "description").
	Description string
	// Schema is an optional JSON Schema of the arguments (draft 2020-12 or
	// draft-07; SchemaFor derives one from a Go struct). It is published in
	// the endpoint metadata "schema" for `nats micro info`, `skillbus tools
	// --json` and agents, and every call's arguments are checked against it
	// before Func runs: a call that does not fit is answered with code
	// "400" naming the argument and what was expected.
	Schema json.RawMessage
	// Unvalidated publishes Schema without checking calls against it (for
	// a schema this package cannot compile, such as an MCP server's in an
	// older draft).
	Unvalidated bool
	// Func is the implementation; required.
	Func Func
}

// ServerConfig configures a tool provider. The zero value is usable.
type ServerConfig struct {
	// Name is the micro service name shown by `nats micro ls` (letters,
	// digits, '-' and '_'); default "skillbus-tools".
	Name string
	// Version is the provider's SemVer version (the NATS micro protocol
	// requires SemVer); default "0.0.0": set your provider's own version.
	Version string
	// Description of the provider; default empty.
	Description string
	// Metadata is the micro service's metadata (`nats micro info`). A
	// provider whose behaviour depends on its configuration puts a hash of
	// it under MetadataFingerprint (and a readable form under
	// MetadataConfig), so that instances of one tool that disagree can be
	// told apart (Conflicts). Default none.
	Metadata map[string]string
	// Site names where the provider runs (an edge site, docs/edge.md); it
	// is published in the service metadata under MetadataSite, beside the
	// name of the NATS server the connection was on at Serve
	// (MetadataServer), so `skillbus tools` shows which tools are at
	// which edge. Default none (the server name alone).
	Site string
	// QueueGroup in which replicas share calls; default "skillbus-tools".
	QueueGroup string
	// MaxConcurrent bounds the calls of one tool running at once in this
	// process; further calls wait in the subscription (NATS pending limits
	// apply). Default 64.
	MaxConcurrent int
	// CallTimeout bounds one call when the caller sent no deadline;
	// default 60 s (the default group timeout, docs/sequences.md).
	CallTimeout time.Duration
	// CancelGrace is how long Stop waits, after its context is done and
	// the calls' contexts are cancelled, for the calls to return before it
	// gives up on them; default DefaultCancelGrace (1 s). It lets a
	// cancelled call clean up (cmd.run kills its child) before the process
	// exits.
	CancelGrace time.Duration
	// Meters is the meter provider the provider records its calls on
	// (MetricCalls and MetricProcessDuration, see metrics.go); nil uses
	// OpenTelemetry's global one (otel.GetMeterProvider) as it is when
	// Serve is called, a no-op until a program installs an SDK. The
	// skillbus tool providers pass the one of their metric pipeline
	// (docs/operations.md, "Metrics").
	Meters metric.MeterProvider
}

// DefaultCancelGrace is ServerConfig.CancelGrace's default.
const DefaultCancelGrace = time.Second

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (c ServerConfig) withDefaults() ServerConfig {
	if c.Name == "" {
		c.Name = "skillbus-tools"
	}
	if c.Version == "" {
		c.Version = "0.0.0"
	}
	if c.QueueGroup == "" {
		c.QueueGroup = "skillbus-tools"
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = 64
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 60 * time.Second
	}
	if c.CancelGrace == 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	return c
}

// Validate reports the first invalid field by name. Errors: ErrConfig.
func (c ServerConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case !nameRe.MatchString(c.Name):
		return fmt.Errorf("%w: Name %q: use letters, digits, '-' and '_' only", ErrConfig, c.Name)
	case strings.ContainsAny(c.QueueGroup, " >*"):
		return fmt.Errorf("%w: QueueGroup %q: no spaces or wildcards", ErrConfig, c.QueueGroup)
	case c.MaxConcurrent < 1:
		return fmt.Errorf("%w: MaxConcurrent %d: want at least 1", ErrConfig, c.MaxConcurrent)
	case c.CallTimeout < 0:
		return fmt.Errorf("%w: CallTimeout %s: want 0 (default) or more", ErrConfig, c.CallTimeout)
	case c.CancelGrace < 0:
		return fmt.Errorf("%w: CancelGrace %s: want 0 (default) or more", ErrConfig, c.CancelGrace)
	}
	return nil
}

// Server is a running tool provider: one micro service with one endpoint
// per tool.
type Server struct {
	svc    micro.Service
	nc     *nats.Conn
	cfg    ServerConfig
	tr     tracing
	met    serverMetrics
	metReg metric.Registration // the calls counter's observation; nil: none
	base   context.Context
	cancel context.CancelFunc
	subs   int // subscriptions the micro service added to nc

	cancelSubs []*nats.Subscription // tool.<name>.$cancel, one per tool

	mu      sync.Mutex
	calls   inflight // running calls: a ring through prev/next, calls itself when empty
	ncalls  int      // calls in the ring
	stopped bool     // Stop has returned: late deliveries are refused
	// byReply finds a call by its reply subject, the call's id in a
	// cancel message; tombs holds cancels that came before their call.
	byReply map[string]*inflight
	tombs   tombstones
	// nprogress counts the calls in the ring that ask for progress
	// messages; ticking says the keep-alive loop runs (progress.go).
	nprogress int
	ticking   bool
	// noProgress: the server refused a progress message or a reply after
	// one (one response per request allowed): none are sent any more.
	noProgress bool
	lastErr    error // the connection's last error seen by the keep-alive loop (only it reads it)

	stopOnce sync.Once
	stopErr  error
}

// inflight is one running call, for Stop's report of stuck calls; the
// running calls form a ring through prev and next (no map to keep up on
// every call).
type inflight struct {
	tool       string
	start      time.Time
	prev, next *inflight
	// reply is the call's reply subject when byReply holds the call;
	// ctx is its context once it runs; cancelled says its caller sent a
	// cancel. Guarded by Server.mu.
	reply     string
	ctx       *callCtx
	cancelled bool
	// The keep-alive protocol (progress.go): every is the interval its
	// caller asked for (0: none), progressTo the reply subject, nextBeat
	// when the next progress message is due, acked that the first was
	// sent. Guarded by Server.mu.
	every      time.Duration
	progressTo string
	nextBeat   time.Time
	acked      bool
}

// tombstones remembers the reply subjects of the last maxTombstones
// cancels that named no call of this server: the call may still be on its
// way (queued behind busy workers), or was sent to another instance.
type tombstones struct {
	set   map[string]struct{}
	order []string
	next  int
}

const maxTombstones = 1024

func (t *tombstones) add(reply string) {
	if t.set == nil {
		t.set = map[string]struct{}{}
	}
	if len(t.order) < maxTombstones {
		t.order = append(t.order, reply)
	} else {
		delete(t.set, t.order[t.next])
		t.order[t.next] = reply
		t.next = (t.next + 1) % maxTombstones
	}
	t.set[reply] = struct{}{}
}

// take reports whether reply was cancelled, and forgets it.
func (t *tombstones) take(reply string) bool {
	if len(t.set) == 0 {
		return false
	}
	if _, ok := t.set[reply]; ok {
		delete(t.set, reply)
		return true
	}
	return false
}

// Serve starts serving tools on nc. Each tool is an endpoint named after
// the tool (dots become '_') on subject tool.<name>, in cfg.QueueGroup, with
// metadata "tool", "description" and (when set) "schema". Errors: ErrConfig
// (a bad field, a duplicate name, a schema that is not a JSON object or
// does not compile, wrapping ErrBadSchema),
// ErrBadName, or the micro service's or connection's error. When Serve
// returns, the server knows the endpoints: calls from any connection reach
// them. A call whose request asks for progress (ProgressHeader) and is not
// answered within 100 ms gets an acknowledgement and then keep-alives on
// its reply subject until its reply (docs/tools.md, "Keep-alives").
func Serve(nc *nats.Conn, cfg ServerConfig, tools ...Tool) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if len(tools) == 0 {
		return nil, fmt.Errorf("%w: no tools given", ErrConfig)
	}
	seen := map[string]string{}
	for i, t := range tools {
		if _, err := events.ToolSubject(t.Name); err != nil {
			return nil, fmt.Errorf("%w: tools[%d]: %v", ErrBadName, i, err)
		}
		if t.Func == nil {
			return nil, fmt.Errorf("%w: tool %q: Func is nil", ErrConfig, t.Name)
		}
		if len(t.Schema) > 0 && !isObject(t.Schema) {
			return nil, fmt.Errorf("%w: tool %q: Schema must be a JSON object (a JSON Schema)", ErrConfig, t.Name)
		}
		if len(t.Schema) > 0 && !t.Unvalidated {
			if _, err := CompileSchema(t.Schema); err != nil {
				return nil, fmt.Errorf("%w: tool %q: Schema: %w", ErrConfig, t.Name, err)
			}
		}
		ep := endpointName(t.Name)
		if other, dup := seen[ep]; dup {
			return nil, fmt.Errorf("%w: tools %q and %q share the endpoint name %q; rename one", ErrConfig, other, t.Name, ep)
		}
		seen[ep] = t.Name
	}
	subsBefore := nc.NumSubscriptions()
	refusals := watchRefusals(nc)
	svc, err := micro.AddService(nc, micro.Config{
		Name:        cfg.Name,
		Version:     cfg.Version,
		Description: cfg.Description,
		QueueGroup:  cfg.QueueGroup,
		Metadata:    whereMetadata(nc, cfg),
	})
	if err != nil {
		return nil, fmt.Errorf("tool: start micro service %q: %w", cfg.Name, err)
	}
	refusals.check(func(subject string) bool { return strings.HasPrefix(subject, "$SRV.") })
	base, cancel := context.WithCancel(context.Background())
	s := &Server{svc: svc, nc: nc, cfg: cfg, tr: newTracing(), met: newServerMetrics(cfg.Meters), base: base, cancel: cancel, byReply: map[string]*inflight{}}
	s.calls.prev, s.calls.next = &s.calls, &s.calls
	eps := make([]*endpointMetrics, 0, len(tools))
	for _, t := range tools {
		subject, _ := events.ToolSubject(t.Name)
		md := map[string]string{"tool": t.Name}
		if t.Description != "" {
			md["description"] = t.Description
		}
		if len(t.Schema) > 0 {
			md["schema"] = string(t.Schema)
		}
		e := newEndpoint(s, t, subject)
		eps = append(eps, e.met)
		if len(t.Schema) > 0 && !t.Unvalidated {
			e.schema, _ = CompileSchema(t.Schema) // compiled above
		}
		if err := svc.AddEndpoint(endpointName(t.Name), micro.HandlerFunc(e.receive),
			micro.WithEndpointSubject(subject), micro.WithEndpointMetadata(md)); err != nil {
			_ = svc.Stop()
			cancel()
			return nil, fmt.Errorf("tool: add endpoint for %q: %w", t.Name, err)
		}
		refusals.check(func(s string) bool { return s == subject })
	}
	// The subscriptions are known to the server (each step ended with a
	// round trip), so a call made right after Serve, from any connection,
	// finds the tool — unless the server refused one.
	if err := refusals.err(); err != nil {
		_ = svc.Stop()
		cancel()
		return nil, err
	}
	s.subs = nc.NumSubscriptions() - subsBefore
	// The cancel subjects (docs/tools.md, "Cancel"): every instance
	// listens, the one running the call cancels it. Not counted in
	// s.subs: Stop waits for the endpoints to drain, and keeps these
	// until the calls are over.
	for _, t := range tools {
		cs, _ := events.ToolCancelSubject(t.Name)
		sub, err := nc.Subscribe(cs, s.onCancel)
		if err != nil {
			s.unsubscribeCancels()
			_ = svc.Stop()
			cancel()
			return nil, fmt.Errorf("tool: subscribe to %s: %w", cs, err)
		}
		s.cancelSubs = append(s.cancelSubs, sub)
	}
	s.metReg = s.met.observe(eps)
	return s, nil
}

// onCancel cancels the call whose reply subject the message holds, when
// it runs (or waits) here; otherwise it remembers the cancel for a call
// still on its way.
func (s *Server) onCancel(m *nats.Msg) {
	reply := string(m.Data)
	if reply == "" {
		return
	}
	var ctx *callCtx
	s.mu.Lock()
	if in := s.byReply[reply]; in != nil {
		in.cancelled = true
		ctx = in.ctx
	} else if !s.stopped {
		s.tombs.add(reply)
	}
	s.mu.Unlock()
	if ctx != nil {
		ctx.cancelByCaller()
	}
}

// attach gives the call replying to reply its context; false when its
// caller cancelled it before it started.
func (s *Server) attach(reply string, ctx *callCtx) bool {
	if reply == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.byReply[reply]
	if in == nil {
		return true
	}
	if in.cancelled {
		return false
	}
	in.ctx = ctx
	return true
}

func (s *Server) unsubscribeCancels() {
	for _, sub := range s.cancelSubs {
		_ = sub.Unsubscribe()
	}
}

// whereMetadata returns cfg.Metadata (copied) with where the provider is:
// MetadataSite (cfg.Site, when set) and MetadataServer (the server nc is
// connected to now, when known).
func whereMetadata(nc *nats.Conn, cfg ServerConfig) map[string]string {
	md := make(map[string]string, len(cfg.Metadata)+2)
	for k, v := range cfg.Metadata {
		md[k] = v
	}
	if cfg.Site != "" {
		md[MetadataSite] = cfg.Site
	}
	if name := nc.ConnectedServerName(); name != "" {
		md[MetadataServer] = name
	}
	return md
}

// endpointName maps a tool name onto the micro endpoint-name alphabet.
func endpointName(tool string) string { return strings.ReplaceAll(tool, ".", "_") }

// Info returns the micro service's info (name, id, endpoints, metadata).
func (s *Server) Info() micro.Info { return s.svc.Info() }

// Stop stops the provider. It drains the endpoints: the server stops
// routing calls here, and the calls already delivered (queued behind
// MaxConcurrent) still run. It waits until the endpoints' subscriptions
// have drained (seen as nc's subscription count falling by the number Serve
// added) and every call has returned, so no tool function starts after Stop
// returns; a call delivered later still is answered with code "503" without
// running.
//
// When ctx is done first, Stop cancels the running calls' contexts, answers
// the queued ones with code "503", waits at most ServerConfig.CancelGrace
// more for the running ones to return, and returns an error wrapping ctx's
// error that names the calls running at the deadline (and those still
// running, abandoned, after the grace: a tool that ignores its context).
// So Stop returns at most CancelGrace after ctx's deadline.
//
// It is safe to call more than once; later calls return the first result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	target := s.nc.NumSubscriptions() - s.subs
	err := s.svc.Stop()
	if err != nil {
		err = fmt.Errorf("tool: stop micro service %q: %w", s.cfg.Name, err)
	}
	// Once the server has processed the unsubscriptions, what it routed
	// here is in the subscriptions' pending queues; they drain below.
	_ = s.nc.FlushWithContext(ctx)
	idle := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ncalls == 0
	}
	drained := func() bool {
		return s.nc.IsClosed() || s.nc.NumSubscriptions() <= target
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !(drained() && idle()) {
		select {
		case <-tick.C:
			continue
		case <-ctx.Done():
		}
		break
	}
	if ctx.Err() == nil || (drained() && idle()) {
		s.finish()
		return err
	}
	// The deadline passed: cancel what runs, give it a grace to return.
	atDeadline := s.running()
	s.cancel()
	grace := time.NewTimer(s.cfg.CancelGrace)
	defer grace.Stop()
	for !idle() {
		select {
		case <-tick.C:
			continue
		case <-grace.C:
		}
		break
	}
	left := s.running()
	s.finish()
	if len(atDeadline) == 0 && len(left) == 0 {
		// Only the drain was cut short: nothing was interrupted.
		return errors.Join(err, fmt.Errorf("tool: stop %q: the endpoints had not finished draining at the deadline: %w", s.cfg.Name, ctx.Err()))
	}
	msg := fmt.Sprintf("tool: stop %q: %d call(s) still running at the deadline were cancelled: %s", s.cfg.Name, len(atDeadline), strings.Join(atDeadline, ", "))
	if len(left) > 0 {
		msg += fmt.Sprintf("; %d ignored the cancellation and were left running %v later: %s", len(left), s.cfg.CancelGrace, strings.Join(left, ", "))
	}
	return errors.Join(err, fmt.Errorf("%s: %w", msg, ctx.Err()))
}

// finish marks the server stopped (late deliveries are refused) and
// cancels the calls' base context, which also ends the idle workers.
func (s *Server) finish() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	s.unsubscribeCancels()
	if s.metReg != nil {
		_ = s.metReg.Unregister()
	}
}

// running describes the running calls, oldest first, as "TOOL (running
// 1.2s)".
func (s *Server) running() []string {
	s.mu.Lock()
	calls := make([]*inflight, 0, s.ncalls)
	for c := s.calls.next; c != &s.calls; c = c.next {
		calls = append(calls, c)
	}
	s.mu.Unlock()
	slices.SortFunc(calls, func(a, b *inflight) int { return a.start.Compare(b.start) })
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = fmt.Sprintf("%s (running %v)", c.tool, time.Since(c.start).Round(time.Millisecond))
	}
	return out
}
