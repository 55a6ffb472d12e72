package skillface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/skillbus/skillbus/pkg/jsonenc"
	"github.com/skillbus/skillbus/pkg/skill"
)

// Assembler assembles prompts as docs/skills.md describes: it holds the current skill set and
// assembles prompts for any number of sessions. It is safe for concurrent
// use; skill updates (PutSkill, DeleteSkill, SetSkills) are seen by every
// Assemble that starts after they return.
type Assembler struct {
	cfg config

	// mu guards skills; snap is nil after a change until the next Assemble
	// rebuilds it under mu.
	mu     sync.Mutex
	skills map[string]*entry
	snap   atomic.Pointer[snapshot]

	// cacheMu guards cache: rendered bodies by skill name, keyed further
	// by fingerprint (docs/skills.md).
	cacheMu sync.RWMutex
	cache   map[string]renderedBody

	// states caches decoded session states (see stateCache).
	states stateCache

	assembles, restricted, activations, renders, hits, truncations, conflicts, skipped atomic.Uint64
}

type renderedBody struct {
	fingerprint string
	text        string
	json        []byte // text as a JSON string (AppendResponseJSON)
	truncated   bool
}

// New returns an Assembler with no skills. Options override the default
// budgets and the session store; an invalid option returns an error wrapping
// ErrInvalidOption.
func New(opts ...Option) (*Assembler, error) {
	c := config{
		entryChars:     DefaultEntryChars,
		listingEntries: DefaultListingEntries,
		sessionBodies:  DefaultSessionBodies,
		bodyBytes:      DefaultBodyBytes,
		maxAttempts:    DefaultMaxAttempts,
		now:            time.Now,
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.store == nil {
		c.store = NewMemoryStore(DefaultSessionTTL)
	}
	return &Assembler{cfg: c, skills: make(map[string]*entry), cache: make(map[string]renderedBody)}, nil
}

// PutSkill adds s, or replaces the skill of the same name (a new
// Fingerprint then replaces the retained body in every session at its next
// request). It returns an error wrapping ErrInvalidSkill, and leaves the
// skill set unchanged, when s has no name, an unknown invocation, a
// malformed paths glob or a malformed tool pattern.
func (a *Assembler) PutSkill(s skill.Skill) error {
	e, err := compile(s, a.cfg.entryChars)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.skills[s.Name] = e
	a.snap.Store(nil)
	a.mu.Unlock()
	return nil
}

// DeleteSkill removes the named skill; it drops out of every session at the
// session's next request. Deleting an unknown name does nothing.
func (a *Assembler) DeleteSkill(name string) {
	a.mu.Lock()
	delete(a.skills, name)
	a.snap.Store(nil)
	a.mu.Unlock()
	a.cacheMu.Lock()
	delete(a.cache, name)
	a.cacheMu.Unlock()
}

// SetSkills replaces the whole skill set with skills (e.g. after a full
// reload of the SKILLS bucket). If any record is invalid it returns the
// errors of all invalid records joined (each wrapping ErrInvalidSkill) and
// leaves the skill set unchanged. A name given twice is an error.
func (a *Assembler) SetSkills(skills []skill.Skill) error {
	m := make(map[string]*entry, len(skills))
	var errs []error
	for _, s := range skills {
		e, err := compile(s, a.cfg.entryChars)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := m[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%w %q: given twice (sources %q and %q)", ErrInvalidSkill, s.Name, m[s.Name].sk.Source, s.Source))
			continue
		}
		m[s.Name] = e
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	a.mu.Lock()
	a.skills = m
	a.snap.Store(nil)
	a.mu.Unlock()
	a.cacheMu.Lock()
	for name := range a.cache {
		if _, ok := m[name]; !ok {
			delete(a.cache, name)
		}
	}
	a.cacheMu.Unlock()
	return nil
}

// snapshot returns the current skill view, rebuilding it after a change.
func (a *Assembler) snapshot() *snapshot {
	if sn := a.snap.Load(); sn != nil {
		return sn
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if sn := a.snap.Load(); sn != nil {
		return sn
	}
	sn := buildSnapshot(a.skills, a.cfg.listingEntries, a.cfg.entryChars)
	a.snap.Store(sn)
	return sn
}

// Stats is a snapshot of the Assembler's counters since New, for metrics.
// Every counter only grows.
type Stats struct {
	Assembles   uint64 `json:"assembles"`    // Assemble calls that returned a response
	Restricted  uint64 `json:"restricted"`   // of which for restricted sessions
	Activations uint64 `json:"activations"`  // skill bodies injected for the first time in a session
	BodyRenders uint64 `json:"body_renders"` // bodies rendered (render cache misses)
	CacheHits   uint64 `json:"cache_hits"`   // bodies served from the render cache
	Truncations uint64 `json:"truncations"`  // listing entries cut, listings cut short and bodies cut, summed over responses
	Conflicts   uint64 `json:"conflicts"`    // session compare-and-set conflicts retried
	// SkippedWrites: calls that changed nothing in their session but the
	// round and were not written (see SessionTTLReporter).
	SkippedWrites uint64 `json:"skipped_writes"`
}

// Stats returns the current counters.
func (a *Assembler) Stats() Stats {
	return Stats{
		Assembles:   a.assembles.Load(),
		Restricted:  a.restricted.Load(),
		Activations: a.activations.Load(),
		BodyRenders: a.renders.Load(),
		CacheHits:   a.hits.Load(),
		Truncations: a.truncations.Load(),
		Conflicts:   a.conflicts.Load(),

		SkippedWrites: a.skipped.Load(),
	}
}

// Assemble inserts the skill listing and the active skills' bodies into
// req.Messages and computes the tool surface (docs/skills.md; the rules are in
// the package documentation). The request's slices are not modified.
//
// Errors: ErrInvalidRequest (no session id, round below 1, a message without
// a role); *UnknownSkillError (ErrUnknownSkill) for a mount of a skill that
// is not loaded; ErrContention when the session's compare-and-set lost
// WithMaxAttempts times; the session store's errors, wrapped; ctx.Err().
// A restricted request never fails on its content.
func (a *Assembler) Assemble(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if req.Restricted {
		a.assembles.Add(1)
		a.restricted.Add(1)
		return Response{Messages: req.Messages, Tools: req.Tools}, nil
	}
	if err := validate(&req); err != nil {
		return Response{}, err
	}
	// The session is read at once (or was, by Prefetch), while the hits
	// are worked out (see update).
	read := a.prefetched(ctx, req.SessionID)
	if read == nil {
		read = a.startRead(ctx, req.SessionID)
	}
	sn := a.snapshot()

	// Which skills activate or trigger again in this call: mounts first in
	// request order, then triggers and paths by name.
	hits, err := sn.hits(&req)
	if err != nil {
		discard(read)
		return Response{}, err
	}

	st, newly, dropped, err := a.update(ctx, sn, &req, hits, read)
	if err != nil {
		return Response{}, err
	}
	return a.respond(sn, &req, hits, st, newly, dropped), nil
}

func validate(req *Request) error {
	if req.SessionID == "" {
		return fmt.Errorf("%w: session_id is empty: every unrestricted request names its session", ErrInvalidRequest)
	}
	if req.Round < 1 {
		return fmt.Errorf("%w: round %d: the round is the turn number of this model call in the session, 1 or more", ErrInvalidRequest, req.Round)
	}
	for i, m := range req.Messages {
		if m.Role == "" {
			return fmt.Errorf("%w: message %d has no role (want system, user, assistant or tool)", ErrInvalidRequest, i+1)
		}
	}
	return nil
}

// hits returns the skills (snapshot indices) that activate or trigger again
// in this request, each once: mounts in request order, then the rest by name.
func (sn *snapshot) hits(req *Request) ([]int, error) {
	var out []int
	var unknown []string
	// seen and seenUnknown keep deduplication linear in the request size:
	// a request may carry thousands of mounts.
	seen := make(map[int]struct{})
	var seenUnknown map[string]struct{}
	for _, m := range req.Mounts {
		i, ok := sn.byName[m]
		if !ok {
			if seenUnknown == nil {
				seenUnknown = make(map[string]struct{})
			}
			if _, dup := seenUnknown[m]; !dup {
				seenUnknown[m] = struct{}{}
				unknown = append(unknown, m)
			}
			continue
		}
		if _, dup := seen[i]; !dup {
			seen[i] = struct{}{}
			out = append(out, i)
		}
	}
	if len(unknown) > 0 {
		return nil, &UnknownSkillError{Names: unknown}
	}
	mounted := len(out)
	add := func(i int) {
		if _, dup := seen[i]; !dup {
			seen[i] = struct{}{}
			out = append(out, i)
		}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleUser {
			sn.triggers.match(req.Messages[i].Content, add)
			break
		}
	}
	sn.matchFiles(req.WorkFiles, add)
	slices.Sort(out[mounted:]) // indices follow name order
	return out, nil
}

// stateRead is the result of a SessionStore.Get.
type stateRead struct {
	raw []byte
	rev uint64
	err error
}

// reader waits for a session read started by startRead. It must be called
// exactly once (discard does it for a read nobody needs).
type reader func() stateRead

// startRead starts reading the session and returns the function that waits
// for the result: the store's own StartGet when it has one
// (SessionReadStarter), else a read in a goroutine.
func (a *Assembler) startRead(ctx context.Context, id string) reader {
	if rs, ok := a.cfg.store.(SessionReadStarter); ok {
		wait := rs.StartGet(ctx, id)
		return func() stateRead {
			raw, rev, err := wait()
			return stateRead{raw, rev, err}
		}
	}
	ch := make(chan stateRead, 1)
	go func() {
		raw, rev, err := a.cfg.store.Get(ctx, id)
		ch <- stateRead{raw, rev, err}
	}()
	return func() stateRead { return <-ch }
}

// discard collects a read nobody needs, in the background.
func discard(r reader) { go r() }

// Prefetch starts reading the state of session id now and returns ctx
// extended with that read, and a release function. The first Assemble of
// that session called with the returned context (or one derived from it)
// uses the read instead of reading again. A service calls Prefetch as soon
// as it knows a request's session id — before decoding the rest of the
// request, say — so that the read, a round trip to the session store,
// overlaps that work; the read starts after the request was received, so
// it sees every write made before, as Assemble's own read would. Call
// release when the request is done (defer it): it collects the read if no
// Assemble used it.
func (a *Assembler) Prefetch(ctx context.Context, id string) (context.Context, func()) {
	p := &prefetch{id: id, read: a.startRead(ctx, id)}
	return context.WithValue(ctx, prefetchKey{a}, p), func() {
		if p.used.CompareAndSwap(false, true) {
			discard(p.read)
		}
	}
}

type prefetchKey struct{ a *Assembler }

type prefetch struct {
	id   string
	read reader
	used atomic.Bool
}

// prefetched returns the read Prefetch started for session id in ctx, once,
// or nil.
func (a *Assembler) prefetched(ctx context.Context, id string) reader {
	p, ok := ctx.Value(prefetchKey{a}).(*prefetch)
	if !ok || p.id != id || !p.used.CompareAndSwap(false, true) {
		return nil
	}
	return p.read
}

// update applies this call to the session state with compare-and-set,
// retrying conflicts. It returns the new state, the skills injected for the
// first time by this call and the skills dropped by it. read delivers the
// session as read when the call began.
//
// Speculation: the call is first worked out on the state this replica
// last saw of the session (stateCache; a session it has not seen is taken
// to be new) while read is under way. If that needs a write, the write is
// a compare-and-set on the revision of the state it was worked out on, so
// it succeeds only if that state is still the stored one — then read is
// not waited for. If no write is needed, the result stands once read shows
// the very same stored bytes (or, for a new session, no session).
// Otherwise the call is worked out again on what read returned, as without
// speculation. Either way the answer is the one the stored state gives.
func (a *Assembler) update(ctx context.Context, sn *snapshot, req *Request, hits []int, read reader) (sessionState, []string, []string, error) {
	defer func() {
		if read != nil { // not needed after all
			discard(read)
		}
	}()
	now := a.cfg.now()
	spec, ok := a.states.speculate(req.SessionID, now)
	st := spec.st.clone()
	prev := st.clone()
	newly, dropped := a.apply(&st, sn, req, hits)
	if a.needsWrite(&prev, &st, spec.rev, now) {
		b, err := a.encodeState(req.SessionID, &st, now)
		if err != nil {
			return sessionState{}, nil, nil, err
		}
		rev, err := a.cfg.store.CompareAndSet(ctx, req.SessionID, b, spec.rev)
		switch {
		case err == nil:
			a.states.put(req.SessionID, b, rev, &st, now)
			return st, newly, dropped, nil
		case !errors.Is(err, ErrRevisionMismatch):
			return sessionState{}, nil, nil, fmt.Errorf("skillface: session %q: write state: %w", req.SessionID, err)
		}
		// The speculation was wrong; fall through to what read returns.
	} else {
		r := read()
		read = nil
		switch {
		case ok && r.err == nil && r.rev == spec.rev && bytes.Equal(r.raw, spec.raw),
			!ok && errors.Is(r.err, ErrSessionNotFound):
			if spec.rev != 0 {
				a.skipped.Add(1)
				a.states.confirm(req.SessionID, now)
			}
			return st, newly, dropped, nil
		}
		read = func() stateRead { return r }
	}

	for attempt := 1; ; attempt++ {
		var r stateRead
		if read != nil {
			r = read()
			read = nil
		} else {
			r.raw, r.rev, r.err = a.cfg.store.Get(ctx, req.SessionID)
		}
		raw, rev, err := r.raw, r.rev, r.err
		var st sessionState
		switch {
		case errors.Is(err, ErrSessionNotFound):
			rev = 0
		case err != nil:
			return sessionState{}, nil, nil, fmt.Errorf("skillface: session %q: read state: %w", req.SessionID, err)
		default:
			if st, err = a.states.decode(req.SessionID, raw, rev, now); err != nil {
				return sessionState{}, nil, nil, err
			}
		}
		prev := st.clone()
		newly, dropped := a.apply(&st, sn, req, hits)
		if !a.needsWrite(&prev, &st, rev, now) {
			if rev != 0 {
				a.skipped.Add(1)
			}
			return st, newly, dropped, nil
		}
		b, err := a.encodeState(req.SessionID, &st, now)
		if err != nil {
			return sessionState{}, nil, nil, err
		}
		nrev, err := a.cfg.store.CompareAndSet(ctx, req.SessionID, b, rev)
		if err == nil {
			a.states.put(req.SessionID, b, nrev, &st, now)
			return st, newly, dropped, nil
		}
		if !errors.Is(err, ErrRevisionMismatch) {
			return sessionState{}, nil, nil, fmt.Errorf("skillface: session %q: write state: %w", req.SessionID, err)
		}
		a.conflicts.Add(1)
		if attempt >= a.cfg.maxAttempts {
			return sessionState{}, nil, nil, fmt.Errorf("%w: session %q: state changed under %d attempts in a row; retry the request",
				ErrContention, req.SessionID, attempt)
		}
		if attempt > 2 { // back off a little with jitter so writers spread out
			d := time.Duration(rand.Int64N(int64(attempt) * int64(20*time.Microsecond)))
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return sessionState{}, nil, nil, ctx.Err()
			case <-t.C:
			}
		}
	}
}

// needsWrite reports whether the call turned the session state prev,
// stored at revision rev (0: no session), into a state st that must be
// written: a new session with something to remember, or a session whose
// skills changed, or whose last write is too old to skip (fresh). When
// nothing but the round changed, the stored state answers a retry of the
// call exactly as the call was answered (each active skill keeps the round
// it was injected in), so the write is skipped; see "Sessions" in the
// package documentation.
func (a *Assembler) needsWrite(prev, st *sessionState, rev uint64, now time.Time) bool {
	if rev == 0 {
		return !prev.empty() || !st.empty()
	}
	return !st.sameSkills(prev) || !a.fresh(prev.Written, now)
}

// encodeState stamps st with the time of this write and encodes it.
func (a *Assembler) encodeState(id string, st *sessionState, now time.Time) ([]byte, error) {
	st.Written = now.Unix()
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("skillface: session %q: encode state: %w", id, err)
	}
	return b, nil
}

// fresh reports whether a session last written at written (Unix seconds)
// may go unwritten at now: the store's TTL is known and the write is less
// than a quarter of it old (not in the future either, so that a writer
// whose clock ran ahead cannot keep a session from being refreshed).
func (a *Assembler) fresh(written int64, now time.Time) bool {
	r, ok := a.cfg.store.(SessionTTLReporter)
	if !ok {
		return false
	}
	ttl, known := r.SessionTTL()
	switch {
	case !known:
		return false
	case ttl == 0:
		return true // sessions never expire
	case written == 0:
		return false // written before Written existed
	}
	age := now.Sub(time.Unix(written, 0))
	return age >= -time.Second && age < ttl/4
}

// apply updates st for this call: removed skills drop out, changed skills
// take their new fingerprint, hits activate while there is room.
func (a *Assembler) apply(st *sessionState, sn *snapshot, req *Request, hits []int) (newly, dropped []string) {
	act := st.Active[:0]
	for _, s := range st.Active {
		i, ok := sn.byName[s.Name]
		if !ok {
			continue // deleted skill drops out
		}
		s.Fingerprint = sn.entries[i].sk.Fingerprint // a changed definition replaces the retained one
		act = append(act, s)
	}
	st.Active = act
	ov := st.Overflow[:0]
	for _, n := range st.Overflow {
		if _, ok := sn.byName[n]; ok {
			ov = append(ov, n)
		}
	}
	st.Overflow = ov
	for _, i := range hits {
		e := sn.entries[i]
		if slices.ContainsFunc(st.Active, func(s activeSkill) bool { return s.Name == e.sk.Name }) {
			continue
		}
		if len(st.Active) < a.cfg.sessionBodies {
			st.Active = append(st.Active, activeSkill{Name: e.sk.Name, Fingerprint: e.sk.Fingerprint, Round: req.Round})
			st.Overflow = slices.DeleteFunc(st.Overflow, func(n string) bool { return n == e.sk.Name })
			newly = append(newly, e.sk.Name)
			continue
		}
		dropped = append(dropped, e.sk.Name)
		if !slices.Contains(st.Overflow, e.sk.Name) {
			st.Overflow = append(st.Overflow, e.sk.Name)
		}
	}
	st.Round = max(st.Round, req.Round)
	return newly, dropped
}

// respond builds the response from the committed state.
func (a *Assembler) respond(sn *snapshot, req *Request, hits []int, st sessionState, newly, dropped []string) Response {
	resp := Response{Counts: sn.counts, Dropped: dropped}
	resp.Counts.BodiesDropped = len(dropped)
	resp.Counts.SessionOverflow = len(st.Overflow)
	a.activations.Add(uint64(len(newly)))

	// Leading system messages, the listing, the bodies, the rest.
	lead := 0
	for lead < len(req.Messages) && req.Messages[lead].Role == RoleSystem {
		lead++
	}
	blocks := len(st.Active)
	if len(sn.entries) > 0 {
		blocks++
	}
	msgs := make([]Message, 0, len(req.Messages)+blocks)
	msgs = append(msgs, req.Messages[:lead]...)
	if len(sn.entries) > 0 {
		msgs = append(msgs, Message{Role: RoleSystem, Content: sn.listingFor(st.Overflow, a.cfg.sessionBodies)})
	}
	for _, s := range st.Active {
		e := sn.entries[sn.byName[s.Name]]
		body := a.render(e)
		if body.truncated {
			resp.Counts.BodiesTruncated++
		}
		msgs = append(msgs, Message{Role: RoleSystem, Content: body.text})
		resp.Active = append(resp.Active, s.Name)
		if s.Round == req.Round {
			resp.Activated = append(resp.Activated, s.Name)
		}
	}
	msgs = append(msgs, req.Messages[lead:]...)
	resp.Messages = msgs

	var triggered []*entry
	for _, i := range hits {
		e := sn.entries[i]
		if slices.ContainsFunc(st.Active, func(s activeSkill) bool { return s.Name == e.sk.Name }) {
			triggered = append(triggered, e)
			resp.Triggered = append(resp.Triggered, e.sk.Name)
		}
	}
	if len(triggered) > 0 {
		resp.Tools, resp.ToolLimits = toolSurface(req.Tools, triggered)
	} else {
		resp.Tools = slices.Clone(req.Tools)
		if resp.Tools == nil {
			resp.Tools = []string{}
		}
	}

	c := resp.Counts
	cut := c.EntriesTruncated + c.BodiesTruncated
	if c.EntriesDropped > 0 {
		cut++
	}
	a.truncations.Add(uint64(cut))
	a.assembles.Add(1)
	return resp
}

// listingFor returns the listing text with the session's ".dropped:" line.
func (sn *snapshot) listingFor(overflow []string, bodies int) string {
	if len(overflow) == 0 {
		return sn.listing
	}
	return sn.listing + "\n.dropped: " + plural(len(overflow), "skill", "skills") +
		" activated while this session held its limit of " + strconv.Itoa(bodies) +
		" skill bodies and " + plural(len(overflow), "is", "are")[2:] + " not loaded (" + strings.Join(overflow, ", ") +
		"); a skill loads when it activates again while there is room."
}

// render returns the body message of e, from the cache when its name and
// fingerprint were rendered before.
func (a *Assembler) render(e *entry) renderedBody {
	a.cacheMu.RLock()
	rb, ok := a.cache[e.sk.Name]
	a.cacheMu.RUnlock()
	if ok && rb.fingerprint == e.sk.Fingerprint {
		a.hits.Add(1)
		return rb
	}
	a.renders.Add(1)
	rb = renderBody(&e.sk, a.cfg.bodyBytes)
	a.cacheMu.Lock()
	a.cache[e.sk.Name] = rb
	a.cacheMu.Unlock()
	return rb
}

// renderBody renders the system message of an active skill: a header line,
// the body cut to max bytes at a UTF-8 boundary, and a ".truncated:" line
// when it was cut.
func renderBody(s *skill.Skill, max int) renderedBody {
	body := s.Body
	rb := renderedBody{fingerprint: s.Fingerprint}
	if len(body) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut]
		rb.truncated = true
	}
	var b strings.Builder
	b.Grow(len(body) + 200)
	b.WriteString(`Skill "` + s.Name + `" is active. Follow its instructions while they apply.` + "\n\n")
	b.WriteString(body)
	if rb.truncated {
		b.WriteString("\n\n" + truncMark + ": this body was cut at ")
		b.WriteString(strconv.Itoa(len(body)))
		b.WriteString(" of ")
		b.WriteString(strconv.Itoa(len(s.Body)))
		b.WriteString(` bytes; read the rest section by section with skill_info "` + s.Name + `".`)
	}
	rb.text = b.String()
	rb.json = jsonenc.AppendString(make([]byte, 0, len(rb.text)+len(rb.text)/8+2), rb.text)
	return rb
}
