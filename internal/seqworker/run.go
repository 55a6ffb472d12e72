package seqworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// errLost: the run's RUNS state was written by a later delivery (another
// worker took the run over); this worker must stop and leave it alone.
var errLost = errors.New("seqworker: run taken over by a later delivery")

// errConflict: a compare-and-set write of a RUNS key found another
// revision.
var errConflict = errors.New("seqworker: RUNS revision conflict")

// handleRun processes one delivery of a run request. The outcome decides
// the message's fate: Ack after the final state is stored, Term for a run
// that cannot succeed, NakWithDelay for a passing failure, nothing at all
// when another delivery owns the run.
func (w *Worker) handleRun(msg jetstream.Msg) {
	ctx, span := events.StartReceiveSpan(w.runCtx, msg.Headers(), msg.Subject(), len(msg.Data()))
	err := w.processRun(ctx, msg)
	events.EndSpan(span, err)
}

func (w *Worker) processRun(ctx context.Context, msg jetstream.Msg) error {
	received := time.Now()
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
	// The sequence is read while the run is claimed. On a first delivery
	// the claim is a single write of the running state, which saves
	// reading the state first: a compare-and-set on the revision of the
	// pending state when the request says it (enqueue: seq.run, boot
	// runs), else a create-only write. The state is read only when that
	// write conflicts (a run claimed or finished since, a run id used
	// before, a request published without the hint over a pending state).
	type resolved struct {
		s   *seq.Sequence
		err error
	}
	seqCh := make(chan resolved, 1)
	go func() {
		s, err := w.resolve(ctx, req)
		seqCh <- resolved{s, err}
	}()
	now := time.Now().UTC()
	st := &events.RunState{RunID: runID, Sequence: req.Sequence, Status: events.StatusRunning, Request: events.RequestDigest(req), Attempt: attempt, StartedAt: now, UpdatedAt: now}
	var (
		cur     *events.RunState
		rev     uint64
		claimed bool
	)
	if attempt == 1 && req.Trigger != events.TriggerSchedule {
		// A revision that does not parse is no hint (0: create-only).
		pending, _ := strconv.ParseUint(msg.Headers().Get(headerPendingRevision), 10, 64)
		rev, err = w.writeState(ctx, st, pending)
		claimed = err == nil
		if err != nil && !errors.Is(err, errConflict) {
			<-seqCh
			return w.retry(ctx, msg, req, attempt, fmt.Errorf("store run state: %w", err))
		}
	}
	if !claimed {
		cur, rev, err = w.readState(ctx, runID)
		if err != nil {
			<-seqCh
			return w.retry(ctx, msg, req, attempt, fmt.Errorf("read run state: %w", err))
		}
		if cur != nil {
			if finished(cur.Status) {
				<-seqCh
				_ = msg.Ack() // a duplicate or a redelivery after the ack was lost
				return nil
			}
			if cur.Attempt > attempt {
				<-seqCh
				log.Info("stale delivery; a later delivery owns the run", "owner_attempt", cur.Attempt)
				return nil
			}
		}
	}
	r := <-seqCh
	s, err := r.s, r.err
	if err != nil {
		if !isTerminal(err) {
			return w.retry(ctx, msg, req, attempt, err)
		}
		log.Warn("run cannot succeed", "err", err)
		w.failRun(ctx, runID, req.Sequence, attempt, err.Error())
		_ = msg.TermWithReason(clip(err.Error(), 200))
		return err
	}
	if req.Trigger == events.TriggerSchedule && s.Schedule == "" {
		// A tick of a schedule whose sequence lost its schedule: drop the
		// tick and fix the schedule.
		log.Info("tick of an unscheduled sequence dropped", "sequence", s.Name)
		w.requestReconcile(req.Sequence)
		_ = msg.TermWithReason("sequence no longer scheduled")
		return nil
	}
	args, err := decodeArgs(req.Args)
	if err != nil {
		w.failRun(ctx, runID, s.Name, attempt, err.Error())
		_ = msg.TermWithReason(clip(err.Error(), 200))
		return err
	}

	st.Sequence = s.Name
	var opts []seq.RunOption
	if cur != nil {
		if !cur.StartedAt.IsZero() {
			st.StartedAt = cur.StartedAt
		}
		if cur.FinishedGroups > 0 && len(cur.Result) > 0 {
			var cp seq.Result
			if err := json.Unmarshal(cur.Result, &cp); err == nil {
				opts = append(opts, seq.WithResume(&cp))
				st.FinishedGroups, st.Slots, st.Result = cur.FinishedGroups, cur.Slots, cur.Result
				log.Info("resuming run", "after_group", cur.FinishedGroups)
			}
		}
	}
	if !claimed {
		rev, err = w.writeState(ctx, st, rev)
		if errors.Is(err, errConflict) {
			log.Info("run claimed by another delivery")
			return nil
		}
		if err != nil {
			return w.retry(ctx, msg, req, attempt, fmt.Errorf("store run state: %w", err))
		}
	}
	w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunStarted, Sequence: s.Name, Status: events.StatusRunning})

	coder := &resultCoder{}
	var checkpoints time.Duration // spent encoding and writing checkpoints
	obs := seq.ObserverFuncs{Finished: func(ctx context.Context, r *seq.Result, g int) error {
		gr := r.Groups[g]
		if g < len(r.Groups)-1 && gr.Status.Finished() {
			// The last group and a failed one are stored with the final
			// state right after Run returns.
			t0 := time.Now()
			cp := stateFrom(st, r, coder)
			nrev, err := w.writeState(ctx, cp, rev)
			checkpoints += time.Since(t0)
			if errors.Is(err, errConflict) {
				return errLost
			}
			if err != nil {
				return fmt.Errorf("checkpoint group %d %q: %w", g+1, gr.Name, err)
			}
			rev = nrev
		}
		grJSON, _ := coder.group(r, g)
		w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunGroup, Sequence: s.Name, Group: g + 1, GroupName: gr.Name, Status: string(gr.Status), Error: gr.Error, Result: grJSON})
		return nil
	}}
	opts = append(opts, seq.WithObserver(obs))
	if w.cfg.RetryInitial > 0 || w.cfg.RetryMax > 0 {
		opts = append(opts, seq.WithRetryBackoff(w.cfg.RetryInitial, w.cfg.RetryMax))
	}

	stopKeepalive := w.keepalive(msg)
	runStart := time.Now()
	res, runErr := seq.Run(ctx, s, w.caller, args, opts...)
	stopKeepalive()
	runEnd := time.Now()

	switch {
	case errors.Is(runErr, errLost):
		log.Warn("run taken over by a later delivery; stopping without writing")
		return runErr
	case res.Status == seq.StatusInterrupted && w.runCtx.Err() != nil:
		// Shutdown deadline: the last checkpoint stays; another replica
		// takes the run now.
		_ = msg.Nak()
		return runErr
	case res.Status == seq.StatusInterrupted:
		return w.retry(ctx, msg, req, attempt, runErr)
	}
	final := stateFrom(st, res, coder)
	final.Status = events.StatusSucceeded
	if res.Status != seq.StatusSucceeded {
		final.Status = events.StatusFailed
		final.Error = res.Error
		if runErr != nil {
			final.Error = runErr.Error()
		}
	}
	final.FinishedAt = final.UpdatedAt
	if _, err := w.writeState(ctx, final, rev); err != nil {
		if errors.Is(err, errConflict) {
			log.Warn("run taken over by a later delivery before its result was stored")
			return errLost
		}
		return w.retry(ctx, msg, req, attempt, fmt.Errorf("store run result: %w", err))
	}
	w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunFinished, Sequence: s.Name, Status: final.Status, Error: final.Error})
	if err := msg.Ack(); err != nil {
		log.Warn("ack run request", "err", err)
	}
	if log.Enabled(ctx, slog.LevelDebug) {
		var queued time.Duration
		if md, err := msg.Metadata(); err == nil {
			queued = received.Sub(md.Timestamp)
		}
		log.Debug("run finished", "status", final.Status, "queued", queued, "claim", runStart.Sub(received), "run", runEnd.Sub(runStart), "checkpoints", checkpoints, "store", time.Since(runEnd))
	}
	return nil
}

