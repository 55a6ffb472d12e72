// Package registry is the skillbus registry service (README.md, Deploying;
// docs/skills.md; docs/sequences.md): it loads a directory tree of skills and sequences,
// validates each file with pkg/skill and pkg/seq, publishes the valid ones
// to the SKILLS and SEQUENCES buckets, follows the tree with fsnotify, and
// serves the skillbus.registry.* micro endpoints. cmd/registry is a thin
// main around it; `skillbus dev` runs it in-process. Check applies the same
// rules without NATS: it is `skillbus validate`.
//
// # Files
//
// Skills are files named SKILL.md or skill.yaml; sequences are files named
// *.seq.json, *.seq.yaml or *.seq.yml, anywhere in the tree (FileKind).
// Version-control directories (.git, .hg, .svn, .jj) and node_modules are
// skipped. Files are read as files: only regular files are opened, without
// blocking (a FIFO named x.seq.yaml is refused, never opened), and at most
// MaxDefinitionBytes of the server's max_payload (a definition is stored as
// one NATS message, so a larger file could never be stored). Symlinks are
// followed only inside the tree: a symlinked directory or definition file
// that leads outside it (to /, to .., to /dev/zero) is refused; each real
// directory is visited once. Each refusal is a problem of that path,
// published as an events.OpInvalid event (kind events.KindTree for a
// directory).
//
// # Guarantees
//
//   - When Start returns, the registry serves its endpoints; when it holds
//     the lease (it is the only registry, or the first), the buckets match
//     its tree.
//
//   - After a change (a write, an editor's rename-save, a new directory, a
//     burst of writes), the buckets match the tree again within Debounce
//     (bounded by MaxDelay) plus the time to write.
//
//   - An invalid file never replaces or deletes the last good version of
//     its definition: the problem is logged with file and line, published
//     as an events.OpInvalid registry event, and the old version stays —
//     also across a restart of the registry, since the stored version is
//     recognised by its source file.
//
//   - A file that loads with warnings (an unknown field such as
//     allowed_tools) is published with an events.OpWarning event each time
//     it is read, at start and after each change; the warnings stay in the
//     skill record, in skill.list and skill.info.
//
//   - Name clashes are resolved by a documented rule, never by read order:
//     a skill name belongs to the file whose path sorts first; sequences
//     created with seq.create come first, then the sequence files stored
//     as they are, then new or edited ones, each by path, and a sequence
//     whose name or any group name is taken is not stored (a new file
//     never drops a stored sequence; an edited file that clashes keeps its
//     stored version). Each clash is logged and published (events.OpClash)
//     naming both sources and, for a group, the fix.
//
//   - Bucket entries are tagged with their source in the Skillbus-Source
//     header ("file:<path>" or "seq.create"); entries from files are
//     deleted when their file goes, sequences created with seq.create by
//     seq.delete.
//
//   - The registry owns the two buckets: a write to them that no registry
//     made (a plain KV put, delete or purge) is undone — the key put back
//     to the registry's version, or removed when nothing defines it — and
//     reported as an events.OpReverted event; what was written while the
//     registry was down is undone at its start. Replicas over the same tree
//     recognise each other's writes by their source header and read the
//     tree again before they compare, so they converge without reporting
//     each other (a write that copies the header but not the file's
//     content is overwritten after that read too, but as an ordinary put:
//     it cannot be told from a replica's). Least-privilege NATS
//     permissions keep other clients from writing at all; this is the
//     second line of defence.
//
//   - One writer: of all the registries on one bus, only the one holding
//     the lease (a key of the REGISTRY_LEASE bucket, taken with a
//     compare-and-set and renewed; lease.go) writes SKILLS and SEQUENCES.
//     The others stand by — ready, serving the read endpoints from the
//     buckets, forwarding seq.create and seq.delete to the leader, reading
//     their own tree — and take over at once when the leader stops (it
//     releases the lease) or within the lease's TTL when it dies. A
//     standby whose tree differs from the leader's reports it (a WARN log
//     line, an events.OpDiffers event, the tree_differs gauge) instead of
//     undoing the leader's writes: two registries with different trees
//     never flap (docs/skills.md, "One writer").
package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/pkg/events"
)

// SourceHeader tags every bucket entry the registry writes with where the
// definition came from: "file:" + its path relative to the tree root, or
// "seq.create"; a removal of an entry no definition owns carries
// "registry".
const SourceHeader = "Skillbus-Source"

const (
	filePrefix    = "file:"
	removedSource = "registry" // the registry removed an entry nothing defines
)

