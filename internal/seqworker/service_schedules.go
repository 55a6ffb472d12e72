package seqworker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// The schedules' endpoints on the seq micro service (docs/runs.md,
// "Scheduled runs"), under skillbus.seq.schedules.* — not seq.schedule.>,
// the SEQ_RUNS subjects of the schedule messages:
//
//	schedules_list     skillbus.seq.schedules.list     ScheduleListRequest     → ScheduleListReply
//	schedules_show     skillbus.seq.schedules.show     ScheduleRef             → ScheduleInfo
//	schedules_pause    skillbus.seq.schedules.pause    SchedulePauseRequest    → ScheduleListReply
//	schedules_unpause  skillbus.seq.schedules.unpause  SchedulePauseRequest    → ScheduleListReply
//	schedules_trigger  skillbus.seq.schedules.trigger  ScheduleRef             → ScheduleTriggerReply
//	schedules_backfill skillbus.seq.schedules.backfill ScheduleBackfillRequest → ScheduleTriggerReply
//
// Errors as the other endpoints: 400 bad request (a backfill over
// events.MaxBackfillTicks), 404 no such sequence or entry, 503 NATS.

// addScheduleEndpoints adds the endpoints to the service's group.
func (w *Worker) addScheduleEndpoints(g micro.Group) error {
	for _, ep := range []struct {
		name, subj string
		h          func(context.Context, micro.Request)
	}{
		{"schedules_list", "schedules.list", w.serveSchedulesList},
		{"schedules_show", "schedules.show", w.serveSchedulesShow},
		{"schedules_pause", "schedules.pause", func(ctx context.Context, r micro.Request) { w.serveSchedulesPause(ctx, r, true) }},
		{"schedules_unpause", "schedules.unpause", func(ctx context.Context, r micro.Request) { w.serveSchedulesPause(ctx, r, false) }},
		{"schedules_trigger", "schedules.trigger", w.serveSchedulesTrigger},
		{"schedules_backfill", "schedules.backfill", w.serveSchedulesBackfill},
	} {
		if err := g.AddEndpoint(ep.name, w.async(ep.h), micro.WithEndpointSubject(ep.subj)); err != nil {
			return fmt.Errorf("seqworker: endpoint %s: %w", ep.name, err)
		}
	}
	return nil
}

// scheduleInfo describes entry e of def with its state and n next fire
// times.
func (w *Worker) scheduleInfo(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, n int) (events.ScheduleInfo, error) {
	st, _, err := w.readEntry(ctx, def.Name, e.Name)
	if err != nil {
		return events.ScheduleInfo{}, err
	}
	info := events.ScheduleInfo{V: events.Version, Sequence: def.Name, Entry: e.Name, Pattern: e.Pattern(), TimeZone: e.TimeZone,
		Overlap: string(e.Overlap), Args: e.ArgsJSON(), PauseOnFailure: e.PauseOnFailure, StartAt: e.StartAt, EndAt: e.EndAt,
		Next: e.NextFires(st.LastTick, time.Now(), n), State: st}
	if e.Jitter > 0 {
		info.Jitter = e.Jitter.String()
	}
	if e.CatchupWindow > 0 {
		info.CatchupWindow = e.CatchupWindow.String()
	}
	return info, nil
}

// backfillSkew is how far after the seqworker's now a backfill's range
// may end (the clocks of the CLI and the worker differ a little); the
// range is cut at now.
const backfillSkew = time.Minute

// alignEvery returns the first fire time at or after from of an every
// entry whose server's schedule fired at lastTick: lastTick plus or minus
// a whole number of intervals d (docs/runs.md: an every entry's fire
// times count from the last tick seen). Without a tick seen it is from.
func alignEvery(from, lastTick time.Time, d time.Duration) time.Time {
	if lastTick.IsZero() || d <= 0 {
		return from
	}
	r := lastTick.Sub(from) % d
	if r < 0 {
		r += d
	}
	return from.Add(r)
}

