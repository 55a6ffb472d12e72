package skillfacesvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillbus/skillbus/internal/kvsession"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/sections"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// Endpoint subjects (events.SkillfacePrefix + suffix). Requests and replies
// are JSON. An error reply carries the micro error headers
// (Nats-Service-Error-Code, Nats-Service-Error) and an ErrorReply body.
const (
	// SubjectAssemble: a skillface.Request → a skillface.Response
	// (docs/skills.md).
	SubjectAssemble = events.SkillfaceAssembleSubject
	// SubjectInfo: an InfoRequest → an InfoReply (skill_info, docs/skills.md).
	SubjectInfo = events.SkillfaceInfoSubject
)

// SkillsRevisionHeader is an optional request header holding a revision of
// the SKILLS bucket (a decimal number, such as the revision kv.Put
// returned). The replica answers only once its view of the bucket has
// reached that revision, so a request sent right after a skill was written
// is assembled with it; after Config.RevisionWait it answers with code 503.
const SkillsRevisionHeader = events.HeaderSkillsRevision

// Error codes of error replies (the Nats-Service-Error-Code header and
// ErrorReply.Code), HTTP-like as in the other skillbus services.
const (
	CodeBadRequest  = "400" // malformed JSON, an unknown field, a missing or invalid value
	CodeNotFound    = "404" // an unknown mounted skill, skill or section
	CodeConflict    = "409" // the session changed under too many attempts; retry
	CodeTooLarge    = "413" // the request or the assembled reply exceeds a size limit
	CodeInternal    = "500" // a bug: please report it
	CodeUnavailable = "503" // JetStream unavailable, or the skills revision not yet seen; retry
	CodeTimeout     = "504" // the request's work did not finish within Config.Timeout; retry
)

// Bounds of an error reply, so that it always fits in one NATS message.
const (
	maxErrorSkills = 100
	maxErrorChars  = 8 << 10
)

// ErrorReply is the body of every error reply.
type ErrorReply struct {
	// Code is one of the Code constants.
	Code string `json:"code"`
	// Error says what is wrong and how to fix it.
	Error string `json:"error"`
	// Skills names the unknown skills of a 404 for mounts (the first 100).
	Skills []string `json:"skills,omitempty"`
	// Retryable is true when the same request may succeed later (409, 503,
	// 504).
	Retryable bool `json:"retryable,omitempty"`
}

// InfoRequest is the request of skillbus.skillface.info.
type InfoRequest struct {
	// Name of the skill; required.
	Name string `json:"name"`
	// Section is a section title; "" asks for the whole skill, or for its
	// first lines and table of contents when it is long (docs/skills.md).
	Section string `json:"section,omitempty"`
}

// InfoReply is the reply of skillbus.skillface.info; the same shape as the
// registry's skill.info reply.
type InfoReply struct {
	Name    string `json:"name"`
	Section string `json:"section,omitempty"`
	Text    string `json:"text"`
}

// replyError is an error with an error reply code.
type replyError struct {
	code   string
	msg    string
	skills []string
}

func (e *replyError) Error() string { return e.msg }

func fail(code, format string, args ...any) *replyError {
	return &replyError{code: code, msg: fmt.Sprintf(format, args...)}
}

// incoming is what a handler reads of a request: copied out of the
// micro.Request before the work moves to its own goroutine, so that the
// request object is never touched concurrently with micro.
type incoming struct {
	data  []byte
	hdr   nats.Header
	reply string

	// base, when set, is the parent context of the work, holding the read
	// of session prefetched (see wrap); cancel and release end it.
	base            context.Context
	cancel, release func()
	prefetched      string
}

// leadingSessionID returns the session id of a request body that begins
// with it the way encoding/json writes a skillface.Request —
// {"session_id":"ID", … — with no escape in ID; else false. It only tells
// which session to read early: the body is decoded in full later.
func leadingSessionID(b []byte) (string, bool) {
	const prefix = `{"session_id":"`
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return "", false
	}
	rest := b[len(prefix):]
	i := bytes.IndexByte(rest, '"')
	if i <= 0 || i > kvsession.MaxIDBytes {
		return "", false
	}
	id := rest[:i]
	for _, c := range id {
		if c < 0x20 || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(id) {
		return "", false
	}
	return string(id), true
}

type handlerFunc func(ctx context.Context, in incoming) ([]byte, error)

