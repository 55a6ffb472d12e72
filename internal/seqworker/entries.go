package seqworker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/overlap"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Schedule entries: the overlap policy, pause, buffered ticks and the
// entries' counters (docs/sequences.md, "Overlap"; docs/runs.md,
// "Scheduled runs"). Each entry's state is one key of the SEQ_SCHEDULES
// bucket, changed only with compare-and-set (updateEntry), so every
// decision about a tick holds cluster-wide however many seqworkers run:
//
//   - a tick (a scheduler message, a manual trigger, a backfilled tick) is
//     admitted by admit (the decision is overlap.Admit, pure, shared with
//     skillbus test's simulated ticks): started, buffered, skipped, or dropped (paused,
//     outside start_at/end_at), and recorded in the entry's Recent ticks;
//   - a run of an entry that ends (whichever worker concludes it, or a
//     cancel of a queued run) leaves the entry's Current runs in
//     entryRunEnded, which starts the oldest buffered tick;
//   - a current run found finished (or missing long after it was
//     admitted: its tick was lost) is pruned at the next tick.

// errNoChange: an updateEntry function decided not to write.
var errNoChange = errors.New("seqworker: schedule state unchanged")

// scheduleKV returns the SEQ_SCHEDULES bucket, opened at first use.
func (w *Worker) scheduleKV(ctx context.Context) (jetstream.KeyValue, error) {
	w.schedMu.Lock()
	defer w.schedMu.Unlock()
	if w.schedKV != nil {
		return w.schedKV, nil
	}
	kv, err := w.js.KeyValue(ctx, events.BucketSchedules)
	if err != nil {
		return nil, fmt.Errorf("seqworker: bucket %s: %w", events.BucketSchedules, err)
	}
	w.schedKV = kv
	return kv, nil
}

// readEntry returns the state of a sequence's entry and its revision (a
// new state and 0 when there is none).
func (w *Worker) readEntry(ctx context.Context, sequence, entry string) (*events.ScheduleState, uint64, error) {
	key, err := events.ScheduleKey(sequence, entry)
	if err != nil {
		return nil, 0, err
	}
	kv, err := w.scheduleKV(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return &events.ScheduleState{V: events.Version, Sequence: sequence, Entry: entry}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var st events.ScheduleState
	if err := events.Decode(e.Value(), &st); err != nil {
		w.log.Warn("unreadable schedule state replaced", "key", key, "err", err)
		return &events.ScheduleState{V: events.Version, Sequence: sequence, Entry: entry}, e.Revision(), nil
	}
	return &st, e.Revision(), nil
}

// updateEntry applies change to the entry's state and writes it with
// compare-and-set, reading again after a conflict (casRetry, for up to
// 10 s).
// change returns errNoChange to leave the state as it is. It returns the
// state as written (or as found). Errors: change's, NATS errors.
func (w *Worker) updateEntry(ctx context.Context, sequence, entry string, change func(st *events.ScheduleState) error) (*events.ScheduleState, error) {
	key, err := events.ScheduleKey(sequence, entry)
	if err != nil {
		return nil, err
	}
	kv, err := w.scheduleKV(ctx)
	if err != nil {
		return nil, err
	}
	for try := newCASRetry(10 * time.Second); try.next(ctx); {
		st, rev, err := w.readEntry(ctx, sequence, entry)
		if err != nil {
			return nil, err
		}
		if err := change(st); errors.Is(err, errNoChange) {
			return st, nil
		} else if err != nil {
			return nil, err
		}
		st.V, st.UpdatedAt = events.Version, time.Now().UTC()
		b, err := events.Encode(st)
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, b)
		} else {
			_, err = kv.Update(ctx, key, b, rev)
		}
		if err == nil {
			return st, nil
		}
		// A conflict is ErrKeyExists from Create, ErrKeyRevisionMismatch
		// from Update: the latter carries code 10071 on an R1 bucket but
		// 10164 on a replicated one, which ErrKeyExists does not match.
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // another worker wrote meanwhile: decide again
		}
		return nil, fmt.Errorf("write schedule state %s: %w", key, err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("schedule state of %s/%s: %w", sequence, entry, ctx.Err())
	}
	return nil, fmt.Errorf("schedule state of %s/%s changed too often; try again", sequence, entry)
}

