package seqworker

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/skillbus/skillbus/pkg/events"
)

// beatEvery returns the heartbeat interval: Config.Heartbeat, or a third
// of the consumer's ack wait; never more than half of it.
func (w *Worker) beatEvery() time.Duration {
	d := w.cfg.Heartbeat
	if aw := w.ackWaitNow(); d == 0 || d > aw/2 {
		d = aw / 3
	}
	return max(d, 50*time.Millisecond)
}

// The heartbeat of the runs a worker holds (docs/runs.md, "Failover"):
// every beatEvery, each run's request gets an in-progress ack (the server
// then does not redeliver it to another worker, however long a tool call
// takes or a state write is retried) and, once the run is claimed, its
// RunState.Heartbeat is renewed when no write did so in the last two
// beats. One goroutine and one ticker of the worker (beatLoop) serve every
// run: a run costs no goroutine or timer of its own, and a run shorter
// than a beat sends no in-progress ack at all (its delivery is fresh: the
// ack wait counts from it). The state writes run apart from the loop, one
// at a time per run, so a write that waits for NATS never holds up the
// in-progress acks. A state write that finds a cancel request or a later
// owner cancels the run's context (store does).

// beatStart registers r with the heartbeat from now on (its delivery).
func (w *Worker) beatStart(r *run) {
	r.progressAt.Store(time.Now().UnixNano())
	w.beatMu.Lock()
	defer w.beatMu.Unlock()
	w.beating[r] = struct{}{}
}

// beatStop unregisters r; no in-progress ack or heartbeat write starts for
// it afterwards (one under way may finish).
func (w *Worker) beatStop(r *run) {
	w.beatMu.Lock()
	defer w.beatMu.Unlock()
	delete(w.beating, r)
}

// beatLoop sends the heartbeats of every registered run until the worker's
// run context ends (after Stop has waited for the runs). It ticks four
// times per beat, so a run's in-progress ack goes out between one and one
// and a quarter beats after the previous one (the ack wait is at least two
// beats: Config.Heartbeat), and its state's heartbeat is written between
// one and three quarters and two beats after the last state write.
//
// The beat follows the consumer's ack wait (follow.go): when it changes,
// the ticker is re-armed at the new beat and every run is beaten at once.
func (w *Worker) beatLoop(done chan<- struct{}) {
	defer close(done)
	beat := w.beatEvery()
	t := time.NewTicker(max(beat/4, 10*time.Millisecond))
	defer t.Stop()
	changed := w.liveValues.changes()
	var due, write []*run
	for {
		all := false
		select {
		case <-w.runCtx.Done():
			return
		case <-t.C:
		case <-changed:
			changed = w.liveValues.changes()
			beat = w.beatEvery()
			t.Reset(max(beat/4, 10*time.Millisecond))
			all = true
		}
		// beatEvery is read again at every tick, so the loop follows a
		// changed interval.
		if b := w.beatEvery(); b != beat {
			beat = b
			t.Reset(max(beat/4, 10*time.Millisecond))
		}
		now := time.Now().UnixNano()
		due, write = due[:0], write[:0]
		w.beatMu.Lock()
		for r := range w.beating {
			if all || now-r.progressAt.Load() >= int64(beat) {
				r.progressAt.Store(now)
				due = append(due, r)
			}
			// The state's heartbeat is looked at every tick (not only with
			// the in-progress ack), so it is renewed within two beats of
			// the last write: holderWatch takes a holder silent after two
			// and a half.
			if wrote := r.wrote.Load(); wrote != 0 && now-wrote >= int64(2*beat-beat/4) {
				write = append(write, r)
			}
		}
		w.beatMu.Unlock()
		for i, r := range due {
			_ = r.msg.InProgress()
			due[i] = nil
		}
		for i, r := range write {
			if r.beatBusy.CompareAndSwap(false, true) {
				go func() {
					defer r.beatBusy.Store(false)
					r.beatState(r.ctx)
				}()
			}
			write[i] = nil
		}
	}
}

// errBeatNotDue: a heartbeat write found the run no longer running.
var errBeatNotDue = errors.New("seqworker: heartbeat not due")

// beatState renews the state's heartbeat when it is due: every second
// beat, and not while checkpoints renew it. That is enough for seq.cancel,
// which takes a holder silent for two ack waits as gone, and for a
// redelivery, which waits for a holder that beat within the ack wait.
func (r *run) beatState(ctx context.Context) {
	beat := r.w.beatEvery()
	r.mu.Lock()
	due := r.st != nil && r.st.Status == events.StatusRunning && time.Since(time.Unix(0, r.wrote.Load())) >= 2*beat-beat/4
	r.mu.Unlock()
	if !due {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, beat)
	defer cancel()
	err := r.store(wctx, func(st *events.RunState) error {
		if st.Status != events.StatusRunning {
			return errBeatNotDue // the run ended meanwhile: its final state stays as written
		}
		st.Heartbeat = time.Now().UTC()
		return nil
	})
	switch {
	case errors.Is(err, errBeatNotDue):
	case errors.Is(err, errLost):
		r.cancel(errLost)
	case err != nil && !errors.Is(err, errCancelled) && ctx.Err() == nil:
		r.log.Warn("heartbeat not stored", "err", err)
	}
}

// hold registers r as a run this worker holds, for the cancel signal and
// for a redelivery of the same run to this worker (holds).
func (w *Worker) hold(r *run) {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	w.held[r.req.RunID] = r
}

// holds reports whether this worker holds the run runID through another
// delivery than r.
func (w *Worker) holds(runID string, r *run) bool {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	h := w.held[runID]
	return h != nil && h != r
}

// release1 forgets a run held by hold.
func (w *Worker) release1(r *run) {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	if w.held[r.req.RunID] == r {
		delete(w.held, r.req.RunID)
	}
}

// onCancelSignal stops a run this worker holds when a cancel was asked for
// it (the cancelling event that seq.cancel publishes). The run's context
// ends with errCancelled: its in-flight calls end canceled, no further
// group starts, and the run is stored as cancelled.
func (w *Worker) onCancelSignal(m *nats.Msg) {
	var ev events.RunEvent
	if err := events.Decode(m.Data, &ev); err != nil || ev.Kind != events.RunCancelling {
		return
	}
	w.heldMu.Lock()
	r := w.held[ev.RunID]
	w.heldMu.Unlock()
	if r == nil || r.cancel == nil {
		return
	}
	r.mu.Lock()
	if r.st.Cancel == nil {
		r.st.Cancel = &events.CancelInfo{By: ev.By, Reason: ev.Reason, At: ev.At}
	}
	r.mu.Unlock()
	r.log.Info("cancel requested; stopping the run", "by", ev.By, "reason", ev.Reason)
	r.cancel(errCancelled)
}
