package seqworker

import (
	"context"
	"errors"
	"sync"
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

// heartbeat keeps the run alive until the returned stop is called (safe to
// call twice): every beatEvery it sends an in-progress ack (the server then
// does not redeliver the request to another worker, however long a tool
// call takes or a state write is retried) and, once the run is claimed,
// renews RunState.Heartbeat when no write did so in the last two beats.
// The state write runs apart from the in-progress acks, so a write that
// waits for NATS never holds them up. A state write that finds a cancel
// request or a later owner cancels the run's context (store does).
func (r *run) heartbeat(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	kick := make(chan struct{}, 1)
	go func() {
		defer close(stopped)
		writer := make(chan struct{})
		go func() { // the state's heartbeat
			defer close(writer)
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-kick:
				}
				r.beatState(ctx)
			}
		}()
		defer func() { <-writer }()
		// The interval follows the consumer's ack wait (follow.go): a
		// change re-arms it and beats at once.
		t := time.NewTimer(r.w.beatEvery())
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			case <-r.w.liveValues.changes():
				t.Stop()
			}
			t.Reset(r.w.beatEvery())
			_ = r.msg.InProgress()
			select {
			case kick <- struct{}{}:
			default: // a write is under way
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-stopped }) }
}

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
		st.Heartbeat = time.Now().UTC()
		return nil
	})
	switch {
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
