package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillbus/skillbus/pkg/events"
)

// The call path of a provider. A call arrives on the endpoint's
// subscription (one goroutine per endpoint, in delivery order), is handed
// to a worker, and the worker answers it on the reply subject:
//
//	receive (subscription goroutine) → dispatch → worker → handle → reply
//
// Workers are kept: a worker that finished a call waits workerIdle for the
// next one before it ends, so a busy tool does not pay for a new goroutine
// (and for growing its stack again) on every call. At most MaxConcurrent
// workers exist per tool; when all are busy, receive waits for one, and
// further calls wait in the subscription (NATS pending limits apply).

// workerIdle is how long an idle worker waits for a call before it ends.
const workerIdle = 10 * time.Second

// job is one delivered call.
type job struct {
	msg *nats.Msg
	in  *inflight
}

// endpoint serves one tool.
type endpoint struct {
	s       *Server
	t       Tool
	subject string
	schema  *ArgsSchema // checks the arguments; nil: none
	met     *endpointMetrics
	sem     chan struct{} // one slot per worker; MaxConcurrent slots
	jobs    chan job      // hands a call to an idle worker (unbuffered)

	// streak counts the calls in a row that took less than quickMax (any
	// slower call resets it); at quickStreak and more the tool is quick.
	streak atomic.Int32
}

// Quick tools. A call of a tool whose last quickStreak calls each took less
// than quickMax runs on the subscription goroutine itself, as a plain NATS
// callback does: no goroutine hand-off, and its reply leaves with the
// others in one write. Calls run on workers while the tool has not earned
// that, so a tool that is always slow, like cmd.run, never runs inline. One slower call ends the streak:
// it held up the calls queued behind it on this instance once, and the
// tool's calls go back to workers until it is quick again. quickMax is
// small so that running one call at a time costs little: a tool that
// needs more than 100 µs of work per call runs on workers, on every core.
const (
	quickMax    = 100 * time.Microsecond
	quickStreak = 64
)

// quick reports whether a call may run inline.
func (e *endpoint) quick() bool {
	return e.streak.Load() >= quickStreak
}

// took records how long a call that started at start took, and counts it
// (endpointMetrics) with code, "" for a result.
func (e *endpoint) took(start time.Time, code string) {
	d := time.Since(start)
	e.met.record(d, code)
	if d > quickMax {
		e.streak.Store(0)
	} else if e.streak.Load() < quickStreak {
		e.streak.Add(1)
	}
}

func newEndpoint(s *Server, t Tool, subject string) *endpoint {
	return &endpoint{s: s, t: t, subject: subject, met: newEndpointMetrics(s.met, t.Name, subject),
		sem: make(chan struct{}, s.cfg.MaxConcurrent), jobs: make(chan job)}
}

// receive is the micro handler: it runs on the endpoint's subscription
// goroutine and must not block longer than it takes to find a worker.
// It replies itself (not through micro.Request), because micro's request
// bookkeeping is not safe once the handler has returned.
func (e *endpoint) receive(r micro.Request) {
	if events.Relayed(r.Reply(), nats.Header(r.Headers())) != "" {
		return // a stored message replayed onto the tool, not a call (pkg/events.Relayed)
	}
	m := requestMsg(r)
	s := e.s
	in := &inflight{tool: e.t.Name, start: time.Now()}
	var every time.Duration
	if m.Reply != "" {
		every = parseKeepAlive(m.Header)
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		s.replyStopping(m)
		e.met.record(time.Since(in.start), "503")
		return
	}
	if m.Reply != "" {
		if prev, dup := s.byReply[m.Reply]; dup && every > 0 && prev.every > 0 {
			// Its caller sent the call again because our keep-alives did
			// not reach it: the call runs (or waits) here, so say so
			// rather than run it twice.
			s.mu.Unlock()
			s.sendProgress(m.Reply, true)
			return
		}
	}
	in.prev, in.next = s.calls.prev, &s.calls
	s.calls.prev.next = in
	s.calls.prev = in
	s.ncalls++
	if m.Reply != "" {
		if _, dup := s.byReply[m.Reply]; !dup { // a call sent again after a reconnect may arrive twice
			in.reply = m.Reply
			s.byReply[m.Reply] = in
			in.cancelled = s.tombs.take(m.Reply)
		}
		if every > 0 {
			s.progressedLocked(in, m.Reply, every)
		}
	}
	s.mu.Unlock()
	j := job{msg: m, in: in}
	if e.quick() {
		code := s.handle(e, m)
		s.done(in)
		e.took(in.start, code)
		return
	}
	select {
	case e.jobs <- j: // an idle worker takes it
		return
	default:
	}
	select {
	case e.jobs <- j:
	case e.sem <- struct{}{}:
		go e.worker(j)
	case <-s.base.Done(): // Stop's deadline passed with calls queued
		s.done(in)
		s.replyStopping(m)
		e.met.record(time.Since(in.start), "503")
	}
}

