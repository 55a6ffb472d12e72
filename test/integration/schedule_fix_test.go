package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// backfill backfills sequence/entry from from to to and returns the ticks
// outcomes.
func backfill(t *testing.T, env *swEnv, sequence, entry string, from, to time.Time) []events.ScheduleTick {
	t.Helper()
	var bf events.ScheduleTriggerReply
	if e := schedRequest(t, env, events.SeqSchedulesBackfillSubject, &events.ScheduleBackfillRequest{V: 1, Sequence: sequence, Entry: entry, From: from, To: to}, &bf); e != "" {
		t.Fatalf("backfill of %s to %s: %s", from, to, e)
	}
	return bf.Ticks
}

// waitNoCurrent waits until the entry has no current run and runID is its
// last run (schedules.show).
func waitNoCurrent(t *testing.T, env *swEnv, sequence, entry, runID string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var show events.ScheduleInfo
		if e := schedRequest(t, env, events.SeqSchedulesShowSubject, &events.ScheduleRef{V: 1, Sequence: sequence, Entry: entry}, &show); e != "" {
			t.Fatalf("show: %s", e)
		}
		if show.State != nil && len(show.State.Current) == 0 && show.State.LastRun == runID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after run %s ended, the entry's state = %+v; want no current run and it as the last", runID, show.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScheduleBackfillEndsCurrent: a backfill of two daily ticks of an
// entry with overlap skip starts the first and skips the second (the
// first is going); once the first succeeded the entry has no current
// run, and the same backfill again reports the first as run already and
// starts the second — its earlier skip is not replayed as the answer.
func TestScheduleBackfillEndsCurrent(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("bfc.echo", &calls))
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: bfc\nschedule:\n  - name: daily\n    cron: \"0 0 9 * * *\"\n    timezone: Europe/Berlin\n    overlap: skip\n    args: {who: a}\n"+
		"groups:\n  - name: bfc-g\n    in: {who: string}\n    tools: [{tool: bfc.echo, args: {who: $args.who}}]\n")
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 23, 0, 0, 0, time.UTC)
	ticks := backfill(t, env, "bfc", "daily", from, to)
	if len(ticks) != 2 || ticks[0].Outcome != events.TickStarted || ticks[1].Outcome != events.TickSkipped {
		t.Fatalf("first backfill = %+v; want the 11-01 tick started and the 11-02 one skipped", ticks)
	}
	first, second := ticks[0].RunID, ticks[1].RunID
	if st := swWait(t, env, first, 20*time.Second); st.Status != events.StatusSucceeded || st.ScheduleEntry != "daily" {
		t.Fatalf("backfilled run %s = %s entry %q; want succeeded of daily", first, st.Status, st.ScheduleEntry)
	}
	waitNoCurrent(t, env, "bfc", "daily", first)
	ticks = backfill(t, env, "bfc", "daily", from, to)
	if len(ticks) != 2 || ticks[0].Outcome != events.TickSkipped || !strings.Contains(ticks[0].Why, "exists already (succeeded)") ||
		ticks[1].RunID != second || ticks[1].Outcome != events.TickStarted {
		t.Fatalf("second backfill = %+v; want 11-01 reported as run already and 11-02 started", ticks)
	}
	if st := swWait(t, env, second, 20*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("backfilled run %s = %s; want succeeded", second, st.Status)
	}
	waitNoCurrent(t, env, "bfc", "daily", second)
}

// TestScheduleWaitingRunEndsCurrent: a triggered run of an entry that
// waits for a signal and then succeeds keeps its schedule entry across the
// resume, so its end takes it out of the entry's current runs.
func TestScheduleWaitingRunEndsCurrent(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("wsc.echo", &calls))
	swWorker(t, env, seqworker.Config{})
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	swStore(t, env, "name: wsc\nschedule:\n  - name: daily\n    cron: \"0 0 9 * * *\"\n    overlap: skip\n"+
		"groups:\n  - name: ask\n    wait_for: {signal: go, timeout: 1h}\n  - name: act\n    tools: [{tool: wsc.echo}]\n")
	var trig events.ScheduleTriggerReply
	if e := schedRequest(t, env, events.SeqSchedulesTriggerSubject, &events.ScheduleRef{V: 1, Sequence: "wsc", Entry: "daily"}, &trig); e != "" || len(trig.Ticks) != 1 || trig.Ticks[0].Outcome != events.TickStarted {
		t.Fatalf("trigger = %+v, %s", trig, e)
	}
	id := trig.Ticks[0].RunID
	swWaitStatus(t, env, id, events.StatusWaiting, 20*time.Second)
	if _, err := c.Signal(context.Background(), id, "go", nil); err != nil {
		t.Fatal(err)
	}
	if st := swWait(t, env, id, 20*time.Second); st.Status != events.StatusSucceeded || st.ScheduleEntry != "daily" || st.Trigger != events.TriggerManualTick {
		t.Fatalf("resumed run = %s entry %q trigger %s; want succeeded, daily, manual-tick", st.Status, st.ScheduleEntry, st.Trigger)
	}
	waitNoCurrent(t, env, "wsc", "daily", id)
}