// fromRegistry reports whether a SourceHeader value is one a registry
// writes (this replica or another over the same tree).
func fromRegistry(source string) bool {
	return strings.HasPrefix(source, filePrefix) || source == createdSource || source == removedSource
}

// ErrStopped is returned by Start after Stop.
var ErrStopped = errors.New("registry: stopped")

// storedEntry is what a bucket holds for one key, as far as the registry
// knows.
type storedEntry struct {
	source string // SourceHeader value ("" when the header is absent)
	sum    string // sha256 of the value
	value  []byte
}

// fileState is the registry's memory of one definition file (or refused
// directory).
type fileState struct {
	kind     string      // kindSkill, kindSequence or kindTree
	hash     string      // sha256 of the bytes last parsed
	good     *definition // the last good version; nil when there never was one
	problems []Problem   // the errors; non-nil while the file is invalid
	warns    []Problem   // the warnings of the last read
	refs     []string    // a skill.yaml's file ref paths (scanned.refs), part of hash
}

// Registry loads, watches and serves skills and sequences. Create it with
// New, then Start and Stop (or Run).
type Registry struct {
	cfg Config
	log *slog.Logger
	nc  *nats.Conn
	js  jetstream.JetStream
	kv  map[string]jetstream.KeyValue // by kind

	// scanMu serialises rescans (the only writers of files).
	scanMu sync.Mutex
	// rootGone is true while the root directory cannot be read
	// (rootGoneLocked); guarded by scanMu.
	rootGone bool
	// mu guards files, created, stored, revs, external and clashes, and
	// serialises every write to the buckets.
	mu      sync.Mutex
	files   map[string]*fileState             // by path relative to Dir
	created map[string]*definition            // sequences created over NATS, by name
	stored  map[string]map[string]storedEntry // kind -> key -> entry
	// revs holds, per kind and key, the newest bucket revision the registry
	// wrote or has seen (puts and deletes): an update at or below it is
	// known already (this replica's own write coming back, mostly).
	revs map[string]map[string]uint64
	// external holds, per kind and key, a write by someone else that the
	// next apply may undo: what was written, for the reverted event.
	external map[string]map[string]string
	clashes  map[string]bool // clashes already reported

	// viewMu guards skills and seqs: the resolved definitions the
	// endpoints read.
	viewMu sync.RWMutex
	skills map[string]*definition
	seqs   map[string]*definition

	svc      micro.Service
	inflight atomic.Int64 // endpoint requests being handled
	watcher  *fsnotify.Watcher
	watched  map[string]bool // directories under watch; owned by the watch loop
	cancel   context.CancelFunc
	done     chan struct{}               // closed when the watch loop ends
	kvDone   chan struct{}               // closed when both followStored loops end
	streams  map[string]jetstream.Stream // the KV streams, by kind

	counts atomic.Pointer[metrics.RegistryCounts] // metrics.go; nil before the first apply
	met    *metrics.Registry                      // metrics.go; nil when unavailable

	// One writer (lease.go). leading is true while this replica holds the
	// lease; it changes only under mu, so a write made under mu is made
	// by the leader.
	leading atomic.Bool
	// fenced is set when the lease is lost, before the step down waits
	// for mu: a write under way stops at its next batch.
	fenced      atomic.Bool
	treeDiffers atomic.Bool
	tree        atomic.Pointer[treePrint] // the fingerprint of the last scan
	treeChanged chan struct{}             // nudges the elector when tree changes
	lease       *lease                    // the elector's state
	fwdSub      *nats.Subscription        // forwarded writes, while leading; guarded by mu
	electCancel context.CancelFunc
	electDone   chan struct{} // closed when the elector ends
	renewDone   chan struct{} // closed when the renewer ends
	// decoded caches the definitions rebuilt from the buckets (a standby's
	// view), by kind and key; guarded by mu.
	decoded map[string]map[string]*definition
	// holdView is true during Start's first read of the tree, before the
	// lease is tried: a replica about to lead does not rebuild the view
	// from every stored entry first. Guarded by mu.
	holdView bool

	lifeMu  sync.Mutex // guards started, stopped
	started bool
	stopped bool
}

// New returns a Registry over nc (the caller owns nc and drains it after
// Stop). Errors: Config.Validate's.
func New(nc *nats.Conn, cfg Config) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		return nil, fmt.Errorf("registry: jetstream: %w", err)
	}
	r := &Registry{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "registry"),
		nc:       nc,
		js:       js,
		kv:       map[string]jetstream.KeyValue{},
		files:    map[string]*fileState{},
		created:  map[string]*definition{},
		stored:   map[string]map[string]storedEntry{kindSkill: {}, kindSequence: {}},
		revs:     map[string]map[string]uint64{kindSkill: {}, kindSequence: {}},
		external: map[string]map[string]string{kindSkill: {}, kindSequence: {}},
		streams:  map[string]jetstream.Stream{},
		clashes:  map[string]bool{},
		skills:   map[string]*definition{},
		seqs:     map[string]*definition{},
		watched:  map[string]bool{},

		treeChanged: make(chan struct{}, 1),
		decoded:     map[string]map[string]*definition{kindSkill: {}, kindSequence: {}},
	}
	r.initMetrics()
	return r, nil
}

