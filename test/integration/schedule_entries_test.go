package integration

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// slowTool is a tool that takes d (or until its call is cancelled) and
// records how many of its calls overlap.
type slowTool struct {
	mu            sync.Mutex
	now, max, all int
	done          chan struct{} // one value per finished call
}

func (s *slowTool) tool(name string, d time.Duration) tool.Tool {
	s.done = make(chan struct{}, 100)
	return tool.Tool{Name: name, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		s.mu.Lock()
		s.now++
		s.all++
		s.max = max(s.max, s.now)
		s.mu.Unlock()
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
		s.done <- struct{}{}
		return args, ctx.Err()
	}}
}

func (s *slowTool) maxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// schedEvents collects the schedule events of a sequence.
type schedEvents struct {
	mu  sync.Mutex
	evs []events.ScheduleEvent
	ch  chan events.ScheduleEvent
}

func watchSchedule(t *testing.T, env *swEnv, sequence string) *schedEvents {
	t.Helper()
	subj, _ := events.ScheduleEventSubject(sequence)
	se := &schedEvents{ch: make(chan events.ScheduleEvent, 1000)}
	sub, err := env.nc.Subscribe(subj, func(m *nats.Msg) {
		var ev events.ScheduleEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			se.mu.Lock()
			se.evs = append(se.evs, ev)
			se.mu.Unlock()
			se.ch <- ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return se
}

// all returns the events received so far.
func (se *schedEvents) all() []events.ScheduleEvent {
	se.mu.Lock()
	defer se.mu.Unlock()
	return slices.Clone(se.evs)
}

// waitStatus waits for n schedule events of status within d.
func (se *schedEvents) waitStatus(t *testing.T, status string, n int, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	seen := 0
	for seen < n {
		select {
		case ev := <-se.ch:
			if ev.Status == status {
				seen++
			}
		case <-deadline:
			t.Fatalf("%d %s schedule events within %s; want %d", seen, status, d, n)
		}
	}
}

// entryState reads an entry's state from SEQ_SCHEDULES.
func entryState(t *testing.T, env *swEnv, sequence, entry string) events.ScheduleState {
	t.Helper()
	kv, err := env.js.KeyValue(context.Background(), events.BucketSchedules)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := events.ScheduleKey(sequence, entry)
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("state of %s/%s: %v", sequence, entry, err)
	}
	var st events.ScheduleState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// putEntryState writes st as the state of its entry in SEQ_SCHEDULES (a
// state the seqworker would have left after a fault).
func putEntryState(t *testing.T, env *swEnv, st *events.ScheduleState) {
	t.Helper()
	kv, err := env.js.KeyValue(context.Background(), events.BucketSchedules)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := events.ScheduleKey(st.Sequence, st.Entry)
	b, err := events.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
}

// schedRequest calls a schedules endpoint; it returns the error
// description of a micro error ("" when none).
func schedRequest(t *testing.T, env *swEnv, subject string, in events.Message, out any) string {
	t.Helper()
	b, err := events.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	m, err := env.nc.Request(subject, b, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
		return code + " " + m.Header.Get("Nats-Service-Error")
	}
	if out != nil {
		if err := json.Unmarshal(m.Data, out); err != nil {
			t.Fatalf("%s reply %s: %v", subject, m.Data, err)
		}
	}
	return ""
}

func overlapSeq(name, overlap, tool string) string {
	return "name: " + name + "\nschedule:\n  - name: e\n    every: 1s\n    overlap: " + overlap + "\ngroups:\n  - name: " + name + "-g\n    tools: [{tool: " + tool + "}]\n"
}

// overlap skip (the default): with ticks every second and runs of 2.5 s,
// never two runs of the entry at once, and the ticks in between are
// recorded as skipped (events and the entry's counter).
func TestScheduleOverlapSkip(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var slow slowTool
	swServe(t, env, slow.tool("ov.skip", 2500*time.Millisecond))
	se := watchSchedule(t, env, "ov-skip")
	swWorker(t, env, seqworker.Config{})
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, overlapSeq("ov-skip", "skip", "ov.skip"))
	se.waitStatus(t, events.TickSkipped, 3, 12*time.Second)
	<-slow.done
	if m := slow.maxInFlight(); m != 1 {
		t.Errorf("%d runs of the entry at once; want 1 under overlap skip", m)
	}
	if st := entryState(t, env, "ov-skip", "e"); st.Skipped < 3 || len(st.Current) > 1 {
		t.Errorf("state: skipped %d, current %v; want at least 3 skipped and at most one current run", st.Skipped, st.Current)
	}
}

// overlap allow_all keeps the behaviour of schedules before entries: a
// tick starts its run whatever is running.
func TestScheduleOverlapAllowAll(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var slow slowTool
	swServe(t, env, slow.tool("ov.all", 2500*time.Millisecond))
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, overlapSeq("ov-all", "allow_all", "ov.all"))
	deadline := time.Now().Add(8 * time.Second)
	for slow.maxInFlight() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("at most %d runs at once in 8 s; want runs side by side under allow_all", slow.maxInFlight())
		}
		<-slow.done
	}
}

