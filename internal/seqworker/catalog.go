package seqworker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// catalog is the worker's view of the SEQUENCES bucket, kept by a watcher:
// the decoded sequences (their `when` programs compiled once), the boot
// sequences and the index of group names for seq_call.
type catalog struct {
	kv jetstream.KeyValue

	// mu guards byName and groups.
	mu     sync.Mutex
	byName map[string]catalogEntry
	groups map[string]string // group name → sequence name
}

type catalogEntry struct {
	seq *seq.Sequence
	rev uint64
	raw []byte // the stored JSON of rev (definition.go records its digest)
}

func newCatalog(kv jetstream.KeyValue) *catalog {
	return &catalog{kv: kv, byName: map[string]catalogEntry{}, groups: map[string]string{}}
}

// errNoSequence says that a run names a sequence the SEQUENCES bucket does
// not hold (terminal for the run).
var errNoSequence = errors.New("no such sequence")

// lookup returns the sequence called name: the catalog's copy when it has
// one (the watcher keeps it current: an update reaches it within
// milliseconds of being stored, as fast as the request that would use
// it), else what get reads from the bucket — so a sequence stored a moment
// ago is found. A run thus runs the newest revision of its sequence that
// this worker has seen when the run is claimed (docs/runs.md). Errors:
// those of get.
func (c *catalog) lookup(ctx context.Context, name string) (*seq.Sequence, error) {
	c.mu.Lock()
	ce, ok := c.byName[name]
	c.mu.Unlock()
	if ok {
		return ce.seq, nil
	}
	s, _, err := c.get(ctx, name)
	return s, err
}

// cachedRaw is cached, also returning the copy's revision and stored JSON.
func (c *catalog) cachedRaw(name string) (*seq.Sequence, uint64, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce, ok := c.byName[name]
	return ce.seq, ce.rev, ce.raw, ok && ce.raw != nil
}

// get returns the stored sequence called name, reading the bucket (so a
// sequence stored a moment ago is found) but decoding only when its
// revision changed. Errors: errNoSequence, a decode error (terminal), or a
// NATS error (passing).
func (c *catalog) get(ctx context.Context, name string) (*seq.Sequence, uint64, error) {
	s, rev, _, err := c.getRaw(ctx, name)
	return s, rev, err
}

// getRaw is get, also returning the stored JSON of that revision.
func (c *catalog) getRaw(ctx context.Context, name string) (*seq.Sequence, uint64, []byte, error) {
	e, err := c.kv.Get(ctx, events.KeyFor(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil, fmt.Errorf("%w %q in the %s bucket: store it first (skillbus validate, the registry) or check the name", errNoSequence, name, events.BucketSequences)
	}
	if err != nil {
		return nil, 0, nil, err
	}
	c.mu.Lock()
	ce, ok := c.byName[name]
	c.mu.Unlock()
	if ok && ce.rev == e.Revision() {
		return ce.seq, ce.rev, e.Value(), nil
	}
	s, err := seq.Decode(e.Value())
	if err != nil {
		return nil, 0, nil, &terminalError{fmt.Errorf("stored sequence %q (revision %d) does not decode: %w", name, e.Revision(), err)}
	}
	c.put(name, s, e.Revision(), e.Value())
	return s, e.Revision(), e.Value(), nil
}

// put records a sequence seen at rev (raw: its stored JSON), unless a
// newer one is known.
func (c *catalog) put(name string, s *seq.Sequence, rev uint64, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byName[name]; ok {
		if old.rev > rev {
			return
		}
		c.unindexLocked(name, old.seq)
	}
	c.byName[name] = catalogEntry{seq: s, rev: rev, raw: raw}
	for _, g := range s.Groups {
		c.groups[g.Name] = name
	}
}

func (c *catalog) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byName[name]; ok {
		c.unindexLocked(name, old.seq)
		delete(c.byName, name)
	}
}

func (c *catalog) unindexLocked(name string, s *seq.Sequence) {
	for _, g := range s.Groups {
		if c.groups[g.Name] == name {
			delete(c.groups, g.Name)
		}
	}
}

// group returns the stored sequence holding the group called name.
func (c *catalog) group(name string) (*seq.Sequence, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sn, ok := c.groups[name]
	if !ok {
		return nil, false
	}
	return c.byName[sn].seq, true
}

// boot returns the names of the sequences with boot: true, sorted.
func (c *catalog) boot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n, e := range c.byName {
		if e.seq.Boot {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (c *catalog) names() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]bool, len(c.byName))
	for n := range c.byName {
		out[n] = true
	}
	return out
}
