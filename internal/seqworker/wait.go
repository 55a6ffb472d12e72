package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Waiting runs (docs/runs.md, "Waiting runs"). A run that reaches a
// wait_for group is parked: its timer is scheduled on the NATS server
// (a single-fire message on events.WaitTimerSubject whose target is the
// run's seq.run subject), its state becomes waiting, and its request is
// acknowledged — no worker slot, no goroutine holds it. A signal
// (seq.signal) records itself in the state, compare-and-set, and
// publishes a resume request; the timer, when it fires, is one too. The
// worker that claims a resume request (claim: a compare-and-set from
// waiting to running) resumes the run at its wait group; a resume request
// for a wait that already ended, or another wait, is dropped. So each
// wait resumes once, however many resume requests arrive and whichever
// worker takes them.

// errNotWaiting: a resume request for a run that is not waiting for its
// wait (ended already, or another one); it is dropped.
var errNotWaiting = errors.New("seqworker: the run is not waiting for this wait")

// resumeRequest returns the request that resumes st's wait after cause:
// the run's own sequence (or inline definition) and arguments, so that
// its digest is the run's, and the wait's token.
func resumeRequest(st *events.RunState, cause string) *events.RunRequest {
	req := &events.RunRequest{V: events.Version, RunID: st.RunID, Args: st.Args, Trigger: st.Trigger, Agent: st.Agent, BootID: st.BootID,
		RetryOf: st.RetryOf, ScheduleEntry: st.ScheduleEntry, RequestedAt: time.Now().UTC(), Resume: &events.ResumeRequest{Token: st.Wait.Token, Cause: cause}}
	if len(st.Inline) > 0 {
		req.Inline = st.Inline
	} else {
		req.Sequence = st.Sequence
	}
	return req
}

// resumeMsg is the message of resumeRequest on the run's seq.run subject.
func resumeMsg(st *events.RunState, cause string) (*nats.Msg, error) {
	name := st.Sequence
	if len(st.Inline) > 0 {
		name = events.InlineRunToken
	}
	subj, err := events.RunSubject(name)
	if err != nil {
		return nil, err
	}
	b, err := events.Encode(resumeRequest(st, cause))
	if err != nil {
		return nil, err
	}
	m := &nats.Msg{Subject: subj, Data: b, Header: nats.Header{}}
	m.Header.Set(events.HeaderResume, st.Wait.Token)
	return m, nil
}

// publishTimer schedules the timer of st's wait: a message on
// WaitTimerSubject(run) that the server publishes once, at the deadline
// (rounded up to the second, the schedule's precision), as a resume
// request on the run's subject. It replaces the run's earlier timer, if
// any (a schedule is one message per subject).
func (w *Worker) publishTimer(ctx context.Context, st *events.RunState) error {
	m, err := resumeMsg(st, events.ResumeTimer)
	if err != nil {
		return err
	}
	target := m.Subject
	if m.Subject, err = events.WaitTimerSubject(st.RunID); err != nil {
		return err
	}
	at := st.Wait.Deadline.UTC()
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	_, err = events.Publish(ctx, w.js, m, jetstream.WithScheduleAt(at), jetstream.WithScheduleTarget(target))
	return err
}

// purgeTimer removes a run's timer message (best effort: a timer left
// behind fires into a run no longer waiting and is dropped).
func (w *Worker) purgeTimer(ctx context.Context, runID string) {
	subj, err := events.WaitTimerSubject(runID)
	if err != nil {
		return
	}
	if err := w.stream.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		w.log.Debug("purge the wait's timer", "run", runID, "err", err)
	}
}

// waitState makes the WaitState of a run result that stopped at a wait.
func waitState(s *seq.Sequence, res *seq.Result) (*events.WaitState, error) {
	gi, wt := res.WaitingAt()
	if wt == nil {
		return nil, errors.New("seqworker: the run stopped to wait but no group waits")
	}
	ws := &events.WaitState{Group: gi + 1, GroupName: s.Groups[gi].Name, Kind: wt.Kind, Signal: wt.Signal,
		Since: wt.Since.UTC(), Deadline: wt.Deadline.UTC(), Token: nuid.Next()}
	if len(wt.Out) > 0 {
		ws.Out = make(map[string]string, len(wt.Out))
		for k, t := range wt.Out {
			ws.Out[k] = string(t)
		}
	}
	return ws, nil
}

