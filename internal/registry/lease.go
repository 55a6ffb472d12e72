package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/pkg/events"
)

// One writer (docs/skills.md, "One writer"; docs/deploy.md, "Rolling
// upgrades").
//
// Of all the registries on one bus, only the one holding the lease — the
// key events.RegistryLeaseKey of the bucket events.BucketRegistryLease —
// writes SKILLS and SEQUENCES. It takes the lease with a create (a
// compare-and-set that succeeds only when nobody holds it), renews it every
// tick with a compare-and-set on its own revision, and deletes it when it
// stops, so another replica takes over at once. The bucket's TTL
// (events.RegistryLeaseTTL) ends the lease of a leader that dies without
// releasing it; a leader that cannot renew for half that time stops writing
// before anybody else may start. The TTL is the bucket's (the stream's
// max_age, which every nats-server version honours), not a per-key TTL
// (the Nats-TTL header, nats-server 2.11 and later with allow_msg_ttl): the
// bucket holds the lease alone, so one TTL for the bucket is the same thing
// and works on any server.
//
// The other replicas stand by: they read and watch the buckets and serve
// the read endpoints from what the leader wrote, forward seq.create and
// seq.delete to the leader, keep reading their own tree (so that they take
// over with it at once), and compare their tree's fingerprint with the
// one in the lease: a tree that differs for longer than
// Config.TreeDiffGrace is reported once — a WARN log line, an
// events.OpDiffers event on events.registry.tree.differs and the
// skillbus.registry.tree_differs gauge — and its end is logged.

// errNotLeader is returned by a write attempted on a replica that does not
// hold the lease (the request is forwarded to the leader instead).
var errNotLeader = errors.New("registry: this replica does not hold the lease")

// notLeaderHeader marks the reply of a replica that received a forwarded
// request but no longer holds the lease: the sender tries again.
const notLeaderHeader = "Skillbus-Not-Leader"

// treePrint is a tree's fingerprint (events.RegistryLease.Tree) and its
// number of definition files.
type treePrint struct {
	sum   string
	files int
}

// fingerprint of the files of one scan: the path, kind and content hash of
// each definition file, in path order ("refused" for one that was not
// read: a refusal's text names absolute paths, which differ between two
// mounts of the same tree).
func fingerprint(files map[string]*scanned) treePrint {
	h := sha256.New()
	for _, rel := range sortedKeys(files) {
		f := files[rel]
		state := sum(f.data)
		if f.err != nil {
			state = "refused"
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", rel, f.kind, state)
	}
	return treePrint{sum: "sha256:" + hex.EncodeToString(h.Sum(nil)), files: len(files)}
}

// setTree records the tree's fingerprint after a scan and, when it
// changed, nudges the elector (the leader publishes it at once; a standby
// compares it with the leader's).
func (r *Registry) setTree(tp treePrint) {
	if old := r.tree.Load(); old != nil && *old == tp {
		return
	}
	r.tree.Store(&tp)
	select {
	case r.treeChanged <- struct{}{}:
	default:
	}
}

// ownTree returns the fingerprint of the last scan.
func (r *Registry) ownTree() treePrint {
	if tp := r.tree.Load(); tp != nil {
		return *tp
	}
	return fingerprint(nil)
}

// lease is the elector's state; only the elector goroutine (and Start
// before it, Stop after it) touches it, but for since, rev and ok, which
// the renewer shares (under mu).
type lease struct {
	mu    sync.Mutex
	kv    jetstream.KeyValue
	id    string        // this replica's Holder
	host  string        // its host name
	ttl   time.Duration // the bucket's TTL
	step  time.Duration // renew / poll period: ttl/10
	since time.Time     // when this replica took the lease
	rev   uint64        // the revision of its lease entry while it leads
	ok    time.Time     // when the last renewal that succeeded was sent

	holder   *events.RegistryLease // the other replica holding the lease, as last seen
	seen     time.Time             // when a holder's entry was last seen
	differ   time.Time             // since when the trees differ (zero: they do not)
	reported string                // the pair of trees last reported as differing
}

// holderID names this registry: host, process id and a NUID (unique, so
// two registries in one process — tests, an embedding program — differ).
func holderID() (id, host string) {
	host, _ = os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), nuid.Next()), host
}