// serve starts the micro service with its two endpoints.
func (s *Service) serve() error {
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        events.ServiceSkillface,
		Version:     s.cfg.Version,
		Description: "skillbus skillface: prompt assembly with skills (see docs/skills.md)",
		QueueGroup:  events.ServiceSkillface,
		StatsHandler: func(*micro.Endpoint) any {
			return s.Stats()
		},
	})
	if err != nil {
		return fmt.Errorf("skillfacesvc: micro service: %w", err)
	}
	eps := []struct {
		name, subject string
		h             handlerFunc
	}{
		{"assemble", SubjectAssemble, s.assemble},
		{"info", SubjectInfo, s.info},
	}
	for _, ep := range eps {
		if err := svc.AddEndpoint(ep.name, s.wrap(ep.subject, ep.h), micro.WithEndpointSubject(ep.subject)); err != nil {
			_ = svc.Stop()
			return fmt.Errorf("skillfacesvc: endpoint %s: %w", ep.subject, err)
		}
	}
	if err := s.nc.FlushTimeout(s.cfg.Timeout); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("skillfacesvc: register endpoints: %w", err)
	}
	s.svc = svc
	return nil
}

// wrap adapts a handlerFunc: it waits for a slot (Config.MaxConcurrent),
// then works on the request in its own goroutine with the caller's trace
// context and Config.Timeout, recovers a panic, and sends the reply or an
// error reply. micro's own per-endpoint processing time therefore counts
// only the wait for a slot, and its error count stays 0; Stats has the
// service's own counters. Replies carry the trace context.
func (s *Service) wrap(subject string, h handlerFunc) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		if why := events.Relayed(req.Reply(), nats.Header(req.Headers())); why != "" {
			s.log.Warn("dropped a message the NATS server relayed onto an endpoint (not a request)", "subject", subject, "why", why)
			return
		}
		in := incoming{data: req.Data(), hdr: nats.Header(req.Headers()), reply: req.Reply()}
		s.sem <- struct{}{}
		s.begin()
		if subject == SubjectAssemble {
			// The session is read from here on, while the request waits
			// for its goroutine and is decoded (skillface.Assembler.Prefetch).
			if id, ok := leadingSessionID(in.data); ok {
				in.base, in.cancel = context.WithTimeout(context.Background(), s.cfg.Timeout)
				in.base, in.release = s.asm.Prefetch(in.base, id)
				in.prefetched = id
			}
		}
		go func() {
			defer func() { <-s.sem; s.end() }()
			s.handle(subject, h, in)
		}()
	})
}

func (s *Service) handle(subject string, h handlerFunc, in incoming) {
	start := time.Now()
	base := context.Background()
	if in.base != nil {
		base = in.base
		defer in.cancel()
		defer in.release()
	}
	ctx, span := events.StartSpan(events.Extract(base, in.hdr), "skillface "+subject, trace.SpanKindServer, subject, len(in.data))
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var err error
	defer func() { events.EndSpan(span, err) }()
	var out []byte
	func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("endpoint panicked", "subject", subject, "panic", p)
				err = fail(CodeInternal, "internal error in %s: %v (please report it)", subject, p)
			}
		}()
		out, err = h(ctx, in)
	}()
	if err == nil && len(out) > int(s.nc.MaxPayload()) {
		err = fail(CodeTooLarge, "the reply would be %d bytes, more than the NATS server's max_payload of %d bytes: "+
			"send fewer or shorter messages, or raise max_payload", len(out), s.nc.MaxPayload())
	}
	s.requests.Add(1)
	if err != nil {
		s.failures.Add(1)
		re := s.classify(ctx, err)
		s.noteRequest(ctx, subject, start, re.code)
		s.replyError(ctx, subject, in, re)
		return
	}
	s.noteRequest(ctx, subject, start, "")
	s.send(ctx, subject, in, &nats.Msg{Data: out, Header: nats.Header{}})
	putBuf(out) // the connection copied it
}

// replyBufs recycles reply buffers: a reply is copied into the
// connection's write buffer when it is published, so its buffer can serve
// the next reply (one large allocation less per request).
var replyBufs sync.Pool

// getBuf returns an empty buffer with room for at least n bytes.
func getBuf(n int) []byte {
	if b, ok := replyBufs.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n)
}

// putBuf keeps b for getBuf unless it is very large.
func putBuf(b []byte) {
	if c := cap(b); c > 0 && c <= 1<<20 {
		b = b[:0]
		replyBufs.Put(&b)
	}
}

// send publishes a reply to the request's inbox with the trace context.
func (s *Service) send(ctx context.Context, subject string, in incoming, m *nats.Msg) {
	if in.reply == "" {
		return // a publish without a reply subject: nobody to answer
	}
	m.Subject = in.reply
	events.Inject(ctx, m.Header)
	if err := s.nc.PublishMsg(m); err != nil {
		s.log.Warn("cannot send reply", "subject", subject, "err", err)
	}
}