// runsTTLCache is the RUNS bucket's TTL (its max age: seqworker
// --runs-ttl when the bucket was made, or as changed on the bucket since)
// as last read, read again when older than runsTTLFresh.
type runsTTLCache struct {
	mu  sync.Mutex
	ttl time.Duration // 0: runs are kept
	at  time.Time     // when it was read; zero: never
}

// runsTTLFresh is how long a read of the RUNS bucket's TTL is used.
const runsTTLFresh = 30 * time.Second

// waitRetentionMargin is how long before its run's state would expire a
// wait must end, for its resume to find the state (docs/runs.md,
// "Waiting runs").
const waitRetentionMargin = time.Minute

// runsRetention returns the RUNS bucket's TTL (0: kept for ever), read
// from the bucket's status at most every runsTTLFresh. Errors: NATS
// errors of the status request.
func (w *Worker) runsRetention(ctx context.Context) (time.Duration, error) {
	c := &w.runsTTL
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < runsTTLFresh {
		return c.ttl, nil
	}
	st, err := w.runs.Status(ctx)
	if err != nil {
		return 0, err
	}
	c.ttl, c.at = st.TTL(), time.Now()
	return c.ttl, nil
}

// waitPastRetention says why the wait ws, parked at now, would outlive
// its run's state in a RUNS bucket of TTL ttl (a state expires ttl after
// its last write, the parking one); "" when it ends at least
// waitRetentionMargin before that, or when runs are kept (ttl 0).
func waitPastRetention(ws *events.WaitState, ttl time.Duration, now time.Time) string {
	if ttl <= 0 || !ws.Deadline.After(now.Add(ttl-waitRetentionMargin)) {
		return ""
	}
	return fmt.Sprintf("group %d (%s): its wait ends at %s, %s from now, but the %s bucket keeps a run's state %s after its last write (its TTL: seqworker --runs-ttl, or the bucket's max age), "+
		"so the waiting run would vanish before it resumes; make the wait end at least %s sooner (its timeout, duration or until) or raise --runs-ttl or the bucket's max age above the wait (docs/runs.md, \"Waiting runs\")",
		ws.Group, ws.GroupName, ws.Deadline.Format(time.RFC3339), ws.Deadline.Sub(now).Round(time.Second), events.BucketRuns, ttl, ws.Deadline.Sub(now.Add(ttl-waitRetentionMargin)).Round(time.Second))
}

// park stores a run that stopped at a wait and lets its request go: the
// timer first (a waiting state always has its timer; a timer whose state
// was never written finds no wait and is dropped), then the waiting
// state, the waiting event, the ack. A wait that would outlive its run's
// state in RUNS (waitPastRetention) fails the run at its wait group
// instead, saying the TTL and the fix.
func (r *run) park(ctx context.Context, s *seq.Sequence, res *seq.Result, coder *resultCoder) error {
	w := r.w
	ws, err := waitState(s, res)
	if err != nil {
		return r.retry(ctx, err)
	}
	if ttl, err := w.runsRetention(ctx); err != nil {
		r.log.Warn("the RUNS bucket's TTL not read; the wait is parked unchecked", "err", err)
	} else if why := waitPastRetention(ws, ttl, time.Now()); why != "" {
		r.log.Error("run failed: its wait outlives its state", "err", why)
		w.failRun(ctx, r.req.RunID, s.Name, r.attempt, why)
		_ = r.msg.TermWithReason(clip(why, 200))
		return errors.New(why)
	}
	r.mu.Lock()
	pst := *r.st
	r.mu.Unlock()
	pst.Wait = ws
	if err := w.persist(ctx, "schedule the wait's timer", func(octx context.Context) error { return w.publishTimer(octx, &pst) }); err != nil {
		return r.retry(ctx, fmt.Errorf("schedule the wait's timer: %w", err))
	}
	err = r.store(ctx, func(st *events.RunState) error {
		if ferr := r.fill(ctx, st, res, coder); ferr != nil {
			return ferr
		}
		st.Status, st.Wait, st.Error = events.StatusWaiting, ws, ""
		return nil
	})
	switch {
	case errors.Is(err, errLost):
		return errLost
	case errors.Is(err, errCancelled):
		w.purgeTimer(ctx, r.req.RunID)
		r.finishCancelled(ctx, res, coder)
		return nil
	case errors.Is(err, errStateTooLarge):
		w.purgeTimer(ctx, r.req.RunID)
		return r.failTooLarge(ctx, s, err)
	case err != nil:
		return r.retry(ctx, fmt.Errorf("store the waiting state: %w", err))
	}
	r.mu.Lock()
	st := *r.st
	r.mu.Unlock()
	w.emit(ctx, &events.RunEvent{RunID: r.req.RunID, Kind: events.RunWaiting, Sequence: s.Name, Group: ws.Group, GroupName: ws.GroupName, Groups: len(s.Groups),
		Status: events.StatusWaiting, Worker: w.cfg.WorkerID, Attempt: r.attempt, Wait: ws})
	if err := r.msg.Ack(); err != nil {
		r.log.Warn("ack the request of a waiting run", "err", err)
	}
	w.waitEvent(ctx, "started")
	r.log.Info("run waiting", "group", ws.Group, "kind", ws.Kind, "signal", ws.Signal, "deadline", ws.Deadline, "finished_groups", st.FinishedGroups)
	return nil
}

