package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/streamread"
)

// startWatcher loads the SEQUENCES bucket into the catalog (returning once
// the current values are in), then keeps it up to date and reconciles the
// schedule of every sequence that changes.
func (w *Worker) startWatcher(ctx context.Context) error {
	// No consumer on SEQUENCES: the registry owns it (docs/security.md,
	// "Consumers"); direct gets woken by the bucket's core messages.
	kw, err := streamread.WatchKV(w.intakeCtx, w.nc, events.BucketSequences, func(err error) {
		w.log.Warn("reading SEQUENCES; trying again", "err", err)
	})
	if err != nil {
		return fmt.Errorf("seqworker: watch %s: %w", events.BucketSequences, err)
	}
	ready := make(chan struct{})
	w.loops.Add(2)
	go func() {
		defer w.loops.Done()
		defer func() { _ = kw.Stop() }()
		initial := true
		for {
			select {
			case <-w.intakeCtx.Done():
				return
			case e, ok := <-kw.Updates():
				if !ok {
					return
				}
				if e == nil {
					if initial {
						initial = false
						close(ready)
					}
					continue
				}
				name, err := events.NameForKey(e.Key())
				if err != nil {
					w.log.Warn("unreadable SEQUENCES key", "key", e.Key(), "err", err)
					continue
				}
				if e.Operation() != jetstream.KeyValuePut {
					w.cat.remove(name)
				} else if s, err := seq.Decode(e.Value()); err != nil {
					w.log.Warn("stored sequence does not decode; ignored", "sequence", name, "revision", e.Revision(), "err", err)
					w.cat.remove(name)
				} else {
					w.cat.put(name, s, e.Revision(), e.Value())
				}
				w.requestReconcile(name)
			}
		}
	}()
	go w.reconcileLoop()
	select {
	case <-ready:
	case <-ctx.Done():
		return fmt.Errorf("seqworker: load %s: %w", events.BucketSequences, ctx.Err())
	}
	return w.purgeOrphanSchedules(ctx)
}

func (w *Worker) requestReconcile(name string) {
	select {
	case w.recheck <- name:
	default:
		w.log.Warn("schedule reconcile queue full; dropped", "sequence", name)
	}
}

func (w *Worker) reconcileLoop() {
	defer w.loops.Done()
	for {
		select {
		case <-w.intakeCtx.Done():
			return
		case name := <-w.recheck:
			ctx, cancel := context.WithTimeout(w.intakeCtx, 10*time.Second)
			if err := w.reconcileSchedule(ctx, name); err != nil {
				w.log.Warn("reconcile schedule", "sequence", name, "err", err)
			}
			cancel()
		}
	}
}

// reconcileSchedule makes the schedule messages of a sequence match the
// stored sequence: one per schedule entry (seq.schedule.<name> for the one
// entry of a single-string schedule, seq.schedule.<name>.<entry> for the
// entries of a list), none when the sequence is gone or has no schedule;
// a message of an entry that is gone is purged and the entry's state in
// SEQ_SCHEDULES deleted (docs/sequences.md, "Schedules").
func (w *Worker) reconcileSchedule(ctx context.Context, name string) error {
	base, err := events.ScheduleSubject(name)
	if err != nil {
		return err // a name that cannot be a subject token cannot be scheduled
	}
	s, _, err := w.cat.get(ctx, name)
	gone := errors.Is(err, errNoSequence) || (err == nil && !s.Scheduled()) || isTerminal(err)
	if err != nil && !gone {
		return err
	}
	want := map[string]*seq.ScheduleEntry{} // subject → entry
	keep := map[string]bool{}               // entry names
	if !gone {
		es := s.ScheduleEntries()
		for i := range es {
			subj, err := events.ScheduleEntrySubject(name, es[i].Name, s.Schedule != "")
			if err != nil {
				return err
			}
			want[subj] = &es[i]
			keep[es[i].Name] = true
		}
	}
	// The schedules there are: the single-string one and the entries'.
	have := []string{}
	if _, err := w.stream.GetLastMsgForSubject(ctx, base); err == nil {
		have = append(have, base)
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("read %s: %w", base, err)
	}
	info, err := w.stream.Info(ctx, jetstream.WithSubjectFilter(base+".*"))
	if err != nil {
		return fmt.Errorf("list the schedules of %q: %w", name, err)
	}
	for subj := range info.State.Subjects {
		have = append(have, subj)
	}
	for _, subj := range have {
		if want[subj] != nil {
			continue
		}
		if err := w.stream.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return fmt.Errorf("purge %s: %w", subj, err)
		}
		w.log.Info("schedule removed", "sequence", name, "subject", subj)
	}
	if err := w.dropEntryStates(ctx, name, keep); err != nil {
		w.log.Warn("state of removed schedule entries not deleted", "sequence", name, "err", err)
	}
	for subj, e := range want {
		if err := w.reconcileEntry(ctx, name, subj, e); err != nil {
			return err
		}
	}
	return nil
}

