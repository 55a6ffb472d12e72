package seqworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// The definition a run uses (docs/runs.md): a run finishes with the
// definition it started with. The holder records it in the run's state
// (RunState.Definition: the SEQUENCES revision and the digest of the
// canonical JSON) and keeps a copy of a stored sequence's JSON in the
// RUN_SLOTS object store under its digest (events.DefinitionObject: one
// object per definition, shared by its runs, written once per worker and
// again when older than half the store's TTL). A worker that resumes the
// run — after a crash, a hand-back, a NATS restart — runs that copy when
// the stored sequence has changed since; when the copy is gone too, the run
// fails naming both revisions instead of running another definition. An
// inline run's request carries its definition, so it needs no copy.

// definition is a sequence as resolved for a run, with what identifies it.
type definition struct {
	seq *seq.Sequence
	ref events.DefinitionRef
	raw []byte // the canonical JSON (stored sequences; nil for inline)
}

// defDigest returns "sha256:<hex>" of b.
func defDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// defStore remembers which definition copies this worker wrote (and when)
// and the definitions it read back, by digest.
type defStore struct {
	mu     sync.Mutex
	saved  map[string]time.Time     // digest → when the copy was written or seen
	loaded map[string]*seq.Sequence // digest → definition read back
	ttl    time.Duration            // RUN_SLOTS TTL; 0 until read
}

func newDefStore() *defStore {
	return &defStore{saved: map[string]time.Time{}, loaded: map[string]*seq.Sequence{}}
}

// fresh reports whether the copy of digest is known to exist and to be
// younger than half the store's TTL.
func (d *defStore) fresh(digest string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.saved[digest]
	return ok && (d.ttl <= 0 || time.Since(at) < d.ttl/2)
}

// resolveDef returns the definition a request runs now: its inline
// sequence, or the stored sequence with its revision and digest.
func (w *Worker) resolveDef(ctx context.Context, req *events.RunRequest) (*definition, error) {
	if len(req.Inline) > 0 {
		s, err := w.resolve(ctx, req)
		if err != nil {
			return nil, err
		}
		return &definition{seq: s, ref: events.DefinitionRef{Digest: defDigest(req.Inline), Size: int64(len(req.Inline))}}, nil
	}
	s, rev, raw, err := w.cat.getRaw(ctx, req.Sequence)
	if errors.Is(err, errNoSequence) {
		return nil, &terminalError{err}
	}
	if err != nil {
		return nil, err
	}
	return storedDef(s, rev, raw), nil
}

// resolveDefNow is resolveDef from what the worker holds without a read:
// an inline sequence, or the catalog's copy of a stored one (the
// SEQUENCES watcher keeps it current). ok is false when the bucket must be
// read (resolveDef).
func (w *Worker) resolveDefNow(req *events.RunRequest) (def *definition, ok bool, err error) {
	if len(req.Inline) > 0 {
		def, err = w.resolveDef(context.Background(), req)
		return def, true, err
	}
	s, rev, raw, ok := w.cat.cachedRaw(req.Sequence)
	if !ok {
		return nil, false, nil
	}
	return storedDef(s, rev, raw), true, nil
}

// storedDef is the definition of the stored sequence s at revision rev,
// whose stored JSON is raw.
func storedDef(s *seq.Sequence, rev uint64, raw []byte) *definition {
	d := defDigest(raw)
	return &definition{seq: s, raw: raw, ref: events.DefinitionRef{Revision: rev, Digest: d, Object: events.DefinitionObject(d), Size: int64(len(raw))}}
}

