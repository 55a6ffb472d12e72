package seqworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// errLost: the run's RUNS state was written by a later delivery (another
// worker took the run over); this worker must stop and leave it alone.
var errLost = errors.New("seqworker: run taken over by a later delivery")

// errCancelled is the cause of a run context cancelled by a cancel
// request (seq.cancel).
var errCancelled = errors.New("seqworker: run cancelled on request")

// errHandBack is returned by the observer of a run whose worker is
// stopping: the group just finished is checkpointed, no further group
// starts, and the run is handed back to the queue.
var errHandBack = errors.New("seqworker: worker stopping; run handed back after its last finished group")

// run is one delivery of a run request that this worker holds: its
// request, its state in RUNS and the revision of that state. Its
// checkpoints, heartbeats and the cancel signal all write the state, under
// mu, compare-and-set on rev.
type run struct {
	w       *Worker
	msg     jetstream.Msg
	req     *events.RunRequest
	attempt int // the run's delivery order in RUNS (a resume's goes on from the parked one's)
	// delivery is this request's own delivery count (the message's
	// NumDelivered): the MaxDeliver budget. A resume's starts at 1
	// (docs/runs.md, "Waiting runs").
	delivery int
	log      *slog.Logger
	cancel   context.CancelCauseFunc
	ctx      context.Context // the run's context (cancelled with cancel)

	// mu guards st, rev and refs.
	mu   sync.Mutex
	st   *events.RunState // nil until claimed
	rev  uint64
	refs map[string]events.SlotRef // slot values already in the object store

	// wrote is when the state was last written (unix ns; 0 until the run
	// is claimed), for the heartbeat.
	wrote atomic.Int64
	// progressAt is when the request last had an in-progress ack (unix
	// ns; at first its delivery), and beatBusy is set while a heartbeat
	// write is under way (heartbeat.go).
	progressAt atomic.Int64
	beatBusy   atomic.Bool
}

// handleRun processes one delivery of a run request. The outcome decides
// the message's fate: Ack after the final state is stored, Term for a run
// that cannot succeed, Nak at once for a run handed back by a stopping
// worker, NakWithDelay for a passing failure, nothing at all when another
// delivery owns the run.
func (w *Worker) handleRun(msg jetstream.Msg) {
	ctx, span := events.StartReceiveSpan(w.runCtx, msg.Headers(), msg.Subject(), len(msg.Data()))
	err := w.processRun(ctx, &heldMsg{Msg: msg})
	events.EndSpan(span, err)
}

// processRun: decode the request, claim the run (reading the sequence
// meanwhile), run it from its checkpoint, and store the outcome.
func (w *Worker) processRun(ctx context.Context, msg jetstream.Msg) error {
	attempt := 1
	if md, err := msg.Metadata(); err == nil {
		attempt = int(md.NumDelivered)
	}
	req, runID, err := decodeRunRequest(msg)
	log := w.log.With("run", runID, "attempt", attempt)
	if err != nil {
		log.Warn("run request rejected", "err", err)
		if runID != "" {
			w.failRun(ctx, runID, req.Sequence, attempt, err.Error())
		}
		_ = msg.TermWithReason(clip(err.Error(), 200))
		return err
	}
	// A resume continues a tick already admitted (its entry's overlap
	// policy counted it when it started), so it is no new tick.
	if req.Resume == nil && (req.Trigger == events.TriggerSchedule || req.ScheduleEntry != "") && !w.admitDelivery(ctx, msg, req) {
		return nil // skipped, buffered, dropped or delayed for its jitter (entries.go)
	}
	w.noteDelivery(ctx, req, attempt)
	if attempt > 1 {
		w.followSoon() // its ack wait may have changed (follow.go)
	}
	// The heartbeat starts at once (in-progress acks; state writes once
	// the run is claimed), so a slow claim never lets the server hand the
	// request to another worker.
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &run{w: w, msg: msg, req: req, attempt: attempt, delivery: attempt, log: log, cancel: cancel, ctx: rctx}
	w.beatStart(r)
	defer w.beatStop(r)
	// The sequence: the catalog's copy, or read from the bucket
	// meanwhile the run is claimed.
	type resolved struct {
		def *definition
		err error
	}
	var res resolved
	var seqCh chan resolved
	if def, ok, err := w.resolveDefNow(req); ok {
		res = resolved{def, err}
	} else {
		seqCh = make(chan resolved, 1)
		go func() {
			var def *definition
			err := w.persist(rctx, "read the sequence", func(octx context.Context) (err error) {
				def, err = w.resolveDef(octx, req)
				return err
			})
			seqCh <- resolved{def, err}
		}()
	}
	cur, done, err := r.claim(rctx)
	if err == nil && !done {
		w.hold(r)
		defer w.release1(r)
	} else {
		cancel(nil) // the sequence is not needed
	}
	if seqCh != nil {
		res = <-seqCh
	}
	if err != nil {
		if isTerminal(err) {
			log.Warn("run request refused", "err", err)
			_ = msg.TermWithReason(clip(err.Error(), 200))
			return err
		}
		return w.retry(ctx, msg, req, attempt, r.attempt, err)
	}
	if done {
		return nil
	}
	return r.execute(ctx, rctx, cur, res.def, res.err)
}