// tick is one tick to admit.
type tick struct {
	runID   string
	at      time.Time // the tick's own time
	trigger string    // events.TriggerSchedule, TriggerManualTick or TriggerBackfill
	// explicit: asked for by a person (trigger, backfill): run while the
	// entry is paused and outside start_at/end_at.
	explicit bool
	// fresh: the tick's run is known not to exist (runTicks checked), so
	// an earlier record of the tick in the entry's Recent ticks (a skip,
	// a drop) is history, not this admission's answer: it is admitted
	// again.
	fresh bool
}

// admission is what admit decided.
type admission struct {
	outcome string // an events.Tick* constant; TickStarted = run it now
	why     string
	again   bool                  // the tick was admitted before (a redelivery): nothing changed
	start   []events.ScheduleTick // buffered ticks to start now (their run is current)
	cancel  []string              // runs to cancel (cancel_other)
	state   *events.ScheduleState
}

// admit decides what a tick of entry e of def does, through the entry's
// overlap policy (overlap.Admit), and records it in the entry's state. The
// states of the entry's current runs are read from RUNS first (runFates),
// so the policy sees those that ended or were lost.
func (w *Worker) admit(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, t tick) (*admission, error) {
	var a *admission
	var stalled []events.ScheduleRun
	st, err := w.updateEntry(ctx, def.Name, e.Name, func(st *events.ScheduleState) error {
		stalled = nil
		tk := overlap.Tick{RunID: t.runID, At: t.at, Trigger: t.trigger,
			Scheduled: t.trigger == events.TriggerSchedule, Explicit: t.explicit, Fresh: t.fresh}
		now := time.Now().UTC()
		// A redelivered, paused or dropped tick is decided before the
		// policy looks at the current runs: decide it without reading
		// their states (a RUNS read per current run, inside this CAS
		// loop, slows every such tick while NATS fails over and holds
		// the entry's key against the run-ended update).
		d := overlap.Admit(e, policyState(st), tk, nil, now)
		if !d.Again && d.Outcome != overlap.Dropped && d.Outcome != overlap.Paused && len(st.Current) > 0 {
			var fates map[string]overlap.Fate
			fates, stalled = w.runFates(ctx, st.Current)
			d = overlap.Admit(e, policyState(st), tk, fates, now)
		}
		a = &admission{outcome: d.Outcome, why: d.Why, again: d.Again, cancel: d.Cancel}
		for _, b := range d.Start {
			a.start = append(a.start, events.ScheduleTick(b))
		}
		if d.Again {
			return errNoChange
		}
		setPolicyState(st, d.State)
		return nil
	})
	if err != nil {
		return nil, err
	}
	w.requeueStalled(ctx, def, e, stalled)
	a.state = st
	return a, nil
}

// requeueStalled publishes again the run request of each current run of
// entry e that stayed queued and unclaimed (runFates): the request of a
// tick whose queued state was stored but whose publish failed (the
// SEQ_RUNS leader lost at that moment) would otherwise hold the entry's
// overlap slot for ever. The request is the tick's own (enqueueTick, the
// same run id as Nats-Msg-Id), so one still in the stream's duplicate
// window is dropped, and a worker that takes a second copy finds the run
// claimed or finished and skips it.
func (w *Worker) requeueStalled(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, stalled []events.ScheduleRun) {
	for _, c := range stalled {
		if err := w.enqueueTick(ctx, def, e, c.RunID, c.At, c.Trigger); err != nil {
			w.log.Warn("a tick's run stays queued and unclaimed, and its request could not be published again; the entry's next tick tries again",
				"sequence", def.Name, "entry", e.Name, "run", c.RunID, "err", err)
			continue
		}
		w.log.Info("a tick's run stayed queued and unclaimed; its request published again", "sequence", def.Name, "entry", e.Name, "run", c.RunID)
	}
}