// openLease opens the lease bucket and reads its TTL. Errors: the bucket
// is missing or has no TTL (a leader that died would hold it for ever).
func (r *Registry) openLease(ctx context.Context) error {
	kv, err := r.js.KeyValue(ctx, events.BucketRegistryLease)
	if err != nil {
		return fmt.Errorf("registry: bucket %s: %w", events.BucketRegistryLease, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("registry: bucket %s: %w", events.BucketRegistryLease, err)
	}
	ttl := st.TTL()
	if ttl <= 0 {
		return fmt.Errorf("registry: bucket %s has no TTL, so the lease of a registry that died would never end; provision it again (events.Provision sets %s)", events.BucketRegistryLease, events.RegistryLeaseTTL)
	}
	id, host := holderID()
	r.lease = &lease{kv: kv, id: id, host: host, ttl: ttl, step: max(ttl/10, 10*time.Millisecond)}
	return nil
}

// leaseValue is this replica's lease entry, holding it since since.
func (r *Registry) leaseValue(since time.Time) []byte {
	tp := r.ownTree()
	b, _ := json.Marshal(events.RegistryLease{Holder: r.lease.id, Host: r.lease.host, Dir: r.cfg.Dir, Tree: tp.sum, Files: tp.files,
		Version: r.cfg.Version, Since: since.UTC()})
	return b
}

// takeStale deletes a lease entry written before Config.BusStarted (left
// by a registry of an earlier run of this process's embedded server), so
// that tryAcquire takes the lease at once.
func (r *Registry) takeStale(ctx context.Context) {
	if r.cfg.BusStarted.IsZero() {
		return
	}
	l := r.lease
	cctx, cancel := context.WithTimeout(ctx, l.step*5)
	defer cancel()
	e, err := l.kv.Get(cctx, events.RegistryLeaseKey)
	if err != nil || e.Operation() != jetstream.KeyValuePut || !e.Created().Before(r.cfg.BusStarted) {
		return
	}
	var v events.RegistryLease
	_ = json.Unmarshal(e.Value(), &v)
	if err := l.kv.Delete(cctx, events.RegistryLeaseKey, jetstream.LastRevision(e.Revision())); err != nil {
		r.log.Warn("cannot take over the registry lease left by an earlier run; taking it when it expires", "holder", v.Holder, "ttl", l.ttl, "err", err)
		return
	}
	r.log.Info("took over the registry lease left by an earlier run (written before the embedded server started)", "holder", v.Holder, "written", e.Created().UTC().Format(time.RFC3339))
}

// tryAcquire takes the lease when nobody holds it; it reports whether this
// replica leads now, and the error of its first apply as the leader (a
// bucket write that failed; it is retried at the next apply).
func (r *Registry) tryAcquire(ctx context.Context) (bool, error) {
	l := r.lease
	cctx, cancel := context.WithTimeout(ctx, l.step*5)
	defer cancel()
	since := time.Now()
	rev, err := l.kv.Create(cctx, events.RegistryLeaseKey, r.leaseValue(since))
	if errors.Is(err, jetstream.ErrKeyExists) {
		rev, err = r.retakeOwn(cctx, since)
	}
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
			r.log.Warn("cannot take the registry lease; trying again", "err", err)
		}
		return false, nil
	}
	l.mu.Lock()
	l.since, l.rev, l.ok = since, rev, since
	l.mu.Unlock()
	return true, r.becomeLeader(ctx)
}

// retakeOwn takes back a lease entry that is still this replica's: one
// it stopped renewing when NATS was out of reach for more than ttl/2
// (renew steps down then) and that has not expired yet. Nobody else can
// have written since — another replica creates the key only once it is
// gone — so an update on the entry's revision makes this replica the
// leader again at once instead of after the rest of the TTL
// (docs/skills.md, "One writer"). Errors: jetstream.ErrKeyExists when
// the entry is another replica's; the bucket's.
func (r *Registry) retakeOwn(ctx context.Context, since time.Time) (uint64, error) {
	l := r.lease
	e, err := l.kv.Get(ctx, events.RegistryLeaseKey)
	if err != nil {
		return 0, err
	}
	var v events.RegistryLease
	if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &v) != nil || v.Holder != l.id {
		return 0, jetstream.ErrKeyExists
	}
	rev, err := l.kv.Update(ctx, events.RegistryLeaseKey, r.leaseValue(since), e.Revision())
	if err != nil {
		return 0, err
	}
	r.log.Info("took the registry lease back: its entry was still this replica's (NATS was out of reach for longer than the renewal allows)", "written", e.Created().UTC().Format(time.RFC3339Nano))
	return rev, nil
}