func bucketOf(kind string) string {
	if kind == kindSkill {
		return events.BucketSkills
	}
	return events.BucketSequences
}

func eventKind(kind string) string {
	switch kind {
	case kindSkill:
		return events.KindSkill
	case kindTree:
		return events.KindTree
	}
	return events.KindSequence
}

// limit is the largest definition file and stored definition this
// registry's server accepts (MaxDefinitionBytes of its max_payload).
func (r *Registry) limit() int64 { return MaxDefinitionBytes(r.nc.MaxPayload()) }

// Start provisions the streams and buckets (unless Config.Provisioned), reads what the buckets hold,
// loads the tree and brings the buckets in line with it, starts watching
// the tree and serves the endpoints. When it returns without error the
// buckets match the tree. ctx bounds the start-up only. Errors: ErrStopped,
// events.ErrProvision, a watcher error, a micro service error, or a bucket
// write failure.
func (r *Registry) Start(ctx context.Context) error {
	r.lifeMu.Lock()
	defer r.lifeMu.Unlock()
	if r.stopped {
		return ErrStopped
	}
	if r.started {
		return errors.New("registry: already started")
	}
	if !r.cfg.Provisioned {
		if err := events.Provision(ctx, r.js, r.cfg.Provision); err != nil {
			return err
		}
	}
	for _, k := range []string{kindSkill, kindSequence} {
		kv, err := r.js.KeyValue(ctx, bucketOf(k))
		if err != nil {
			return fmt.Errorf("registry: bucket %s: %w", bucketOf(k), err)
		}
		r.kv[k] = kv
		if r.streams[k], err = r.js.Stream(ctx, "KV_"+bucketOf(k)); err != nil {
			return fmt.Errorf("registry: bucket %s: %w", bucketOf(k), err)
		}
	}
	if err := r.openLease(ctx); err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	// Follow both buckets from before the initial read, so a sequence
	// another replica creates meanwhile — or a write by anybody else — is
	// not missed.
	watchers := map[string]jetstream.KeyWatcher{}
	for _, k := range []string{kindSkill, kindSequence} {
		w, err := r.kv[k].WatchAll(loopCtx, jetstream.UpdatesOnly())
		if err != nil {
			cancel()
			return fmt.Errorf("registry: watch %s: %w", bucketOf(k), err)
		}
		watchers[k] = w
	}
	r.mu.Lock()
	r.holdView = true
	r.mu.Unlock()
	if err := r.loadStored(ctx); err != nil {
		cancel()
		for _, w := range watchers {
			_ = w.Stop()
		}
		return err
	}
	r.cancel = cancel
	r.done = make(chan struct{})
	r.kvDone = make(chan struct{})
	var follow sync.WaitGroup
	for k, w := range watchers {
		follow.Add(1)
		go func() {
			defer follow.Done()
			r.followStored(loopCtx, k, w)
		}()
	}
	go func() {
		follow.Wait()
		close(r.kvDone)
	}()
	if r.cfg.Dir != "" {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			cancel()
			<-r.kvDone
			return fmt.Errorf("registry: file watcher: %w", err)
		}
		r.watcher = w
		dirs, _, err := r.rescan(ctx, false)
		if err != nil {
			cancel()
			<-r.kvDone
			_ = w.Close()
			return err
		}
		r.watchDirs(dirs)
		go r.watchLoop(loopCtx)
	} else {
		r.setTree(fingerprint(nil))
		r.mu.Lock()
		err := r.applyLocked(ctx)
		r.mu.Unlock()
		close(r.done)
		if err != nil {
			cancel()
			<-r.kvDone
			return err
		}
	}
	// The tree is read and the view is what the buckets hold: take the
	// lease if nobody holds it (then the buckets are brought in line with
	// the tree before Start returns), and follow it from now on.
	// The renewer runs first, so that the lease is renewed during the
	// first apply, however long it takes.
	electCtx, electCancel := context.WithCancel(context.Background())
	r.electCancel, r.electDone, r.renewDone = electCancel, make(chan struct{}), make(chan struct{})
	go r.renewLoop(electCtx)
	r.takeStale(ctx)
	led, err := r.tryAcquire(ctx) // err: the leader's first apply failed
	r.mu.Lock()
	r.holdView = false
	if !led {
		_ = r.applyLocked(ctx) // the standby view: what the buckets hold
	}
	r.mu.Unlock()
	go r.elect(electCtx)
	if err == nil {
		err = r.serve(loopCtx)
	}
	if err != nil {
		electCancel()
		<-r.electDone
		<-r.renewDone
		r.mu.Lock()
		wasLeader := r.leading.Load()
		r.stopLeadingLocked()
		r.mu.Unlock()
		if wasLeader {
			r.release(context.Background())
		}
		cancel()
		<-r.done
		<-r.kvDone
		if r.watcher != nil {
			_ = r.watcher.Close()
		}
		return err
	}
	r.started = true
	r.viewMu.RLock()
	nSkills, nSeqs := len(r.skills), len(r.seqs)
	r.viewMu.RUnlock()
	r.log.Info("registry started", "dir", r.cfg.Dir, "skills", nSkills, "sequences", nSeqs, "leader", r.leading.Load())
	return nil
}