// recordDefinition records def in the run's state, which carries it from
// its next write on (a heartbeat or the first checkpoint). A stored
// sequence's copy is written first unless this worker knows a fresh one:
// once per definition and worker, bounded to a few seconds (a failure is
// logged; the run goes on without the record).
func (r *run) recordDefinition(ctx context.Context, def *definition) {
	ref := def.ref
	if ref.Object != "" && !r.w.defs.fresh(ref.Digest) {
		if r.w.slots == nil {
			return // no object store: logged at start
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.w.saveDefinition(sctx, def)
		cancel()
		if err != nil {
			r.log.Warn("definition not recorded; a resume after an edit of the sequence fails instead of using it", "revision", ref.Revision, "err", err)
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		r.st.Definition = &ref
	}
}

// saveDefinition writes the copy of def's JSON unless a fresh one exists.
func (w *Worker) saveDefinition(ctx context.Context, def *definition) error {
	ds := w.defs
	ds.mu.Lock()
	if ds.ttl == 0 {
		if st, err := w.slots.Status(ctx); err == nil {
			ds.ttl = st.TTL()
		}
	}
	ttl := ds.ttl
	ds.mu.Unlock()
	return w.persist(ctx, "store the run's definition", func(octx context.Context) error {
		if info, err := w.slots.GetInfo(octx, def.ref.Object); err == nil && !info.Deleted && (ttl <= 0 || time.Since(info.ModTime) < ttl/2) {
			ds.mu.Lock()
			ds.saved[def.ref.Digest] = info.ModTime
			ds.mu.Unlock()
			return nil
		}
		if def.raw == nil {
			return nil // read back from its copy (definitionFor): nothing to write, and never an empty copy
		}
		if _, err := w.slots.PutBytes(octx, def.ref.Object, def.raw); err != nil {
			return err
		}
		ds.mu.Lock()
		ds.saved[def.ref.Digest] = time.Now()
		ds.mu.Unlock()
		return nil
	})
}

// definitionFor returns the definition a claimed run executes: def (the
// current one) for a new run, or for a checkpoint made with the same
// definition; else the one the run started with (cur.Definition), read
// back from its copy or from the SEQUENCES history. Errors: a
// terminalError naming both revisions when that definition is gone;
// passing NATS errors.
func (r *run) definitionFor(ctx context.Context, cur *events.RunState, def *definition) (*definition, error) {
	if cur == nil || cur.Definition == nil || cur.Definition.Digest == def.ref.Digest || cur.Definition.Object == "" {
		return def, nil
	}
	old := *cur.Definition
	w := r.w
	w.defs.mu.Lock()
	s := w.defs.loaded[old.Digest]
	w.defs.mu.Unlock()
	if s == nil {
		raw, err := w.readDefinition(ctx, r.req.Sequence, old)
		if err != nil {
			return nil, err
		}
		if s, err = seq.Decode(raw); err != nil {
			return nil, &terminalError{fmt.Errorf("the definition run %s started with (revision %d of sequence %q) does not decode: %w", r.req.RunID, old.Revision, r.req.Sequence, err)}
		}
		w.defs.mu.Lock()
		if len(w.defs.loaded) > 256 {
			clear(w.defs.loaded)
		}
		w.defs.loaded[old.Digest] = s
		w.defs.mu.Unlock()
	}
	r.log.Info("resuming with the definition the run started with; the stored sequence changed since",
		"sequence", r.req.Sequence, "started_revision", old.Revision, "stored_revision", def.ref.Revision)
	return &definition{seq: s, ref: old}, nil
}

// readDefinition reads the JSON of the definition ref: its copy in the
// object store, else the SEQUENCES history at its revision (when the
// bucket keeps it) — checked against the digest.
func (w *Worker) readDefinition(ctx context.Context, name string, ref events.DefinitionRef) ([]byte, error) {
	var raw []byte
	var why error
	err := w.persist(ctx, "read the run's definition", func(octx context.Context) error {
		raw, why = nil, nil
		if w.slots != nil {
			b, err := w.slots.GetBytes(octx, ref.Object)
			switch {
			case err == nil && defDigest(b) == ref.Digest:
				raw = b
				return nil
			case err == nil:
				why = fmt.Errorf("%s/%s has digest %s, want %s", events.BucketRunSlots, ref.Object, defDigest(b), ref.Digest)
			case errors.Is(err, jetstream.ErrObjectNotFound):
				why = fmt.Errorf("%s/%s: %w", events.BucketRunSlots, ref.Object, err)
			default:
				return err // passing: tried again
			}
		}
		if ref.Revision > 0 {
			e, err := w.sequences.GetRevision(octx, events.KeyFor(name), ref.Revision)
			if err == nil && defDigest(e.Value()) == ref.Digest {
				raw = e.Value()
				return nil
			}
			if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if raw != nil {
		return raw, nil
	}
	now := "no longer stored"
	if e, err := w.sequences.Get(ctx, events.KeyFor(name)); err == nil {
		now = fmt.Sprintf("now at revision %d", e.Revision())
	}
	return nil, &terminalError{fmt.Errorf("%w: the run started with revision %d of sequence %q (%s), which is gone (%v; the SEQUENCES bucket keeps no older revisions), and the sequence is %s; "+
		"a run never finishes with another definition than the one it started with: start a new run", errDefinitionGone, ref.Revision, name, ref.Digest[:min(len(ref.Digest), 19)], why, now)}
}

// errDefinitionGone: the definition a run started with cannot be read
// back (terminal).
var errDefinitionGone = errors.New("seqworker: the run's definition is gone")