// runFates reads the state of each current run of an entry: a run that
// finished is Ended, one that never appeared in RUNS within two ack waits
// of its admission (the tick was lost before its run was claimed) is Lost;
// a run still going, or whose state cannot be read, is left out. stalled
// are the current runs whose state says queued, never claimed (attempt
// 0), for more than two ack waits: their request may never have reached
// the stream (requeueStalled).
func (w *Worker) runFates(ctx context.Context, current []events.ScheduleRun) (fates map[string]overlap.Fate, stalled []events.ScheduleRun) {
	for _, c := range current {
		rs, _, err := w.readState(ctx, c.RunID)
		var f overlap.Fate
		switch {
		case err != nil:
			continue
		case rs == nil && time.Since(c.Admitted) > 2*w.ackWaitNow():
			f.Lost = true
		case rs != nil && rs.Status == events.StatusQueued && rs.Attempt == 0 && time.Since(rs.UpdatedAt) > 2*w.ackWaitNow():
			stalled = append(stalled, c)
			continue
		case rs == nil || !events.Finished(rs.Status):
			continue
		default:
			f.Ended = runEnd(rs)
		}
		if fates == nil {
			fates = map[string]overlap.Fate{}
		}
		fates[c.RunID] = f
	}
	return fates, stalled
}

// pruneCurrent removes from st the current runs that finished (recording
// the last one) or were lost (runFates; overlap.Prune). It returns the
// current runs that stalled in the queue (runFates), for requeueStalled.
func (w *Worker) pruneCurrent(ctx context.Context, st *events.ScheduleState) []events.ScheduleRun {
	ps := policyState(st)
	fates, stalled := w.runFates(ctx, st.Current)
	overlap.Prune(&ps, fates)
	setPolicyState(st, ps)
	return stalled
}

// runEnd is a finished run as the overlap policy reads it.
func runEnd(rs *events.RunState) *overlap.End {
	return &overlap.End{RunID: rs.RunID, Status: rs.Status, FinishedAt: rs.FinishedAt, Error: rs.Error}
}

// popBuffered moves the oldest buffered tick to the current runs when no
// run of the entry is going and the entry is not paused
// (overlap.PopBuffered); it returns the tick to start.
func popBuffered(st *events.ScheduleState, now time.Time) []events.ScheduleTick {
	ps := policyState(st)
	var start []events.ScheduleTick
	for _, b := range overlap.PopBuffered(&ps, now) {
		start = append(start, events.ScheduleTick(b))
	}
	setPolicyState(st, ps)
	return start
}

// policyState returns the overlap policy's part of st (every field but
// its version, names and write time); setPolicyState writes it back. The
// element conversions stop compiling when events.ScheduleRun or
// ScheduleTick and their pkg/overlap twins drift apart; TestPolicyState
// fails when a field of ScheduleState is not carried.
func policyState(st *events.ScheduleState) overlap.State {
	ps := overlap.State{Paused: st.Paused, Note: st.Note, PausedBy: st.PausedBy, PausedAt: st.PausedAt,
		LastRun: st.LastRun, LastStatus: st.LastStatus, LastAt: st.LastAt, LastTick: st.LastTick, ConsecutiveFailures: st.ConsecutiveFailures,
		Started: st.Started, Skipped: st.Skipped, Buffers: st.Buffers, Missed: st.Missed, Dropped: st.Dropped}
	for _, c := range st.Current {
		ps.Current = append(ps.Current, overlap.Run(c))
	}
	for _, b := range st.Buffered {
		ps.Buffered = append(ps.Buffered, overlap.Record(b))
	}
	for _, r := range st.Recent {
		ps.Recent = append(ps.Recent, overlap.Record(r))
	}
	return ps
}

// setPolicyState writes the overlap policy's state ps into st.
func setPolicyState(st *events.ScheduleState, ps overlap.State) {
	st.Paused, st.Note, st.PausedBy, st.PausedAt = ps.Paused, ps.Note, ps.PausedBy, ps.PausedAt
	st.LastRun, st.LastStatus, st.LastAt, st.LastTick, st.ConsecutiveFailures = ps.LastRun, ps.LastStatus, ps.LastAt, ps.LastTick, ps.ConsecutiveFailures
	st.Started, st.Skipped, st.Buffers, st.Missed, st.Dropped = ps.Started, ps.Skipped, ps.Buffers, ps.Missed, ps.Dropped
	st.Current, st.Buffered, st.Recent = nil, nil, nil
	for _, c := range ps.Current {
		st.Current = append(st.Current, events.ScheduleRun(c))
	}
	for _, b := range ps.Buffered {
		st.Buffered = append(st.Buffered, events.ScheduleTick(b))
	}
	for _, r := range ps.Recent {
		st.Recent = append(st.Recent, events.ScheduleTick(r))
	}
}