// resumable checks a resume request against the run's state cur: it
// resumes cur's wait only when cur waits with the request's token (and,
// for a signal, the signal is recorded). A run request that is not a
// resume finds a waiting run nothing to do (the request that parked it,
// redelivered). The error says why the request is dropped.
func resumable(req *events.RunRequest, cur *events.RunState) error {
	switch {
	case req.Resume == nil && cur.Status == events.StatusWaiting:
		return fmt.Errorf("%w: it waits for its signal or timer, and this request is not a resume", errNotWaiting)
	case req.Resume == nil:
		return nil
	case cur.Status != events.StatusWaiting && !events.Finished(cur.Status) && cur.Resumed != nil && cur.Resumed.Token == req.Resume.Token:
		return nil // the resume that resumed it, delivered again (handed back, or its worker died): the run goes on
	case cur.Status != events.StatusWaiting || cur.Wait == nil:
		return fmt.Errorf("%w: it is %s", errNotWaiting, cur.Status)
	case cur.Wait.Token != req.Resume.Token:
		return fmt.Errorf("%w: it waits at group %d with another wait", errNotWaiting, cur.Wait.Group)
	case req.Resume.Cause == events.ResumeSignal && cur.Wait.Signalled == nil:
		return fmt.Errorf("%w: no signal is recorded", errNotWaiting)
	}
	return nil
}

// waitOutcome is the outcome a claimed resume gives the engine: the
// recorded signal when there is one (a signal beats a timer that fired
// meanwhile), else the timer.
func waitOutcome(ws *events.WaitState) (seq.WaitOutcome, error) {
	o := seq.WaitOutcome{Group: ws.Group, Cause: seq.CauseTimer, Since: ws.Since, Deadline: ws.Deadline, At: time.Now().UTC()}
	if sig := ws.Signalled; sig != nil {
		o.Cause, o.Reject, o.Reason, o.By, o.At = seq.CauseSignal, sig.Reject, sig.Reason, sig.By, sig.At
		if len(sig.Values) > 0 && string(sig.Values) != "null" {
			if err := json.Unmarshal(sig.Values, &o.Values); err != nil {
				return o, &terminalError{fmt.Errorf("the recorded signal's values are not a JSON object: %w", err)}
			}
		}
	}
	return o, nil
}