// retryAfterReconnect is how often the elector of a replica that does not
// lead tries to take the lease during the first retryAfterReconnectFor
// after its connection came back (JetStream may need a moment to answer
// after a server restart).
const (
	retryAfterReconnect    = 100 * time.Millisecond
	retryAfterReconnectFor = 5 * time.Second
)

// renewLoop renews the lease every tick while this replica leads, until
// ctx ends. It runs apart from the elector and takes no registry lock, so
// a long write (the first apply of a large tree) never delays a renewal.
func (r *Registry) renewLoop(ctx context.Context) {
	defer close(r.renewDone)
	tick := time.NewTicker(r.lease.step)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if r.leading.Load() && !r.fenced.Load() {
				r.renew(ctx)
			}
		}
	}
}

// renew writes the lease again on its own revision. A write that finds
// another revision means the lease was lost (it expired and another
// replica took it, or somebody deleted it): this replica stops writing at
// once (the elector takes the lease again if it is free). A write that
// fails otherwise is retried at the next tick; after ttl/2 without a
// renewal this replica stops writing, before the lease can expire.
func (r *Registry) renew(ctx context.Context) {
	l := r.lease
	cctx, cancel := context.WithTimeout(ctx, l.step*3)
	defer cancel()
	l.mu.Lock()
	rev, since, ok := l.rev, l.since, l.ok
	l.mu.Unlock()
	sent := time.Now()
	renewed := func(rev uint64) {
		l.mu.Lock()
		l.rev, l.ok = rev, sent
		l.mu.Unlock()
	}
	next, err := l.kv.Update(cctx, events.RegistryLeaseKey, r.leaseValue(since), rev)
	switch {
	case err == nil:
		renewed(next)
	case ctx.Err() != nil:
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists):
		// A renewal whose reply was lost moved the revision on: the entry
		// is still this replica's, so carry on from its revision.
		if e, gerr := l.kv.Get(cctx, events.RegistryLeaseKey); gerr == nil && e.Operation() == jetstream.KeyValuePut {
			var v events.RegistryLease
			if json.Unmarshal(e.Value(), &v) == nil && v.Holder == l.id {
				if next, err := l.kv.Update(cctx, events.RegistryLeaseKey, r.leaseValue(since), e.Revision()); err == nil {
					renewed(next)
					return
				}
			}
		}
		r.stepDown("the lease was taken by another replica or deleted")
	case time.Since(ok) > l.ttl/2:
		r.stepDown(fmt.Sprintf("the lease could not be renewed for %s (%v)", time.Since(ok).Round(time.Millisecond), err))
	default:
		r.log.Warn("cannot renew the registry lease; trying again", "err", err)
	}
}

// leaseRev is the revision of this replica's lease entry.
func (r *Registry) leaseRev() uint64 {
	r.lease.mu.Lock()
	defer r.lease.mu.Unlock()
	return r.lease.rev
}

// elect runs the election until ctx ends (renewLoop renews): while
// standing by, take the lease as soon as it is released (a delete seen on
// the watch) or has not been renewed for two ticks (its holder died; the
// create succeeds once the entry expired), and compare trees.
func (r *Registry) elect(ctx context.Context) {
	defer close(r.electDone)
	l := r.lease
	var updates <-chan jetstream.KeyValueEntry
	var w jetstream.KeyWatcher
	watch := func() {
		var err error
		if w, err = l.kv.Watch(ctx, events.RegistryLeaseKey); err != nil {
			if ctx.Err() == nil {
				r.log.Warn("cannot watch the registry lease; polling it", "err", err)
			}
			w, updates = nil, nil
			return
		}
		updates = w.Updates()
	}
	watch()
	defer func() {
		if w != nil {
			_ = w.Stop()
		}
	}()
	tick := time.NewTicker(l.step)
	defer tick.Stop()
	// After a reconnect a replica that lost the lease in the outage takes
	// it back at once (retakeOwn), trying every retryAfterReconnect for a
	// while, instead of at the next tick.
	status := r.nc.StatusChanged(nats.CONNECTED)
	defer r.nc.RemoveStatusListener(status)
	var fast <-chan time.Time
	var fastUntil time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-status:
			fastUntil = time.Now().Add(retryAfterReconnectFor)
			fast = time.After(0)
		case now := <-fast:
			fast = nil
			if r.leading.Load() || now.After(fastUntil) {
				continue
			}
			if ok, _ := r.tryAcquire(ctx); !ok {
				fast = time.After(retryAfterReconnect)
			}
		case e, ok := <-updates:
			if !ok {
				watch()
				continue
			}
			if e != nil {
				r.onLease(ctx, e)
			}
		case <-r.treeChanged:
			// The leader's new fingerprint goes out with its next renewal.
			r.compareTrees(time.Now())
		case now := <-tick.C:
			if !r.leading.Load() && now.Sub(l.seen) > 2*l.step {
				r.tryAcquire(ctx)
			}
			if updates == nil {
				watch()
			}
			r.compareTrees(now)
		}
	}
}