// settle carries out what an admission asked for: it starts the buffered
// ticks that may start, cancels the runs cancel_other replaces, publishes
// a schedule event for a tick that does not run now, and counts the tick.
func (w *Worker) settle(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, t tick, a *admission) {
	if !a.again {
		w.countTick(ctx, def.Name, a.outcome)
		if a.outcome == events.TickStarted && t.trigger == events.TriggerSchedule {
			w.tickLag(ctx, def.Name, time.Since(t.at))
		}
		if a.outcome != events.TickStarted {
			w.emitSchedule(ctx, &events.ScheduleEvent{Sequence: def.Name, Entry: e.Name, Schedule: e.Pattern(), TimeZone: e.TimeZone,
				Status: a.outcome, RunID: t.runID, TickAt: t.at, Error: a.why})
			w.log.Info("schedule tick not started now", "sequence", def.Name, "entry", e.Name, "run", t.runID, "outcome", a.outcome, "why", a.why)
		}
	}
	for _, runID := range a.cancel {
		w.cancelForTick(ctx, runID, t.runID)
	}
	w.startBuffered(ctx, def, e, a.start)
}

// startBuffered queues the run of each tick (already current in the
// entry's state).
func (w *Worker) startBuffered(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, ticks []events.ScheduleTick) {
	for _, b := range ticks {
		if err := w.enqueueTick(ctx, def, e, b.RunID, b.At, b.Trigger); err != nil {
			w.log.Warn("buffered tick not started; the entry's next tick publishes its request again (or finds it lost)", "sequence", def.Name, "entry", e.Name, "run", b.RunID, "err", err)
			continue
		}
		w.countTick(ctx, def.Name, "buffered_started")
		w.log.Info("buffered tick started", "sequence", def.Name, "entry", e.Name, "run", b.RunID)
	}
}

// enqueueTick queues the run of a tick with the entry's arguments.
func (w *Worker) enqueueTick(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, runID string, at time.Time, trigger string) error {
	if trigger == "" {
		trigger = events.TriggerSchedule
	}
	return w.enqueue(ctx, &events.RunRequest{V: events.Version, RunID: runID, Sequence: def.Name, Args: e.ArgsJSON(), Trigger: trigger,
		RequestedAt: at, ScheduleEntry: e.Name})
}

