package seqworker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
)

// errConflict: a compare-and-set write of a RUNS key found another
// revision.
var errConflict = errors.New("seqworker: RUNS revision conflict")

// errStateTooLarge: a run state does not fit in a RUNS entry even with its
// large slots in the object store.
var errStateTooLarge = errors.New("seqworker: run state too large for a RUNS entry")

// readState returns the RUNS state of runID (normalised: pending reads as
// queued) and its revision; nil, 0 when there is none.
func (w *Worker) readState(ctx context.Context, runID string) (*events.RunState, uint64, error) {
	e, err := w.runs.Get(ctx, runID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var st events.RunState
	if err := events.Decode(e.Value(), &st); err != nil {
		// Unreadable: treat as absent but keep the revision so the next
		// write replaces it.
		w.log.Warn("unreadable run state replaced", "run", runID, "err", err)
		return nil, e.Revision(), nil
	}
	st.Normalize()
	return &st, e.Revision(), nil
}

// writeState stores st under its run id, compare-and-set: rev 0 creates
// the key, any other rev must be the key's current revision. The entry
// carries the run's summary in the events.RunHeader* headers (what `runs
// ls` reads). Errors: errConflict, errStateTooLarge, an encoding error,
// NATS errors.
func (w *Worker) writeState(ctx context.Context, st *events.RunState, rev uint64) (uint64, error) {
	b, err := encodeState(st)
	if err != nil {
		return 0, err
	}
	if max := w.maxValue; max > 0 && len(b) > max {
		return 0, fmt.Errorf("%w: %d bytes; the limit is %d bytes (the RUNS bucket's value size, or the server's max_payload)", errStateTooLarge, len(b), max)
	}
	m := &nats.Msg{Subject: events.RunsKeySubject(st.RunID), Data: b, Header: nats.Header{}}
	st.Summary().SetHeader(m.Header)
	ack, err := w.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev))
	if err == nil {
		return ack.Sequence, nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		if rev == 0 {
			// A key deleted or purged before has a marker: create it
			// over the marker as kv.Create does (without the summary
			// headers; the listing reads such an entry whole).
			nrev, cerr := w.runs.Create(ctx, st.RunID, b)
			if cerr == nil {
				return nrev, nil
			}
			if errors.Is(cerr, jetstream.ErrKeyExists) {
				return 0, fmt.Errorf("%w: %v", errConflict, cerr)
			}
			return 0, cerr
		}
		return 0, fmt.Errorf("%w: %v", errConflict, err)
	}
	if errors.Is(err, nats.ErrMaxPayload) || (err != nil && strings.Contains(err.Error(), "maximum")) {
		return 0, fmt.Errorf("%w: %d bytes: %v", errStateTooLarge, len(b), err)
	}
	return 0, err
}

// failRun stores a failed final state for runID (unless it finished, or a
// later delivery owns it) and announces it. Best effort: errors are logged.
func (w *Worker) failRun(ctx context.Context, runID, sequence string, attempt int, reason string) {
	if events.CheckRunID(runID) != nil {
		return // no key can be derived from it; the caller logged it
	}
	for range 3 {
		var cur *events.RunState
		var rev uint64
		err := w.persist(ctx, "read run state", func(octx context.Context) (err error) {
			cur, rev, err = w.readState(octx, runID)
			return err
		})
		if err != nil {
			w.log.Error("record failed run", "run", runID, "err", err)
			return
		}
		now := time.Now().UTC()
		st := &events.RunState{RunID: runID, Sequence: sequence, Status: events.StatusFailed, Error: reason, Attempt: attempt,
			Worker: w.cfg.WorkerID, CreatedAt: now, StartedAt: now, UpdatedAt: now, FinishedAt: now}
		if cur != nil {
			if events.Finished(cur.Status) || cur.Attempt > attempt {
				return
			}
			keep := *cur
			keep.Status, keep.Error, keep.Attempt, keep.Worker = st.Status, reason, max(attempt, cur.Attempt), w.cfg.WorkerID
			keep.UpdatedAt, keep.FinishedAt = now, now
			if keep.StartedAt.IsZero() {
				keep.StartedAt = now
			}
			if keep.Sequence == "" {
				keep.Sequence = sequence
			}
			st = &keep
		}
		err = w.persist(ctx, "store run state", func(octx context.Context) error {
			_, err := w.writeState(octx, st, rev)
			return err
		})
		if errors.Is(err, errConflict) {
			continue
		}
		if errors.Is(err, errStateTooLarge) {
			// Keep the outcome and say why the detail is missing; the
			// slots stay in the object store.
			small := *st
			small.Result = nil
			small.Slots = nil
			small.Error = reason + " (the run's result is too large to store with it: " + err.Error() + ")"
			_, err = w.writeState(ctx, &small, rev)
		}
		if err != nil {
			w.log.Error("record failed run", "run", runID, "err", err)
			return
		}
		w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunFinished, Sequence: st.Sequence, Status: events.StatusFailed, Error: reason, Worker: w.cfg.WorkerID, Attempt: attempt})
		w.runFinished(ctx, st)
		return
	}
}

// emit publishes a run event without waiting for the stream's ack.
func (w *Worker) emit(ctx context.Context, ev *events.RunEvent) {
	ev.At = time.Now().UTC()
	subj, err := events.RunEventSubject(ev.RunID, ev.Kind)
	if err != nil {
		w.log.Warn("run event not published", "run", ev.RunID, "err", err)
		return
	}
	b, err := encodeEvent(ev)
	if err != nil {
		w.log.Warn("run event not published", "run", ev.RunID, "err", err)
		return
	}
	m := &nats.Msg{Subject: subj, Data: b, Header: nats.Header{}}
	events.Inject(ctx, m.Header)
	if _, err := w.js.PublishMsgAsync(m); err != nil {
		w.log.Warn("run event not published", "run", ev.RunID, "err", err)
	}
}
