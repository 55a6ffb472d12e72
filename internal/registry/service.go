package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/sections"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/skill"
)

// The registry's endpoint subjects and wire types are public in pkg/events
// (registryservice.go), where pkg/client and other programs find them;
// these aliases keep the registry's own names.
const (
	SubjectSkillList = events.RegistrySkillListSubject // {} → SkillList
	SubjectSkillGet  = events.RegistrySkillGetSubject  // {"name"} → the skill record (pkg/skill.Skill JSON)
	SubjectSkillInfo = events.RegistrySkillInfoSubject // {"name","section"?} → SkillInfo
	SubjectSeqList   = events.RegistrySeqListSubject   // {} → SeqList
	SubjectSeqGet    = events.RegistrySeqGetSubject    // {"name"} → the stored sequence AST (canonical JSON)
	SubjectSeqCreate = events.RegistrySeqCreateSubject // the JSON form of a sequence → SeqCreated
	SubjectSeqDelete = events.RegistrySeqDeleteSubject // {"name"} → SeqDeleted
)

// Wire types of the endpoints (pkg/events).
type (
	ErrorReply   = events.RegistryErrorReply
	NameRequest  = events.RegistryNameRequest
	SkillSummary = events.SkillSummary
	SkillList    = events.SkillList
	SkillInfo    = events.SkillInfo
	SeqSummary   = events.SequenceSummary
	SeqList      = events.SequenceList
	SeqCreated   = events.SeqCreated
	SeqDeleted   = events.SeqDeleted
)

// MaxInfoBytes bounds the text of a skill.info reply: see
// events.MaxSkillInfoBytes.
const MaxInfoBytes = events.MaxSkillInfoBytes

// replyError is an error with an error reply code.
type replyError struct {
	code     string
	msg      string
	problems []Problem
}

func (e *replyError) Error() string { return e.msg }

func fail(code, format string, args ...any) *replyError {
	return &replyError{code: code, msg: fmt.Sprintf(format, args...)}
}

type handlerFunc func(ctx context.Context, data []byte) (any, error)

// serve starts the micro service with one endpoint per subject.
func (r *Registry) serve(ctx context.Context) error {
	svc, err := micro.AddService(r.nc, micro.Config{
		Name:        events.ServiceRegistry,
		Version:     r.cfg.Version,
		Description: "skillbus registry: stores and serves skills and sequences (see docs/skills.md, docs/sequences.md)",
		QueueGroup:  events.ServiceRegistry,
	})
	if err != nil {
		return fmt.Errorf("registry: micro service: %w", err)
	}
	eps := []struct {
		name, subject string
		h             handlerFunc
	}{
		{"skill-list", SubjectSkillList, r.skillList},
		{"skill-get", SubjectSkillGet, r.skillGet},
		{"skill-info", SubjectSkillInfo, r.skillInfo},
		{"seq-list", SubjectSeqList, r.seqList},
		{"seq-get", SubjectSeqGet, r.seqGet},
		// Writes: made by the replica holding the lease, forwarded to it
		// by the others (lease.go).
		{"seq-create", SubjectSeqCreate, r.forwarded(events.RegistryLeaderSeqCreateSubject, r.seqCreate)},
		{"seq-delete", SubjectSeqDelete, r.forwarded(events.RegistryLeaderSeqDeleteSubject, r.seqDelete)},
	}
	for _, ep := range eps {
		if err := svc.AddEndpoint(ep.name, r.wrap(ctx, ep.subject, ep.h), micro.WithEndpointSubject(ep.subject)); err != nil {
			_ = svc.Stop()
			return fmt.Errorf("registry: endpoint %s: %w", ep.subject, err)
		}
	}
	if err := r.nc.FlushTimeout(r.cfg.Timeout); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("registry: register endpoints: %w", err)
	}
	r.svc = svc
	return nil
}