// overlap buffer_one: at most one tick waits, and it starts when the
// current run ends (its run starts well after its tick).
func TestScheduleOverlapBufferOne(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var slow slowTool
	swServe(t, env, slow.tool("ov.buf", 2500*time.Millisecond))
	se := watchSchedule(t, env, "ov-buf")
	swWorker(t, env, seqworker.Config{})
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, overlapSeq("ov-buf", "buffer_one", "ov.buf"))
	deadline := time.After(13 * time.Second)
	buffered, skipped, ended := 0, 0, 0
	for buffered < 2 || skipped < 1 || ended < 2 {
		select {
		case ev := <-se.ch:
			switch ev.Status {
			case events.TickBuffered:
				buffered++
			case events.TickSkipped:
				skipped++
			}
			if ev.Status == events.ScheduleSet {
				continue
			}
			if st := entryState(t, env, "ov-buf", "e"); len(st.Buffered) > 1 || len(st.Current) > 1 {
				t.Fatalf("state: %d buffered, %d current; want at most one of each under buffer_one", len(st.Buffered), len(st.Current))
			}
		case <-slow.done:
			ended++
		case <-deadline:
			t.Fatalf("in 13 s: %d buffered, %d skipped ticks, %d runs ended; want 2, 1, 2", buffered, skipped, ended)
		}
	}
	if m := slow.maxInFlight(); m != 1 {
		t.Errorf("%d runs at once; want 1 under buffer_one", m)
	}
	// A buffered tick's run was started (when the run before it ended;
	// never beside it: max in flight 1 above).
	started := 0
	for _, ev := range se.all() {
		if ev.Status == events.TickBuffered {
			if _, ok := swState(t, env, ev.RunID); ok {
				started++
			}
		}
	}
	if started == 0 {
		t.Error("no buffered tick's run was started; want the buffered tick started when the current run ended")
	}
}

// overlap cancel_other: a tick cancels the running run and starts once it
// has stopped, never beside it.
func TestScheduleOverlapCancelOther(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var slow slowTool
	swServe(t, env, slow.tool("ov.cancel", 20*time.Second))
	se := watchSchedule(t, env, "ov-cancel")
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, overlapSeq("ov-cancel", "cancel_other", "ov.cancel"))
	se.waitStatus(t, events.TickCancelled, 3, 12*time.Second)
	<-slow.done
	cancelled := 0
	entryRuns(t, env, func(st *events.RunState) {
		if st.Status == events.StatusCancelled && strings.Contains(st.Error, "cancel_other") {
			cancelled++
		}
	})
	if cancelled == 0 {
		t.Error("no run cancelled by overlap cancel_other")
	}
	if m := slow.maxInFlight(); m != 1 {
		t.Errorf("%d runs at once; want 1: cancel_other cancels before it starts", m)
	}
}