// worker runs j, then the calls handed to it, until it has been idle for
// workerIdle or the server has stopped.
func (e *endpoint) worker(j job) {
	defer func() { <-e.sem }()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		code := e.s.handle(e, j.msg)
		e.s.done(j.in)
		e.took(j.in.start, code)
		idle.Reset(workerIdle)
		select {
		case j = <-e.jobs:
		case <-idle.C:
			return
		case <-e.s.base.Done():
			return
		}
	}
}

// done removes a finished call from the running ones.
func (s *Server) done(in *inflight) {
	s.mu.Lock()
	in.prev.next, in.next.prev = in.next, in.prev
	in.prev, in.next = nil, nil
	s.ncalls--
	if in.every > 0 {
		s.nprogress--
	}
	if in.reply != "" && s.byReply[in.reply] == in {
		delete(s.byReply, in.reply)
	}
	s.mu.Unlock()
}

// requestMsg rebuilds the NATS message of a micro request (subject, reply,
// headers and data are all the reply path needs).
func requestMsg(r micro.Request) *nats.Msg {
	return &nats.Msg{Subject: r.Subject(), Reply: r.Reply(), Header: nats.Header(r.Headers()), Data: r.Data()}
}

// handle runs one call and replies to it. It returns the error code
// replied ("" for a result; a call whose caller had given up counts with
// the code it would have had).
func (s *Server) handle(e *endpoint, m *nats.Msg) (code string) {
	t := e.t
	ctx, span := s.tr.start(s.tr.extract(s.base, m.Header), func() string { return "tool " + t.Name }, trace.SpanKindServer, "process", m.Subject, len(m.Data))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("skillbus.tool", t.Name))
	}
	var err error
	defer func() { end(span, err) }()

	deadline, callerDeadline := time.Time{}, false
	if h := m.Header[DeadlineHeader]; len(h) > 0 {
		if d, perr := time.Parse(time.RFC3339Nano, h[0]); perr == nil {
			deadline, callerDeadline = d, true
		}
	}
	if !callerDeadline {
		deadline = time.Now().Add(s.cfg.CallTimeout)
	}
	cctx := newCallCtx(ctx, deadline)
	defer cctx.cancel(context.Canceled)
	ctx = cctx
	if !s.attach(m.Reply, cctx) {
		return codeCancelled // its caller cancelled it before it started: nobody waits
	}

	args := json.RawMessage(m.Data)
	if isBlank(args) {
		args = json.RawMessage("{}")
	} else if !isObject(args) {
		err = Errorf("400", "arguments must be a JSON object, got %s", preview(args))
		return s.replyError(m, err.(*Error))
	}
	if e.schema != nil {
		if cerr := e.schema.Check(args); cerr != nil {
			err = cerr
			return s.replyError(m, cerr.(*Error))
		}
	}
	res, ferr := call(ctx, t.Func, args)
	if ferr != nil {
		err = ferr
		var te *Error
		if !errors.As(ferr, &te) {
			code := "500"
			if errors.Is(ferr, context.DeadlineExceeded) {
				code = "504"
			}
			te = &Error{Code: code, Description: ferr.Error()}
		}
		if cctx.byCaller() {
			return codeCancelled // the caller cancelled it: nobody reads a reply
		}
		if callerDeadline && ctx.Err() != nil && time.Now().After(deadline) {
			return te.CodeOrDefault() // the caller has given up: nobody reads a reply
		}
		return s.replyError(m, te)
	}
	var out []byte
	raw := true // out comes from the tool as is: check it is JSON
	switch v := res.(type) {
	case json.RawMessage:
		out = v
	case []byte:
		out = v
	default:
		raw = false
		out, err = json.Marshal(res)
		if err != nil {
			return s.replyError(m, Errorf("500", "tool %s returned a result that is not JSON-encodable: %v", t.Name, err))
		}
	}
	if len(out) == 0 {
		out = []byte("null")
	} else if raw && !json.Valid(out) {
		err = Errorf("500", "tool %s returned invalid JSON %s", t.Name, preview(out))
		return s.replyError(m, err.(*Error))
	}
	// A successful reply carries no headers, so the limit is exact.
	if max := s.nc.MaxPayload(); int64(len(out)) > max {
		err = Errorf("413", "tool %s: result of %d bytes is larger than the server's max_payload (%d bytes): %v", t.Name, len(out), max, ErrPayloadTooLarge)
		return s.replyError(m, err.(*Error))
	}
	if m.Reply == "" {
		return "" // a published call: nobody waits for the result
	}
	if rerr := s.nc.Publish(m.Reply, out); rerr != nil {
		err = rerr
		return s.replyError(m, Errorf("500", "tool %s: cannot send the result: %v", t.Name, rerr))
	}
	return ""
}