// wrap adapts a handlerFunc: trace context, panic recovery, JSON reply or
// structured error reply.
func (r *Registry) wrap(base context.Context, subject string, h handlerFunc) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		if why := events.Relayed(req.Reply(), nats.Header(req.Headers())); why != "" {
			r.log.Debug("dropped a message that is not a request it may answer (events.Relayed)", "subject", subject, "why", why)
			return
		}
		r.inflight.Add(1)
		defer r.inflight.Add(-1)
		ctx, span := events.StartSpan(events.Extract(base, nats.Header(req.Headers())), "registry "+subject, trace.SpanKindServer, subject, len(req.Data()))
		var err error
		defer func() { events.EndSpan(span, err) }()
		var res any
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.log.Error("endpoint panicked", "subject", subject, "panic", p)
					err = fail("500", "internal error in %s: %v", subject, p)
				}
			}()
			res, err = h(ctx, req.Data())
		}()
		if err != nil {
			re, ok := err.(*replyError)
			if !ok {
				re = fail("500", "%v", err)
			}
			body, _ := json.Marshal(ErrorReply{Code: re.code, Error: re.msg, Problems: re.problems})
			desc := strings.Join(strings.Fields(re.msg), " ")
			if len(desc) > 1024 {
				desc = desc[:1021] + "..."
			}
			_ = req.Error(re.code, desc, body)
			return
		}
		var out []byte
		if raw, ok := res.(json.RawMessage); ok {
			out = raw
		} else if out, err = json.Marshal(res); err != nil {
			_ = req.Error("500", "cannot encode the reply", nil)
			return
		}
		if err = req.Respond(out); err != nil {
			r.log.Warn("cannot send reply", "subject", subject, "err", err)
		}
	})
}

// decodeStrict reads a JSON object into v, rejecting unknown fields and
// trailing data. An empty body is an empty object.
func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail("400", "bad request: %s", friendlyJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("400", "bad request: unexpected data after the JSON object")
	}
	return nil
}

func friendlyJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type (got a JSON %s)", te.Field, te.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "not valid JSON: the text ends before the object is complete"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, err)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + msg + `; allowed: "name" (and "section" for skill.info)`
	}
	return err.Error()
}

func (r *Registry) nameRequest(data []byte, allowSection bool) (NameRequest, error) {
	var req NameRequest
	if err := decodeStrict(data, &req); err != nil {
		return req, err
	}
	if req.Name == "" {
		return req, fail("400", `bad request: "name" is required, for example {"name": "pdf"}`)
	}
	if req.Section != "" && !allowSection {
		return req, fail("400", `bad request: "section" is only allowed for skill.info`)
	}
	return req, nil
}

func (r *Registry) skillList(ctx context.Context, data []byte) (any, error) {
	if err := decodeStrict(data, &struct{}{}); err != nil {
		return nil, err
	}
	r.viewMu.RLock()
	defer r.viewMu.RUnlock()
	out := SkillList{Skills: []SkillSummary{}}
	for _, name := range sortedKeys(r.skills) {
		d := r.skills[name]
		out.Skills = append(out.Skills, SkillSummary{Name: name, Description: d.description, Source: label(d), Warnings: warningLines(d.warnings)})
	}
	return out, nil
}

func (r *Registry) lookup(kind, name string) (*definition, error) {
	r.viewMu.RLock()
	defer r.viewMu.RUnlock()
	m, what := r.skills, "skill"
	if kind == kindSequence {
		m, what = r.seqs, "sequence"
	}
	d, ok := m[name]
	if !ok {
		// Each client adds how its user lists them (`skillbus skills`,
		// the console's page, seq_list): the NATS endpoint's name means
		// nothing to them.
		n := fmt.Sprintf("%d %ss are stored", len(m), what)
		if len(m) == 1 {
			n = "1 " + what + " is stored"
		}
		return nil, fail("404", "no %s named %q (%s)", what, name, n)
	}
	return d, nil
}

func (r *Registry) skillGet(ctx context.Context, data []byte) (any, error) {
	req, err := r.nameRequest(data, false)
	if err != nil {
		return nil, err
	}
	d, err := r.lookup(kindSkill, req.Name)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(d.value), nil
}

func (r *Registry) skillInfo(ctx context.Context, data []byte) (any, error) {
	req, err := r.nameRequest(data, true)
	if err != nil {
		return nil, err
	}
	d, err := r.lookup(kindSkill, req.Name)
	if err != nil {
		return nil, err
	}
	var s skill.Skill
	if err := json.Unmarshal(d.value, &s); err != nil {
		return nil, fail("500", "stored skill %q cannot be read: %v", req.Name, err)
	}
	secs := s.Sections
	if secs == nil {
		secs = sections.SplitBody(s.Body)
	}
	text, err := sections.InfoWith(s.Body, secs, req.Section, sections.Limits{})
	if err != nil {
		if errors.Is(err, sections.ErrNoSection) {
			return nil, fail("404", "skill %q: %v", req.Name, err)
		}
		return nil, fail("500", "skill %q: %v", req.Name, err)
	}
	return SkillInfo{Name: req.Name, Section: req.Section, Text: capInfo(text, MaxInfoBytes, hasSubsections(secs, req.Section)), Warnings: warningLines(d.warnings)}, nil
}