// claim makes this delivery the run's holder: it writes the running state
// over the queued (or interrupted, or running-but-abandoned) one,
// compare-and-set. It returns the state found (nil for a new run) and
// done = true when there is nothing to run: the run finished or was
// cancelled (the request is acknowledged), or a later delivery owns it.
//
// On a first delivery without a claim hint (a request published directly)
// the claim is a create-only write. Otherwise the state is read first: a
// hint (events.HeaderPendingRevision, set by enqueue) only says that a
// queued state exists; it is honoured when the state at that revision is
// queued and was made from this very request (the same digest), and a
// state made from another request under the same run id is refused.
//
// A running state whose holder is another worker that still beats
// (holderWatch) is not taken over: the server redelivered the request
// while its holder lives (after a restart or a leader change that lost
// the holder's in-progress acks). This delivery then waits, holding the
// request, until the run finishes (the request is acknowledged) or the
// holder falls silent (the run is claimed).
//
// Passing failures of NATS are retried (persist) rather than handed back.
func (r *run) claim(ctx context.Context) (cur *events.RunState, done bool, err error) {
	w, req := r.w, r.req
	now := time.Now().UTC()
	digest := events.RequestDigest(req)
	st := &events.RunState{RunID: req.RunID, Sequence: req.Sequence, Status: events.StatusRunning, Trigger: trigger(req), Worker: w.cfg.WorkerID,
		Heartbeat: now, Args: req.Args, Inline: req.Inline, Agent: req.Agent, BootID: req.BootID, Request: digest, Attempt: r.attempt,
		RetryOf: req.RetryOf, CreatedAt: now, StartedAt: now, UpdatedAt: now}
	if req.Trigger == events.TriggerSchedule || req.Trigger == events.TriggerManualTick || req.Trigger == events.TriggerBackfill {
		st.ScheduledAt = req.RequestedAt
	}
	st.ScheduleEntry = req.ScheduleEntry
	hint, _ := strconv.ParseUint(r.msg.Headers().Get(events.HeaderPendingRevision), 10, 64)
	if r.attempt == 1 && hint == 0 && req.Trigger != events.TriggerSchedule && req.Resume == nil {
		var rev uint64
		err := w.persist(ctx, "store run state", func(octx context.Context) (err error) {
			rev, err = w.writeState(octx, st, 0)
			return err
		})
		if err == nil {
			r.setState(st, rev)
			return nil, false, nil
		}
		if !errors.Is(err, errConflict) {
			return nil, false, fmt.Errorf("store run state: %w", err)
		}
	}
	var waited time.Time // since when a live holder is waited for
	var live holderWatch
	memo, memoRev, known := w.takeQueued(req.RunID, digest)
	leaderRead := false // a resume's state was read from the RUNS leader
	for conflicts := 0; conflicts < 3; {
		var cur *events.RunState
		var rev uint64
		if known {
			// This worker queued the run and knows its state at memoRev:
			// no read (queued.go); the compare-and-set below checks it.
			cur, rev, known = memo, memoRev, false
		} else if err := w.persist(ctx, "read run state", func(octx context.Context) (err error) {
			cur, rev, err = w.readState(octx, req.RunID)
			return err
		}); err != nil {
			return nil, false, fmt.Errorf("read run state: %w", err)
		}
		if req.Resume != nil && !leaderRead && (cur == nil || resumable(req, cur) != nil) {
			// A resume is dropped only on the leader's word: the read
			// above may come from a replica that lags behind (its node
			// just restarted) and show the run as it was before it
			// waited, which would lose the resume for good.
			leaderRead = true
			var lcur *events.RunState
			var lrev uint64
			err := w.persist(ctx, "read run state from the leader", func(octx context.Context) (err error) {
				lcur, lrev, err = w.readStateLeader(octx, req.RunID)
				return err
			})
			if err != nil {
				return nil, false, fmt.Errorf("read run state: %w", err)
			}
			if lrev != rev {
				r.log.Info("a stale read of the run's state; the leader's is newer", "read_revision", rev, "leader_revision", lrev)
				memo, memoRev, known = lcur, lrev, true
				continue
			}
		}
		if cur != nil {
			if err := resumable(req, cur); err != nil { // wait.go
				r.log.Info("request dropped", "why", err)
				_ = r.msg.Ack()
				return nil, true, nil
			}
			if req.Resume != nil && cur.Attempt >= r.attempt {
				// A resume continues the run's deliveries: a later one than
				// the delivery that parked it.
				r.attempt = cur.Attempt + r.attempt
				st.Attempt = r.attempt
			}
			switch {
			case cur.Request != "" && cur.Request != digest:
				return nil, false, &terminalError{fmt.Errorf("%w: run id %q belongs to another request (sequence %q with other arguments or definition); this request is dropped",
					errRunIDReused, req.RunID, cur.Sequence)}
			case events.Finished(cur.Status):
				_ = r.msg.Ack() // a duplicate, or a redelivery after the ack was lost
				// A queued tick cancelled: its schedule entry goes on (entries.go).
				w.entryRunEnded(ctx, cur)
				return nil, true, nil
			case cur.Attempt > r.attempt:
				r.log.Info("stale delivery; a later delivery owns the run", "owner_attempt", cur.Attempt)
				return nil, true, nil
			case cur.Cancel != nil:
				// Cancelled while queued, or while its holder was gone.
				r.setState(cur, rev)
				r.finishCancelled(ctx, nil, nil)
				return nil, true, nil
			case cur.Status == events.StatusRunning && ((cur.Worker != w.cfg.WorkerID && !live.silent(cur.Heartbeat, w.beatEvery())) || w.holds(req.RunID, r)):
				// Another worker that still beats holds the run, or this
				// worker does, on an earlier delivery it is still running:
				// alive by definition, whatever the stored heartbeat's age
				// (it may have been written at an ack wait since lowered).
				// Before, such a redelivery could take the run over from its
				// own worker and run the group again.
				if waited.IsZero() {
					waited = time.Now()
					r.log.Info("the run is held by a live worker; waiting for it instead of taking the run over", "holder", cur.Worker, "holder_attempt", cur.Attempt,
						"heartbeat_age", time.Since(cur.Heartbeat).Round(time.Millisecond))
				}
				sleepCtx(ctx, w.beatEvery()/2)
				if ctx.Err() != nil {
					return nil, false, ctx.Err()
				}
				continue
			}
			if !waited.IsZero() {
				r.log.Info("the holder fell silent; taking the run over", "holder", cur.Worker, "waited", time.Since(waited).Round(time.Millisecond))
			}
			if hint != 0 && hint == rev && cur.Status == events.StatusQueued {
				r.log.Debug("claim hint honoured", "revision", hint)
			}
			st.CreatedAt = cur.CreatedAt
			if st.Sequence == "" {
				st.Sequence = cur.Sequence
			}
			if !cur.StartedAt.IsZero() && cur.Status != events.StatusQueued {
				st.StartedAt = cur.StartedAt
			}
			if !cur.ScheduledAt.IsZero() {
				st.ScheduledAt = cur.ScheduledAt
			}
			if st.Trigger == events.TriggerManual && cur.Trigger != "" {
				st.Trigger = cur.Trigger
			}
			if st.ScheduleEntry == "" {
				// A request without the entry (a resume after a wait): the
				// run stays its entry's, so its end leaves the entry's
				// current runs (entryRunEnded).
				st.ScheduleEntry = cur.ScheduleEntry
			}
			st.FinishedGroups, st.Groups, st.Slots, st.SlotRefs, st.Result = cur.FinishedGroups, cur.Groups, cur.Slots, cur.SlotRefs, cur.Result
			st.Definition = cur.Definition // the definition it started with (definition.go)
			st.RetryOf, st.RetriedBy = cur.RetryOf, cur.RetriedBy
			st.Resumed = cur.Resumed
			if req.Resume != nil && cur.Wait != nil {
				st.Resumed = cur.Wait // this resume's wait (wait.go)
			}
		}
		var nrev uint64
		err := w.persist(ctx, "store run state", func(octx context.Context) (err error) {
			nrev, err = w.writeState(octx, st, rev)
			return err
		})
		if errors.Is(err, errConflict) {
			conflicts++
			continue // changed meanwhile (a cancel, another delivery, this one's own write): look again
		}
		if err != nil {
			return nil, false, fmt.Errorf("store run state: %w", err)
		}
		r.setState(st, nrev)
		return cur, false, nil
	}
	r.log.Info("run claimed by another delivery")
	return nil, true, nil
}