// codeCancelled is the status a call cancelled by its caller is counted
// with (skillbus.tool.calls): no reply is sent. 499 is "client closed
// request", as proxies count it.
const codeCancelled = "499"

// call runs f, turning a panic into a code-500 error so one bad call
// never takes the provider down.
func call(ctx context.Context, f Func, args json.RawMessage) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Errorf("500", "tool panicked: %v", p)
		}
	}()
	return f(ctx, args)
}

// replyStopping answers a call that arrived while the provider stops.
func (s *Server) replyStopping(m *nats.Msg) {
	s.replyError(m, Errorf("503", "tool provider %s is stopping: call again (another replica may serve it)", s.cfg.Name))
}

// replyError answers m with e in the NATS micro error headers and a
// {"code", "error"} body: the description on one line, at most 1,024
// bytes. It returns the code.
func (s *Server) replyError(m *nats.Msg, e *Error) string {
	code := e.CodeOrDefault()
	if m.Reply == "" {
		return code
	}
	desc := strings.Join(strings.Fields(e.Description), " ")
	if desc == "" {
		desc = "error"
	}
	if len(desc) > 1024 {
		desc = desc[:1021] + "..."
	}
	body, _ := json.Marshal(struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}{code, desc})
	_ = s.nc.PublishMsg(&nats.Msg{
		Subject: m.Reply,
		Header:  nats.Header{micro.ErrorHeader: []string{desc}, micro.ErrorCodeHeader: []string{code}},
		Data:    body,
	})
	return code
}

// isBlank reports whether b holds only JSON white space.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// looksLikeObject is the client's cheap check before sending: the first
// and last non-space bytes are braces. The provider checks that the
// arguments are valid JSON and answers code "400" when they are not.
func looksLikeObject(b []byte) bool {
	b = bytes.TrimRight(bytes.TrimLeft(b, " \t\r\n"), " \t\r\n")
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}'
}

// isObject reports whether b is one valid JSON value that is an object,
// without decoding it.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

func preview(b []byte) string {
	const n = 60
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
