package seqworker

import (
	"time"

	"github.com/skillbus/skillbus/pkg/events"
)

// Runs this worker queued (enqueue: seq.run, seq.rerun, boot runs) and
// that no delivery has claimed here yet: the queued state as written, and
// its RUNS revision. When the request's delivery comes to this same
// worker — always on a single worker, such as `skillbus dev` or
// `skillbus run` without NATS_URL — the claim needs no read: the worker
// knows the state at that revision, and the claim's compare-and-set on
// the revision checks that it is still the run's state (docs/runs.md,
// "Cost of a run"). The claim hint of the request is not what is trusted
// here: only what this worker wrote or read itself.

// queuedMemo is one run queued here.
type queuedMemo struct {
	st  events.RunState // the queued state at rev
	rev uint64
	at  time.Time // when it was recorded
}

// Bounds of the memo: past maxQueuedMemos (a queue backlog) or after
// queuedMemoTTL, a claim reads the state as any other worker does.
const (
	maxQueuedMemos = 4096
	queuedMemoTTL  = time.Minute
)

// rememberQueued records that the queued state st of a run is at revision
// rev.
func (w *Worker) rememberQueued(st *events.RunState, rev uint64) {
	now := time.Now()
	w.queuedMu.Lock()
	defer w.queuedMu.Unlock()
	if len(w.queued) >= maxQueuedMemos {
		for id, m := range w.queued {
			if now.Sub(m.at) > queuedMemoTTL {
				delete(w.queued, id)
			}
		}
		if len(w.queued) >= maxQueuedMemos {
			return
		}
	}
	w.queued[st.RunID] = queuedMemo{st: *st, rev: rev, at: now}
}

// takeQueued returns (and forgets) the queued state of runID that this
// worker recorded, when there is one made from the request of the given
// digest and not older than queuedMemoTTL.
func (w *Worker) takeQueued(runID, digest string) (*events.RunState, uint64, bool) {
	w.queuedMu.Lock()
	m, ok := w.queued[runID]
	if ok {
		delete(w.queued, runID)
	}
	w.queuedMu.Unlock()
	if !ok || m.st.Request != digest || time.Since(m.at) > queuedMemoTTL {
		return nil, 0, false
	}
	return &m.st, m.rev, true
}