// ticksBetween returns the fire times of e in [from, to], at most max+1
// (so a caller tells a range over the bound).
func ticksBetween(e *seq.ScheduleEntry, from, to time.Time, max int) []time.Time {
	var out []time.Time
	if e.Every > 0 {
		for t := from; !t.After(to) && len(out) <= max; t = t.Add(time.Duration(e.Every)) {
			out = append(out, t.UTC())
		}
		return out
	}
	after := from.Add(-time.Second)
	for len(out) <= max {
		next, _, err := seq.NextTick(e.Cron, e.TimeZone, after)
		if err != nil || next.IsZero() || next.After(to) {
			break
		}
		out = append(out, next.UTC())
		after = next
	}
	return out
}

// lookupEntries resolves a sequence and an entry name ("" = every entry).
// It answers the request itself and returns ok = false on error.
func (w *Worker) lookupEntries(ctx context.Context, req micro.Request, sequence, entry string) (*seq.Sequence, []seq.ScheduleEntry, bool) {
	def, err := w.cat.lookup(ctx, sequence)
	if err != nil {
		code := "503"
		if errors.Is(err, errNoSequence) {
			code = "404"
		}
		_ = req.Error(code, err.Error(), nil)
		return nil, nil, false
	}
	es := def.ScheduleEntries()
	if len(es) == 0 {
		_ = req.Error("404", fmt.Sprintf("sequence %q has no schedule (docs/sequences.md, Schedules)", sequence), nil)
		return nil, nil, false
	}
	if entry == "" {
		return def, es, true
	}
	if e := def.Entry(entry); e != nil {
		return def, []seq.ScheduleEntry{*e}, true
	}
	names := make([]string, len(es))
	for i := range es {
		names[i] = es[i].Name
	}
	_ = req.Error("404", fmt.Sprintf("sequence %q has no schedule entry %q; its entries are %s", sequence, entry, strings.Join(names, ", ")), nil)
	return nil, nil, false
}

// oneEntry narrows es to one entry for the endpoints that act on one: the
// only entry, or an error naming them all.
// lookupEntry is lookupEntries for a request about one entry (show,
// trigger, backfill): a sequence of several entries needs ENTRY named
// (oneEntry). It has answered req when ok is false.
func (w *Worker) lookupEntry(ctx context.Context, req micro.Request, sequence, entry string) (*seq.Sequence, *seq.ScheduleEntry, bool) {
	def, es, ok := w.lookupEntries(ctx, req, sequence, entry)
	if !ok {
		return nil, nil, false
	}
	e, ok := oneEntry(req, def, es)
	return def, e, ok
}

func oneEntry(req micro.Request, def *seq.Sequence, es []seq.ScheduleEntry) (*seq.ScheduleEntry, bool) {
	if len(es) == 1 {
		return &es[0], true
	}
	names := make([]string, len(es))
	for i := range es {
		names[i] = def.Name + "/" + es[i].Name
	}
	_ = req.Error("400", fmt.Sprintf("sequence %q has %d schedule entries; name one: %s", def.Name, len(es), strings.Join(names, ", ")), nil)
	return nil, false
}

func (w *Worker) serveSchedulesList(ctx context.Context, req micro.Request) {
	var in events.ScheduleListRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range w.cat.names() {
			if in.Sequence == "" || n == in.Sequence {
				if !yield(n) {
					return
				}
			}
		}
	})
	out := &events.ScheduleListReply{V: events.Version, Entries: []events.ScheduleInfo{}}
	for _, name := range names {
		def, _, err := w.cat.get(ctx, name)
		if err != nil {
			continue
		}
		es := def.ScheduleEntries()
		for i := range es {
			info, err := w.scheduleInfo(ctx, def, &es[i], 1)
			if err != nil {
				_ = req.Error("503", "read the schedules' state: "+err.Error(), nil)
				return
			}
			out.Entries = append(out.Entries, info)
		}
	}
	w.respond(req, out)
}

