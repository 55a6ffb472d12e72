package seqworker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
)

// Room for new runs (docs/runs.md, "Retention and sizing").
//
// RUNS refuses a write that would pass its byte limit (it never drops a
// run to make room), and SEQ_RUNS discards a new request when full, never
// a queued one. A run that was accepted still writes its state at every
// group, a little larger each time, and its large slots in RUN_SLOTS; so
// seq.run refuses new runs once any of the three holds fullPercent of its
// limit, leaving the rest for the runs already accepted (and for boot and
// scheduled runs, which are not refused) — and RUNS also once what it
// holds plus runReserve for every run queued or running (the requests in
// SEQ_RUNS) reaches that share. The usage is read at most once per
// roomCheckEvery.

const (
	fullPercent    = 90
	roomCheckEvery = time.Second
	runReserve     = 16 << 10 // what a run accepted may still add to RUNS (a typical run's state is 2.5 KB)
)

// roomGauge caches the last check of the stores' usage. Between two
// checks it counts the runs it let through (accepted), each taking
// runReserve of RUNS, so that a burst within roomCheckEvery cannot accept
// more than the last check left room for.
type roomGauge struct {
	mu        sync.Mutex // mu guards the fields below
	checked   time.Time
	err       error
	runsNeed  int64 // RUNS at the last check: bytes held + runReserve per run in flight
	runsLimit int64 // RUNS's byte limit at the last check (0: none)
	runsUsed  int64
	inflight  int64
	accepted  int64 // runs let through since the last check
}

// storeFullError is a store at fullPercent of its byte limit or more.
type storeFullError struct {
	what, flag            string
	used, limit, inflight int64
}

func (e *storeFullError) Error() string {
	return fmt.Sprintf("the run was not queued: %s is full: %s of its limit of %s used (%d runs queued or running), and new runs are refused from %d%% so that the runs already accepted can finish. "+
		"Raise the limit (seqworker %s), shorten --runs-ttl so that old runs expire sooner, or wait for runs to expire (docs/runs.md, \"Retention and sizing\")",
		e.what, sizeText(e.used), sizeText(e.limit), e.inflight, fullPercent, e.flag)
}

// stores are the streams a new run writes to, with their flags.
var stores = []struct{ stream, what, flag string }{
	{"KV_" + events.BucketRuns, "the " + events.BucketRuns + " bucket (run states)", "--runs-max-bytes"},
	{events.StreamSeqRuns, "the " + events.StreamSeqRuns + " stream (queued run requests)", "--seq-runs-max-bytes"},
	{"OBJ_" + events.BucketRunSlots, "the " + events.BucketRunSlots + " object store (large slot values)", "--run-slots-max-bytes"},
}

// roomForRun returns a *storeFullError when RUNS, SEQ_RUNS or RUN_SLOTS
// holds fullPercent of its byte limit or more, nil otherwise (also when
// the usage cannot be read: the write itself then tells).
func (w *Worker) roomForRun(ctx context.Context) error {
	g := &w.room
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.checked.IsZero() && time.Since(g.checked) < roomCheckEvery {
		if g.err != nil {
			return g.err
		}
		if g.runsLimit > 0 && (g.runsNeed+(g.accepted+1)*runReserve)*100 >= g.runsLimit*fullPercent {
			s := stores[0]
			return &storeFullError{what: s.what, flag: s.flag, used: g.runsUsed, limit: g.runsLimit, inflight: g.inflight + g.accepted}
		}
		g.accepted++
		return nil
	}
	g.runsNeed, g.runsLimit, g.runsUsed, g.accepted = 0, 0, 0, 0
	var full error
	var inflight int64 // requests in SEQ_RUNS: runs queued or running
	if st, err := w.js.Stream(ctx, events.StreamSeqRuns); err == nil {
		inflight = int64(st.CachedInfo().State.Msgs)
	}
	for _, s := range stores {
		st, err := w.js.Stream(ctx, s.stream)
		if err != nil {
			continue
		}
		info := st.CachedInfo()
		limit, used := info.Config.MaxBytes, int64(info.State.Bytes)
		need := used
		if s.stream == "KV_"+events.BucketRuns {
			need += inflight * runReserve
			g.runsNeed, g.runsLimit, g.runsUsed, g.inflight = need, limit, used, inflight
		}
		if limit > 0 && need*100 >= limit*fullPercent {
			full = &storeFullError{what: s.what, flag: s.flag, used: used, limit: limit, inflight: inflight}
			break
		}
	}
	g.checked, g.err = time.Now(), full
	if full == nil {
		g.accepted = 1 // this run
	}
	return full
}
