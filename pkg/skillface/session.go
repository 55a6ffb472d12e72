package skillface

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// SessionStore keeps the per-session state of skillface as opaque bytes
// under the session id, with a revision for compare-and-set (docs/skills.md,
// §6). It is shaped after a JetStream KV bucket, so the KV implementation is
// a direct mapping:
//
//	Get            -> kv.Get(key): value and entry revision; jetstream.ErrKeyNotFound -> ErrSessionNotFound
//	CompareAndSet  -> revision 0: kv.Create (jetstream.ErrKeyExists -> ErrRevisionMismatch);
//	                  otherwise kv.Update(key, value, revision) (wrong last sequence -> ErrRevisionMismatch)
//	TTL            -> the bucket's TTL (SKILLFACE_SESSIONS, default 24 h)
//
// KV keys are restricted to [-/_=.a-zA-Z0-9]; a KV store must encode other
// session ids.
//
// Expiry: a store forgets a session a fixed time (its TTL) after the last
// successful CompareAndSet; an expired session reads as ErrSessionNotFound
// and may be created again with revision 0. Implementations are safe for
// concurrent use. Use sessiontest.Run to check an implementation.
type SessionStore interface {
	// Get returns the session's value and its current revision (never 0),
	// ErrSessionNotFound when the session has no live value, or a store
	// error (wrapped; retryable when the store is temporarily unavailable).
	Get(ctx context.Context, id string) (value []byte, revision uint64, err error)
	// CompareAndSet stores value if the session's current revision equals
	// revision — 0 meaning the session must not exist — and returns the new
	// revision, which is greater than every earlier revision of the session.
	// It returns ErrRevisionMismatch (wrapped) when another write came
	// first; the stored value is then unchanged. The store keeps its own
	// copy of value.
	CompareAndSet(ctx context.Context, id string, value []byte, revision uint64) (uint64, error)
}

// MemoryStore is the in-memory SessionStore: one process, no persistence.
// The zero value is not usable; call NewMemoryStore.
type MemoryStore struct {
	ttl time.Duration
	now func() time.Time

	// mu guards rev, items and writes.
	mu     sync.Mutex
	rev    uint64 // last revision handed out (store-wide, like a stream sequence)
	items  map[string]memItem
	writes int
}

type memItem struct {
	value   []byte
	rev     uint64
	expires time.Time // zero = never
}

// NewMemoryStore returns an empty in-memory store whose sessions expire ttl
// after their last write; ttl 0 means never. A negative ttl panics: it is a
// programming error.
func NewMemoryStore(ttl time.Duration) *MemoryStore {
	if ttl < 0 {
		panic("skillface: NewMemoryStore with a negative TTL")
	}
	return &MemoryStore{ttl: ttl, now: time.Now, items: make(map[string]memItem)}
}

// liveLocked returns the session's item if it exists and has not expired.
func (m *MemoryStore) liveLocked(id string, now time.Time) (memItem, bool) {
	it, ok := m.items[id]
	if !ok {
		return memItem{}, false
	}
	if !it.expires.IsZero() && !now.Before(it.expires) {
		delete(m.items, id)
		return memItem{}, false
	}
	return it, true
}

// Get implements SessionStore. The returned slice is the caller's.
func (m *MemoryStore) Get(ctx context.Context, id string) ([]byte, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.liveLocked(id, m.now())
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ErrSessionNotFound, id)
	}
	return append([]byte(nil), it.value...), it.rev, nil
}

// CompareAndSet implements SessionStore.
func (m *MemoryStore) CompareAndSet(ctx context.Context, id string, value []byte, revision uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	it, ok := m.liveLocked(id, now)
	var cur uint64
	if ok {
		cur = it.rev
	}
	if cur != revision {
		return 0, fmt.Errorf("%w: session %q is at revision %d, not %d", ErrRevisionMismatch, id, cur, revision)
	}
	m.rev++
	nit := memItem{value: append([]byte(nil), value...), rev: m.rev}
	if m.ttl > 0 {
		nit.expires = now.Add(m.ttl)
	}
	m.items[id] = nit
	m.writes++
	if m.writes%1024 == 0 {
		m.sweepLocked(now)
	}
	return nit.rev, nil
}

// sweepLocked forgets every expired session, bounding memory.
func (m *MemoryStore) sweepLocked(now time.Time) {
	for id := range m.items {
		m.liveLocked(id, now)
	}
}

// Len returns the number of live sessions (for tests and metrics).
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(m.now())
	return len(m.items)
}

// SessionTTLReporter is implemented by a SessionStore that knows after
// how long it forgets a session (its TTL, counted from the last write). The
// Assembler uses it to skip writes: a call that changes nothing in the
// session but its round is not written, as long as the session's last
// write is less than a quarter of the TTL old, so that a session in use
// never expires (see "Sessions" in the package documentation). A store
// that does not implement it gets a write on every call.
type SessionTTLReporter interface {
	// SessionTTL returns the store's TTL and whether it is known; 0 with
	// known true means sessions never expire.
	SessionTTL() (ttl time.Duration, known bool)
}