// Stop shuts down in two phases: it stops the endpoints (no new requests;
// those already received are still handled) and waits until the requests
// in progress are answered, then it cancels the watchers and waits for a
// rescan in progress — both bounded by ctx. It does not close or drain the connection: the caller does, after
// Stop. Safe to call more than once and before Start.
func (r *Registry) Stop(ctx context.Context) error {
	r.lifeMu.Lock()
	defer r.lifeMu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	if !r.started {
		return nil
	}
	var errs []error
	if r.svc != nil {
		if err := r.svc.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("registry: stop endpoints: %w", err))
		}
	}
	// Phase two: requests already being handled finish (a seq.create
	// completes its write) until ctx is done; then everything is cancelled.
	for r.inflight.Load() > 0 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	// The lease: stop the elector, stop writing, and release the lease at
	// once so a standby takes over now rather than when it expires.
	r.electCancel()
	for _, done := range []chan struct{}{r.electDone, r.renewDone} {
		select {
		case <-done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("registry: election still running at the stop deadline: %w", ctx.Err()))
		}
	}
	r.mu.Lock()
	wasLeader := r.leading.Load()
	if wasLeader {
		r.stopLeadingLocked()
	}
	r.mu.Unlock()
	if wasLeader {
		r.release(ctx)
	}
	r.cancel()
	for _, done := range []chan struct{}{r.done, r.kvDone} {
		select {
		case <-done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("registry: rescan still running at the stop deadline: %w", ctx.Err()))
		}
	}
	if r.watcher != nil {
		_ = r.watcher.Close()
	}
	r.stopMetrics()
	r.log.Info("registry stopped")
	return errors.Join(errs...)
}

// Run starts the registry, serves until ctx is done, then stops it within
// 10 s. It returns Start's error, or Stop's.
func (r *Registry) Run(ctx context.Context) error {
	if err := r.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.Stop(sctx)
}

// Rescan rescans the tree now and brings the buckets in line, without
// waiting for a file-system event. Errors: a bucket write failure.
func (r *Registry) Rescan(ctx context.Context) error {
	if r.cfg.Dir == "" {
		return nil
	}
	_, _, err := r.rescan(ctx, false)
	return err
}

// loadStored reads what the buckets hold (value and source header of each
// key). Sequences created over NATS become r.created again; an entry
// without a registry's source header is marked external, so the first
// apply removes or replaces it.
func (r *Registry) loadStored(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range []string{kindSkill, kindSequence} {
		bucket := bucketOf(k)
		stream := r.streams[k]
		lister, err := r.kv[k].ListKeys(ctx)
		if err != nil {
			return fmt.Errorf("registry: list %s: %w", bucket, err)
		}
		for key := range lister.Keys() {
			m, err := stream.GetLastMsgForSubject(ctx, "$KV."+bucket+"."+key)
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					continue
				}
				return fmt.Errorf("registry: read %s/%s: %w", bucket, key, err)
			}
			e := storedEntry{source: m.Header.Get(SourceHeader), sum: sum(m.Data), value: m.Data}
			r.stored[k][key] = e
			r.revs[k][key] = m.Sequence
			if !fromRegistry(e.source) {
				r.external[k][key] = fmt.Sprintf("held an entry at revision %d that no registry wrote (%s)", m.Sequence, describeSource(e.source))
				continue
			}
			if k == kindSequence && (e.source == createdSource) {
				d, err := definitionFromStored(k, "", m.Data)
				if err != nil {
					r.log.Warn("stored sequence cannot be read; leaving it untouched", "key", key, "err", err)
					continue
				}
				r.created[d.name] = d
			}
		}
	}
	return nil
}