// retry hands a run back to the queue after a passing failure, with a
// doubling delay; on the last allowed delivery it records the run as
// failed instead and terminates it.
func (w *Worker) retry(ctx context.Context, msg jetstream.Msg, req *events.RunRequest, attempt int, err error) error {
	if w.maxDeliver > 0 && attempt >= w.maxDeliver {
		reason := fmt.Sprintf("gave up after %d deliveries: %v", attempt, err)
		w.log.Error("run failed", "run", req.RunID, "err", reason)
		w.failRun(ctx, req.RunID, req.Sequence, attempt, reason)
		_ = msg.TermWithReason(clip(reason, 200))
		return err
	}
	d := w.cfg.redeliveryDelay(attempt)
	w.log.Warn("run redelivered later", "run", req.RunID, "attempt", attempt, "delay", d, "err", err)
	_ = msg.NakWithDelay(d)
	return err
}

// keepalive sends in-progress acks every third of AckWait until stopped.
func (w *Worker) keepalive(msg jetstream.Msg) func() {
	every := max(w.ackWait/3, 100*time.Millisecond)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// failRun stores a failed final state for runID (unless it finished, or a
// later delivery owns it) and announces it. Best effort: errors are logged.
func (w *Worker) failRun(ctx context.Context, runID, sequence string, attempt int, reason string) {
	for range 3 {
		cur, rev, err := w.readState(ctx, runID)
		if err != nil {
			w.log.Error("record failed run", "run", runID, "err", err)
			return
		}
		now := time.Now().UTC()
		st := &events.RunState{RunID: runID, Sequence: sequence, Status: events.StatusFailed, Error: reason, Attempt: attempt, StartedAt: now, UpdatedAt: now, FinishedAt: now}
		if cur != nil {
			if finished(cur.Status) || cur.Attempt > attempt {
				return
			}
			st.StartedAt, st.FinishedGroups, st.Slots, st.Result = cur.StartedAt, cur.FinishedGroups, cur.Slots, cur.Result
			st.Request = cur.Request
			if st.Sequence == "" {
				st.Sequence = cur.Sequence
			}
		}
		_, err = w.writeState(ctx, st, rev)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			w.log.Error("record failed run", "run", runID, "err", err)
			return
		}
		w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunFinished, Sequence: st.Sequence, Status: events.StatusFailed, Error: reason})
		return
	}
}