// TestSchedulePauseNeedsNote: seq.schedules.pause refuses an empty note
// (and one of spaces) with 400, leaving the entry unpaused; a note
// pauses it.
func TestSchedulePauseNeedsNote(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swServe(t, env, swEcho("pn.echo", nil))
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: pn\nschedule:\n  - name: daily\n    cron: \"0 0 9 * * *\"\ngroups:\n  - name: pn-g\n    tools: [{tool: pn.echo}]\n")
	for _, note := range []string{"", "   "} {
		if e := schedRequest(t, env, events.SeqSchedulesPauseSubject, &events.SchedulePauseRequest{V: 1, Sequence: "pn", Entry: "daily", Note: note, By: "test"}, nil); !strings.HasPrefix(e, "400") || !strings.Contains(e, "note") {
			t.Errorf("pause with note %q = %q; want 400 naming the note", note, e)
		}
	}
	var show events.ScheduleInfo
	if e := schedRequest(t, env, events.SeqSchedulesShowSubject, &events.ScheduleRef{V: 1, Sequence: "pn", Entry: "daily"}, &show); e != "" || (show.State != nil && show.State.Paused) {
		t.Fatalf("after refused pauses: %+v, %s; want not paused", show.State, e)
	}
	var out events.ScheduleListReply
	if e := schedRequest(t, env, events.SeqSchedulesPauseSubject, &events.SchedulePauseRequest{V: 1, Sequence: "pn", Entry: "daily", Note: "incident 7", By: "test"}, &out); e != "" || len(out.Entries) != 1 || out.Entries[0].State == nil || !out.Entries[0].State.Paused {
		t.Fatalf("pause with a note = %+v, %s; want paused", out, e)
	}
}

// TestScheduleBackfillTrigger: a backfilled tick is marked backfill — in
// the backfill's answer, the run's state (with the tick's own time as
// scheduled_at) and the entry's recent ticks — so it is told apart from a
// tick of the server's schedule.
func TestScheduleBackfillTrigger(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swServe(t, env, swEcho("bft.echo", nil))
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: bft\nschedule:\n  - name: daily\n    cron: \"0 0 9 * * *\"\ngroups:\n  - name: bft-g\n    tools: [{tool: bft.echo}]\n")
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	ticks := backfill(t, env, "bft", "daily", at, at.Add(time.Hour))
	if len(ticks) != 1 || ticks[0].Outcome != events.TickStarted || ticks[0].Trigger != events.TriggerBackfill {
		t.Fatalf("backfill = %+v; want one tick started with trigger backfill", ticks)
	}
	st := swWait(t, env, ticks[0].RunID, 20*time.Second)
	if st.Status != events.StatusSucceeded || st.Trigger != events.TriggerBackfill || !st.ScheduledAt.Equal(at) || st.ScheduleEntry != "daily" {
		t.Fatalf("backfilled run = %s trigger %q scheduled_at %s entry %q; want succeeded, backfill, %s, daily", st.Status, st.Trigger, st.ScheduledAt, st.ScheduleEntry, at)
	}
	es := entryState(t, env, "bft", "daily")
	if len(es.Recent) != 1 || es.Recent[0].Trigger != events.TriggerBackfill || !es.LastTick.IsZero() {
		t.Fatalf("entry's recent ticks = %+v, last tick %s; want the backfilled one marked backfill and no tick of the schedule seen", es.Recent, es.LastTick)
	}
}