// A pause is kept in SEQ_SCHEDULES: it holds across a worker's restart and
// for every worker; a paused entry's ticks are dropped and recorded;
// trigger runs a tick now (manual-tick) even so; unpause lets ticks run.
func TestSchedulePauseTriggerBackfill(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("pz.echo", &calls))
	se := watchSchedule(t, env, "pz")
	w1 := swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: pz\nschedule:\n  - name: fast\n    every: 1s\n    args: {who: a}\n  - name: hourly\n    every: 1h\n    overlap: buffer_all\n    args: {who: b}\ngroups:\n  - name: pz-g\n    in: {who: string}\n    tools: [{tool: pz.echo, args: {who: $args.who}}]\n")
	var list events.ScheduleListReply
	deadline := time.Now().Add(5 * time.Second)
	for len(list.Entries) < 2 {
		if e := schedRequest(t, env, events.SeqSchedulesListSubject, &events.ScheduleListRequest{V: 1}, &list); e != "" || time.Now().After(deadline) {
			t.Fatalf("schedules.list = %v, %s", list, e)
		}
	}
	var paused events.ScheduleListReply
	if e := schedRequest(t, env, events.SeqSchedulesPauseSubject, &events.SchedulePauseRequest{V: 1, Sequence: "pz", Entry: "fast", Note: "incident 42", By: "test"}, &paused); e != "" {
		t.Fatalf("pause: %s", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	swWorker(t, env, seqworker.Config{}) // another worker: the pause holds
	se.waitStatus(t, events.TickPaused, 2, 8*time.Second)
	var show events.ScheduleInfo
	if e := schedRequest(t, env, events.SeqSchedulesShowSubject, &events.ScheduleRef{V: 1, Sequence: "pz", Entry: "fast"}, &show); e != "" {
		t.Fatalf("show: %s", e)
	}
	if show.State == nil || !show.State.Paused || show.State.Note != "incident 42" || len(show.Next) != 10 {
		t.Fatalf("show after restart = %+v; want paused with the note and 10 next fire times", show.State)
	}

	// Trigger: a manual-tick run of the paused entry, with its arguments.
	var trig events.ScheduleTriggerReply
	if e := schedRequest(t, env, events.SeqSchedulesTriggerSubject, &events.ScheduleRef{V: 1, Sequence: "pz", Entry: "fast"}, &trig); e != "" || len(trig.Ticks) != 1 || trig.Ticks[0].Outcome != events.TickStarted {
		t.Fatalf("trigger = %+v, %s", trig, e)
	}
	st := swWait(t, env, trig.Ticks[0].RunID, 10*time.Second)
	if st.Status != events.StatusSucceeded || st.Trigger != events.TriggerManualTick || st.ScheduleEntry != "fast" || string(st.Args) != `{"who":"a"}` {
		t.Errorf("triggered run = %s %s entry %q args %s; want succeeded manual-tick fast {\"who\":\"a\"}", st.Status, st.Trigger, st.ScheduleEntry, st.Args)
	}

	// Backfill: bounded, refused above the bound naming it; a range of 3
	// hourly ticks runs 3 runs one after another (buffer_all).
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if e := schedRequest(t, env, events.SeqSchedulesBackfillSubject, &events.ScheduleBackfillRequest{V: 1, Sequence: "pz", Entry: "hourly", From: from, To: from.Add(200 * time.Hour)}, nil); !strings.Contains(e, "400") || !strings.Contains(e, "at most 100") {
		t.Errorf("backfill of 201 ticks = %q; want 400 naming the bound of 100", e)
	}
	var bf events.ScheduleTriggerReply
	if e := schedRequest(t, env, events.SeqSchedulesBackfillSubject, &events.ScheduleBackfillRequest{V: 1, Sequence: "pz", Entry: "hourly", From: from, To: from.Add(2 * time.Hour)}, &bf); e != "" || len(bf.Ticks) != 3 {
		t.Fatalf("backfill = %+v, %s; want 3 ticks", bf, e)
	}
	for _, tk := range bf.Ticks {
		if st := swWait(t, env, tk.RunID, 10*time.Second); st.Status != events.StatusSucceeded || !st.ScheduledAt.Equal(tk.At) {
			t.Errorf("backfilled run %s = %s at %s; want succeeded at its tick %s", tk.RunID, st.Status, st.ScheduledAt, tk.At)
		}
	}

	// Unpause: the entry's ticks run again.
	before := calls.get("pz.echo")
	if e := schedRequest(t, env, events.SeqSchedulesUnpauseSubject, &events.SchedulePauseRequest{V: 1, Sequence: "pz", Entry: "fast"}, nil); e != "" {
		t.Fatalf("unpause: %s", e)
	}
	deadline = time.Now().Add(6 * time.Second)
	for calls.get("pz.echo") <= before {
		if time.Now().After(deadline) {
			t.Fatal("no tick ran within 6 s of unpause")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// entryRuns calls each for the state of every run in RUNS.
func entryRuns(t *testing.T, env *swEnv, each func(*events.RunState)) {
	t.Helper()
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if st, ok := swState(t, env, k); ok {
			each(&st)
		}
	}
}

// skillbus schedules lists every entry with its next fire time in its zone
// and in UTC and its overlap; show gives 10 fire times; pause needs a note
// and shows it; a second pause keeps the first note unless --overwrite;
// a mistyped entry or sequence gets did-you-mean; unpause clears it, and
// says so when there was no pause.
func TestSchedulesCommand(t *testing.T) {
	env := swStart(t, natsserver.Options{}, swOptions())
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, "name: sc\nschedule:\n  - name: berlin\n    cron: \"0 0 9 * * MON-FRI\"\n    timezone: Europe/Berlin\n    args: {team: b}\n  - name: ops\n    every: 6h\n    overlap: buffer_one\n    args: {team: o}\ngroups:\n  - name: sc-g\n    in: {team: string}\n    tools: [{tool: sc.t, args: {team: $args.team}}]\n")
	t.Setenv("NATS_URL", env.srv.ClientURL())
	var out string
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out, "sc/ops") {
		if time.Now().After(deadline) {
			t.Fatalf("skillbus schedules = %q; want both entries", out)
		}
		_, out, _ = cliRun(t, "schedules")
	}
	if !strings.Contains(out, "sc/berlin") || !strings.Contains(out, "CET") && !strings.Contains(out, "CEST") || !strings.Contains(out, "buffer_one") || !strings.Contains(out, "skip") {
		t.Errorf("skillbus schedules:\n%s\nwant the Berlin entry in its zone, and both overlaps", out)
	}
	code, out, errOut := cliRun(t, "schedules", "show", "sc/berlin")
	if code != 0 || strings.Count(out, "09:00:00 C") != 10 {
		t.Errorf("schedules show = %d\n%s%s\nwant 10 fire times at 09:00 Berlin time", code, out, errOut)
	}
	if code, _, errOut := cliRun(t, "schedules", "pause", "sc/berlin"); code != 2 || !strings.Contains(errOut, "--note") {
		t.Errorf("pause without a note = %d %q; want 2 asking for --note", code, errOut)
	}
	if code, _, errOut := cliRun(t, "schedules", "pause", "sc/nope", "--note", "x"); code != 1 || !strings.Contains(errOut, "its entries are berlin, ops") {
		t.Errorf("pause of an unknown entry = %d %q; want 1 naming the entries", code, errOut)
	}
	if code, _, errOut := cliRun(t, "schedules", "pause", "sc/berlin", "--note", "holiday"); code != 0 {
		t.Fatalf("pause = %d %s", code, errOut)
	}
	if _, out, _ := cliRun(t, "schedules"); !strings.Contains(out, "yes: holiday") {
		t.Errorf("after pause, schedules:\n%s\nwant the entry paused with its note", out)
	}
	// A second pause keeps the first one's note and says whose it is;
	// --overwrite replaces it.
	if code, out, errOut := cliRun(t, "schedules", "pause", "sc/berlin", "--note", "deploy", "--by", "bob"); code != 0 || !strings.Contains(out, "sc/berlin already paused") || !strings.Contains(errOut, `already paused by `) || !strings.Contains(errOut, `with the note "holiday"`) || !strings.Contains(errOut, "--overwrite") {
		t.Errorf("pause of a paused entry = %d %q %q; want 0 saying it was paused already, by whom, with which note", code, out, errOut)
	}
	if _, out, _ := cliRun(t, "schedules"); !strings.Contains(out, "yes: holiday") {
		t.Errorf("after a second pause, schedules:\n%s\nwant the first note kept", out)
	}
	if code, out, errOut := cliRun(t, "schedules", "pause", "sc/berlin", "--note", "deploy", "--by", "bob", "--overwrite"); code != 0 || !strings.Contains(out, "note replaced") || !strings.Contains(errOut, `with the note "holiday"`) {
		t.Errorf("pause --overwrite = %d %q %q; want 0, the note replaced", code, out, errOut)
	}
	if _, out, _ := cliRun(t, "schedules", "show", "sc/berlin"); !strings.Contains(out, "paused:   yes, by bob at ") || !strings.Contains(out, ": deploy") {
		t.Errorf("after pause --overwrite, schedules show:\n%s\nwant paused by bob: deploy", out)
	}
	// Did you mean, for an entry and for a sequence.
	if code, _, errOut := cliRun(t, "schedules", "show", "sc/berln"); code != 1 || !strings.Contains(errOut, `did you mean "sc/berlin"?`) {
		t.Errorf("show of a mistyped entry = %d %q; want 1 with did you mean \"sc/berlin\"", code, errOut)
	}
	if code, _, errOut := cliRun(t, "schedules", "trigger", "sx/ops"); code != 1 || !strings.Contains(errOut, `did you mean "sc"?`) {
		t.Errorf("trigger of a mistyped sequence = %d %q; want 1 with did you mean \"sc\"", code, errOut)
	}
	var reply events.ScheduleListReply
	_, out, _ = cliRun(t, "schedules", "-o", "json")
	if err := json.Unmarshal([]byte(out), &reply); err != nil || len(reply.Entries) != 2 || !reply.Entries[0].State.Paused {
		t.Errorf("schedules -o json = %s (%v); want 2 entries, berlin paused", out, err)
	}
	if code, out, _ := cliRun(t, "schedules", "unpause", "sc/berlin"); code != 0 || out != "sc/berlin unpaused\n" {
		t.Errorf("unpause = %d %q; want 0, unpaused", code, out)
	}
	if code, out, errOut := cliRun(t, "schedules", "unpause", "sc/berlin"); code != 0 || out != "sc/berlin not paused\n" || !strings.Contains(errOut, "was not paused; nothing changed") {
		t.Errorf("unpause of an entry not paused = %d %q %q; want 0 saying it was not paused", code, out, errOut)
	}
	if code, _, errOut := cliRun(t, "schedules", "backfill", "sc/ops", "--from", "2026-01-01T00:00:00Z", "--to", "2026-03-01T00:00:00Z"); code != 1 || !strings.Contains(errOut, "at most 100") {
		t.Errorf("backfill of 237 ticks = %d %q; want 1 naming the bound", code, errOut)
	}
}

// Removing an entry from its sequence removes its server-side schedule and
// its state; the entry that stays keeps both.
func TestScheduleEntryRemoved(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swWorker(t, env, seqworker.Config{})
	two := "name: rm\nschedule:\n  - {name: keep, every: 1h}\n  - {name: gone, every: 1h}\ngroups:\n  - name: rm-g\n    tools: [{tool: rm.t}]\n"
	swStore(t, env, two)
	stream, err := env.js.Stream(context.Background(), events.StreamSeqRuns)
	if err != nil {
		t.Fatal(err)
	}
	keep, _ := events.ScheduleEntrySubject("rm", "keep", false)
	gone, _ := events.ScheduleEntrySubject("rm", "gone", false)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("within 5 s: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("both entries' schedules", func() bool { return swSubjectCount(t, stream, keep) == 1 && swSubjectCount(t, stream, gone) == 1 })
	for _, e := range []string{"keep", "gone"} {
		if e := schedRequest(t, env, events.SeqSchedulesPauseSubject, &events.SchedulePauseRequest{V: 1, Sequence: "rm", Entry: e, Note: "n"}, nil); e != "" {
			t.Fatal(e)
		}
	}
	swStore(t, env, "name: rm\nschedule:\n  - {name: keep, every: 1h}\ngroups:\n  - name: rm-g\n    tools: [{tool: rm.t}]\n")
	kv, _ := env.js.KeyValue(context.Background(), events.BucketSchedules)
	waitFor("the removed entry's schedule and state gone", func() bool {
		key, _ := events.ScheduleKey("rm", "gone")
		_, err := kv.Get(context.Background(), key)
		return swSubjectCount(t, stream, gone) == 0 && err != nil
	})
	if swSubjectCount(t, stream, keep) != 1 || !entryState(t, env, "rm", "keep").Paused {
		t.Error("the entry that stays lost its schedule or its pause")
	}
}

// catchup_window: after an outage of the NATS server (a server process
// killed and started again on its store), the one tick the server fires
// first runs the ticks it did not fire within the window, through the
// overlap policy (allow_all here: all of them).
func TestScheduleCatchupWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a NATS server process")
	}
	t.Parallel()
	srv := startNATSChild(t)
	driver := reconnectingConn(t, srv.url(), "driver")
	js, err := jetstream.New(driver)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := events.Options{DuplicateWindow: time.Minute}
	if err := events.Provision(ctx, js, opts); err != nil {
		t.Fatal(err)
	}
	env := &swEnv{nc: driver, js: js, opts: opts}
	prov := reconnectingConn(t, srv.url(), "provider")
	provider, err := tool.Serve(prov, tool.ServerConfig{Name: "catchup-tools"}, tool.Tool{Name: "cu.t", Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = provider.Stop(context.Background()) })
	w, err := seqworker.New(reconnectingConn(t, srv.url(), "worker"), seqworker.Config{Provision: opts, Logger: swLogger(t), FetchWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = w.Stop(sctx)
	})
	swStore(t, env, "name: cu\nschedule:\n  - name: e\n    every: 1s\n    overlap: allow_all\n    catchup_window: 1m\ngroups:\n  - name: cu-g\n    tools: [{tool: cu.t}]\n")
	ticks := func() []time.Time {
		var out []time.Time
		entryRuns(t, env, func(st *events.RunState) {
			if st.ScheduleEntry == "e" && st.Status == events.StatusSucceeded {
				out = append(out, st.ScheduledAt)
			}
		})
		slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(ticks()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no two ticks ran within 10 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	srv.kill()
	time.Sleep(4 * time.Second) // the outage: the server fires nothing
	srv.start()
	// Every second of the outage gets its run: no gap of more than 1 s
	// between the tick times, once the first tick after it has run.
	var got []time.Time
	deadline = time.Now().Add(20 * time.Second)
	for {
		got = ticks()
		gaps := 0
		for i := 1; i < len(got); i++ {
			if got[i].Sub(got[i-1]) > 1500*time.Millisecond {
				gaps++
			}
		}
		if gaps == 0 && len(got) >= 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tick times after the outage %v; want one run per second of it (catchup_window 1m)", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