func finished(status string) bool {
	return status == events.StatusSucceeded || status == events.StatusFailed
}

// readState returns the RUNS state of runID and its revision; nil, 0 when
// there is none.
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
	return &st, e.Revision(), nil
}

// writeState stores st under its run id, compare-and-set: rev 0 creates
// the key, any other rev must be the key's current revision. Errors:
// errConflict, an encoding error, NATS errors.
func (w *Worker) writeState(ctx context.Context, st *events.RunState, rev uint64) (uint64, error) {
	b, err := encodeState(st)
	if err != nil {
		return 0, err
	}
	var nrev uint64
	if rev == 0 {
		nrev, err = w.runs.Create(ctx, st.RunID, b)
	} else {
		nrev, err = w.runs.Update(ctx, st.RunID, b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, fmt.Errorf("%w: %v", errConflict, err)
	}
	if errors.Is(err, nats.ErrMaxPayload) || (err != nil && strings.Contains(err.Error(), "maximum")) {
		// The state is larger than the bucket allows: keep the outcome,
		// drop the slots and per-call detail.
		small := *st
		small.Slots, small.Result = nil, nil
		small.Error = strings.TrimSpace(st.Error + " (state too large for the RUNS bucket: slots and result dropped)")
		b, _ = events.Encode(&small)
		if rev == 0 {
			nrev, err = w.runs.Create(ctx, st.RunID, b)
		} else {
			nrev, err = w.runs.Update(ctx, st.RunID, b, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, fmt.Errorf("%w: %v", errConflict, err)
		}
	}
	return nrev, err
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
// the request is unusable (terminal) and the run id is what could be read.
func decodeRunRequest(msg jetstream.Msg) (*events.RunRequest, string, error) {
	req := &events.RunRequest{}
	h := msg.Headers()
	id := h.Get(jetstream.MsgIDHeader)
	tick := h.Get(events.HeaderScheduler) != ""
	if err := events.Decode(msg.Data(), req); err != nil {
		_ = json.Unmarshal(msg.Data(), req)
		if id == "" && tick && req.Sequence != "" {
			id = TickRunID(req.Sequence, h.Get(events.HeaderScheduleNext), msg)
		}
		return req, tokenOrEmpty(id), &terminalError{fmt.Errorf("run request on %s: %w", msg.Subject(), err)}
	}
	if tick {
		id = TickRunID(req.Sequence, h.Get(events.HeaderScheduleNext), msg)
		req.Trigger = events.TriggerSchedule
	}
	if id == "" {
		id = req.RunID
	}
	req.RunID = id
	if tokenOrEmpty(id) == "" {
		return req, "", &terminalError{fmt.Errorf("run request on %s: run id %q is not a single subject token (no '.', '*', '>' or spaces)", msg.Subject(), id)}
	}
	return req, id, nil
}

func decodeArgs(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, &terminalError{fmt.Errorf("run arguments must be a JSON object of name → value: %v", err)}
	}
	return args, nil
}

// TickRunID returns the run id of a schedule tick of sequence: "tick-",
// the sequence name and the tick's Nats-Schedule-Next time (UTC,
// millisecond precision: 20060102T150405123Z). Ticks of one schedule are at
// least 1 s apart, so the id is unique per tick and the same on every
// redelivery. A one-shot tick (Nats-Schedule-Next: purge) uses the
// stream sequence of the tick instead.
func TickRunID(sequence, next string, msg jetstream.Msg) string {
	name := tokenize(sequence)
	t, err := time.Parse(time.RFC3339Nano, next)
	if err != nil {
		var n uint64
		if msg != nil {
			if md, err := msg.Metadata(); err == nil {
				n = md.Sequence.Stream
			}
		}
		return fmt.Sprintf("tick-%s-seq%d", name, n)
	}
	t = t.UTC()
	return fmt.Sprintf("tick-%s-%s%03dZ", name, t.Format("20060102T150405"), t.Nanosecond()/1e6)
}

// BootRunID returns the run id of the boot run of sequence for one boot of
// agent: "boot-<agent>-<sequence>-<16 hex digits of a SHA-256 of the three
// values>", the same on every replica and every redelivery.
func BootRunID(agent, bootID, sequence string) string {
	h := sha256.Sum256([]byte(agent + "\x00" + bootID + "\x00" + sequence))
	return "boot-" + tokenize(agent) + "-" + tokenize(sequence) + "-" + hex.EncodeToString(h[:8])
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

// tokenOrEmpty returns id when it is a usable run id (a subject token and
// a KV key), else "".
func tokenOrEmpty(id string) string {
	if id == "" || tokenize(id) != id {
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