// admitDelivery admits a delivered tick (a scheduler message, or the run
// request of a tick queued by a trigger, a backfill or a buffer). It
// returns true when the run goes ahead; otherwise the message is settled
// here (acknowledged, or given back for its jitter).
func (w *Worker) admitDelivery(ctx context.Context, msg jetstream.Msg, req *events.RunRequest) bool {
	if req.ScheduleEntry == "" {
		req.ScheduleEntry = seq.DefaultEntry // a schedule made before entries
	}
	def, _, err := w.cat.get(ctx, req.Sequence)
	if err != nil || !def.Scheduled() {
		return true // the run's own checks say what is wrong
	}
	e := def.Entry(req.ScheduleEntry)
	if e == nil {
		why := fmt.Sprintf("the sequence has no schedule entry %q any more", req.ScheduleEntry)
		w.emitSchedule(ctx, &events.ScheduleEvent{Sequence: def.Name, Entry: req.ScheduleEntry, Status: events.TickDropped, RunID: req.RunID, TickAt: req.RequestedAt, Error: why})
		w.requestReconcile(def.Name)
		w.countTick(ctx, def.Name, events.TickDropped)
		_ = msg.TermWithReason(clip(why, 200))
		return false
	}
	t := tick{runID: req.RunID, at: req.RequestedAt, trigger: req.Trigger, explicit: req.Trigger == events.TriggerManualTick || req.Trigger == events.TriggerBackfill}
	if t.trigger == "" {
		t.trigger = events.TriggerSchedule
	}
	if e.CatchupWindow > 0 && req.Trigger == events.TriggerSchedule && msg.Headers().Get(events.HeaderScheduler) != "" {
		if err := w.catchUp(ctx, def, e, t); err != nil {
			w.log.Warn("schedule tick: the ticks it follows that were not fired are not caught up yet; tick tried again", "sequence", def.Name, "entry", e.Name, "run", req.RunID, "err", err)
			_ = msg.NakWithDelay(time.Second)
			return false
		}
	}
	a, err := w.admit(ctx, def, e, t)
	if err != nil {
		w.log.Warn("schedule tick: state not readable; tick tried again", "sequence", def.Name, "entry", e.Name, "run", req.RunID, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return false
	}
	w.settle(ctx, def, e, t, a)
	if a.outcome != events.TickStarted {
		_ = msg.Ack()
		return false
	}
	if e.Jitter > 0 && req.Trigger == events.TriggerSchedule {
		if wait := time.Until(t.at.Add(jitterFor(req.RunID, time.Duration(e.Jitter)))); wait > 20*time.Millisecond {
			// The tick is the entry's current run meanwhile; its message
			// comes back (to any worker) when the delay is over.
			_ = msg.NakWithDelay(wait)
			return false
		}
	}
	return true
}

// jitterFor is a tick's delay: from 0 to max, the same for every delivery
// of the tick (derived from its run id).
func jitterFor(runID string, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := sha256.Sum256([]byte(runID))
	return time.Duration(binary.BigEndian.Uint64(h[:8]) % uint64(max))
}

// entryRunEnded takes a finished run of a schedule entry out of the
// entry's current runs: it records the run as the entry's last, pauses the
// entry after pause_on_failure consecutive failures, and starts the oldest
// buffered tick. Calling it again for the same run changes nothing.
func (w *Worker) entryRunEnded(ctx context.Context, rs *events.RunState) {
	if rs == nil || rs.ScheduleEntry == "" || rs.Sequence == "" || !events.Finished(rs.Status) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	def, _, err := w.cat.get(ctx, rs.Sequence)
	if err != nil {
		return
	}
	e := def.Entry(rs.ScheduleEntry)
	if e == nil {
		return
	}
	var start []events.ScheduleTick
	paused := false
	_, err = w.updateEntry(ctx, def.Name, e.Name, func(st *events.ScheduleState) error {
		start, paused = nil, false
		d := overlap.Ended(e, policyState(st), *runEnd(rs), time.Now().UTC())
		if !d.Changed {
			return errNoChange
		}
		setPolicyState(st, d.State)
		paused = d.PausedNow
		for _, b := range d.Start {
			start = append(start, events.ScheduleTick(b))
		}
		return nil
	})
	if err != nil {
		w.log.Warn("schedule state not updated after a run ended; the entry's next tick does it", "run", rs.RunID, "err", err)
		return
	}
	if paused {
		w.countTick(ctx, def.Name, "paused_on_failure")
		w.log.Warn("schedule entry paused after consecutive failures", "sequence", def.Name, "entry", e.Name, "run", rs.RunID)
	}
	w.startBuffered(ctx, def, e, start)
}

// cancelForTick cancels run runID of an entry for the tick that replaces
// it (overlap cancel_other), as seq.cancel does (recordCancel, cancel.go):
// a run whose holder beats gets the cancel recorded and a cancelling event
// (its holder stops it and the run's end starts the tick); another is
// cancelled here. A run that had finished already ends its part in the
// entry.
func (w *Worker) cancelForTick(ctx context.Context, runID, by string) {
	st, cur, err := w.recordCancel(ctx, runID, "schedule", "overlap cancel_other: the tick "+by+" replaces it")
	switch {
	case err != nil:
		w.log.Warn("cancel_other: cancel not recorded", "run", runID, "err", err)
	case st == nil && cur != nil:
		w.entryRunEnded(ctx, cur)
	}
}

// entryTickRunID is the run id of a tick of a schedule entry: TickRunID of
// the sequence for the entry "default" (the ids of ticks before entries),
// else of "SEQUENCE-ENTRY".
func entryTickRunID(sequence, entry string, at time.Time, msg jetstream.Msg) string {
	if entry == "" || entry == seq.DefaultEntry {
		return TickRunID(sequence, at, msg)
	}
	return TickRunID(sequence+"-"+entry, at, msg)
}

// catchUp runs the ticks of entry e that the server did not fire between
// the last tick seen and t (a NATS server outage: the server fires one
// tick for all it missed): those within the entry's catchup_window are
// admitted in order through the overlap policy, before t; older ones are
// counted and recorded as missed. At most events.MaxBackfillTicks are
// caught up; the rest count as missed too. It returns an error when the
// entry's state or a caught-up tick's run state cannot be read or written
// (NATS failing over): the caller gives t back, so that its next delivery
// catches up again before t moves the entry's last tick past the missed
// ones (ticks admitted already are then redeliveries, decided the same).
func (w *Worker) catchUp(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, t tick) error {
	st, _, err := w.readEntry(ctx, def.Name, e.Name)
	if err != nil {
		return err
	}
	if st.LastTick.IsZero() || !t.at.After(st.LastTick) {
		return nil
	}
	from := st.LastTick.Add(time.Second)
	if e.Every > 0 {
		from = st.LastTick.Add(time.Duration(e.Every))
	}
	times := ticksBetween(e, from, t.at.Add(-time.Millisecond), events.MaxBackfillTicks)
	window := time.Duration(e.CatchupWindow)
	var catch []time.Time
	var missed []time.Time
	for _, m := range times {
		if t.at.Sub(m) > window || len(catch) >= events.MaxBackfillTicks {
			missed = append(missed, m)
		} else {
			catch = append(catch, m)
		}
	}
	if len(missed) > 0 {
		recorded := false
		_, err := w.updateEntry(ctx, def.Name, e.Name, func(st *events.ScheduleState) error {
			recorded = !missed[len(missed)-1].After(st.LastTick)
			if recorded {
				return errNoChange // recorded by an earlier delivery of t
			}
			st.Missed += int64(len(missed))
			st.LastTick = missed[len(missed)-1] // counted: a redelivery of t does not count them again
			st.Recent = append(st.Recent, events.ScheduleTick{At: missed[len(missed)-1], Trigger: events.TriggerSchedule, Outcome: events.TickMissed, Seen: time.Now().UTC(),
				Why: fmt.Sprintf("%d tick(s) from %s not fired during an outage, older than the catchup_window %s", len(missed), missed[0].Format(time.RFC3339), window)})
			if n := len(st.Recent) - events.MaxRecentTicks; n > 0 {
				st.Recent = slices.Delete(st.Recent, 0, n)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !recorded {
			w.countTick(ctx, def.Name, events.TickMissed)
			w.emitSchedule(ctx, &events.ScheduleEvent{Sequence: def.Name, Entry: e.Name, Schedule: e.Pattern(), TimeZone: e.TimeZone, Status: events.TickMissed,
				RunID: t.runID, TickAt: missed[0], Error: fmt.Sprintf("%d tick(s) older than the catchup_window %s not run", len(missed), window)})
		}
	}
	for _, m := range catch {
		ct := tick{runID: entryTickRunID(def.Name, e.Name, m, nil), at: m, trigger: events.TriggerSchedule}
		var cur *events.RunState
		err := w.persist(ctx, "catch-up tick's run state read", func(ctx context.Context) (err error) {
			cur, _, err = w.readState(ctx, ct.runID)
			return err
		})
		if err != nil {
			return fmt.Errorf("catch-up tick %s: whether it ran cannot be told: %w", ct.runID, err)
		}
		if cur != nil {
			continue // it ran: not again
		}
		a, err := w.admit(ctx, def, e, ct)
		if err != nil {
			return fmt.Errorf("catch-up tick %s not admitted: %w", ct.runID, err)
		}
		w.settle(ctx, def, e, ct, a)
		if a.outcome == events.TickStarted && !a.again {
			if err := w.enqueueTick(ctx, def, e, ct.runID, ct.at, ct.trigger); err != nil {
				w.log.Warn("catch-up tick not queued", "sequence", def.Name, "entry", e.Name, "run", ct.runID, "err", err)
			}
		}
	}
	return nil
}