// setState sets the run's state and its revision.
func (r *run) setState(st *events.RunState, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st, r.rev = st, rev
	r.wrote.Store(time.Now().UnixNano())
}

func trigger(req *events.RunRequest) string {
	if req.Trigger == "" || req.Trigger == events.TriggerCall {
		return events.TriggerManual
	}
	return req.Trigger
}

// execute runs the claimed run from its checkpoint cur (nil: from the
// start) with the definition it started with, and stores the outcome.
func (r *run) execute(ctx, rctx context.Context, cur *events.RunState, def *definition, serr error) error {
	w, msg, req := r.w, r.msg, r.req
	if serr == nil {
		def, serr = r.definitionFor(rctx, cur, def) // definition.go
	} else if errors.Is(serr, errNoSequence) && cur != nil && cur.Definition != nil && cur.Definition.Object != "" {
		// The sequence was deleted since the run started (a waiting run,
		// a resume after a crash): it finishes with the definition it
		// started with, read back from its copy (docs/runs.md, "The
		// definition a run uses").
		def, serr = r.definitionFor(rctx, cur, &definition{})
	}
	if serr != nil {
		if !isTerminal(serr) {
			return r.retry(ctx, serr)
		}
		r.log.Warn("run cannot succeed", "err", serr)
		w.failRun(ctx, req.RunID, req.Sequence, r.attempt, serr.Error())
		_ = msg.TermWithReason(clip(serr.Error(), 200))
		return serr
	}
	s := def.seq
	if req.Trigger == events.TriggerSchedule && !s.Scheduled() {
		// A tick of a schedule whose sequence lost its schedule: drop the
		// tick and fix the schedule.
		r.log.Info("tick of an unscheduled sequence dropped", "sequence", s.Name)
		w.requestReconcile(req.Sequence)
		w.failRun(ctx, req.RunID, s.Name, r.attempt, "the sequence is no longer scheduled; this tick was dropped")
		_ = msg.TermWithReason("sequence no longer scheduled")
		return nil
	}
	args, err := decodeArgs(req.Args)
	if err != nil {
		w.failRun(ctx, req.RunID, s.Name, r.attempt, err.Error())
		_ = msg.TermWithReason(clip(err.Error(), 200))
		return err
	}

	var opts []seq.RunOption
	r.mu.Lock()
	r.st.Sequence, r.st.Groups = s.Name, len(s.Groups)
	r.mu.Unlock()
	r.recordDefinition(rctx, def)
	var resume *seq.Result
	if cur != nil && cur.FinishedGroups > 0 && len(cur.Result) > 0 {
		err := w.persist(rctx, "read the checkpoint", func(octx context.Context) (err error) {
			resume, err = r.checkpoint(octx, cur)
			return err
		})
		if err != nil {
			return r.retry(ctx, fmt.Errorf("read the checkpoint: %w", err))
		}
	}
	if cur != nil && cur.Attempt > 0 {
		w.emit(ctx, &events.RunEvent{RunID: req.RunID, Kind: events.RunResumed, Sequence: s.Name, Group: cur.FinishedGroups, Groups: len(s.Groups),
			Status: events.StatusRunning, Worker: w.cfg.WorkerID, Attempt: r.attempt, Error: cur.Error})
	} else {
		w.emit(ctx, &events.RunEvent{RunID: req.RunID, Kind: events.RunStarted, Sequence: s.Name, Groups: len(s.Groups), Status: events.StatusRunning,
			Worker: w.cfg.WorkerID, Attempt: r.attempt, Trigger: trigger(req), Agent: req.Agent, BootID: req.BootID})
	}
	r.runStarted(ctx, resumedAfter(cur))
	var ended *events.WaitState // the wait this delivery resumes (wait.go)
	if cur != nil && req.Resume != nil {
		ended = cur.Wait
		if ended == nil && cur.Resumed != nil && cur.FinishedGroups < cur.Resumed.Group {
			ended = cur.Resumed // a redelivered resume, its wait group not yet stored
		}
	}
	if ended != nil {
		o, err := waitOutcome(ended) // wait.go
		if err != nil {
			w.failRun(ctx, req.RunID, s.Name, r.attempt, err.Error())
			_ = msg.TermWithReason(clip(err.Error(), 200))
			return err
		}
		opts = append(opts, seq.WithWaitOutcome(o))
		w.waitEvent(ctx, "resumed")
		if ended.Signalled != nil {
			w.purgeTimer(ctx, req.RunID) // the signal came first: its timer is of no use
		}
	}

	coder := &resultCoder{}
	opts = append(opts, seq.WithObserver(seq.ObserverFuncs{Finished: func(ctx context.Context, res *seq.Result, g int) error {
		return r.groupFinished(ctx, s, res, g, coder)
	}}))
	if w.cfg.RetryInitial > 0 || w.cfg.RetryMax > 0 {
		opts = append(opts, seq.WithRetryBackoff(w.cfg.RetryInitial, w.cfg.RetryMax))
	}
	opts = append(opts, seq.WithMaxItems(w.cfg.MaxItems), seq.WithItemProgress(time.Second, func(g, c int, fan seq.FanOut) {
		r.itemProgress(ctx, s, g, c, fan)
	}))

	// Each pass runs from the last finished group. A pass ends early when
	// a tool call was interrupted by a lost NATS connection: the worker
	// waits for the connection and runs the next pass itself, without
	// handing the run back (docs/runs.md, "NATS faults").
	var res *seq.Result
	var runErr error
	for pass := 1; ; pass++ {
		popts := opts
		if resume != nil {
			popts = append(slices.Clip(opts), seq.WithResume(resume))
		}
		pctx, pcancel := context.WithCancelCause(rctx)
		res, runErr = seq.Run(pctx, s, &passCaller{inner: w.caller, cancel: pcancel}, args, popts...)
		cause := context.Cause(pctx)
		pcancel(nil)
		if res.Status != seq.StatusInterrupted || !errors.Is(cause, errBusInterrupted) || rctx.Err() != nil || w.stopping.Load() {
			break
		}
		finished := 0
		for _, g := range res.Groups {
			if g.Status.Finished() {
				finished++
			}
		}
		r.log.Warn("run interrupted by a lost NATS connection; resuming it here after its last finished group", "after_group", finished, "pass", pass+1, "err", cause)
		w.waitConnected(rctx)
		resume = res
	}
	return r.conclude(ctx, s, res, runErr, context.Cause(rctx), coder)
}