// hasSubsections reports whether the part of a skill that section asks
// for ("" for the whole skill) has titled sections under it, which a
// reader can ask for one by one.
func hasSubsections(secs []sections.Section, section string) bool {
	if section == "" {
		for _, s := range secs {
			if s.Level > 0 {
				return true
			}
		}
		return false
	}
	top, err := sections.Resolve(secs, section)
	if err != nil {
		return false
	}
	for _, s := range secs {
		if s.Start > top.Start && s.Start < top.End && s.Level > top.Level {
			return true
		}
	}
	return false
}

// capInfo cuts text to at most limit bytes at the last line end that fits
// (at a UTF-8 boundary when one line alone is longer) and appends a note
// saying how many lines were left out and how to read them: one
// subsection at a time when subs says the part has some, else in the
// skill's file; text within limit is returned as is.
func capInfo(text string, limit int, subs bool) string {
	if len(text) <= limit {
		return text
	}
	const room = 256 // for the note
	cut := max(limit-room, 0)
	if i := strings.LastIndexByte(text[:cut], '\n'); i > 0 {
		cut = i + 1
	} else {
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
	}
	shown := text[:cut]
	total := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		total++
	}
	left := total - strings.Count(shown, "\n")
	how := "It has no subsections to ask for one by one: read the rest in the skill's file (or split it there with headings)."
	if subs {
		how = "Ask for one of its subsections by title, or read the skill's file."
	}
	note := fmt.Sprintf("\n[Cut here: this part is %d bytes, more than the %d bytes skill_info returns at once; %d more line(s) are not shown. %s]\n", len(text), limit, left, how)
	if !strings.HasSuffix(shown, "\n") {
		shown += "\n"
	}
	return shown + note
}

func (r *Registry) seqList(ctx context.Context, data []byte) (any, error) {
	if err := decodeStrict(data, &struct{}{}); err != nil {
		return nil, err
	}
	r.viewMu.RLock()
	defer r.viewMu.RUnlock()
	out := SeqList{Sequences: []SeqSummary{}}
	for _, name := range sortedKeys(r.seqs) {
		d := r.seqs[name]
		var head struct {
			Boot      bool              `json:"boot"`
			Schedule  string            `json:"schedule"`
			TimeZone  string            `json:"timezone"`
			Signature map[string]string `json:"signature"`
		}
		_ = json.Unmarshal(d.value, &head) // a list of schedule entries leaves Schedule empty: entriesSummary
		if head.Schedule == "" {
			head.Schedule = entriesSummary(d.value)
		}
		if head.Signature == nil {
			head.Signature = map[string]string{}
		}
		out.Sequences = append(out.Sequences, SeqSummary{Name: name, Description: d.description, Source: label(d),
			Groups: d.groups, Boot: head.Boot, Schedule: head.Schedule, TimeZone: head.TimeZone, Signature: head.Signature})
	}
	return out, nil
}

func (r *Registry) seqGet(ctx context.Context, data []byte) (any, error) {
	req, err := r.nameRequest(data, false)
	if err != nil {
		return nil, err
	}
	d, err := r.lookup(kindSequence, req.Name)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(d.value), nil
}

