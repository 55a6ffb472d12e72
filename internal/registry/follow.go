package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
)

// followStored keeps the registry in step with what others write to the
// bucket of kind (SKILLS or SEQUENCES), until ctx is done:
//
//   - a write by another registry replica over the same tree (a
//     Skillbus-Source header of a registry) is recorded; a sequence created
//     or deleted over NATS on that replica becomes visible to this one's
//     endpoints; a file's entry makes this replica read its tree again
//     before it compares, so replicas that saw a file change at different
//     moments converge on the newest version without reporting anything
//     (a write that copies a registry's header is overwritten with the
//     file's version the same way, as an ordinary put);
//   - any other write — a plain `nats kv put` or `kv del` — is undone: the
//     key is put back to the registry's version (its file's, or the
//     created sequence's), or removed when nothing defines it, and an
//     events.OpReverted event says what was written and what was restored.
//
// The registry's own writes come back through the watcher too; they are
// recognised by revision (r.revs) and skipped.
func (r *Registry) followStored(ctx context.Context, kind string, w jetstream.KeyWatcher) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil && r.onStoredUpdate(ctx, kind, e) && r.cfg.Dir != "" {
				// A replica wrote a file's entry: read the tree (which
				// applies) before deciding it differs from ours.
				if _, _, err := r.rescan(ctx, false); err != nil && ctx.Err() == nil {
					r.log.Warn("rescan after another replica's write", "err", err)
				}
			}
		}
	}
}

// onStoredUpdate records one bucket update made by somebody else and
// brings the bucket back in line. It returns true when the update came
// from another replica's file and the tree should be read again first
// (the caller rescans, which applies); otherwise it applies itself.
func (r *Registry) onStoredUpdate(ctx context.Context, kind string, e jetstream.KeyValueEntry) (rescan bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := e.Key()
	if e.Revision() <= r.revs[kind][key] {
		return false // our own write, or known already
	}
	r.revs[kind][key] = e.Revision()
	name, err := events.NameForKey(key)
	if err != nil {
		name = key
	}
	m, err := r.streams[kind].GetMsg(ctx, e.Revision())
	if err != nil {
		// Read the header again at the next update or rescan; record what
		// the update says meanwhile.
		r.log.Warn("cannot read a bucket write made elsewhere", "bucket", bucketOf(kind), "key", key, "err", err)
		return false
	}
	src := m.Header.Get(SourceHeader)
	cur, known := r.stored[kind][key]
	if e.Operation() == jetstream.KeyValuePut {
		r.stored[kind][key] = storedEntry{source: src, sum: sum(m.Data), value: m.Data}
	} else {
		delete(r.stored[kind], key)
	}
	// A replica that does not hold the lease only follows: it records what
	// was written (to serve it, and to start from it should it take the
	// lease) and undoes nothing.
	leading := r.leading.Load()
	if !leading && fromRegistry(src) {
		delete(r.external[kind], key) // the leader has rewritten it
	}
	switch {
	case !fromRegistry(src):
		what := opWord(e.Operation())
		r.external[kind][key] = fmt.Sprintf("was %s at revision %d by a client that is not the registry (%s)", what, e.Revision(), describeSource(src))
		if leading {
			r.log.Warn("bucket changed by a client that is not the registry; undoing it", "bucket", bucketOf(kind), "key", key, "op", what, "source", src)
		}
	case kind == kindSequence && src == createdSource && e.Operation() == jetstream.KeyValuePut:
		// Another replica's seq.create.
		d, err := definitionFromStored(kindSequence, "", m.Data)
		if err != nil {
			r.log.Warn("sequence created elsewhere cannot be read", "key", key, "err", err)
			return false
		}
		r.created[d.name] = d
	case kind == kindSequence && src == createdSource:
		// Another replica's seq.delete.
		if known && cur.source == createdSource {
			delete(r.created, name)
		}
	case strings.HasPrefix(src, filePrefix) && leading:
		// Another writer of a file's entry while this replica holds the
		// lease — a registry of a release without the lease during an
		// upgrade, one that lost the lease while a write was on its way,
		// or a client copying the header: compare after reading the tree.
		// Should the tree still say otherwise, the apply stores this
		// replica's version as an ordinary put.
		r.log.Debug("a file's entry was written by another writer; reading the tree before comparing", "bucket", bucketOf(kind), "key", key, "op", opWord(e.Operation()), "source", src)
		return true
	}
	if !leading {
		r.standbyKeyLocked(kind, key)
		return false
	}
	if err := r.applyLocked(ctx); err != nil {
		r.log.Warn("refresh after a change made elsewhere", "err", err)
	}
	return false
}

func opWord(op jetstream.KeyValueOp) string {
	if op == jetstream.KeyValuePut {
		return "written"
	}
	return "deleted"
}

// describeSource names a SourceHeader value for a message.
func describeSource(src string) string {
	if src == "" {
		return "no " + SourceHeader + " header"
	}
	return fmt.Sprintf("%s: %q", SourceHeader, src)
}

// revertedEvent is the events.OpReverted event of an op that undid an
// external write described by what.
func (r *Registry) revertedEvent(o op, name, what string) *events.RegistryEvent {
	entry := bucketOf(o.kind) + "/" + o.key
	ev := &events.RegistryEvent{Kind: eventKind(o.kind), Op: events.OpReverted, Name: name, At: time.Now().UTC()}
	switch {
	case o.def == nil:
		ev.Error = fmt.Sprintf("%s %s; no file or seq.create defines it, so the registry removed it", entry, what)
	case o.def.source == "":
		ev.Error = fmt.Sprintf("%s %s; the registry put back the sequence created with seq.create", entry, what)
	default:
		ev.File = o.def.source
		ev.Error = fmt.Sprintf("%s %s; the registry put back the version from %s", entry, what, o.def.source)
	}
	r.log.Warn("undid a bucket write made elsewhere", "entry", entry, "what", ev.Error)
	return ev
}