// SessionReadStarter is implemented by a SessionStore that can send a read
// now and collect its result later without a goroutine per read (the KV
// store publishes the request at once). The Assembler starts every
// session read as early as it can and works on the call meanwhile; with a
// store that does not implement it, the read runs in a goroutine.
type SessionReadStarter interface {
	// StartGet starts reading session id and returns the function that
	// waits for the result, which is what Get would return. The function
	// must be called exactly once.
	StartGet(ctx context.Context, id string) func() (value []byte, revision uint64, err error)
}

// SessionTTL implements SessionTTLReporter: the TTL given to
// NewMemoryStore (0: never expire).
func (m *MemoryStore) SessionTTL() (time.Duration, bool) { return m.ttl, true }

// sessionState is the JSON document stored per session.
type sessionState struct {
	// Round: the highest round seen when the session was last written. It
	// is informative only: answers never depend on it (a retried round
	// is recognised by activeSkill.Round), which is why a call that
	// changes nothing but the round need not be written.
	Round int64 `json:"round"`
	// Written: when the state was last written, in Unix seconds by the
	// writer's clock; 0 in states written before it existed. A call that
	// changes nothing rewrites the session once this is a quarter of the
	// store's TTL old, so that the TTL never expires a session in use.
	Written int64 `json:"written,omitempty"`
	// Active: the injected skills in injection order.
	Active []activeSkill `json:"active,omitempty"`
	// Overflow: skills that activated while the session was full and are
	// still not injected, in the order they were dropped.
	Overflow []string `json:"overflow,omitempty"`
}

type activeSkill struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	Round       int64  `json:"round"` // the round it was first injected
}

func (s *sessionState) empty() bool { return len(s.Active) == 0 && len(s.Overflow) == 0 }

// clone returns a copy of s that shares no slice with it.
func (s *sessionState) clone() sessionState {
	c := *s
	c.Active = slices.Clone(s.Active)
	c.Overflow = slices.Clone(s.Overflow)
	return c
}

// sameSkills reports whether s and t hold the same active skills (names,
// fingerprints, rounds, in order) and the same overflow: they differ at
// most in Round and Written.
func (s *sessionState) sameSkills(t *sessionState) bool {
	return slices.Equal(s.Active, t.Active) && slices.Equal(s.Overflow, t.Overflow)
}

// stateCache keeps the last state of recently served sessions: the stored
// bytes, their revision and the decoded state. It spares the JSON decoding
// when a session did not change since this replica last read or wrote it
// (an entry is used only for the very same stored bytes, so a stale entry
// is never decoded from), and it is the base of update's speculation, which
// a compare-and-set or a read then checks. An entry is a base for
// speculation only while it is younger than speculateFor (confirmed by a
// read or written), so that a long-idle entry is not written against
// after the bucket was recreated (revisions start again). At most
// maxCachedStates sessions are kept; when full, a quarter of them
// (arbitrary ones) are forgotten. The zero value is ready to use.
type stateCache struct {
	mu sync.Mutex
	m  map[string]cachedState
}

type cachedState struct {
	raw []byte
	rev uint64
	st  sessionState // never modified: handed out as clones
	at  time.Time    // when raw was last known to be the stored value
}

const (
	maxCachedStates = 4096
	speculateFor    = time.Minute
)

// speculate returns the cached state of session id and true when it is a
// base for speculation; else a new, empty session (revision 0) and false.
func (c *stateCache) speculate(id string, now time.Time) (cachedState, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if !ok || now.Sub(e.at) >= speculateFor || now.Before(e.at) {
		return cachedState{}, false
	}
	return e, true
}

// confirm records that session id was just read as cached.
func (c *stateCache) confirm(id string, now time.Time) {
	c.mu.Lock()
	if e, ok := c.m[id]; ok {
		e.at = now
		c.m[id] = e
	}
	c.mu.Unlock()
}

// decode returns the state stored as raw (revision rev) for session id,
// decoding it only when the cache does not hold these very bytes.
func (c *stateCache) decode(id string, raw []byte, rev uint64, now time.Time) (sessionState, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && bytes.Equal(e.raw, raw) {
		if e.rev == rev {
			c.confirm(id, now)
		} else {
			c.put(id, raw, rev, &e.st, now)
		}
		return e.st.clone(), nil
	}
	st, err := decodeState(id, raw)
	if err != nil {
		return sessionState{}, err
	}
	c.put(id, raw, rev, &st, now)
	return st, nil
}

// put remembers that session id is stored as raw at revision rev, which
// decodes to st. raw must not be modified afterwards.
func (c *stateCache) put(id string, raw []byte, rev uint64, st *sessionState, now time.Time) {
	cp := st.clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cachedState)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= maxCachedStates {
		n := len(c.m) / 4
		for k := range c.m {
			if n == 0 {
				break
			}
			delete(c.m, k)
			n--
		}
	}
	c.m[id] = cachedState{raw: raw, rev: rev, st: cp, at: now}
}

func decodeState(id string, b []byte) (sessionState, error) {
	var s sessionState
	if err := json.Unmarshal(b, &s); err != nil {
		return sessionState{}, fmt.Errorf("skillface: session %q: stored state is not valid JSON (%v); "+
			"delete the key from the sessions bucket to start the session afresh", id, err)
	}
	return s, nil
}
