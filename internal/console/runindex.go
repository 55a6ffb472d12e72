package console

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/events"
)

// runIndex keeps the summary of every run in the RUNS bucket, live: it
// lists them through seq.list (the seqworker reads the bucket's summary
// headers), then applies every later write it receives as a core message
// on the bucket's subjects (the seqworker puts the run's summary in
// Skillbus-Run-* headers on every entry, pkg/events), so the runs page
// lists, filters and counts runs without reading their states, and learns
// of each new or changed run at once. It holds no consumer: the console
// owns no stream, and a consumer's deliver_subject cannot be limited
// (docs/security.md, "Consumers"). The subscription starts before the
// list is read, and a summary never replaces a newer one, so no write is
// lost between the two; after a reconnect (writes may have been missed)
// the list is read again. Entries written without the headers (by old
// workers) are read once through seq.status.
//
// When the index cannot start (a NATS user that may not subscribe to
// $KV.RUNS.> or ask seq.list: any role but console, docs/security.md),
// the runs page lists through seq.list, as `skillbus runs` does, and
// updates from run events only. A refusal is known at once (perms.go), is
// shown on the pages with its subject and role, and is tried again only
// after a reconnect: the credentials cannot change before.
type runIndex struct {
	s *Server

	mu    sync.RWMutex
	runs  map[string]events.RunSummary
	ready bool  // the initial entries were read
	err   error // why the watch is not running
	ttl   time.Duration

	done chan struct{}
}

func newRunIndex(s *Server) *runIndex {
	return &runIndex{s: s, runs: map[string]events.RunSummary{}, done: make(chan struct{})}
}

// live reports whether the index is loaded and follows RUNS.
func (x *runIndex) live() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.ready && x.err == nil
}

// why says why the index is not live ("" when it is, or while it loads).
func (x *runIndex) why() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.err == nil {
		return ""
	}
	return x.err.Error()
}

// snapshot returns every known summary, and whether the index is live.
func (x *runIndex) snapshot() ([]events.RunSummary, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]events.RunSummary, 0, len(x.runs))
	for _, s := range x.runs {
		out = append(out, s)
	}
	return out, x.ready && x.err == nil
}

// wait waits until run has returned, at most until ctx is done.
func (x *runIndex) wait(ctx context.Context) {
	select {
	case <-x.done:
	case <-ctx.Done():
	}
}