// TestSeqworkerWaitPastRetention: with a RUNS bucket of a 1h TTL, a wait
// of 2h is not parked — the run fails at its wait group naming the TTL
// and the fix, with no timer left — while a wait of 30m parks.
func TestSeqworkerWaitPastRetention(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.RunsTTL = time.Hour
	env := swStart(t, natsserver.Options{}, opts)
	swServe(t, env, swEcho("wt.check", nil), swEcho("wt.act", nil))
	swStore(t, env, swWaitDef("wr-long", "2h", "continue"))
	swStore(t, env, swWaitDef("wr-short", "30m", "abort"))
	swWorker(t, env, seqworker.Config{})
	swRequest(t, env, "r-wr-long", "wr-long", map[string]any{"svc": "db"})
	st := swWait(t, env, "r-wr-long", 20*time.Second)
	if st.Status != events.StatusFailed || st.FinishedGroups != 1 || !strings.Contains(st.Error, "group 2 (approval)") ||
		!strings.Contains(st.Error, "1h0m0s after its last write") || !strings.Contains(st.Error, "--runs-ttl") {
		t.Fatalf("run with a 2h wait under a 1h TTL = %s after %d groups: %s; want failed at group 2 naming the TTL and --runs-ttl", st.Status, st.FinishedGroups, st.Error)
	}
	if n := timerCount(t, env, "r-wr-long"); n != 0 {
		t.Errorf("timer messages of the refused wait = %d; want 0", n)
	}
	swRequest(t, env, "r-wr-short", "wr-short", map[string]any{"svc": "db"})
	if st := swWaitStatus(t, env, "r-wr-short", events.StatusWaiting, 20*time.Second); st.Wait == nil || st.Wait.Deadline.Sub(st.Wait.Since) != 30*time.Minute {
		t.Fatalf("run with a 30m wait = %+v; want waiting 30m", st.Wait)
	}
}

// faultyCaller answers wt.check and wt.act with their arguments, failing
// the first fail[tool] calls of each with an interrupting fault (the run
// is handed back and delivered again).
type faultyCaller struct {
	mu   sync.Mutex
	fail map[string]int
}

func (f *faultyCaller) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[tool] > 0 {
		f.fail[tool]--
		return nil, fmt.Errorf("%w: injected fault of %s", seq.ErrObserver, tool)
	}
	return args, nil
}

// TestSeqworkerWaitResumeDeliveries: a run that took 4 of its 5
// deliveries (MaxDeliver) before it parked at its wait has a full budget
// again when it resumes: a passing fault after the resume is delivered
// again, and the run succeeds, instead of giving up at once.
func TestSeqworkerWaitResumeDeliveries(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions()) // MaxDeliver 5
	fc := &faultyCaller{fail: map[string]int{"wt.check": 3, "wt.act": 1}}
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	swStore(t, env, swWaitDef("wd", "1h", "abort"))
	swWorker(t, env, seqworker.Config{Caller: fc, RedeliveryDelay: 50 * time.Millisecond, RedeliveryMaxDelay: 200 * time.Millisecond})
	swRequest(t, env, "r-wd", "wd", map[string]any{"svc": "db"})
	if st := swWaitStatus(t, env, "r-wd", events.StatusWaiting, 30*time.Second); st.Attempt != 4 {
		t.Fatalf("parked at attempt %d; want 4 (three faults of wt.check before)", st.Attempt)
	}
	if _, err := c.Signal(context.Background(), "r-wd", "approve", raw("ok", `true`, "note", `"go"`)); err != nil {
		t.Fatal(err)
	}
	if st := swWait(t, env, "r-wd", 30*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("resumed run with one fault = %s: %s; want succeeded (a resume's deliveries count from 1)", st.Status, st.Error)
	}
}