// onLease handles one update of the lease key.
func (r *Registry) onLease(ctx context.Context, e jetstream.KeyValueEntry) {
	l := r.lease
	if e.Operation() != jetstream.KeyValuePut {
		l.holder = nil
		if r.leading.Load() && e.Revision() <= r.leaseRev() {
			return // an old delete, from before this replica took the lease
		}
		if r.leading.Load() {
			r.stepDown("the lease was deleted")
		}
		r.tryAcquire(ctx) // released: take over at once
		return
	}
	var v events.RegistryLease
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		r.log.Warn("the registry lease holds something unreadable", "revision", e.Revision(), "err", err)
		return
	}
	if v.Holder == l.id {
		return // this replica's own write
	}
	if r.leading.Load() {
		if e.Revision() < r.leaseRev() {
			return // an older holder's entry, seen late
		}
		r.stepDown(fmt.Sprintf("the lease is held by %s", v.Holder))
	}
	if l.holder == nil || l.holder.Holder != v.Holder {
		r.log.Info("standing by: another registry holds the lease and writes SKILLS and SEQUENCES", "leader", v.Holder, "leader_dir", v.Dir, "leader_version", v.Version)
	}
	l.holder, l.seen = &v, time.Now()
	r.compareTrees(l.seen)
}

// compareTrees reports a tree that differs from the leader's once it has
// differed for Config.TreeDiffGrace (a tree read at another moment during
// an edit, or a kubelet updating a ConfigMap volume a little later on one
// pod, is not reported), and logs when it matches again.
func (r *Registry) compareTrees(now time.Time) {
	l := r.lease
	own := r.ownTree()
	if r.leading.Load() || l.holder == nil || l.holder.Tree == own.sum {
		if l.reported != "" {
			r.log.Info("this registry's tree no longer differs from the leader's", "tree", own.sum, "files", own.files)
		}
		l.differ, l.reported = time.Time{}, ""
		r.treeDiffers.Store(false)
		return
	}
	if l.differ.IsZero() {
		l.differ = now
	}
	pair := own.sum + " " + l.holder.Tree
	if now.Sub(l.differ) < r.cfg.TreeDiffGrace || l.reported == pair {
		return
	}
	l.reported = pair
	r.treeDiffers.Store(true)
	h := l.holder
	r.mu.Lock()
	diff := r.treeDiffLocked()
	r.mu.Unlock()
	which := "no file differs from what the leader stored (the trees differ in a file that is invalid or refused on both sides)"
	if len(diff) > 0 {
		which = "files that differ from what the leader stored: " + strings.Join(diff, ", ")
	}
	msg := fmt.Sprintf("the tree of this registry (%s: %d files, %s) differs from the tree of the registry holding the lease (%s on %s: %s, %d files, %s); %s. "+
		"Only the lease holder writes SKILLS and SEQUENCES, so this tree is not loaded while it holds the lease. "+
		"Registries on one bus must load the same tree: stop the one with the wrong tree. During a rolling update this lasts until the old pod stops, then the new tree is loaded (docs/skills.md, \"One writer\")",
		dirLabel(r.cfg.Dir), own.files, own.sum, h.Holder, h.Host, dirLabel(h.Dir), h.Files, h.Tree, which)
	r.log.Warn("this registry's tree differs from the leader's; it is not loaded", "dir", r.cfg.Dir, "tree", own.sum, "files", own.files,
		"differing_files", diff, "leader", h.Holder, "leader_dir", h.Dir, "leader_tree", h.Tree, "leader_files", h.Files, "since", l.differ.Format(time.RFC3339))
	r.publishEvent(context.Background(), &events.RegistryEvent{Kind: events.KindTree, Op: events.OpDiffers, Error: msg, At: now.UTC()})
}