// settleTime is how long a file must have been left alone before the
// registry reports it invalid during a live edit: a file found invalid
// less than settleTime after its last modification is checked again then,
// so an editor's half-written save is not reported (valid files are
// stored at once; an invalid one never replaces anything, so waiting costs
// only the report's delay).
const settleTime = 100 * time.Millisecond

// rescan walks the tree, parses the files whose bytes changed (in
// parallel, one worker per CPU) and applies the result. It returns the
// directories to watch and, when settle is true and some file was found
// invalid within settleTime of its last change, how soon to rescan to
// report it (0 otherwise; such a file is left as it was). Rescans are
// serialised by scanMu; only they change r.files, so the parse runs
// without holding mu.
func (r *Registry) rescan(ctx context.Context, settle bool) ([]string, time.Duration, error) {
	r.scanMu.Lock()
	defer r.scanMu.Unlock()
	limit := r.limit()
	res := scan(r.cfg.Dir, limit, false)
	if res.rootErr == nil && settle && r.filesGone(res) {
		// Files are gone: perhaps the whole directory is being removed
		// (rm -rf, a branch switch), which removes the files first and the
		// directory last. Look again a moment later, so that a directory
		// on its way out is kept whole (rootGoneLocked) rather than losing
		// the files seen gone first. Only deletions wait.
		time.Sleep(goneSettle)
		res = scan(r.cfg.Dir, limit, false)
	}
	if res.rootErr != nil {
		return r.rootGoneLocked(ctx, res.rootErr)
	}
	if r.rootGone {
		r.rootGone = false
		r.log.Info("definitions directory back; loading it", "dir", r.cfg.Dir)
	}
	// The fingerprint of a tree that was read (a root that is gone keeps
	// the last one, as it keeps the definitions).
	r.setTree(fingerprint(res.files))
	type job struct {
		f    *scanned
		hash string
		def  *definition
		prob []Problem
	}
	var jobs []*job
	r.mu.Lock()
	for _, rel := range sortedKeys(res.files) {
		f := res.files[rel]
		h := sum(f.data)
		if f.err != nil {
			h = "error: " + f.err.Error()
		}
		if st := r.files[rel]; st != nil && st.hash == h+refsState(st.refs) {
			continue
		}
		jobs = append(jobs, &job{f: f, hash: h})
	}
	r.mu.Unlock()

	next := make(chan *job)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				j.def, j.prob = loadFile(j.f, limit)
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()

	r.mu.Lock()
	defer r.mu.Unlock()
	var warned []*events.RegistryEvent // the scan's warning and fixed events
	var recheck time.Duration
	now := time.Now()
	for _, j := range jobs { // in path order
		rel := j.f.rel
		if age := now.Sub(j.f.mtime); settle && j.def == nil && j.f.err == nil && age < settleTime {
			recheck = max(recheck, settleTime-age)
			r.log.Debug("invalid file changed just now; checking it again before reporting", "file", rel, "in", settleTime-age)
			continue
		}
		st := r.files[rel]
		if st == nil || st.kind != j.f.kind {
			st = &fileState{kind: j.f.kind}
			r.files[rel] = st
		}
		st.refs = j.f.refs
		st.hash = j.hash + refsState(st.refs)
		errs, warns := split(j.prob)
		st.warns = warns
		if j.def == nil && len(errs) == 0 {
			// A tree entry refused with a warning only (loadFile: a
			// directory symlink out of the tree): nothing to load or keep.
			st.good, st.problems = nil, nil
			warned = append(warned, r.warningEvent(j.f.kind, rel, "", warns))
			continue
		}
		if j.def != nil {
			if st.problems != nil {
				r.log.Info("file valid again", "file", rel)
				warned = append(warned, &events.RegistryEvent{Kind: eventKind(j.def.kind), Op: events.OpFixed, Name: j.def.name, File: rel, At: time.Now().UTC()})
			}
			st.good, st.problems = j.def, nil
			if len(warns) > 0 {
				warned = append(warned, r.warningEvent(j.def.kind, rel, j.def.name, warns))
			}
			continue
		}
		st.problems = errs
		if st.good == nil && j.f.kind != kindTree {
			st.good = r.storedVersionLocked(j.f.kind, rel)
		}
		r.reportInvalidLocked(ctx, j.f.kind, rel, st, warns)
	}
	if r.leading.Load() {
		// Only the leader publishes the files' events; a replica that
		// takes the lease publishes those of its tree then
		// (republishProblemsLocked).
		r.publishEventsAsync(ctx, warned)
	}
	for rel := range r.files {
		if _, ok := res.files[rel]; !ok {
			delete(r.files, rel)
		}
	}
	return res.dirs, recheck, r.applyLocked(ctx)
}

