// Package kvsession stores skillface session state in a JetStream KV bucket
// (SKILLFACE_SESSIONS, docs/skills.md): it implements skillface.SessionStore
// so that every skillface replica reads and writes the same sessions with
// compare-and-set, and the bucket's TTL expires idle sessions.
//
// The mapping (pkg/skillface SessionStore documentation):
//
//	Get(id)                  kv.Get(KeyFor(id)); jetstream.ErrKeyNotFound -> skillface.ErrSessionNotFound
//	CompareAndSet(id, v, 0)  kv.Create; key exists -> skillface.ErrRevisionMismatch
//	CompareAndSet(id, v, r)  kv.Update(key, v, r); wrong last sequence -> skillface.ErrRevisionMismatch
//
// Session ids come from agent runtimes and may hold any character; KV keys
// may not, so a key is events.KeyFor(id): the id itself when it is a valid
// key, else "=" + base64url(id). Two ids never share a key.
package kvsession

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// MaxIDBytes is the longest session id the store accepts, in bytes. The
// encoded key (at most 4/3 as long) must fit in a NATS subject, whose
// protocol line is limited to 4 KiB.
const MaxIDBytes = 1024

// ErrSessionID is returned (wrapped) for an empty session id or one longer
// than MaxIDBytes. Terminal: the same id always fails.
var ErrSessionID = errors.New("kvsession: invalid session id")

// KeyValue is what Store needs from a bucket; jetstream.KeyValue implements
// it.
type KeyValue interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
}

// Store is a skillface.SessionStore over a JetStream KV bucket. Revisions
// are the bucket's stream sequence numbers. Expiry is the bucket's TTL
// (events.Options.SessionsTTL for SKILLFACE_SESSIONS), counted from a
// session's last write. Safe for concurrent use.
//
// Store also reports the bucket's TTL (skillface.SessionTTLReporter), read
// from the bucket's status when kv has a Status method (a
// jetstream.KeyValue has): RefreshTTL reads it, and SessionTTL reads it
// again in the background once it is TTLRefresh old, so a TTL changed by a
// later provisioning is seen within about a minute. Until the TTL has been
// read, and when it cannot be, SessionTTL reports it unknown and the
// Assembler writes the session on every call.
type Store struct {
	kv     KeyValue
	direct *directGets // nil: reads with kv.Get (see direct.go)

	ttl        atomic.Int64 // the bucket's TTL in nanoseconds; valid when ttlAt != 0
	ttlAt      atomic.Int64 // when ttl was read (Unix nanoseconds); 0 = never
	refreshing atomic.Bool  // a background RefreshTTL is running
}

// TTLRefresh is how old the TTL that Store reports may get before it is
// read again from the bucket's status.
const TTLRefresh = time.Minute

// StatusKV is the optional method of a KeyValue that gives the bucket's
// TTL; jetstream.KeyValue implements it.
type StatusKV interface {
	Status(ctx context.Context) (jetstream.KeyValueStatus, error)
}

var (
	_ skillface.SessionStore       = (*Store)(nil)
	_ skillface.SessionTTLReporter = (*Store)(nil)
	_ skillface.SessionReadStarter = (*Store)(nil)
)

// New returns a Store over kv (for skillface: the SKILLFACE_SESSIONS
// bucket, as provisioned by events.Provision).
func New(kv KeyValue) *Store { return &Store{kv: kv} }

// RefreshTTL reads the bucket's TTL from its status. Errors: the bucket's
// error, wrapped; kv has no Status method.
func (s *Store) RefreshTTL(ctx context.Context) error {
	sk, ok := s.kv.(StatusKV)
	if !ok {
		return errors.New("kvsession: the bucket has no Status method; its TTL is unknown")
	}
	st, err := sk.Status(ctx)
	if err != nil {
		return fmt.Errorf("kvsession: read the bucket status: %w", err)
	}
	s.ttl.Store(int64(st.TTL()))
	s.ttlAt.Store(time.Now().UnixNano())
	return nil
}