// run follows RUNS until ctx is done. A watch that cannot start is tried
// again with back-off (the bucket may not exist yet: the seqworker creates
// it at its start); one the server refuses, after the next reconnect.
func (x *runIndex) run(ctx context.Context) {
	defer close(x.done)
	warned := false
	status := x.s.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED)
	defer x.s.nc.RemoveStatusListener(status)
	for delay := 500 * time.Millisecond; ; delay = min(2*delay, 30*time.Second) {
		err := x.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		x.mu.Lock()
		x.err, x.ready = err, false
		x.mu.Unlock()
		var pe *natsconn.PermissionError
		if errors.As(err, &pe) {
			x.s.note(pe)
			x.s.hub.send("", "ready", map[string]bool{"runs_live": false})
			if !waitReconnect(ctx, status) {
				return
			}
			delay = 500 * time.Millisecond
			continue
		}
		if !warned {
			x.s.log.Warn("console: cannot watch the RUNS bucket; the runs page lists through seq.list meanwhile (retrying)", "err", err)
			warned = true
		} else {
			x.s.log.Debug("console: cannot watch the RUNS bucket", "err", err, "retry_in", delay)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// waitReconnect waits until the connection has reconnected (a status
// change to RECONNECTING, then CONNECTED); false when ctx ended first.
func waitReconnect(ctx context.Context, status <-chan nats.Status) bool {
	down := false
	for {
		select {
		case <-ctx.Done():
			return false
		case st := <-status:
			switch {
			case st == nats.DISCONNECTED || st == nats.RECONNECTING:
				down = true
			case st == nats.CONNECTED && down:
				return true
			}
		}
	}
}

// follow loads the index and applies every later write until ctx is done,
// the subscription is refused or the connection came back after a loss.
func (x *runIndex) follow(ctx context.Context) (err error) {
	subj := events.RunsKeySubject(">")
	// A refusal of the server ends the watch at once (perms.go).
	wctx, done := x.s.access.watch.Context(ctx, subj, events.SeqListSubject, "$JS.API.STREAM.INFO.KV_"+events.BucketRuns)
	defer done()
	defer func() { err = natsconn.RefusedCause(wctx, err) }()
	ctx = wctx
	status := x.s.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED)
	defer x.s.nc.RemoveStatusListener(status)
	x.mu.Lock()
	clear(x.runs)
	x.err, x.ready = nil, false
	x.mu.Unlock()
	prefix := events.RunsKeySubject("")
	sub, err := x.s.nc.Subscribe(subj, func(m *nats.Msg) {
		key := strings.TrimPrefix(m.Subject, prefix)
		switch op := m.Header.Get("KV-Operation"); {
		case op == "DEL" || op == "PURGE":
			x.mu.Lock()
			delete(x.runs, key)
			x.mu.Unlock()
		default:
			if sum, ok := events.SummaryFromHeader(key, m.Header); ok {
				x.put(sum)
			} else {
				go x.legacy(ctx, key)
			}
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := sub.SetPendingLimits(-1, 256<<20); err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := x.s.nc.FlushWithContext(fctx); err != nil {
		return err
	}
	kv, err := x.s.js.KeyValue(fctx, events.BucketRuns)
	if err != nil {
		return err
	}
	if st, err := kv.Status(fctx); err == nil {
		x.mu.Lock()
		x.ttl = st.TTL()
		x.mu.Unlock()
	}
	for before := ""; ; {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		reply, err := x.s.runs.List(lctx, events.SeqListRequest{Limit: events.MaxListLimit, Before: before})
		cancel()
		if err != nil {
			return err
		}
		for _, sum := range reply.Runs {
			x.put(sum)
		}
		if before = reply.Next; before == "" {
			break
		}
	}
	x.mu.Lock()
	x.ready = true
	x.mu.Unlock()
	x.s.forget(isRunsWatch) // the watch runs: a refusal kept is stale
	x.s.hub.send("", "ready", map[string]bool{"runs_live": true})
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			if natsconn.RefusedCause(ctx, ctx.Err()) != ctx.Err() {
				return ctx.Err() // a refusal (deferred RefusedCause)
			}
			return nil
		case st := <-status:
			switch {
			case st == nats.DISCONNECTED || st == nats.RECONNECTING:
				down = true
			case st == nats.CONNECTED && down:
				return errors.New("reconnected to NATS: the runs list is read again (writes may have been missed)")
			}
		case <-prune.C:
			x.prune(time.Now())
		}
	}
}

// put stores a summary, unless one updated later is known, and passes it
// on to the streams.
func (x *runIndex) put(sum events.RunSummary) {
	x.mu.Lock()
	if old, ok := x.runs[sum.RunID]; ok && old.UpdatedAt.After(sum.UpdatedAt) {
		x.mu.Unlock()
		return
	}
	x.runs[sum.RunID] = sum
	ready := x.ready
	x.mu.Unlock()
	if ready {
		x.s.hub.summary(sum)
	}
}

// legacy reads the state of an entry without summary headers.
func (x *runIndex) legacy(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	st, err := x.s.runs.Status(ctx, key)
	if err != nil {
		return
	}
	x.put(st.Summary())
}

// prune forgets runs whose entry the bucket's TTL has removed (expiry
// leaves no delete marker).
func (x *runIndex) prune(now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ttl <= 0 {
		return
	}
	for id, s := range x.runs {
		last := s.UpdatedAt
		if last.IsZero() {
			last = s.CreatedAt
		}
		if !last.IsZero() && now.Sub(last) > x.ttl+time.Minute {
			delete(x.runs, id)
		}
	}
}