// goneSettle is how long a rescan that finds files gone waits before it
// looks again and removes them (rescan).
const goneSettle = 100 * time.Millisecond

// filesGone reports whether a file read before is missing from res.
func (r *Registry) filesGone(res scanResult) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for rel := range r.files {
		if _, ok := res.files[rel]; !ok {
			return true
		}
	}
	return false
}

// rootPoll is how often a registry whose definitions directory is gone
// looks for it again (its watches went with it).
const rootPoll = 500 * time.Millisecond

// rootGoneLocked handles a rescan that cannot read the root directory (it
// was removed — a branch switch, a directory replaced by a copy — or
// cannot be listed): nothing is removed from the buckets, since a missing
// root is far more often a passing state than a request to delete
// everything (an empty directory is that request), and the names stay
// owned by their files, so seq.create cannot take them over meanwhile.
// The first time it logs and publishes a tree warning; the watch loop
// looks again every rootPoll. scanMu is held.
func (r *Registry) rootGoneLocked(ctx context.Context, err error) ([]string, time.Duration, error) {
	if r.rootGone {
		return nil, rootPoll, nil
	}
	r.rootGone = true
	r.mu.Lock()
	n := len(r.files)
	r.mu.Unlock()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	msg := fmt.Sprintf("%s: the definitions directory cannot be read (%v); keeping what its %d file(s) defined until it is back (to remove them, empty the directory instead)", r.cfg.Dir, err, n)
	r.log.Warn("definitions directory gone; keeping the stored definitions until it is back", "dir", r.cfg.Dir, "err", err, "files", n)
	r.publishEvent(ctx, &events.RegistryEvent{Kind: events.KindTree, Op: events.OpWarning, Warnings: []string{msg}, At: time.Now().UTC()})
	return nil, rootPoll, nil
}

// storedSeqsLocked is what the bucket holds of the sequence files, for
// resolve. The caller holds r.mu.
func (r *Registry) storedSeqsLocked() storedSeqs {
	sums := map[string]string{}
	for _, e := range r.stored[kindSequence] {
		if rel, ok := strings.CutPrefix(e.source, filePrefix); ok {
			sums[rel] = e.sum
		}
	}
	return storedSeqs{sums: sums, version: func(rel string) *definition { return r.storedVersionLocked(kindSequence, rel) }}
}

// storedVersionLocked returns the bucket's version of the definition that
// file rel produced (kept when rel is invalid now), or nil.
func (r *Registry) storedVersionLocked(kind, rel string) *definition {
	for _, key := range sortedKeys(r.stored[kind]) {
		e := r.stored[kind][key]
		if e.source != filePrefix+rel {
			continue
		}
		d, err := definitionFromStored(kind, rel, e.value)
		if err == nil {
			return d
		}
	}
	return nil
}

// warningEvent is the OpWarning event of a file that loaded with warnings.
func (r *Registry) warningEvent(kind, rel, name string, warns []Problem) *events.RegistryEvent {
	for _, w := range warns {
		r.log.Warn(kind+" file loaded with a warning", "file", w.File, "line", w.Line, "warning", w.Message)
	}
	return &events.RegistryEvent{Kind: eventKind(kind), Op: events.OpWarning, Name: name, File: rel, Line: warns[0].Line,
		Warnings: warningLines(warns), At: time.Now().UTC()}
}

// warningLines renders warnings as "FILE:LINE: message" lines.
func warningLines(warns []Problem) []string {
	if len(warns) == 0 {
		return nil
	}
	lines := make([]string, 0, len(warns))
	for _, w := range warns {
		w.Warning = false
		lines = append(lines, w.String())
	}
	return lines
}

func (r *Registry) reportInvalidLocked(ctx context.Context, kind, rel string, st *fileState, warns []Problem) {
	for _, p := range st.problems {
		r.log.Error("invalid "+kind+" file", "file", p.File, "line", p.Line, "where", p.Where, "problem", p.Message)
	}
	ev := r.invalidEvent(kind, rel, st, warns)
	if st.good != nil {
		r.log.Warn("keeping the last good version", "file", rel, "name", st.good.name)
	}
	if r.leading.Load() {
		r.publishEvent(ctx, ev)
	}
}