// SessionTTL implements skillface.SessionTTLReporter: the bucket's TTL as
// last read (0: keys never expire), and whether it was read. A value
// TTLRefresh old or older is still returned, and read again in the
// background.
func (s *Store) SessionTTL() (time.Duration, bool) {
	at := s.ttlAt.Load()
	if at == 0 || time.Since(time.Unix(0, at)) >= TTLRefresh {
		if _, ok := s.kv.(StatusKV); ok && s.refreshing.CompareAndSwap(false, true) {
			go func() {
				defer s.refreshing.Store(false)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = s.RefreshTTL(ctx) // on failure the old value (or unknown) stays
			}()
		}
	}
	if at == 0 {
		return 0, false
	}
	return time.Duration(s.ttl.Load()), true
}

// Key returns the KV key of a session id (events.KeyFor), or ErrSessionID.
func Key(id string) (string, error) {
	switch {
	case id == "":
		return "", fmt.Errorf("%w: the session id is empty", ErrSessionID)
	case len(id) > MaxIDBytes:
		return "", fmt.Errorf("%w: the session id is %d bytes long; at most %d are allowed (use a shorter id, such as a hash of it)",
			ErrSessionID, len(id), MaxIDBytes)
	}
	return events.KeyFor(id), nil
}

// Get implements skillface.SessionStore. Errors: skillface.ErrSessionNotFound
// (never written, deleted or expired), ErrSessionID, ctx.Err(), or the
// bucket's error wrapped with the session id (retryable when JetStream is
// temporarily unavailable).
func (s *Store) Get(ctx context.Context, id string) ([]byte, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	key, err := Key(id)
	if err != nil {
		return nil, 0, err
	}
	if s.direct != nil && !s.direct.off.Load() {
		return s.StartGet(ctx, id)()
	}
	return s.kvGet(ctx, id, key)
}

// kvGet reads session id (at key) with the bucket's Get.
func (s *Store) kvGet(ctx context.Context, id, key string) ([]byte, uint64, error) {
	e, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, 0, fmt.Errorf("%w: %q", skillface.ErrSessionNotFound, id)
	case err != nil:
		return nil, 0, wrap(ctx, "read", id, err)
	}
	return e.Value(), e.Revision(), nil
}

// CompareAndSet implements skillface.SessionStore: revision 0 creates the
// session (it must not exist, or must have been deleted or expired), any
// other revision updates it only if that is its current revision. Errors:
// skillface.ErrRevisionMismatch (another write came first; nothing was
// written), ErrSessionID, ctx.Err(), or the bucket's error wrapped.
func (s *Store) CompareAndSet(ctx context.Context, id string, value []byte, revision uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	key, err := Key(id)
	if err != nil {
		return 0, err
	}
	var rev uint64
	if revision == 0 {
		rev, err = s.kv.Create(ctx, key, value)
	} else {
		rev, err = s.kv.Update(ctx, key, value, revision)
	}
	if err == nil {
		return rev, nil
	}
	if conflict(err) {
		if revision == 0 {
			return 0, fmt.Errorf("%w: session %q already exists", skillface.ErrRevisionMismatch, id)
		}
		return 0, fmt.Errorf("%w: session %q is no longer at revision %d", skillface.ErrRevisionMismatch, id, revision)
	}
	return 0, wrap(ctx, "write", id, err)
}

// conflict reports whether err is JetStream's answer to a failed
// expected-last-sequence check: a compare-and-set lost to another writer.
func conflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) &&
		(api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// wrap names the session in a bucket error; when ctx ended during the call
// the context error is returned instead, so callers can test it with
// errors.Is.
func wrap(ctx context.Context, op, id string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("kvsession: %s session %q: %w", op, id, cerr)
	}
	return fmt.Errorf("kvsession: %s session %q: %w", op, id, err)
}
