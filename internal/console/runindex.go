package console

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/events"
)

// runIndex keeps the summary of every run in the RUNS bucket, live: an
// ordered, headers-only consumer on the bucket's stream delivers the last
// entry of each key, then every later write (the seqworker puts the run's
// summary in Skillbus-Run-* headers on every entry, pkg/events), so the
// runs page lists, filters and counts runs without reading their states,
// and learns of each new or changed run at once. Entries written without
// the headers (by old workers) are read once through seq.status.
//
// When the watch cannot start (a NATS user without the permission to
// create a consumer on KV_RUNS: any role but console, docs/security.md),
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

// follow loads the index and applies every later write until ctx is done
// or the consumer fails.
func (x *runIndex) follow(ctx context.Context) (err error) {
	// A refusal of the server ends the watch at once (perms.go).
	wctx, done := x.s.access.watch.Context(ctx, natsconn.JetStreamAPI("KV_"+events.BucketRuns)...)
	defer done()
	defer func() { err = natsconn.RefusedCause(wctx, err) }()
	ctx = wctx
	kv, err := x.s.js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		return err
	}
	if st, err := kv.Status(ctx); err == nil {
		x.mu.Lock()
		x.ttl = st.TTL()
		x.mu.Unlock()
	}
	cons, err := x.s.js.OrderedConsumer(ctx, "KV_"+events.BucketRuns, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.RunsKeySubject(">")},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	x.mu.Lock()
	clear(x.runs)
	x.err = nil
	x.ready = info.NumPending == 0
	x.mu.Unlock()
	x.s.forget(isRunsWatch) // the watch runs: a refusal kept is stale
	if info.NumPending == 0 {
		x.s.hub.send("", "ready", map[string]bool{"runs_live": true})
	}
	prefix := events.RunsKeySubject("")
	cc, err := cons.Consume(func(m jetstream.Msg) {
		key := strings.TrimPrefix(m.Subject(), prefix)
		h := m.Headers()
		md, _ := m.Metadata()
		switch op := h.Get("KV-Operation"); {
		case op == "DEL" || op == "PURGE":
			x.mu.Lock()
			delete(x.runs, key)
			x.mu.Unlock()
		default:
			if sum, ok := events.SummaryFromHeader(key, h); ok {
				x.put(sum)
			} else {
				go x.legacy(ctx, key)
			}
		}
		if md != nil && md.NumPending == 0 {
			x.mu.Lock()
			was := x.ready
			x.ready = true
			x.mu.Unlock()
			if !was {
				x.s.hub.send("", "ready", map[string]bool{"runs_live": true})
			}
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			return // the ordered consumer recreates itself
		}
		x.s.log.Debug("console: RUNS watch", "err", err)
	}))
	if err != nil {
		return err
	}
	defer cc.Stop()
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	closed := cc.Closed()
	for {
		select {
		case <-ctx.Done():
			if natsconn.RefusedCause(ctx, ctx.Err()) != ctx.Err() {
				return ctx.Err() // a refusal (deferred RefusedCause)
			}
			return nil
		case <-closed:
			return errors.New("the RUNS watch stopped")
		case <-prune.C:
			x.prune(time.Now())
		}
	}
}

// put stores a summary and passes it on to the streams.
func (x *runIndex) put(sum events.RunSummary) {
	x.mu.Lock()
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