// serveSignal is skillbus.seq.signal (events.SeqSignalRequest →
// events.RunState): the first signal of a waiting run's wait is recorded
// in its state, compare-and-set, and a resume request is published; any
// other is refused (docs/runs.md, "Waiting runs").
func (w *Worker) serveSignal(ctx context.Context, req micro.Request) {
	var in events.SeqSignalRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	if in.Reject && strings.TrimSpace(in.Reason) == "" {
		// As a pause needs a note: a rejection records why, for every client.
		_ = req.Error("400", "a rejection needs a reason: say why the wait is rejected (it becomes the group's error); the request's reason is empty or only spaces", nil)
		return
	}
	in.Name = seq.NormalizeName(in.Name)
	var values map[string]json.RawMessage
	if len(in.Values) > 0 && string(in.Values) != "null" {
		if err := json.Unmarshal(in.Values, &values); err != nil {
			_ = req.Error("400", "signal values must be a JSON object of name → value: "+err.Error(), nil)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// One time for every write of this request: a write whose reply was
	// lost (a RUNS leader killed after it stored the value) is known for
	// this request's own when the state is read again (ownSignal).
	now := time.Now().UTC()
	for try := newCASRetry(5 * time.Second); try.next(ctx); {
		cur, rev, ok := w.requestedRun(ctx, req, in.RunID)
		if !ok {
			return
		}
		if cur.Status == events.StatusWaiting && cur.Wait != nil && ownSignal(cur.Wait.Signalled, &in, now) {
			w.signalled(ctx, req, &in, cur)
			return
		}
		if msg := signalRefused(cur, in.Name); msg != "" {
			if cur.Status == events.StatusWaiting && cur.Wait != nil && cur.Wait.Signalled != nil {
				// Signalled, and still waiting: the first signal's resume
				// may not have been queued (its worker failed between
				// the two writes). Queue it again — the stream drops it
				// as a duplicate when it was — so a repeated signal
				// never leaves the run waiting for its timer.
				w.requeueResume(ctx, cur)
			}
			_ = req.Error("409", msg, nil)
			return
		}
		if !in.Reject {
			sig := seq.Signature{}
			for k, t := range cur.Wait.Out {
				sig[k] = seq.Type(t)
			}
			if probs := runargs.Problems(sig, values); len(probs) > 0 {
				_ = req.Error("400", "signal values: "+joinProblems(probs), nil)
				return
			}
		}
		st := *cur
		ws := *cur.Wait
		ws.Signalled = &events.SignalInfo{Reject: in.Reject, Reason: in.Reason, By: in.By, At: now}
		if !in.Reject && len(values) > 0 {
			ws.Signalled.Values = in.Values
		}
		st.Wait, st.UpdatedAt = &ws, now
		// Tried again while it fails for a passing reason (persist); a try
		// that stored the value but lost its reply comes back as a
		// conflict, and the state read again shows the signal as this
		// request's own.
		err := w.persist(ctx, "record the signal", func(octx context.Context) error {
			_, werr := w.writeState(octx, &st, rev)
			return werr
		})
		if errors.Is(err, errConflict) {
			continue // a timer's resume or another signal wrote meanwhile (or this one did): look again
		} else if err != nil {
			_ = req.Error("503", "record the signal: "+err.Error(), nil)
			return
		}
		w.signalled(ctx, req, &in, &st)
		return
	}
	if err := ctx.Err(); err != nil {
		_ = req.Error("503", fmt.Sprintf("run %q: the signal was not recorded before the request's time ran out (%v); retry", in.RunID, err), nil)
		return
	}
	_ = req.Error("503", fmt.Sprintf("run %q changed too often while signalling it; retry", in.RunID), nil)
}

// ownSignal reports whether sig, a wait's recorded signal, is the one the
// signal request in wrote at now (serveSignal's one time per request).
func ownSignal(sig *events.SignalInfo, in *events.SeqSignalRequest, now time.Time) bool {
	return sig != nil && sig.At.Equal(now) && sig.Reject == in.Reject && sig.By == in.By && sig.Reason == in.Reason
}

// signalled finishes a signal recorded in st (waiting, with
// st.Wait.Signalled): it publishes the signalled event, queues the resume
// and answers req with st. When the resume cannot be queued it answers
// 503 and says that the signal stands: the wait's timer resumes the run
// with it at the latest, and a repeated signal queues the resume again.
func (w *Worker) signalled(ctx context.Context, req micro.Request, in *events.SeqSignalRequest, st *events.RunState) {
	ws := st.Wait
	w.emit(ctx, &events.RunEvent{RunID: in.RunID, Kind: events.RunSignalled, Sequence: st.Sequence, Group: ws.Group, GroupName: ws.GroupName, Groups: st.Groups,
		Status: events.StatusWaiting, By: in.By, Reason: in.Reason, Wait: ws})
	if err := w.queueResume(ctx, st); err != nil {
		_ = req.Error("503", fmt.Sprintf("the signal is recorded, but its resume could not be queued (%v); the run resumes with it when its timer fires, at %s, "+
			"or at once when it is signalled again (the first signal still wins)", err, ws.Deadline.Format(time.RFC3339)), nil)
		return
	}
	w.waitEvent(ctx, "signalled")
	w.log.Info("run signalled", "run", in.RunID, "signal", in.Name, "reject", in.Reject, "by", in.By)
	w.respond(req, st)
}

// queueResume publishes the resume request of st's recorded signal, with
// Nats-Msg-Id resume-RUN-TOKEN (a repeated one is dropped by the stream),
// retried while it fails for a passing reason. Errors: NATS errors, and
// those of resumeMsg.
func (w *Worker) queueResume(ctx context.Context, st *events.RunState) error {
	m, err := resumeMsg(st, events.ResumeSignal)
	if err != nil {
		return err
	}
	return w.persist(ctx, "queue the resume", func(octx context.Context) error {
		_, perr := events.Publish(octx, w.js, m, jetstream.WithMsgID("resume-"+st.RunID+"-"+st.Wait.Token))
		return perr
	})
}

// requeueResume queues the resume of a run that was signalled and still
// waits (queueResume), logging what it did: a worker claims it only while
// the run waits with that wait's token, so a resume queued twice resumes
// the run once.
func (w *Worker) requeueResume(ctx context.Context, cur *events.RunState) {
	if err := w.queueResume(ctx, cur); err != nil {
		w.log.Warn("a signalled run still waits, and its resume could not be queued again", "run", cur.RunID, "err", err)
		return
	}
	w.log.Info("a signalled run still waits; its resume queued again", "run", cur.RunID, "signalled_at", cur.Wait.Signalled.At)
}

// signalRefused says why a run does not take the signal name ("" when it
// does): not waiting, waiting for a timer or another signal, or
// signalled already.
func signalRefused(cur *events.RunState, name string) string {
	ws := cur.Wait
	switch {
	case cur.Status != events.StatusWaiting || ws == nil:
		return fmt.Sprintf("run %q is %s, not waiting; only a run waiting at a wait_for group takes a signal", cur.RunID, cur.Status)
	case ws.Kind != seq.WaitSignal:
		return fmt.Sprintf("run %q waits at group %d %q for a timer (%s), not for a signal", cur.RunID, ws.Group, ws.GroupName, events.TimerText(ws.Kind, ws.Deadline.Format(time.RFC3339)))
	case ws.Signal != name:
		hint := ""
		if suggest.Closest(name, []string{ws.Signal}) != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", ws.Signal)
		}
		return fmt.Sprintf("run %q waits at group %d %q for the signal %q, not %q%s", cur.RunID, ws.Group, ws.GroupName, ws.Signal, name, hint)
	case ws.Signalled != nil:
		by := ""
		if ws.Signalled.By != "" {
			by = " by " + ws.Signalled.By
		}
		return fmt.Sprintf("run %q was already signalled %q%s at %s; the first signal wins", cur.RunID, name, by, ws.Signalled.At.Format(time.RFC3339))
	}
	return ""
}

// joinProblems joins runargs.Problems' messages in key order.
func joinProblems(probs map[string]string) string {
	keys := slices.Sorted(maps.Keys(probs))
	msgs := make([]string, len(keys))
	for i, k := range keys {
		msgs[i] = probs[k]
	}
	return strings.Join(msgs, "; ")
}

// waitEvent counts a wait's event on skillbus.runs.waits (event =
// started, signalled, resumed, cancelled): summed over the workers,
// started minus resumed minus cancelled is the number of runs waiting.
func (w *Worker) waitEvent(ctx context.Context, event string) {
	if w.waits == nil {
		return
	}
	w.waits.Add(ctx, 1, w.attrs.get("event\x00"+event, attribute.String("event", event)))
}

// initWaitMetrics creates skillbus.runs.waits on mp (waitEvent).
func (w *Worker) initWaitMetrics(mp metric.MeterProvider) {
	c, err := mp.Meter(metrics.Scope).Int64Counter("skillbus.runs.waits",
		metric.WithDescription("Waits of runs at wait_for groups, by event: started, signalled, resumed, cancelled (docs/operations.md, Metrics)"))
	if err != nil {
		w.log.Warn("metric skillbus.runs.waits unavailable", "err", err)
		return
	}
	w.waits = c
}

// endWaitOnCancel ends the wait of a waiting run being cancelled: the
// state no longer says what the run waits for (runs show would tell how to
// signal it), and its wait group, "waiting" in the result, is
// "interrupted" — the status a cancel gives the group it stops
// (docs/runs.md, "Cancel"). A result kept in the object store is left as
// it is.
func endWaitOnCancel(st *events.RunState) {
	st.Wait = nil
	if len(st.Result) == 0 {
		return
	}
	var res seq.Result
	if err := json.Unmarshal(st.Result, &res); err != nil {
		return
	}
	changed := res.Status == seq.StatusWaiting
	if changed {
		res.Status = seq.StatusInterrupted
	}
	for i := range res.Groups {
		if res.Groups[i].Status == seq.GroupWaiting {
			res.Groups[i].Status, changed = seq.GroupInterrupted, true
		}
	}
	if !changed {
		return
	}
	if b, err := json.Marshal(&res); err == nil {
		st.Result = b
	}
}