// seqCreate stores a sequence sent in its JSON form (the form a model
// writes through seq_create). A sequence of the same name created earlier
// over NATS is replaced; one defined by a file is not (409). On a replica
// that does not hold the lease it returns errNotLeader (the endpoint
// forwards the request to the leader).
func (r *Registry) seqCreate(ctx context.Context, data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fail("400", "bad request: the body must be a sequence in its JSON form, for example "+
			`{"name": "x", "groups": [{"name": "g", "tools": "{\"tool\":\"t\"};"}]}`)
	}
	s, err := seq.ParseJSON(data)
	if err != nil {
		probs := seqProblems("", err)
		msgs := make([]string, 0, len(probs))
		for _, p := range probs {
			msgs = append(msgs, p.String())
		}
		return nil, &replyError{code: "400", msg: "invalid sequence: " + strings.Join(msgs, "; "), problems: probs}
	}
	d, err := sequenceDefinition(s, "")
	if err != nil {
		return nil, fail("400", "%v", err)
	}
	if p := sizeProblem("", d, r.limit()); p != nil {
		return nil, &replyError{code: "413", msg: p.Message, problems: []Problem{*p}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leading.Load() || r.fenced.Load() {
		return nil, errNotLeader // forwarded to the replica holding the lease
	}
	// Check against everything already resolved, except the sequence this
	// one replaces.
	r.viewMu.RLock()
	cur, exists := r.seqs[d.name]
	var conflict *replyError
	if exists && cur.source != "" {
		conflict = fail("409", "sequence %q is defined by the file %s; edit or delete that file instead", d.name, cur.source)
	}
	for _, other := range r.seqs {
		if conflict != nil {
			break
		}
		if other.name == d.name {
			continue
		}
		for _, g := range d.groups {
			if containsStr(other.groups, g) {
				conflict = fail("409", "group name %q is already used by sequence %q (%s); group names are unique across all sequences — rename the group", g, other.name, label(other))
				break
			}
		}
	}
	r.viewMu.RUnlock()
	if conflict != nil {
		return nil, conflict
	}
	prev, replaced := r.created[d.name]
	r.created[d.name] = d
	if err := r.applyLocked(ctx); err != nil {
		if replaced {
			r.created[d.name] = prev
		} else {
			delete(r.created, d.name)
		}
		_ = r.applyLocked(ctx)
		if errors.Is(err, errNotLeader) {
			return nil, err // the lease was lost meanwhile: forwarded to the new leader
		}
		return nil, fail("503", "cannot store sequence %q: %v", d.name, err)
	}
	var sig map[string]string
	if b, err := json.Marshal(s.Signature); err == nil {
		_ = json.Unmarshal(b, &sig)
	}
	if sig == nil {
		sig = map[string]string{}
	}
	return SeqCreated{Name: d.name, Replaced: replaced, Signature: sig}, nil
}

func (r *Registry) seqDelete(ctx context.Context, data []byte) (any, error) {
	req, err := r.nameRequest(data, false)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leading.Load() || r.fenced.Load() {
		return nil, errNotLeader // forwarded to the replica holding the lease
	}
	d, ok := r.created[req.Name]
	if !ok {
		if fd, err := r.lookup(kindSequence, req.Name); err == nil {
			return nil, fail("409", "sequence %q is defined by the file %s; delete that file to remove it", req.Name, fd.source)
		}
		return nil, fail("404", "no sequence named %q was created with seq.create", req.Name)
	}
	delete(r.created, req.Name)
	if err := r.applyLocked(ctx); err != nil {
		r.created[req.Name] = d
		_ = r.applyLocked(ctx)
		if errors.Is(err, errNotLeader) {
			return nil, err
		}
		return nil, fail("503", "cannot delete sequence %q: %v", req.Name, err)
	}
	// The created sequence's own key is deleted here: applyLocked only
	// deletes entries that came from files.
	key := events.KeyFor(req.Name)
	if e, ok := r.stored[kindSequence][key]; ok && e.source == createdSource {
		if err := r.writeLocked(ctx, []op{{kind: kindSequence, key: key, source: createdSource}}); err != nil {
			r.created[req.Name] = d
			if errors.Is(err, errNotLeader) {
				return nil, err
			}
			return nil, fail("503", "cannot delete sequence %q: %v", req.Name, err)
		}
		// A file sequence of the same name, hidden so far, can now be stored.
		_ = r.applyLocked(ctx)
	}
	return SeqDeleted{Name: req.Name, Deleted: true}, nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// entriesSummary describes the list form of a stored sequence's schedule
// in one line for the sequence list ("berlin: 0 0 9 * * MON-FRI
// Europe/Berlin; ops: @every 6h0m0s"); "" for none (docs/sequences.md,
// "Schedule entries").
func entriesSummary(value []byte) string {
	var v struct {
		Schedule []struct {
			Name     string `json:"name"`
			Cron     string `json:"cron"`
			Every    string `json:"every"`
			TimeZone string `json:"timezone"`
		} `json:"schedule"`
	}
	if json.Unmarshal(value, &v) != nil || len(v.Schedule) == 0 {
		return ""
	}
	parts := make([]string, len(v.Schedule))
	for i, e := range v.Schedule {
		p := e.Cron
		if p == "" {
			p = "@every " + e.Every
		}
		if e.TimeZone != "" {
			p += " " + e.TimeZone
		}
		parts[i] = e.Name + ": " + p
	}
	return strings.Join(parts, "; ")
}
