package registry

import (
	"strings"

	"github.com/skillbus/skillbus/pkg/events"
)

// A replica that does not hold the lease (lease.go) serves what the
// buckets hold — the leader's writes — rather than its own tree, so every
// replica answers skill.list, seq.get and the others alike.

// standbyViewLocked makes the endpoints' view what the buckets hold. An
// entry written by a client that is not a registry is left out (the
// leader undoes it). The caller holds r.mu.
func (r *Registry) standbyViewLocked() {
	views := map[string]map[string]*definition{kindSkill: {}, kindSequence: {}}
	for kind, entries := range r.stored {
		for key, e := range entries {
			if d := r.decodedLocked(kind, key, e); d != nil {
				views[kind][d.name] = d
			}
		}
		for key := range r.decoded[kind] {
			if _, ok := entries[key]; !ok {
				delete(r.decoded[kind], key)
			}
		}
	}
	r.viewMu.Lock()
	r.skills, r.seqs = views[kindSkill], views[kindSequence]
	r.viewMu.Unlock()
	r.noteCountsLocked(len(views[kindSkill]), len(views[kindSequence]))
}

// standbyKeyLocked brings the view in line with one key of kind after the
// buckets changed (the incremental standbyViewLocked, so a standby that
// follows a leader writing thousands of entries does not rebuild its view
// for each). A write by a client that is not a registry leaves the view
// as it is: the leader puts the key back. The caller holds r.mu.
func (r *Registry) standbyKeyLocked(kind, key string) {
	e, ok := r.stored[kind][key]
	if ok && !fromRegistry(e.source) {
		return
	}
	name, err := events.NameForKey(key)
	if err != nil {
		name = key
	}
	var d *definition
	if ok {
		if d = r.decodedLocked(kind, key, e); d == nil {
			return
		}
	} else {
		delete(r.decoded[kind], key)
	}
	r.viewMu.Lock()
	m := r.skills
	if kind == kindSequence {
		m = r.seqs
	}
	if d != nil {
		m[d.name] = d
	} else {
		delete(m, name)
	}
	nSkills, nSeqs := len(r.skills), len(r.seqs)
	r.viewMu.Unlock()
	r.noteCountsLocked(nSkills, nSeqs)
}

// decodedLocked returns the definition a registry's bucket entry holds
// (from the cache when its content is unchanged); nil for an entry no
// registry wrote, a removal marker, or one that cannot be read.
func (r *Registry) decodedLocked(kind, key string, e storedEntry) *definition {
	if !fromRegistry(e.source) || e.source == removedSource {
		return nil
	}
	if d, ok := r.decoded[kind][key]; ok && d.sum == e.sum {
		return d
	}
	src := ""
	if rel, ok := strings.CutPrefix(e.source, filePrefix); ok {
		src = rel
	}
	d, err := definitionFromStored(kind, src, e.value)
	if err != nil {
		r.log.Warn("stored definition cannot be read; not served", "bucket", bucketOf(kind), "key", key, "err", err)
		return nil
	}
	r.decoded[kind][key] = d
	return d
}
