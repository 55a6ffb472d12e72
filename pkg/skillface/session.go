package skillface

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// SessionStore keeps the per-session state of skillface as opaque bytes
// under the session id, with a revision for compare-and-set (DESIGN.md §3,
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

// sessionState is the JSON document stored per session.
type sessionState struct {
	// Round: the highest round seen.
	Round int64 `json:"round"`
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

func decodeState(id string, b []byte) (sessionState, error) {
	var s sessionState
	if err := json.Unmarshal(b, &s); err != nil {
		return sessionState{}, fmt.Errorf("skillface: session %q: stored state is not valid JSON (%v); "+
			"delete the key from the sessions bucket to start the session afresh", id, err)
	}
	return s, nil
}