// itemProgress publishes a RunItems event: the counts so far of call c
// (0-based) of group g, a for_each call in flight, inside a running group
// result whose other calls are pending (the watchers draw it as they draw
// a group event).
func (r *run) itemProgress(ctx context.Context, s *seq.Sequence, g, c int, fan seq.FanOut) {
	sg := &s.Groups[g]
	gr := seq.GroupResult{Name: sg.Name, Status: seq.GroupRunning, Calls: make([]seq.CallResult, len(sg.Tools))}
	for i, t := range sg.Tools {
		gr.Calls[i] = seq.CallResult{Tool: t.Tool, As: t.As, Status: seq.CallPending}
	}
	gr.Calls[c].ForEach = &fan
	b, err := marshalGroup(&gr)
	if err != nil {
		return
	}
	r.w.emit(ctx, &events.RunEvent{RunID: r.req.RunID, Kind: events.RunItems, Sequence: s.Name, Group: g + 1, Groups: len(s.Groups), GroupName: sg.Name,
		Status: string(seq.GroupRunning), Result: b, Worker: r.w.cfg.WorkerID, Attempt: r.attempt})
}

// groupFinished is the run's observer: it checkpoints every finished group
// but the last (stored with the final state), publishes the group event,
// and stops the run after the group when the worker is stopping.
func (r *run) groupFinished(ctx context.Context, s *seq.Sequence, res *seq.Result, g int, coder *resultCoder) error {
	gr := res.Groups[g]
	last := g == len(res.Groups)-1
	r.w.groupDone(ctx, s, len(r.req.Inline) > 0, &gr)
	if gr.Status.Finished() {
		if err := r.w.checkSlotLimits(s, res, g); err != nil {
			return err
		}
	}
	if !last && gr.Status.Finished() {
		if err := r.store(ctx, func(st *events.RunState) error { return r.fill(ctx, st, res, coder) }); err != nil {
			return err
		}
	}
	grJSON, _ := coder.group(res, g)
	r.w.emit(ctx, &events.RunEvent{RunID: r.req.RunID, Kind: events.RunGroup, Sequence: s.Name, Group: g + 1, Groups: len(s.Groups), GroupName: gr.Name,
		Status: string(gr.Status), Error: gr.Error, Result: grJSON, Worker: r.w.cfg.WorkerID, Attempt: r.attempt})
	if !last && gr.Status.Finished() && r.w.stopping.Load() {
		return errHandBack
	}
	return nil
}

