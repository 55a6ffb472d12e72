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
	for range 5 {
		cur, rev, err := w.readState(ctx, in.RunID)
		switch {
		case err != nil:
			_ = req.Error("503", err.Error(), nil)
			return
		case cur == nil:
			_ = req.Error("404", fmt.Sprintf("no run %q in the %s bucket (unknown, or expired after its retention)", in.RunID, events.BucketRuns), nil)
			return
		case cur.Status == events.StatusCancelled:
			w.respond(req, cur)
			return
		case events.Finished(cur.Status):
			_ = req.Error("409", fmt.Sprintf("run %q already finished: %s at %s; only a queued, running or interrupted run can be cancelled",
				in.RunID, cur.Status, cur.FinishedAt.Format(time.RFC3339)), nil)
			return
		}
		now := time.Now().UTC()
		st := *cur
		if st.Cancel == nil {
			st.Cancel = &events.CancelInfo{By: in.By, Reason: in.Reason, At: now}
		}
		held := cur.Status == events.StatusRunning && now.Sub(cur.Heartbeat) < 2*w.ackWaitNow()
		if !held {
			st.Status, st.FinishedAt, st.UpdatedAt, st.Error = events.StatusCancelled, now, now, cancelText(st.Cancel)
		}
		_, err = w.writeState(ctx, &st, rev)
		if errors.Is(err, errStateTooLarge) {
			// Recording a cancel never needs the big state: a state that
			// left no room for it (written before the reserve of
			// toolarge.go) is recorded without the groups' results.
			small := st
			small.Result, small.Slots = nil, nil
			small.Error = clip(small.Error, maxFinalError) + " (the groups' results were too large to store with the cancel)"
			_, err = w.writeState(ctx, &small, rev)
			st = small
		}
		if errors.Is(err, errConflict) {
			continue // the holder wrote meanwhile: look again
		}
		if err != nil {
			_ = req.Error("503", "record the cancel: "+err.Error(), nil)
			return
		}
		ev := &events.RunEvent{RunID: in.RunID, Kind: events.RunCancelling, Sequence: st.Sequence, Status: st.Status, Worker: cur.Worker,
			By: st.Cancel.By, Reason: st.Cancel.Reason, Group: st.FinishedGroups, Groups: st.Groups}
		w.emit(ctx, ev)
		if !held {
			w.emit(ctx, &events.RunEvent{RunID: in.RunID, Kind: events.RunFinished, Sequence: st.Sequence, Status: events.StatusCancelled,
				Error: st.Error, By: st.Cancel.By, Reason: st.Cancel.Reason, Group: st.FinishedGroups, Groups: st.Groups})
		}
		w.log.Info("run cancel requested", "run", in.RunID, "status", st.Status, "holder", cur.Worker, "by", in.By)
		w.respond(req, &st)
		return
	}
	_ = req.Error("503", fmt.Sprintf("run %q changed too often while cancelling it; retry", in.RunID), nil)
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
	cur, _, err := w.readState(ctx, in.RunID)
	switch {
	case err != nil:
		_ = req.Error("503", err.Error(), nil)
		return
	case cur == nil:
		_ = req.Error("404", fmt.Sprintf("no run %q in the %s bucket (unknown, or expired after its retention)", in.RunID, events.BucketRuns), nil)
		return
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