// classify turns any error into a reply error with a code.
func (s *Service) classify(ctx context.Context, err error) *replyError {
	var re *replyError
	var unknown *skillface.UnknownSkillError
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &unknown):
		return &replyError{code: CodeNotFound, msg: strings.TrimPrefix(err.Error(), "skillface: "), skills: unknown.Names}
	case errors.Is(err, skillface.ErrInvalidRequest), errors.Is(err, kvsession.ErrSessionID):
		return fail(CodeBadRequest, "bad request: %s", trimPrefixes(err.Error()))
	case errors.Is(err, skillface.ErrContention):
		return fail(CodeConflict, "%s", trimPrefixes(err.Error()))
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return fail(CodeTimeout, "the request did not finish within %s (the session store may be slow or unavailable); retry", s.cfg.Timeout)
	default:
		s.log.Warn("request failed", "err", err)
		return fail(CodeUnavailable, "%s; retry later", trimPrefixes(err.Error()))
	}
}

func trimPrefixes(msg string) string {
	for _, p := range []string{"skillface: ", "kvsession: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

func (s *Service) replyError(ctx context.Context, subject string, in incoming, re *replyError) {
	retry := re.code == CodeConflict || re.code == CodeUnavailable || re.code == CodeTimeout
	// An error about a huge request (thousands of unknown mounts) must
	// still fit in one message: keep the first names and say how many.
	if len(re.skills) > maxErrorSkills {
		re.msg = fmt.Sprintf("%d mounted skills are not loaded, among them %q; list the loaded skills with `skillbus skills`",
			len(re.skills), re.skills[:maxErrorSkills])
		re.skills = re.skills[:maxErrorSkills]
	}
	if len(re.msg) > maxErrorChars {
		re.msg = strings.ToValidUTF8(re.msg[:maxErrorChars], "") + "…"
	}
	body, _ := json.Marshal(ErrorReply{Code: re.code, Error: re.msg, Skills: re.skills, Retryable: retry})
	desc := strings.Join(strings.Fields(re.msg), " ")
	if len(desc) > 1024 {
		desc = strings.ToValidUTF8(desc[:1021], "") + "..."
	}
	s.log.Debug("error reply", "subject", subject, "code", re.code, "error", desc)
	s.send(ctx, subject, in, &nats.Msg{Data: body, Header: nats.Header{
		micro.ErrorCodeHeader: {re.code},
		micro.ErrorHeader:     {desc},
	}})
}

// precheck enforces the request size limit and the skills revision barrier.
func (s *Service) precheck(ctx context.Context, in incoming) error {
	if n := len(in.data); n > s.cfg.MaxRequestBytes {
		return fail(CodeTooLarge, "the request is %d bytes; this service accepts at most %d (its max request size): "+
			"send fewer or shorter messages", n, s.cfg.MaxRequestBytes)
	}
	v := in.hdr.Get(SkillsRevisionHeader)
	if v == "" {
		return nil
	}
	rev, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fail(CodeBadRequest, "bad request: header %s is %q; want a SKILLS bucket revision, a decimal number such as the one kv.Put returned", SkillsRevisionHeader, v)
	}
	if got, ok := s.waitRevision(ctx, rev); !ok {
		return fail(CodeUnavailable, "this replica has applied the SKILLS bucket up to revision %d, not yet %d (header %s), after waiting %s; "+
			"retry, and check that the revision is one of the SKILLS bucket", got, rev, SkillsRevisionHeader, s.cfg.RevisionWait)
	}
	return nil
}

// assemble serves skillbus.skillface.assemble.
func (s *Service) assemble(ctx context.Context, in incoming) ([]byte, error) {
	if err := s.precheck(ctx, in); err != nil {
		return nil, err
	}
	data := in.data
	var req skillface.Request
	// The session's state is read while the rest of the request is
	// decoded and worked on (skillface.Assembler.Prefetch).
	var release func() // collects the read if nothing used it
	defer func() {
		if release != nil {
			release()
		}
	}()
	prefetch := func(id string) {
		if id != "" && len(id) <= kvsession.MaxIDBytes && id != in.prefetched {
			ctx, release = s.asm.Prefetch(ctx, id)
		}
	}
	if err := decodeRequest(data, &req, prefetch); err != nil {
		return nil, err
	}
	if !req.Restricted && len(req.SessionID) > kvsession.MaxIDBytes {
		return nil, fail(CodeBadRequest, "bad request: session_id is %d bytes long; at most %d are allowed (use a shorter id, such as a hash of it)",
			len(req.SessionID), kvsession.MaxIDBytes)
	}
	if !req.Restricted {
		if err := s.checkMounts(&req); err != nil {
			return nil, err
		}
	}
	resp, err := s.asm.Assemble(ctx, req)
	if err != nil {
		return nil, err
	}
	s.noteAssembled(ctx, &resp)
	if req.Restricted {
		// docs/skills.md: the messages come back unchanged — the request's
		// own bytes, not a re-encoding.
		var raw struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, fail(CodeBadRequest, "bad request: %s", friendlyJSONError(err, assembleFields))
		}
		if len(raw.Messages) == 0 {
			raw.Messages = json.RawMessage("null")
		}
		tools := resp.Tools
		if tools == nil {
			tools = []string{}
		}
		rest, err := json.Marshal(struct {
			Tools  []string         `json:"tools"`
			Counts skillface.Counts `json:"counts"`
		}{tools, resp.Counts})
		if err != nil {
			return nil, err
		}
		// json.Marshal would compact and re-escape a RawMessage, so the
		// reply is put together by hand: {"messages":RAW,"tools":…}.
		out := make([]byte, 0, len(raw.Messages)+len(rest)+16)
		out = append(out, `{"messages":`...)
		out = append(out, raw.Messages...)
		out = append(out, ',')
		return append(out, rest[1:]...), nil
	}
	// The same bytes as json.Marshal(resp), with the listing and the
	// bodies escaped once per skill set rather than on every call.
	n := 256
	for _, m := range resp.Messages {
		n += len(m.Content) + len(m.Role) + 32
	}
	return s.asm.AppendResponseJSON(getBuf(n+n/16), &resp), nil
}