// fill sets the state's checkpoint from a run result: finished groups,
// slots (large ones moved to the object store) and the result JSON.
func (r *run) fill(ctx context.Context, st *events.RunState, res *seq.Result, coder *resultCoder) error {
	now := time.Now().UTC()
	st.UpdatedAt, st.Heartbeat = now, now
	st.FinishedGroups = 0
	for _, g := range res.Groups {
		if g.Status.Finished() {
			st.FinishedGroups++
		}
	}
	inline, refs, err := r.spill(ctx, res.Slots)
	if err != nil {
		return err
	}
	st.Slots, st.SlotRefs = inline, refs
	view := *res
	view.Slots = inline
	st.Result, err = coder.result(&view)
	return err
}

// store applies change to a copy of the run's state and writes it,
// compare-and-set; on success the copy becomes the state. Passing failures
// of NATS are retried (persist) for as long as ctx allows. A conflict
// means someone else wrote the state: a cancel request (the run is
// cancelled: errCancelled), or a later delivery or another worker
// (errLost) — unless the state found is this very delivery's own earlier
// write whose acknowledgement was lost (a timeout across a leader change
// or a reconnect), which is taken as written.
func (r *run) store(ctx context.Context, change func(st *events.RunState) error) error {
	conflicts := 0
	return r.w.persist(ctx, "store run state", func(octx context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		st := *r.st
		if err := change(&st); err != nil {
			return err
		}
		nrev, err := r.w.writeState(octx, &st, r.rev)
		if err == nil {
			r.st, r.rev = &st, nrev
			r.wrote.Store(time.Now().UnixNano())
			return nil
		}
		if !errors.Is(err, errConflict) {
			return err
		}
		cur, rev, rerr := r.w.readState(octx, r.req.RunID)
		if rerr != nil {
			return rerr
		}
		switch {
		case cur == nil || cur.Attempt > r.attempt || cur.Worker != r.w.cfg.WorkerID:
			return errLost
		case cur.Cancel != nil && r.st.Cancel == nil, cur.Cancel != nil && cur.Status == events.StatusCancelled && st.Status != events.StatusCancelled:
			r.st.Cancel, r.rev = cur.Cancel, rev
			if r.cancel != nil {
				r.cancel(errCancelled)
			}
			return errCancelled
		case events.Finished(cur.Status):
			// Written by this delivery (same worker and attempt): the
			// final write went through and its acknowledgement was lost.
			r.st, r.rev = cur, rev
			return nil
		}
		// This delivery's own earlier write (its acknowledgement lost),
		// or a cancel already known: write over it.
		r.rev = rev
		if conflicts++; conflicts > 5 {
			return errLost
		}
		return fmt.Errorf("%w: retrying over revision %d", errRetryOver, rev)
	})
}

// errRetryOver: a compare-and-set write met this delivery's own state at
// another revision; the write is tried again over it (a passing error for
// persist).
var errRetryOver = errors.New("seqworker: run state changed by this delivery")