// invalidEvent is the OpInvalid event of an invalid file.
func (r *Registry) invalidEvent(kind, rel string, st *fileState, warns []Problem) *events.RegistryEvent {
	msgs := make([]string, 0, len(st.problems))
	for _, p := range st.problems {
		msgs = append(msgs, p.String())
	}
	ev := &events.RegistryEvent{Kind: eventKind(kind), Op: events.OpInvalid, File: rel, Line: st.problems[0].Line,
		Error: strings.Join(msgs, "\n"), Warnings: warningLines(warns), At: time.Now().UTC()}
	if st.good != nil {
		ev.Name = st.good.name
		ev.Kept = label(st.good)
	}
	return ev
}

// republishProblemsLocked publishes the invalid and warning events of
// every file of the tree: a replica that takes the lease reports its
// tree's problems as a registry that starts does (the others publish
// none). The caller holds r.mu.
func (r *Registry) republishProblemsLocked(ctx context.Context) {
	var evs []*events.RegistryEvent
	for _, rel := range sortedKeys(r.files) {
		st := r.files[rel]
		switch {
		case st.problems != nil:
			evs = append(evs, r.invalidEvent(st.kind, rel, st, st.warns))
		case len(st.warns) > 0: // loaded with warnings, or refused with a warning only
			name := ""
			if st.good != nil {
				name = st.good.name
			}
			evs = append(evs, &events.RegistryEvent{Kind: eventKind(st.kind), Op: events.OpWarning, Name: name, File: rel, Line: st.warns[0].Line,
				Warnings: warningLines(st.warns), At: time.Now().UTC()})
		}
	}
	r.publishEventsAsync(ctx, evs)
}