// dropEntryStates deletes the SEQ_SCHEDULES keys of a sequence's entries
// that are not in keep.
func (w *Worker) dropEntryStates(ctx context.Context, name string, keep map[string]bool) error {
	kv, err := w.scheduleKV(ctx)
	if err != nil {
		return err
	}
	prefix := "$KV." + events.BucketSchedules + "." + events.KeyFor(name) + "."
	st, err := w.js.Stream(ctx, "KV_"+events.BucketSchedules)
	if err != nil {
		return err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+"*"))
	if err != nil {
		return err
	}
	for subj := range info.State.Subjects {
		entry := strings.TrimPrefix(subj, prefix)
		if keep[entry] {
			continue
		}
		key, err := events.ScheduleKey(name, entry)
		if err != nil {
			continue
		}
		if err := kv.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		w.log.Info("schedule entry state deleted", "sequence", name, "entry", entry)
	}
	return nil
}

// reconcileEntry makes the schedule message on subj match entry e of the
// stored sequence name: its pattern, time zone, target seq.run.<name>, a
// body naming the entry and its arguments, and the sequence's revision.
// Replicas agree: the stored value is read again here, a schedule made
// from a newer revision is never replaced by an older one (the revision
// header, and a publish that expects the subject's last sequence), and a
// repeated publish of one revision is dropped by its Nats-Msg-Id. The
// server itself keeps one schedule per subject: a schedule message is a
// subject rollup, so the new message replaces the old (checked in the
// integration tests).
func (w *Worker) reconcileEntry(ctx context.Context, name, subj string, e *seq.ScheduleEntry) error {
	target, _ := events.RunSubject(name)
	pattern := schedulePattern(e.Pattern())
	for range 3 {
		s, rev, err := w.cat.get(ctx, name)
		if err != nil {
			return err
		}
		if cur := s.Entry(e.Name); cur != nil {
			e = cur
			pattern = schedulePattern(e.Pattern())
		}
		var lastSeq uint64
		last, err := w.stream.GetLastMsgForSubject(ctx, subj)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return fmt.Errorf("read %s: %w", subj, err)
		default:
			lastSeq = last.Sequence
			lrev, _ := strconv.ParseUint(last.Header.Get(events.HeaderSequenceRevision), 10, 64)
			if lrev > rev || (lrev == rev && last.Header.Get("Nats-Schedule") == pattern) {
				return nil
			}
		}
		opt, err := scheduleOpt(e.Pattern())
		if err != nil {
			return err
		}
		req := &events.RunRequest{RunID: events.BoundedID("tick", name), Sequence: name, Trigger: events.TriggerSchedule, Args: e.ArgsJSON()}
		if s.Schedule == "" {
			req.ScheduleEntry = e.Name // a single-string schedule's ticks stay as they were
		}
		body, err := events.Encode(req)
		if err != nil {
			return err
		}
		m := &nats.Msg{Subject: subj, Data: body, Header: nats.Header{}}
		m.Header.Set(events.HeaderSequenceRevision, strconv.FormatUint(rev, 10))
		m.Header.Set(events.HeaderSchedule, pattern)
		popts := []jetstream.PublishOpt{opt}
		if e.TimeZone != "" {
			popts = append(popts, jetstream.WithScheduleTimeZone(e.TimeZone))
		}
		_, err = events.Publish(ctx, w.js, m, append(popts, jetstream.WithScheduleTarget(target),
			jetstream.WithMsgID(fmt.Sprintf("schedule-%s-%s-%d", tokenize(name), e.Name, rev)),
			jetstream.WithExpectLastSequencePerSubject(lastSeq))...)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			continue // another replica published meanwhile: look again
		}
		shown := e.Pattern()
		if s.Schedule != "" {
			shown = s.Schedule
		}
		if errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.Description), "schedule") {
			// The server refused the schedule itself (pattern, time zone):
			// the entry would silently never run; say so.
			w.log.Error("schedule refused by the NATS server; the entry does not run on its own", "sequence", name, "entry", e.Name, "schedule", shown, "time_zone", e.TimeZone, "err", apiErr.Description)
			w.emitSchedule(ctx, &events.ScheduleEvent{Sequence: name, Entry: entryOf(s, e), Schedule: shown, TimeZone: e.TimeZone, Status: events.ScheduleRefused, Error: apiErr.Description, Revision: rev})
			return nil
		}
		if err != nil {
			return fmt.Errorf("publish schedule %q on %s: %w", shown, subj, err)
		}
		w.log.Info("schedule set", "sequence", name, "entry", e.Name, "schedule", shown, "revision", rev)
		w.emitSchedule(ctx, &events.ScheduleEvent{Sequence: name, Entry: entryOf(s, e), Schedule: shown, TimeZone: e.TimeZone, Status: events.ScheduleSet, Revision: rev})
		return nil
	}
	return nil
}