// conclude stores the run's outcome and settles its request.
func (r *run) conclude(ctx context.Context, s *seq.Sequence, res *seq.Result, runErr, cause error, coder *resultCoder) error {
	w, msg, req := r.w, r.msg, r.req
	var limit *slotLimitError
	switch {
	case errors.Is(runErr, errLost) || errors.Is(cause, errLost):
		r.log.Warn("run taken over by a later delivery; stopping without writing")
		return errLost
	case errors.Is(cause, errCancelled) || errors.Is(runErr, errCancelled):
		r.finishCancelled(ctx, res, coder)
		return nil
	case errors.Is(runErr, errStateTooLarge):
		return r.failTooLarge(ctx, s, runErr) // permanent: toolarge.go
	case errors.Is(runErr, seq.ErrCheckpoint):
		// A checkpoint of another definition (a state of an older worker,
		// without RunState.Definition): fail over the checkpoint, whose
		// groups stay as they ran, rather than storing the new definition's
		// groups all pending.
		r.log.Warn("run cannot resume", "err", runErr)
		w.failRun(ctx, req.RunID, s.Name, r.attempt, runErr.Error())
		_ = msg.TermWithReason(clip(runErr.Error(), 200))
		return runErr
	case errors.As(runErr, &limit):
		// A failed final state naming the limit; the values over it are
		// not stored.
		for _, k := range limit.slots {
			delete(res.Slots, k)
		}
	case res.Status == seq.StatusInterrupted && (w.runCtx.Err() != nil || errors.Is(runErr, errHandBack) || w.stopping.Load()):
		r.handBack(ctx, runErr)
		return runErr
	case res.Status == seq.StatusInterrupted:
		return r.retry(ctx, runErr)
	case res.Status == seq.StatusWaiting:
		return r.park(ctx, s, res, coder) // wait.go
	}
	err := r.store(ctx, func(st *events.RunState) error {
		if ferr := r.fill(ctx, st, res, coder); ferr != nil {
			return ferr
		}
		st.Status = events.StatusSucceeded
		if res.Status != seq.StatusSucceeded || limit != nil {
			st.Status, st.Error = events.StatusFailed, res.Error
			if runErr != nil {
				st.Error = runErr.Error()
			}
		}
		st.FinishedAt = st.UpdatedAt
		return nil
	})
	switch {
	case errors.Is(err, errLost):
		r.log.Warn("run taken over by a later delivery before its result was stored")
		return errLost
	case errors.Is(err, errCancelled):
		r.finishCancelled(ctx, res, coder)
		return nil
	case errors.Is(err, errStateTooLarge):
		return r.failTooLarge(ctx, s, err)
	case errors.As(err, &limit):
		w.failRun(ctx, req.RunID, s.Name, r.attempt, err.Error())
		_ = msg.Ack()
		return err
	case err != nil:
		return r.retry(ctx, fmt.Errorf("store run result: %w", err))
	}
	r.mu.Lock()
	final := *r.st
	r.mu.Unlock()
	w.emit(ctx, &events.RunEvent{RunID: req.RunID, Kind: events.RunFinished, Sequence: s.Name, Groups: len(s.Groups), Group: final.FinishedGroups,
		Status: final.Status, Error: final.Error, Worker: w.cfg.WorkerID, Attempt: r.attempt})
	if err := msg.Ack(); err != nil {
		r.log.Warn("ack run request", "err", err)
	}
	w.runFinished(ctx, &final)
	w.entryRunEnded(ctx, &final) // entries.go
	return nil
}

// handBack records the run as interrupted after its last finished group
// and gives its request back to the queue at once, so another worker (or
// this one restarted) resumes it without waiting for the ack wait.
func (r *run) handBack(ctx context.Context, why error) {
	// The run context may be over (shutdown deadline): write with a
	// short context of its own.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	reason := "the worker stopped"
	if why != nil {
		reason += ": " + why.Error()
	}
	err := r.store(wctx, func(st *events.RunState) error {
		now := time.Now().UTC()
		st.Status, st.Error, st.UpdatedAt, st.Interrupted = events.StatusInterrupted, reason, now, now
		return nil
	})
	if errors.Is(err, errLost) {
		return
	}
	if err != nil {
		r.log.Warn("record interrupted run", "err", err)
	}
	r.mu.Lock()
	n, groups, name := r.st.FinishedGroups, r.st.Groups, r.st.Sequence
	r.mu.Unlock()
	r.w.emit(wctx, &events.RunEvent{RunID: r.req.RunID, Kind: events.RunInterrupted, Sequence: name, Group: n, Groups: groups,
		Status: events.StatusInterrupted, Error: reason, Worker: r.w.cfg.WorkerID, Attempt: r.attempt})
	if err := r.msg.Nak(); err != nil {
		r.log.Warn("hand the run back", "err", err)
	}
	// The Nak is a plain publish: make sure the server has it before Stop
	// returns and the connection is drained (or, in tests, left open).
	if err := r.w.nc.FlushTimeout(2 * time.Second); err != nil {
		r.log.Warn("hand the run back: flush", "err", err)
	}
	r.log.Info("run handed back", "after_group", n)
}