// checkMounts removes repeated mounts (keeping the first, which changes
// nothing in the result) and reports the mounts of skills that are not
// loaded, in linear time, so that a request with tens of thousands of
// mounts costs no more than its size.
func (s *Service) checkMounts(req *skillface.Request) error {
	if len(req.Mounts) < 2 {
		return nil
	}
	seen := make(map[string]bool, len(req.Mounts))
	uniq := make([]string, 0, len(req.Mounts))
	var unknown []string
	s.mu.Lock()
	for _, m := range req.Mounts {
		if seen[m] {
			continue
		}
		seen[m] = true
		uniq = append(uniq, m)
		if _, ok := s.skills[m]; !ok {
			unknown = append(unknown, m)
		}
	}
	s.mu.Unlock()
	if len(unknown) > 0 {
		return &skillface.UnknownSkillError{Names: unknown}
	}
	req.Mounts = uniq
	return nil
}

// info serves skillbus.skillface.info.
func (s *Service) info(ctx context.Context, in incoming) ([]byte, error) {
	if err := s.precheck(ctx, in); err != nil {
		return nil, err
	}
	var req InfoRequest
	if err := decodeStrict(in.data, &req, infoFields); err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fail(CodeBadRequest, `bad request: "name" is required, for example {"name": "pdf"} or {"name": "pdf", "section": "Usage"}`)
	}
	s.mu.Lock()
	sk, ok := s.skills[req.Name]
	n := len(s.skills)
	s.mu.Unlock()
	if !ok {
		return nil, fail(CodeNotFound, "no skill named %q is loaded (%d skills are); list them with `skillbus skills`, or check the spelling", req.Name, n)
	}
	secs := sk.Sections
	if secs == nil {
		secs = sections.SplitBody(sk.Body)
	}
	text, err := sections.InfoWith(sk.Body, secs, req.Section, s.cfg.Info)
	if err != nil {
		if errors.Is(err, sections.ErrNoSection) {
			return nil, fail(CodeNotFound, "skill %q: %s", req.Name, strings.TrimPrefix(err.Error(), "sections: "))
		}
		return nil, fail(CodeInternal, "skill %q: %v", req.Name, err)
	}
	return json.Marshal(InfoReply{Name: req.Name, Section: req.Section, Text: text})
}

const (
	assembleFields = `a request has "session_id", "round", "restricted", "messages" (each with "role" and "content"), "work_files", "tools" and "mounts"`
	infoFields     = `a request has "name" and, optionally, "section"`
)

// decodeStrict reads one JSON object into v, rejecting unknown fields and
// trailing data; fields names the allowed fields for the message.
func decodeStrict(data []byte, v any, fields string) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(CodeBadRequest, "bad request: the body is empty; send a JSON object (%s)", fields)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(CodeBadRequest, "bad request: %s", friendlyJSONError(err, fields))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(CodeBadRequest, "bad request: unexpected data after the JSON object; send exactly one object")
	}
	return nil
}

// friendlyJSONError says what is wrong with a request body without Go type
// names.
func friendlyJSONError(err error, fields string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the body is a JSON %s; send a JSON object (%s)", te.Value, fields)
		}
		return fmt.Sprintf("field %q has the wrong type (got a JSON %s, want %s)", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the JSON ends too early (truncated body?)"
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + msg + "; " + fields
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	default:
		return "an object"
	}
}
