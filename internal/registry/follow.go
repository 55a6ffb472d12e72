package registry

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
)

// followStored keeps this replica in step with writes to SEQUENCES made by
// other registry replicas (which share requests through the queue group):
// a sequence created or deleted over NATS on one replica becomes visible
// to the endpoints of all. Entries from files are only recorded (every
// replica loads the same tree), except that a file's entry deleted by
// someone else is put back, since the file still defines it.
func (r *Registry) followStored(ctx context.Context, w jetstream.KeyWatcher) {
	defer close(r.kvDone)
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				r.onStoredUpdate(ctx, e)
			}
		}
	}
}

func (r *Registry) onStoredUpdate(ctx context.Context, e jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := e.Key()
	cur, known := r.stored[kindSequence][key]
	name, err := events.NameForKey(key)
	if err != nil {
		return
	}
	switch e.Operation() {
	case jetstream.KeyValuePut:
		if known && cur.sum == sum(e.Value()) {
			return // our own write, or the same content
		}
		stream, err := r.js.Stream(ctx, "KV_"+events.BucketSequences)
		if err != nil {
			r.log.Warn("cannot read a sequence written elsewhere", "key", key, "err", err)
			return
		}
		m, err := stream.GetMsg(ctx, e.Revision())
		if err != nil {
			r.log.Warn("cannot read a sequence written elsewhere", "key", key, "err", err)
			return
		}
		src := m.Header.Get(SourceHeader)
		r.stored[kindSequence][key] = storedEntry{source: src, sum: sum(m.Data), value: m.Data}
		if src != createdSource {
			return
		}
		d, err := definitionFromStored(kindSequence, "", m.Data)
		if err != nil {
			r.log.Warn("sequence created elsewhere cannot be read", "key", key, "err", err)
			return
		}
		r.created[d.name] = d
	default: // delete or purge
		if !known {
			return // our own delete
		}
		delete(r.stored[kindSequence], key)
		if cur.source != createdSource {
			// A file's entry deleted by someone else: the next apply puts it
			// back if the file still defines it.
			return
		}
		delete(r.created, name)
	}
	if err := r.applyLocked(ctx); err != nil {
		r.log.Warn("refresh after a change made elsewhere", "err", err)
	}
}
