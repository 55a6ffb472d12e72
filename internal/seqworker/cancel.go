package seqworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
	"github.com/skillbus/skillbus/pkg/events"
)

// serveCancel is skillbus.seq.cancel (events.SeqCancelRequest →
// events.RunState). Any replica answers:
//
//   - a queued or interrupted run — or a running one whose holder has not
//     beaten for two ack waits — is cancelled here and now: its state
//     becomes cancelled, and a worker that later receives its request
//     acknowledges it without running anything;
//   - a running run gets the cancel recorded in its state and a cancelling
//     event; the worker holding it (which listens to those events, and
//     also meets the recorded cancel at its next state write) cancels the
//     run's context and stores it as cancelled. The reply is the state
//     with the cancel recorded and the status still running;
//   - a waiting run (docs/runs.md, "Waiting runs") is held by no worker:
//     it is cancelled here and now, and its timer removed;
//   - a cancelled run is answered with its state (idempotent);
//   - a succeeded or failed run is a 409.
func (w *Worker) serveCancel(ctx context.Context, req micro.Request) {
	var in events.SeqCancelRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, cur, err := w.recordCancel(ctx, in.RunID, in.By, in.Reason)
	switch {
	case err != nil:
		_ = req.Error("503", err.Error(), nil)
	case cur == nil:
		_ = req.Error("404", noRun(in.RunID), nil)
	case st == nil && cur.Status == events.StatusCancelled:
		w.respond(req, cur)
	case st == nil:
		_ = req.Error("409", fmt.Sprintf("run %q already finished: %s at %s; only a queued, running, waiting or interrupted run can be cancelled",
			in.RunID, cur.Status, cur.FinishedAt.Format(time.RFC3339)), nil)
	default:
		w.log.Info("run cancel requested", "run", in.RunID, "status", st.Status, "holder", cur.Worker, "by", in.By)
		w.respond(req, st)
	}
}

// recordCancel cancels run runID for seq.cancel (serveCancel) and for a
// schedule entry's overlap cancel_other (cancelForTick) alike, with the
// rules serveCancel states: a run whose holder beats gets the cancel
// recorded (by, reason, now) and a cancelling event, and its holder stops
// it; any other unfinished run is cancelled here — a finished event, its
// entry told (entryRunEnded), and a waiting run's wait ended and its timer
// removed. A lost compare-and-set is retried (casRetry, for up to 5 s).
//
// It returns the state written and the state it replaced; the first is
// nil when nothing was written: the second is then nil for no such run, or
// the state of a run that had finished already. Errors: reading or writing RUNS (a state
// too large to record the cancel with its results is written without
// them), the context ending first, or a run that changed too often.
func (w *Worker) recordCancel(ctx context.Context, runID, by, reason string) (*events.RunState, *events.RunState, error) {
	for try := newCASRetry(5 * time.Second); try.next(ctx); {
		cur, rev, err := w.readState(ctx, runID)
		if err != nil || cur == nil || events.Finished(cur.Status) {
			return nil, cur, err
		}
		now := time.Now().UTC()
		next := *cur
		if next.Cancel == nil {
			next.Cancel = &events.CancelInfo{By: by, Reason: reason, At: now}
		}
		held := cur.Status == events.StatusRunning && now.Sub(cur.Heartbeat) < 2*w.ackWaitNow()
		if !held {
			next.Status, next.FinishedAt, next.UpdatedAt, next.Error = events.StatusCancelled, now, now, cancelText(next.Cancel)
			if cur.Status == events.StatusWaiting {
				endWaitOnCancel(&next)
			}
		}
		_, err = w.writeState(ctx, &next, rev)
		if errors.Is(err, errStateTooLarge) {
			// Recording a cancel never needs the big state: a state that
			// left no room for it (written before the reserve of
			// toolarge.go) is recorded without the groups' results.
			small := next
			small.Result, small.Slots = nil, nil
			small.Error = clip(small.Error, maxFinalError) + " (the groups' results were too large to store with the cancel)"
			_, err = w.writeState(ctx, &small, rev)
			next = small
		}
		if errors.Is(err, errConflict) {
			continue // the holder wrote meanwhile: look again
		}
		if err != nil {
			return nil, cur, fmt.Errorf("record the cancel: %w", err)
		}
		w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunCancelling, Sequence: next.Sequence, Status: next.Status, Worker: cur.Worker,
			By: next.Cancel.By, Reason: next.Cancel.Reason, Group: next.FinishedGroups, Groups: next.Groups})
		if !held {
			w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunFinished, Sequence: next.Sequence, Status: events.StatusCancelled,
				Error: next.Error, By: next.Cancel.By, Reason: next.Cancel.Reason, Group: next.FinishedGroups, Groups: next.Groups})
			w.entryRunEnded(ctx, &next) // a queued tick: its entry goes on (entries.go)
		}
		if cur.Status == events.StatusWaiting {
			w.purgeTimer(ctx, runID) // wait.go: no worker holds it, so the cancel ends it here
			w.waitEvent(ctx, "cancelled")
		}
		return &next, cur, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("run %q: the cancel was not recorded before the request's time ran out: %w; retry", runID, err)
	}
	return nil, nil, fmt.Errorf("run %q changed too often while cancelling it; retry", runID)
}

// serveRerun is skillbus.seq.rerun (events.SeqRerunRequest →
// events.SeqRunReply): a new run with the sequence (or inline definition)
// and arguments of an earlier one.
func (w *Worker) serveRerun(ctx context.Context, req micro.Request) {
	var in events.SeqRerunRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cur, _, ok := w.requestedRun(ctx, req, in.RunID)
	if !ok {
		return
	}
	switch {
	case cur.Sequence == "" && len(cur.Inline) == 0:
		_ = req.Error("404", fmt.Sprintf("run %q does not record its sequence (stored by an older worker); start it again with `skillbus run`", in.RunID), nil)
		return
	}
	r := &events.RunRequest{RunID: in.NewRunID, Args: cur.Args, Trigger: events.TriggerManual, RequestedAt: time.Now().UTC()}
	if r.RunID == "" {
		r.RunID = "run-" + nuid.Next()
	}
	if len(cur.Inline) > 0 {
		r.Inline = cur.Inline
	} else {
		r.Sequence = cur.Sequence
	}
	w.startRun(ctx, req, r, fmt.Sprintf("rerun of run %q: ", in.RunID))
}