// finishCancelled stores the cancelled final state (with the result so
// far when res is not nil) and acknowledges the request.
func (r *run) finishCancelled(ctx context.Context, res *seq.Result, coder *resultCoder) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if coder == nil {
		coder = &resultCoder{}
	}
	for range 3 {
		err := r.store(wctx, func(st *events.RunState) error {
			if res != nil {
				if err := r.fill(wctx, st, res, coder); err != nil {
					return err
				}
			}
			now := time.Now().UTC()
			st.Status, st.FinishedAt, st.UpdatedAt = events.StatusCancelled, now, now
			st.Error = "cancelled"
			if c := st.Cancel; c != nil {
				st.Error = cancelText(c)
			}
			return nil
		})
		if errors.Is(err, errCancelled) {
			continue // the cancel request's own write: store over it
		}
		if errors.Is(err, errStateTooLarge) && res != nil {
			// The groups after the last checkpoint do not fit: the
			// cancelled state keeps the checkpoint (toolarge.go).
			err = r.finalOverCheckpoint(wctx, func(st *events.RunState) {
				now := time.Now().UTC()
				st.Status, st.FinishedAt, st.UpdatedAt, st.Error = events.StatusCancelled, now, now, "cancelled"
				if c := st.Cancel; c != nil {
					st.Error = cancelText(c)
				}
			})
		}
		if errors.Is(err, errLost) {
			return
		}
		if err != nil {
			r.log.Warn("record cancelled run", "err", err)
		}
		break
	}
	r.mu.Lock()
	st := *r.st
	r.mu.Unlock()
	ev := &events.RunEvent{RunID: r.req.RunID, Kind: events.RunFinished, Sequence: st.Sequence, Group: st.FinishedGroups, Groups: st.Groups,
		Status: events.StatusCancelled, Error: st.Error, Worker: r.w.cfg.WorkerID, Attempt: r.attempt}
	if st.Cancel != nil {
		ev.By, ev.Reason = st.Cancel.By, st.Cancel.Reason
	}
	r.w.emit(wctx, ev)
	_ = r.msg.Ack()
	r.w.runFinished(ctx, &st)
	r.w.entryRunEnded(ctx, &st) // entries.go
}