func (w *Worker) serveSchedulesShow(ctx context.Context, req micro.Request) {
	var in events.ScheduleRef
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	def, e, ok := w.lookupEntry(ctx, req, in.Sequence, in.Entry)
	if !ok {
		return
	}
	info, err := w.scheduleInfo(ctx, def, e, 10)
	if err != nil {
		_ = req.Error("503", "read the schedule's state: "+err.Error(), nil)
		return
	}
	w.respond(req, &info)
}

// serveSchedulesPause pauses (pause) or unpauses entries: a paused entry
// drops its ticks, recorded; unpausing starts its oldest buffered tick. A
// pause needs a note (not only spaces): refused with 400 otherwise, for
// every client. Pausing an entry paused already keeps its first pause
// unless the request has Overwrite; the reply's PausedBefore says what it
// was, for an unpause too (nil: the entry was not paused; docs/runs.md,
// "Scheduled runs").
func (w *Worker) serveSchedulesPause(ctx context.Context, req micro.Request, pause bool) {
	var in events.SchedulePauseRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	if pause && strings.TrimSpace(in.Note) == "" {
		_ = req.Error("400", "a pause needs a note: say why the entry is paused (shown with it to whoever looks at it); the request's note is empty", nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	def, es, ok := w.lookupEntries(ctx, req, in.Sequence, in.Entry)
	if !ok {
		return
	}
	out := &events.ScheduleListReply{V: events.Version}
	for i := range es {
		e := &es[i]
		var start []events.ScheduleTick
		var stalled []events.ScheduleRun
		var before *events.SchedulePause
		_, err := w.updateEntry(ctx, def.Name, e.Name, func(st *events.ScheduleState) error {
			start, stalled, before = nil, nil, nil
			now := time.Now().UTC()
			if pause {
				if st.Paused {
					before = &events.SchedulePause{Note: st.Note, By: st.PausedBy, At: st.PausedAt}
					if !in.Overwrite {
						return errNoChange // the first pause's note stays
					}
				}
				st.Paused, st.Note, st.PausedBy, st.PausedAt = true, in.Note, in.By, now
				return nil
			}
			if !st.Paused {
				return errNoChange
			}
			before = &events.SchedulePause{Note: st.Note, By: st.PausedBy, At: st.PausedAt}
			st.Paused, st.Note, st.PausedBy, st.PausedAt = false, "", "", time.Time{}
			st.ConsecutiveFailures = 0 // pause_on_failure counts again from here
			stalled = w.pruneCurrent(ctx, st)
			start = popBuffered(st, now)
			return nil
		})
		if err != nil {
			_ = req.Error("503", "store the pause: "+err.Error(), nil)
			return
		}
		w.requeueStalled(ctx, def, e, stalled)
		w.startBuffered(ctx, def, e, start)
		what := "unpaused"
		switch {
		case !pause && before == nil:
			what = "left unpaused (it was not paused)"
		case pause && before != nil && !in.Overwrite:
			what = "kept paused (paused already; its note stays)"
		case pause && before != nil:
			what = "paused again (its note replaced)"
		case pause:
			what = "paused"
			w.countTick(ctx, def.Name, "paused_by_user")
		}
		w.log.Info("schedule entry "+what, "sequence", def.Name, "entry", e.Name, "by", in.By, "note", in.Note)
		info, err := w.scheduleInfo(ctx, def, e, 1)
		if err != nil {
			_ = req.Error("503", err.Error(), nil)
			return
		}
		info.PausedBefore = before
		out.Entries = append(out.Entries, info)
	}
	w.respond(req, out)
}

// serveSchedulesTrigger starts a tick of an entry now, through its
// overlap policy, with trigger manual-tick (also when the entry is
// paused).
func (w *Worker) serveSchedulesTrigger(ctx context.Context, req micro.Request) {
	var in events.ScheduleRef
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	def, e, ok := w.lookupEntry(ctx, req, in.Sequence, in.Entry)
	if !ok {
		return
	}
	now := time.Now().UTC()
	stamp := fmt.Sprintf("%s%03dZ", now.Format("20060102T150405"), now.Nanosecond()/1e6)
	t := tick{runID: events.BoundedID("mtick", def.Name, e.Name, stamp), at: now, trigger: events.TriggerManualTick, explicit: true}
	out, err := w.runTicks(ctx, def, e, []tick{t})
	if err != nil {
		_ = req.Error("503", err.Error(), nil)
		return
	}
	w.respond(req, out)
}

// serveSchedulesBackfill runs one tick per fire time of an entry in
// [from, to], through its overlap policy; a tick whose run exists already
// (it ran then) is left out.
func (w *Worker) serveSchedulesBackfill(ctx context.Context, req micro.Request) {
	var in events.ScheduleBackfillRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	def, e, ok := w.lookupEntry(ctx, req, in.Sequence, in.Entry)
	if !ok {
		return
	}
	now := time.Now().UTC()
	from, to := in.From.UTC(), in.To.UTC()
	if to.After(now.Add(backfillSkew)) {
		_ = req.Error("400", fmt.Sprintf("the range ends at %s, after now (%s): a backfill runs ticks that have passed; "+
			"end the range before now, or use `skillbus schedules trigger` to run a tick now and let the schedule fire the later ones",
			to.Format(time.RFC3339), now.Format(time.RFC3339)), nil)
		return
	}
	if to.After(now) {
		to = now // within the clock skew allowed: up to now
	}
	if e.Every > 0 {
		st, _, err := w.readEntry(ctx, def.Name, e.Name)
		if err != nil {
			_ = req.Error("503", "read the entry's state: "+err.Error(), nil)
			return
		}
		from = alignEvery(from, st.LastTick, time.Duration(e.Every))
	}
	times := ticksBetween(e, from, to, events.MaxBackfillTicks)
	if len(times) > events.MaxBackfillTicks {
		_ = req.Error("400", fmt.Sprintf("%s to %s holds more than %d ticks of %s/%s (%s); a backfill runs at most %d (events.MaxBackfillTicks): split the range",
			in.From.UTC().Format(time.RFC3339), in.To.UTC().Format(time.RFC3339), events.MaxBackfillTicks, def.Name, e.Name, e.Pattern(), events.MaxBackfillTicks), nil)
		return
	}
	var ticks []tick
	for _, at := range times {
		ticks = append(ticks, tick{runID: entryTickRunID(def.Name, e.Name, at, nil), at: at, trigger: events.TriggerBackfill, explicit: true})
	}
	out, err := w.runTicks(ctx, def, e, ticks)
	if err != nil {
		_ = req.Error("503", err.Error(), nil)
		return
	}
	w.respond(req, out)
}

// runTicks admits each tick in order and queues the runs of those that
// start; a tick whose run exists already is reported as such.
func (w *Worker) runTicks(ctx context.Context, def *seq.Sequence, e *seq.ScheduleEntry, ticks []tick) (*events.ScheduleTriggerReply, error) {
	out := &events.ScheduleTriggerReply{V: events.Version, Ticks: []events.ScheduleTick{}}
	for _, t := range ticks {
		rec := events.ScheduleTick{RunID: t.runID, At: t.at, Trigger: t.trigger, Seen: time.Now().UTC()}
		if cur, _, err := w.readState(ctx, t.runID); err != nil {
			return nil, err
		} else if cur != nil {
			rec.Outcome, rec.Why = events.TickSkipped, "the tick's run exists already ("+cur.Status+")"
			out.Ticks = append(out.Ticks, rec)
			continue
		}
		t.fresh = true // a tick skipped before is admitted again
		a, err := w.admit(ctx, def, e, t)
		if err != nil {
			return nil, err
		}
		w.settle(ctx, def, e, t, a)
		if a.outcome == events.TickStarted && !a.again {
			if err := w.enqueueTick(ctx, def, e, t.runID, t.at, t.trigger); err != nil {
				return nil, fmt.Errorf("queue the run of tick %s: %w", t.runID, err)
			}
		}
		rec.Outcome, rec.Why = a.outcome, a.why
		out.Ticks = append(out.Ticks, rec)
	}
	return out, nil
}