// TestScheduleStalledTickRequeued: a tick run whose queued state was
// stored but whose request never reached SEQ_RUNS (its publish failed
// while the stream's leader moved: TestChaosSchedules) holds the entry's
// overlap slot only until the entry's next tick, two ack waits later: the
// tick finds it queued and unclaimed, publishes its request again, and
// the run succeeds and leaves the entry's current runs.
func TestScheduleStalledTickRequeued(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("stl.echo", &calls))
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: stl\nschedule:\n  - name: daily\n    cron: \"0 0 9 * * *\"\n    overlap: skip\n"+
		"groups:\n  - name: stl-g\n    tools: [{tool: stl.echo}]\n")
	ctx := context.Background()

	// The stalled run: queued a minute ago, never published, current in
	// the entry's state.
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	id := "tick-stl-daily-stalled"
	st := &events.RunState{V: events.Version, RunID: id, Sequence: "stl", Status: events.StatusQueued, Trigger: events.TriggerSchedule,
		Request: events.RequestDigest(&events.RunRequest{Sequence: "stl"}), CreatedAt: at, UpdatedAt: at, ScheduleEntry: "daily", ScheduledAt: at}
	b, err := events.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := env.js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Create(ctx, id, b); err != nil {
		t.Fatal(err)
	}
	putEntryState(t, env, &events.ScheduleState{V: events.Version, Sequence: "stl", Entry: "daily", UpdatedAt: at,
		Current: []events.ScheduleRun{{RunID: id, At: at, Admitted: at, Trigger: events.TriggerSchedule}}})

	// A tick: skipped (the stalled run is current), and the stalled run's
	// request is published again.
	var trig events.ScheduleTriggerReply
	if e := schedRequest(t, env, events.SeqSchedulesTriggerSubject, &events.ScheduleRef{V: 1, Sequence: "stl", Entry: "daily"}, &trig); e != "" || len(trig.Ticks) != 1 {
		t.Fatalf("trigger = %+v, %s", trig, e)
	}
	if trig.Ticks[0].Outcome != events.TickSkipped {
		t.Errorf("the tick while the stalled run is current: %s (%s); want skipped", trig.Ticks[0].Outcome, trig.Ticks[0].Why)
	}
	if got := swWait(t, env, id, 20*time.Second); got.Status != events.StatusSucceeded || got.Attempt != 1 {
		t.Fatalf("the stalled run after the tick: %s attempt %d; want succeeded at attempt 1", got.Status, got.Attempt)
	}
	if n := calls.get("stl.echo"); n != 1 {
		t.Errorf("stl.echo called %d times; want 1", n)
	}
	waitNoCurrent(t, env, "stl", "daily", id)
}

// TestScheduleBackfillRange: a backfill of an every entry runs the fire
// times the server's schedule has (counted from the last tick seen, not
// from --from); a range of one instant runs that one tick (both ends are
// included); a range ending in the future is refused, naming now.
func TestScheduleBackfillRange(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swServe(t, env, swEcho("bfr.echo", nil))
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: bfr\nschedule:\n  - name: hourly\n    every: 1h\n    overlap: buffer_all\n  - name: daily\n    cron: \"0 0 9 * * *\"\n"+
		"groups:\n  - name: bfr-g\n    tools: [{tool: bfr.echo}]\n")
	last := time.Date(2026, 11, 1, 6, 20, 0, 0, time.UTC) // the server's schedule fired at :20
	putEntryState(t, env, &events.ScheduleState{V: events.Version, Sequence: "bfr", Entry: "hourly", LastTick: last, UpdatedAt: last})
	ticks := backfill(t, env, "bfr", "hourly", time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC))
	var at []string
	for _, tk := range ticks {
		at = append(at, tk.At.UTC().Format("15:04"))
	}
	if strings.Join(at, " ") != "03:20 04:20" {
		t.Errorf("backfill of the every entry from 03:00 to 05:00 ran the ticks at %v; want 03:20 04:20 (the schedule fires at :20)", at)
	}

	one := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	if ticks := backfill(t, env, "bfr", "daily", one, one); len(ticks) != 1 || !ticks[0].At.Equal(one) || ticks[0].Outcome != events.TickStarted {
		t.Errorf("backfill of the one instant %s = %+v; want its tick started", one, ticks)
	}

	future := time.Now().Add(time.Hour)
	var bf events.ScheduleTriggerReply
	e := schedRequest(t, env, events.SeqSchedulesBackfillSubject, &events.ScheduleBackfillRequest{V: 1, Sequence: "bfr", Entry: "daily", From: one, To: future}, &bf)
	if !strings.HasPrefix(e, "400 ") || !strings.Contains(e, "after now") || !strings.Contains(e, "schedules trigger") {
		t.Errorf("backfill to an hour from now = %q, %+v; want 400 saying the range ends after now", e, bf)
	}
}