// entryOf names e in a schedule event: "" for the one entry of a
// single-string schedule (as events before entries), else its name.
func entryOf(s *seq.Sequence, e *seq.ScheduleEntry) string {
	if s.Schedule != "" {
		return ""
	}
	return e.Name
}

// scheduleOpt turns a sequence's `schedule` (as pkg/seq validates it: the
// NATS server's own syntax) into the publish option.
func scheduleOpt(schedule string) (jetstream.PublishOpt, error) {
	if rest, ok := strings.CutPrefix(schedule, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %w", schedule, err)
		}
		return jetstream.WithScheduleEvery(d), nil
	}
	return jetstream.WithScheduleCron(schedule), nil
}

// schedulePattern is the Nats-Schedule header value scheduleOpt produces.
func schedulePattern(schedule string) string {
	if rest, ok := strings.CutPrefix(schedule, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil {
			return "@every " + d.String()
		}
	}
	return schedule
}

// purgeOrphanSchedules removes the schedules of sequences that are no
// longer stored (deleted while no worker ran).
func (w *Worker) purgeOrphanSchedules(ctx context.Context) error {
	info, err := w.stream.Info(ctx, jetstream.WithSubjectFilter(events.SubjectScheduleAll))
	if err != nil {
		return fmt.Errorf("seqworker: list schedules: %w", err)
	}
	known := w.cat.names()
	for subj := range info.State.Subjects {
		if strings.HasPrefix(subj, events.WaitTimerPrefix) {
			continue // a waiting run's timer, not a sequence's schedule
		}
		name, _, err := events.ScheduleSubjectParts(subj) // seq.schedule.<token>[.<entry>]: the name encoded by events.TokenFor
		if err != nil {
			w.log.Warn("schedule subject with an undecodable name; left alone", "subject", subj, "err", err)
			continue
		}
		if !known[name] {
			w.requestReconcile(name)
		}
	}
	return nil
}

// onMaxDeliveries records as failed a run whose request exhausted its
// deliveries (the last worker died or never acknowledged) and deletes the
// request, which a work-queue stream would otherwise keep.
func (w *Worker) onMaxDeliveries(m *nats.Msg) {
	var adv struct {
		Stream     string `json:"stream"`
		Consumer   string `json:"consumer"`
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
		w.log.Warn("unreadable max-deliveries advisory", "err", err)
		return
	}
	if !w.begin() {
		return // stopping: another replica gets the advisory
	}
	go func() {
		defer w.inflight.Done()
		ctx, cancel := context.WithTimeout(w.runCtx, 10*time.Second)
		defer cancel()
		raw, err := w.stream.GetMsg(ctx, adv.StreamSeq)
		if err != nil {
			w.log.Warn("max-deliveries advisory: run request not found", "stream_seq", adv.StreamSeq, "err", err)
			return
		}
		rm := &rawMsg{raw: raw}
		req, runID, _ := decodeRunRequest(rm)
		if runID != "" {
			reason := fmt.Sprintf("gave up after %d deliveries: no worker finished the run in time (each delivery waits the consumer's ack wait, now %s)", adv.Deliveries, w.ackWaitNow())
			if cur, _, err := w.readState(ctx, runID); err == nil && cur != nil && cur.Error != "" {
				reason += "; last error: " + cur.Error
			}
			w.failRun(ctx, runID, req.Sequence, adv.Deliveries, reason)
			w.log.Error("run failed", "run", runID, "err", reason)
		}
		if err := w.stream.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			w.log.Warn("delete exhausted run request", "stream_seq", adv.StreamSeq, "err", err)
		}
	}()
}

// rawMsg lets decodeRunRequest read a stored message.
type rawMsg struct {
	jetstream.Msg
	raw *jetstream.RawStreamMsg
}

func (r *rawMsg) Headers() nats.Header { return r.raw.Header }
func (r *rawMsg) Data() []byte         { return r.raw.Data }
func (r *rawMsg) Subject() string      { return r.raw.Subject }
func (r *rawMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: r.raw.Sequence}}, nil
}

// emitSchedule publishes a schedule event (best effort).
func (w *Worker) emitSchedule(ctx context.Context, ev *events.ScheduleEvent) {
	ev.At = time.Now().UTC()
	subj, err := events.ScheduleEventSubject(ev.Sequence)
	if err != nil {
		return
	}
	if _, err := events.PublishMessage(ctx, w.js, subj, ev); err != nil {
		w.log.Warn("schedule event not published", "sequence", ev.Sequence, "err", err)
	}
}