// cancelText says who cancelled a run and why.
func cancelText(c *events.CancelInfo) string {
	s := "cancelled"
	if c.By != "" {
		s += " by " + c.By
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// retry hands a claimed run back to the queue after a failure that could
// not be waited out here (Worker.retry), first recording it as
// interrupted (best effort, for 2 s), so that the next delivery takes it
// over at once instead of waiting for this worker's heartbeat to go
// silent.
func (r *run) retry(ctx context.Context, err error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if serr := r.store(wctx, func(st *events.RunState) error {
		now := time.Now().UTC()
		st.Status, st.Error, st.UpdatedAt, st.Interrupted = events.StatusInterrupted, "handed back: "+err.Error(), now, now
		return nil
	}); serr != nil && !errors.Is(serr, errLost) && !errors.Is(serr, errCancelled) {
		r.log.Debug("record the handed-back run", "err", serr)
	}
	return r.w.retry(ctx, r.msg, r.req, r.delivery, r.attempt, err)
}

// retry hands a run back to the queue after a passing failure, with a
// doubling delay; on the last allowed delivery of its request (delivery,
// the message's own count: a resume's starts again at 1) it records the
// run as failed instead, at attempt, and terminates it.
func (w *Worker) retry(ctx context.Context, msg jetstream.Msg, req *events.RunRequest, delivery, attempt int, err error) error {
	if md := w.maxDeliverNow(); md > 0 && delivery >= md {
		reason := fmt.Sprintf("gave up after %d deliveries: %v", delivery, err)
		w.log.Error("run failed", "run", req.RunID, "err", reason)
		w.failRun(ctx, req.RunID, req.Sequence, attempt, reason)
		_ = msg.TermWithReason(clip(reason, 200))
		return err
	}
	d := w.cfg.redeliveryDelay(delivery)
	w.log.Warn("run redelivered later", "run", req.RunID, "attempt", attempt, "delivery", delivery, "delay", d, "err", err)
	_ = msg.NakWithDelay(d)
	return err
}

// resolve returns the sequence a request runs.
func (w *Worker) resolve(ctx context.Context, req *events.RunRequest) (*seq.Sequence, error) {
	if len(req.Inline) > 0 {
		s, err := seq.Decode(req.Inline)
		if err != nil {
			return nil, &terminalError{fmt.Errorf("inline sequence: %w", err)}
		}
		return s, nil
	}
	s, _, err := w.cat.get(ctx, req.Sequence)
	if errors.Is(err, errNoSequence) {
		return nil, &terminalError{err}
	}
	return s, err
}

// decodeRunRequest reads a run request message. The run id is the
// message's Nats-Msg-Id (the body's run_id when the header is absent); a
// schedule tick's run id is TickRunID of its scheduler headers. On error
// the request is unusable (terminal) and the run id is what could be read
// — "" when it is not a valid run id (too long, or other characters), so
// that no subject or key is derived from it.
func decodeRunRequest(msg jetstream.Msg) (*events.RunRequest, string, error) {
	req := &events.RunRequest{}
	h := msg.Headers()
	id := h.Get(jetstream.MsgIDHeader)
	resume := h.Get(events.HeaderResume) != "" // a resume's run id is its body's (wait.go)
	if resume {
		id = ""
	}
	tick := h.Get(events.HeaderScheduler) != "" && !resume
	if len(id) > events.MaxRunIDLength {
		return req, "", &terminalError{fmt.Errorf("run request on %s: its %s header is %d bytes long; a run id has at most %d (events.MaxRunIDLength)", msg.Subject(), jetstream.MsgIDHeader, len(id), events.MaxRunIDLength)}
	}
	if err := events.Decode(msg.Data(), req); err != nil {
		_ = json.Unmarshal(msg.Data(), req)
		if id == "" {
			id = req.RunID
		}
		if events.CheckRunID(id) != nil {
			id = ""
		}
		return req, id, &terminalError{fmt.Errorf("run request on %s: %w", msg.Subject(), err)}
	}
	if tick {
		at := TickTime(h.Get(events.HeaderScheduleNext), h.Get(events.HeaderSchedule), msg)
		id = entryTickRunID(req.Sequence, req.ScheduleEntry, at, msg)
		req.Trigger, req.RequestedAt = events.TriggerSchedule, at
	}
	if id == "" {
		id = req.RunID
	}
	req.RunID = id
	if err := events.CheckRunID(id); err != nil {
		return req, "", &terminalError{fmt.Errorf("run request on %s: %w", msg.Subject(), err)}
	}
	return req, id, nil
}

func decodeArgs(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		// In JSON's words, not encoding/json's ("cannot unmarshal array
		// into Go value of type map[string]json.RawMessage").
		got := "not valid JSON"
		if json.Valid(raw) {
			got = "got " + seq.JSONKind(raw)
		}
		return nil, &terminalError{fmt.Errorf("run arguments must be a JSON object of name → value, such as {\"root\": \".\"}; %s", got)}
	}
	return args, nil
}

// TickTime returns the time of a schedule tick itself, not the next one:
// for "@every D" the Nats-Schedule-Next time minus D (the server computes
// the next tick as this tick's time, rounded to the second, plus D); for a
// cron schedule the tick message's stored time truncated to the second
// (cron ticks fire on whole seconds). schedule is the schedule pattern
// ("" when unknown: the stored time is used). Every redelivery of one tick
// gives the same time.
func TickTime(next, schedule string, msg jetstream.Msg) time.Time {
	if rest, ok := strings.CutPrefix(schedule, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil {
			if t, err := time.Parse(time.RFC3339Nano, next); err == nil {
				return t.UTC().Add(-d)
			}
		}
	}
	if msg != nil {
		if md, err := msg.Metadata(); err == nil && !md.Timestamp.IsZero() {
			return md.Timestamp.UTC().Truncate(time.Second)
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, next); err == nil {
		return t.UTC()
	}
	return time.Time{}
}

// TickRunID returns the run id of a schedule tick of sequence: "tick-",
// the sequence name and the tick's own time (UTC, millisecond precision:
// 20060102T150405123Z); a tick whose time is unknown uses the stream
// sequence of the tick message instead. The id is unique per tick and the
// same on every redelivery.
func TickRunID(sequence string, at time.Time, msg jetstream.Msg) string {
	if at.IsZero() {
		var n uint64
		if msg != nil {
			if md, err := msg.Metadata(); err == nil {
				n = md.Sequence.Stream
			}
		}
		return events.BoundedID("tick", sequence, fmt.Sprintf("seq%d", n))
	}
	at = at.UTC()
	stamp := fmt.Sprintf("%s%03dZ", at.Format("20060102T150405"), at.Nanosecond()/1e6)
	id := "tick-" + tokenize(sequence) + "-" + stamp
	if len(id) > events.MaxRunIDLength || tokenize(sequence) != sequence {
		return events.BoundedID("tick", sequence, stamp)
	}
	return id
}

// BootRunID returns the run id of the boot run of sequence for one boot of
// agent: "boot-<agent>-<sequence>-<16 hex digits of a SHA-256 of the three
// values>", the same on every replica and every redelivery. The agent and
// the sequence are written as events.IDPart writes them — an ASCII name as
// it is, any other one as "_" and its base64url, which events.NameForIDPart
// decodes (BootRunID("机器人", "b1", "开机自检") ==
// "boot-_5py65Zmo5Lq6-_5byA5py66Ieq5qOA-aec0b955cf5af8f3"; before, every
// character that was not ASCII became '_', so the boot runs of two agents
// named in Chinese looked alike) — and cut so the id stays within
// events.MaxRunIDLength; the boot id (any bytes) is only in the hash.
func BootRunID(agent, bootID, sequence string) string {
	h := sha256.Sum256([]byte(agent + "\x00" + bootID + "\x00" + sequence))
	sum := hex.EncodeToString(h[:8])
	id := "boot-" + events.IDPart(agent) + "-" + events.IDPart(sequence)
	if room := events.MaxRunIDLength - len(sum) - 1; len(id) > room {
		id = id[:room]
	}
	return id + "-" + sum
}

// tokenize makes s usable inside a subject token (and a KV key).
func tokenize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// tokenOrEmpty returns id when it is a usable run id (events.CheckRunID),
// else "".
func tokenOrEmpty(id string) string {
	if events.CheckRunID(id) != nil {
		return ""
	}
	return id
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