func (r *Registry) publishEvent(ctx context.Context, ev *events.RegistryEvent) {
	subj, err := ev.Subject()
	if err != nil {
		r.log.Error("registry event", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if _, err := events.PublishMessage(ctx, r.js, subj, ev); err != nil {
		r.log.Warn("cannot publish registry event", "subject", subj, "err", err)
	}
}

// op is one bucket write.
type op struct {
	kind   string
	key    string
	def    *definition // nil for a delete
	source string      // header value
}

// applyLocked resolves the definitions and writes the difference to the
// buckets; it then publishes the new view for the endpoints. A failed write
// is retried at the next apply (the stored map only records successes).
//
// A replica that does not hold the lease writes nothing: its view is what
// the buckets hold (standbyViewLocked).
func (r *Registry) applyLocked(ctx context.Context) error {
	if !r.leading.Load() {
		if !r.holdView {
			r.standbyViewLocked()
		}
		return nil
	}
	fileDefs := map[string]*definition{}
	for rel, st := range r.files {
		if st.good != nil {
			fileDefs[rel] = st.good
		}
	}
	skills, seqs, clashes := resolve(fileDefs, r.created, r.storedSeqsLocked())
	current := map[string]bool{}
	for _, c := range clashes {
		id := c.String()
		current[id] = true
		if r.clashes[id] {
			continue
		}
		r.log.Error("name clash", "kind", c.kind, "name", c.name, "kept", c.kept, "ignored", c.other, "rule", precedenceRule(c.kind))
		r.publishEvent(ctx, &events.RegistryEvent{Kind: eventKind(c.kind), Op: events.OpClash, Name: c.rejected,
			File: c.otherSrc, Other: c.keptSrc, Kept: c.keptSrc, Error: id, At: time.Now().UTC()})
	}
	r.clashes = current

	var ops []op
	for kind, desired := range map[string]map[string]*definition{kindSkill: skills, kindSequence: seqs} {
		keys := map[string]bool{}
		for _, name := range sortedKeys(desired) {
			d := desired[name]
			key := events.KeyFor(name)
			keys[key] = true
			src := sourceOf(d)
			if e, ok := r.stored[kind][key]; ok && e.sum == d.sum && e.source == src {
				continue
			}
			ops = append(ops, op{kind: kind, key: key, def: d, source: src})
		}
		for _, key := range sortedKeys(r.stored[kind]) {
			e := r.stored[kind][key]
			switch {
			case keys[key]:
				continue
			case strings.HasPrefix(e.source, filePrefix):
				ops = append(ops, op{kind: kind, key: key, source: e.source}) // its file is gone
			case !fromRegistry(e.source):
				ops = append(ops, op{kind: kind, key: key, source: removedSource}) // nothing defines it
			}
			// Sequences created over NATS are deleted by seq.delete only.
		}
	}
	err := r.writeLocked(ctx, ops)
	for kind, m := range r.external {
		for key := range m {
			if !slices.ContainsFunc(ops, func(o op) bool { return o.kind == kind && o.key == key }) {
				delete(m, key) // nothing to undo: it matched the registry's view
			}
		}
	}

	r.viewMu.Lock()
	r.skills, r.seqs = skills, seqs
	r.viewMu.Unlock()
	r.noteCountsLocked(len(skills), len(seqs))
	return err
}

func sourceOf(d *definition) string {
	if d.source == "" {
		return createdSource
	}
	return filePrefix + d.source
}

// writeLocked performs ops with asynchronous publishes in batches, then
// publishes one registry event per successful op.
//
// Only the replica holding the lease writes: on any other it returns
// errNotLeader without writing.
func (r *Registry) writeLocked(ctx context.Context, ops []op) error {
	if !r.leading.Load() || r.fenced.Load() {
		return errNotLeader
	}
	const batch = 512
	var errs []error
	for start := 0; start < len(ops); start += batch {
		if r.fenced.Load() {
			errs = append(errs, errNotLeader) // the lease was lost meanwhile
			break
		}
		end := min(start+batch, len(ops))
		futures := make([]jetstream.PubAckFuture, end-start)
		for i, o := range ops[start:end] {
			m := nats.NewMsg("$KV." + bucketOf(o.kind) + "." + o.key)
			m.Header.Set(SourceHeader, o.source)
			if o.def == nil {
				m.Header.Set("KV-Operation", "DEL")
			} else {
				m.Data = o.def.value
			}
			events.Inject(ctx, m.Header)
			f, err := r.js.PublishMsgAsync(m)
			if err != nil {
				errs = append(errs, fmt.Errorf("registry: write %s/%s: %w", bucketOf(o.kind), o.key, err))
				continue
			}
			futures[i] = f
		}
		wctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		select {
		case <-r.js.PublishAsyncComplete():
		case <-wctx.Done():
		}
		cancel()
		var evs []*events.RegistryEvent
		for i, o := range ops[start:end] {
			f := futures[i]
			if f == nil {
				continue
			}
			var ack *jetstream.PubAck
			select {
			case ack = <-f.Ok():
			case err := <-f.Err():
				errs = append(errs, fmt.Errorf("registry: write %s/%s: %w", bucketOf(o.kind), o.key, err))
				continue
			default:
				errs = append(errs, fmt.Errorf("registry: write %s/%s: no acknowledgement within %s", bucketOf(o.kind), o.key, r.cfg.Timeout))
				continue
			}
			name, _ := events.NameForKey(o.key)
			ev := &events.RegistryEvent{Kind: eventKind(o.kind), Name: name, File: strings.TrimPrefix(o.source, filePrefix), At: time.Now().UTC()}
			if o.source == createdSource {
				ev.File = ""
			}
			if ack != nil {
				r.revs[o.kind][o.key] = max(r.revs[o.kind][o.key], ack.Sequence)
			}
			if o.def == nil {
				delete(r.stored[o.kind], o.key)
				ev.Op = events.OpDelete
				r.log.Info("deleted", "kind", o.kind, "name", name, "source", o.source)
			} else {
				r.stored[o.kind][o.key] = storedEntry{source: o.source, sum: o.def.sum, value: o.def.value}
				ev.Op, ev.Fingerprint = events.OpPut, "sha256:"+o.def.sum
				r.log.Debug("stored", "kind", o.kind, "name", name, "source", o.source)
			}
			if o.source == removedSource {
				ev.File = ""
			}
			evs = append(evs, ev)
			if what, ok := r.external[o.kind][o.key]; ok {
				delete(r.external[o.kind], o.key)
				evs = append(evs, r.revertedEvent(o, name, what))
			}
		}
		r.publishEventsAsync(ctx, evs)
	}
	if len(errs) > 0 {
		for _, e := range errs {
			r.log.Error("bucket write failed; will retry at the next rescan", "err", e)
		}
	}
	return errors.Join(errs...)
}

// publishEventsAsync publishes registry events without waiting for each
// acknowledgement one by one (start-up writes thousands of them).
func (r *Registry) publishEventsAsync(ctx context.Context, evs []*events.RegistryEvent) {
	if len(evs) == 0 {
		return
	}
	for _, ev := range evs {
		subj, err := ev.Subject()
		if err != nil {
			continue
		}
		data, err := events.Encode(ev)
		if err != nil {
			continue
		}
		m := nats.NewMsg(subj)
		m.Data = data
		events.Inject(ctx, m.Header)
		if _, err := r.js.PublishMsgAsync(m); err != nil {
			r.log.Warn("cannot publish registry event", "subject", subj, "err", err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	select {
	case <-r.js.PublishAsyncComplete():
	case <-wctx.Done():
		r.log.Warn("registry events not acknowledged in time", "count", len(evs))
	}
}