// maxDiffFiles bounds the files a tree_differs report names.
const maxDiffFiles = 20

// treeDiffLocked names the files of this replica's tree whose entries
// differ from what the buckets hold (the leader's writes), in path order
// and at most maxDiffFiles (then a count of the others): "<path> (differs)"
// when the bucket holds another version or another file's definition of
// that name, "<path> (only here)" when the bucket has no entry for it,
// "<path> (invalid here)" when the leader stored it but it does not
// validate here, and "<path> (only on the leader)" for a file the leader
// stored that this tree does not have. The caller holds r.mu.
func (r *Registry) treeDiffLocked() []string {
	fileDefs := map[string]*definition{}
	for rel, st := range r.files {
		if st.good != nil && st.problems == nil {
			fileDefs[rel] = st.good
		}
	}
	skills, seqs, _ := resolve(fileDefs, r.created, r.storedSeqsLocked())
	found := map[string]string{}
	for kind, desired := range map[string]map[string]*definition{kindSkill: skills, kindSequence: seqs} {
		for _, d := range desired {
			if d.source == "" {
				continue
			}
			e, ok := r.stored[kind][events.KeyFor(d.name)]
			switch {
			case !ok:
				found[d.source] = "only here"
			case e.sum != d.sum || e.source != sourceOf(d):
				found[d.source] = "differs"
			}
		}
		for _, e := range r.stored[kind] {
			rel, ok := strings.CutPrefix(e.source, filePrefix)
			if !ok {
				continue
			}
			if _, here := fileDefs[rel]; here {
				continue
			}
			if _, known := r.files[rel]; known {
				found[rel] = "invalid here"
			} else {
				found[rel] = "only on the leader"
			}
		}
	}
	var out []string
	for _, rel := range sortedKeys(found) {
		if len(out) == maxDiffFiles {
			out = append(out, fmt.Sprintf("and %d more", len(found)-maxDiffFiles))
			break
		}
		out = append(out, rel+" ("+found[rel]+")")
	}
	return out
}

func dirLabel(dir string) string {
	if dir == "" {
		return "no directory"
	}
	return dir
}

// becomeLeader makes this replica the writer: it brings the buckets in
// line with its tree and starts answering forwarded writes. It returns the
// apply's error (logged too).
func (r *Registry) becomeLeader(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leading.Store(true)
	r.fenced.Store(false)
	r.treeDiffers.Store(false)
	tp := r.ownTree()
	r.log.Info("this registry holds the lease: it writes SKILLS and SEQUENCES", "holder", r.lease.id, "dir", r.cfg.Dir, "tree", tp.sum, "files", tp.files)
	r.clashes = map[string]bool{} // report every clash of this tree
	applyErr := r.applyLocked(ctx)
	if applyErr != nil {
		r.log.Warn("bringing the buckets in line with the tree after taking the lease", "err", applyErr)
	}
	r.republishProblemsLocked(ctx)
	sub, err := r.nc.QueueSubscribe(events.RegistryLeaderPrefix+".>", events.ServiceRegistry, r.serveForwarded)
	if err != nil {
		r.log.Error("cannot serve forwarded seq.create and seq.delete; the other replicas' writes wait", "err", err)
		return applyErr
	}
	r.fwdSub = sub
	return applyErr
}

// stepDown stops writing: the view becomes the buckets' contents again.
func (r *Registry) stepDown(reason string) {
	r.fenced.Store(true) // a write under way stops at its next batch
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leading.Load() {
		return
	}
	r.stopLeadingLocked()
	r.log.Warn("this registry no longer holds the lease: it stops writing SKILLS and SEQUENCES", "reason", reason)
}

// stopLeadingLocked clears leadership; the caller holds r.mu.
func (r *Registry) stopLeadingLocked() {
	r.leading.Store(false)
	if r.fwdSub != nil {
		_ = r.fwdSub.Unsubscribe()
		r.fwdSub = nil
	}
	_ = r.applyLocked(context.Background()) // the standby view
}

// release deletes the lease (on its own revision only), so a standby
// takes over at once; Stop calls it after the elector ended.
func (r *Registry) release(ctx context.Context) {
	l := r.lease
	cctx, cancel := context.WithTimeout(ctx, l.step*5)
	defer cancel()
	if err := l.kv.Delete(cctx, events.RegistryLeaseKey, jetstream.LastRevision(r.leaseRev())); err != nil {
		r.log.Warn("cannot release the registry lease; another replica takes over when it expires", "ttl", l.ttl, "err", err)
		return
	}
	r.log.Info("released the registry lease")
}

// serveForwarded answers a seq.create or seq.delete forwarded by a
// replica that does not hold the lease, as the endpoint would.
func (r *Registry) serveForwarded(m *nats.Msg) {
	if why := events.Relayed(m.Reply, m.Header); why != "" {
		r.log.Debug("dropped a message that is not a request it may answer (events.Relayed)", "subject", m.Subject, "why", why)
		return
	}
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	var h handlerFunc
	switch m.Subject {
	case events.RegistryLeaderSeqCreateSubject:
		h = r.seqCreate
	case events.RegistryLeaderSeqDeleteSubject:
		h = r.seqDelete
	default:
		return
	}
	reply := nats.NewMsg(m.Reply)
	ctx := events.Extract(context.Background(), m.Header)
	res, err := h(ctx, m.Data)
	switch {
	case errors.Is(err, errNotLeader):
		reply.Header.Set(notLeaderHeader, "1")
	case err != nil:
		re, ok := err.(*replyError)
		if !ok {
			re = fail("500", "%v", err)
		}
		reply.Header.Set("Nats-Service-Error-Code", re.code)
		reply.Data, _ = json.Marshal(ErrorReply{Code: re.code, Error: re.msg, Problems: re.problems})
	default:
		if raw, ok := res.(json.RawMessage); ok {
			reply.Data = raw
		} else {
			reply.Data, _ = json.Marshal(res)
		}
	}
	if err := m.RespondMsg(reply); err != nil {
		r.log.Warn("cannot answer a forwarded request", "subject", m.Subject, "err", err)
	}
}

// forwarded wraps a write endpoint: the replica holding the lease handles
// it, any other forwards it to the leader — waiting, within
// Config.Timeout, for a leader when there is none at the moment (the
// lease is changing hands).
func (r *Registry) forwarded(subject string, local handlerFunc) handlerFunc {
	return func(ctx context.Context, data []byte) (any, error) {
		deadline := time.Now().Add(r.cfg.Timeout)
		for {
			if r.leading.Load() {
				res, err := local(ctx, data)
				if !errors.Is(err, errNotLeader) {
					return res, err
				}
			}
			res, err, again := r.forward(ctx, subject, data, time.Until(deadline))
			if !again {
				return res, err
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nil, fail("503", "no registry holds the lease at the moment, so the write cannot be made; try again (a leader is elected within %s)", events.RegistryLeaseTTL)
			}
			select {
			case <-ctx.Done():
			case <-time.After(25 * time.Millisecond):
			}
		}
	}
}

// forward sends one request to the leader; again is true when no leader
// answered it (none at the moment, or one that just lost the lease).
func (r *Registry) forward(ctx context.Context, subject string, data []byte, wait time.Duration) (res any, err error, again bool) {
	if wait <= 0 {
		return nil, nil, true
	}
	m := nats.NewMsg(subject)
	m.Data = data
	events.Inject(ctx, m.Header)
	resp, err := r.nc.RequestMsg(m, wait)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, nil, true
	case err != nil:
		return nil, fail("503", "the registry holding the lease did not answer: %v; try again", err), false
	case resp.Header.Get(notLeaderHeader) != "":
		return nil, nil, true
	case resp.Header.Get("Nats-Service-Error-Code") != "":
		var er ErrorReply
		if json.Unmarshal(resp.Data, &er) != nil || er.Error == "" {
			er = ErrorReply{Code: resp.Header.Get("Nats-Service-Error-Code"), Error: string(resp.Data)}
		}
		return nil, &replyError{code: er.Code, msg: er.Error, problems: er.Problems}, false
	}
	return json.RawMessage(resp.Data), nil, false
}
