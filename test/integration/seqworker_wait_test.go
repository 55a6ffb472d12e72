package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// swWaitSeq: check, wait for an approval bringing {ok, note}, act.
// TIMEOUT and POLICY are replaced per test.
const swWaitSeq = `
name: NAME
groups:
  - name: check
    in: {svc: string}
    out: {health: object}
    tools: [{tool: wt.check, args: {svc: $args.svc}, as: health}]
  - name: approval
    out: {ok: bool, note: string}
    wait_for: {signal: approve, timeout: TIMEOUT}
    on_error: POLICY
  - name: act
    in: {ok: bool, note: string, svc: string}
    out: {done: object}
    tools: [{tool: wt.act, args: {svc: $args.svc, ok: $args.ok, note: $args.note}, as: done}]
`

func swWaitDef(name, timeout, policy string) string {
	return strings.NewReplacer("NAME", name, "TIMEOUT", timeout, "POLICY", policy).Replace(swWaitSeq)
}

// swWaitStatus waits until the run's state has status (swUntil: on its
// RUNS key's updates).
func swWaitStatus(t testing.TB, env *swEnv, runID, status string, within time.Duration) events.RunState {
	t.Helper()
	return swUntil(t, env, runID, within, status, func(st events.RunState) bool { return st.Status == status })
}

func swWaitEnv(t *testing.T) (*swEnv, *swCounter, *client.Client) {
	env := swStart(t, natsserver.Options{}, swOptions())
	calls := &swCounter{}
	swServe(t, env, swEcho("wt.check", calls), swEcho("wt.act", calls))
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	return env, calls, c
}

func raw(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

// timerCount counts the messages on the run's timer subject.
func timerCount(t *testing.T, env *swEnv, runID string) uint64 {
	t.Helper()
	subj, _ := events.WaitTimerSubject(runID)
	s, err := env.js.Stream(context.Background(), events.StreamSeqRuns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subj]
}

// TestSeqworkerWaitSignal: a run waits at its wait_for group, held by no
// worker, with its timer on the server; a signal with mistyped values is
// refused (400, run --arg's words), one of another name 409; the first
// of two concurrent signals resumes the run with its values as slots and
// the second is refused; a signal to the finished run is 409.
func TestSeqworkerWaitSignal(t *testing.T) {
	t.Parallel()
	env, calls, c := swWaitEnv(t)
	swStore(t, env, swWaitDef("wt", "1h", "abort"))
	swWorker(t, env, seqworker.Config{})
	ctx := context.Background()
	swRequest(t, env, "r-wt", "wt", map[string]any{"svc": "db"})
	st := swWaitStatus(t, env, "r-wt", events.StatusWaiting, 20*time.Second)
	if st.Wait == nil || st.Wait.Group != 2 || st.Wait.Signal != "approve" || st.Wait.Out["ok"] != "bool" || st.Wait.Deadline.Sub(st.Wait.Since) != time.Hour || st.FinishedGroups != 1 {
		t.Fatalf("waiting state: %+v, finished %d", st.Wait, st.FinishedGroups)
	}
	if n := timerCount(t, env, "r-wt"); n != 1 {
		t.Fatalf("timer messages = %d; want 1", n)
	}
	if _, err := c.Signal(ctx, "r-wt", "approve", raw("ok", `"yes"`, "note", `"x"`)); !errors.Is(err, client.ErrBadRequest) || !strings.Contains(err.Error(), "ok") {
		t.Fatalf("mistyped signal: %v", err)
	}
	if _, err := c.Signal(ctx, "r-wt", "approve", raw("ok", `true`)); !errors.Is(err, client.ErrBadRequest) || !strings.Contains(err.Error(), "note") {
		t.Fatalf("signal missing a value: %v", err)
	}
	if _, err := c.Signal(ctx, "r-wt", "deploy", nil); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), `for the signal "approve", not "deploy"`) {
		t.Fatalf("signal of another name: %v", err)
	}
	if _, err := c.Signal(ctx, "nope", "approve", nil); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("signal to an unknown run: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Signal(ctx, "r-wt", "approve", raw("ok", `true`, "note", `"go"`), client.WithSignalBy("ann"))
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two concurrent signals: %v, %v; want exactly one refused", errs[0], errs[1])
	}
	for _, err := range errs {
		// Refused as signalled already, or — when the run resumed and
		// finished before it came — as not waiting.
		if err != nil && (!errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "already signalled") && !strings.Contains(err.Error(), "not waiting")) {
			t.Fatalf("the second signal: %v", err)
		}
	}
	st = swWait(t, env, "r-wt", 20*time.Second)
	if st.Status != events.StatusSucceeded || !strings.Contains(string(st.Slots["done"]), `"note":"go"`) || calls.get("wt.act") != 1 || calls.get("wt.check") != 1 {
		t.Fatalf("after the signal: %s %s; calls check %d act %d", st.Status, st.Slots["done"], calls.get("wt.check"), calls.get("wt.act"))
	}
	if r := swResult(t, st); r.Groups[1].Wait == nil || r.Groups[1].Wait.Outcome != "signalled" || r.Groups[1].Wait.By != "ann" {
		t.Fatalf("the wait group's result: %+v", r.Groups[1])
	}
	if _, err := c.Signal(ctx, "r-wt", "approve", raw("ok", `true`, "note", `"again"`)); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "succeeded, not waiting") {
		t.Fatalf("signal to a finished run: %v", err)
	}
}

// TestSeqworkerWaitEnds: a timeout fails the run under abort and goes on
// with null slots under continue; a rejection fails the group with its
// reason; a duration wait resumes on its timer; a cancel ends a waiting
// run at once and removes its timer.
func TestSeqworkerWaitEnds(t *testing.T) {
	t.Parallel()
	env, calls, c := swWaitEnv(t)
	swStore(t, env, swWaitDef("wt-abort", "1s", "abort"))
	swStore(t, env, swWaitDef("wt-cont", "1s", "continue"))
	swStore(t, env, swWaitDef("wt-rej", "1h", "abort"))
	swStore(t, env, swWaitDef("wt-cancel", "1h", "abort"))
	swStore(t, env, "name: wt-timer\ngroups:\n  - name: pause\n    wait_for: {duration: 1s}\n  - name: after\n    out: {x: object}\n    tools: [{tool: wt.act, as: x}]\n")
	swWorker(t, env, seqworker.Config{})
	ctx := context.Background()
	for _, id := range []string{"abort", "cont", "rej", "cancel"} {
		swRequest(t, env, "r-"+id, "wt-"+id, map[string]any{"svc": "db"})
	}
	swRequest(t, env, "r-timer", "wt-timer", nil)

	st := swWait(t, env, "r-abort", 20*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Error, `no signal "approve" came within the wait's timeout of 1s`) {
		t.Errorf("timeout under abort: %s: %s", st.Status, st.Error)
	}
	st = swWait(t, env, "r-cont", 20*time.Second)
	if st.Status != events.StatusSucceeded || !strings.Contains(string(st.Slots["done"]), `"ok":null`) {
		t.Errorf("timeout under continue: %s %s: %s", st.Status, st.Slots["done"], st.Error)
	}
	st = swWait(t, env, "r-timer", 20*time.Second)
	if r := swResult(t, st); st.Status != events.StatusSucceeded || r.Groups[0].Wait == nil || r.Groups[0].Wait.Outcome != "elapsed" {
		t.Errorf("duration wait: %s %+v", st.Status, r.Groups[0].Wait)
	}

	swWaitStatus(t, env, "r-rej", events.StatusWaiting, 20*time.Second)
	if _, err := c.Signal(ctx, "r-rej", "approve", nil, client.WithReject("not during the freeze"), client.WithSignalBy("bob")); err != nil {
		t.Fatal(err)
	}
	st = swWait(t, env, "r-rej", 20*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Error, "rejected the group (by bob): not during the freeze") {
		t.Errorf("rejected: %s: %s", st.Status, st.Error)
	}

	swWaitStatus(t, env, "r-cancel", events.StatusWaiting, 20*time.Second)
	if n := timerCount(t, env, "r-cancel"); n != 1 {
		t.Fatalf("timer messages before the cancel = %d", n)
	}
	cst, err := c.Cancel(ctx, "r-cancel", "ops", "changed my mind")
	if err != nil || cst.Status != events.StatusCancelled {
		t.Fatalf("cancel of a waiting run = %+v, %v; want cancelled at once", cst, err)
	}
	if n := timerCount(t, env, "r-cancel"); n != 0 {
		t.Errorf("timer messages after the cancel = %d; want 0", n)
	}
	// A cancelled run no longer says it waits: no wait in its state (runs
	// show would print "signal it with ...") and no group left waiting.
	cst2, _ := swState(t, env, "r-cancel")
	if cst2.Wait != nil {
		t.Errorf("the cancelled run still waits: wait %+v", cst2.Wait)
	}
	for _, g := range swResult(t, cst2).Groups {
		if g.Status == seq.GroupWaiting {
			t.Errorf("the cancelled run's group %s is still %s", g.Name, g.Status)
		}
	}
	if _, err := c.Signal(ctx, "r-cancel", "approve", raw("ok", "true", "note", `""`)); !errors.Is(err, client.ErrConflict) {
		t.Errorf("signal to the cancelled run: %v", err)
	}
	if n := calls.get("wt.act"); n != 2 { // r-cont and r-timer
		t.Errorf("wt.act called %d times; want 2", n)
	}
}

// TestSeqworkerWaitAcrossRestarts: runs wait while their worker stops and
// another starts, then while the NATS server restarts on its store; each
// resumes exactly once on its signal.
func TestSeqworkerWaitAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	so := natsserver.Options{StoreDir: dir, Port: port}
	env := swStart(t, so, swOptions())
	calls := &swCounter{}
	swServe(t, env, swEcho("wt.check", calls), swEcho("wt.act", calls))
	swStore(t, env, swWaitDef("wt", "1h", "abort"))
	w1 := swWorker(t, env, seqworker.Config{})
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "r-wr-" + string(rune('a'+i))
		swRequest(t, env, ids[i], "wt", map[string]any{"svc": ids[i]})
	}
	for _, id := range ids {
		swWaitStatus(t, env, id, events.StatusWaiting, 20*time.Second)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = w1.Stop(sctx)
	cancel()
	swWorker(t, env, seqworker.Config{})
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range ids[:n/2] {
		if _, err := c.Signal(ctx, id, "approve", raw("ok", "true", "note", `"w2"`)); err != nil {
			t.Fatalf("signal %s after the worker restart: %v", id, err)
		}
	}
	for _, id := range ids[:n/2] {
		if st := swWait(t, env, id, 20*time.Second); st.Status != events.StatusSucceeded {
			t.Fatalf("%s: %s: %s", id, st.Status, st.Error)
		}
	}
	// The NATS server stops and starts again on its store: the waiting
	// runs' states and timers are kept — also a timer that fires while
	// the server is down.
	swStore(t, env, "name: wt-timer\ngroups:\n  - name: wt-timer-pause\n    wait_for: {duration: 2s}\n  - name: wt-timer-after\n    tools: [{tool: wt.act}]\n")
	swRequest(t, env, "r-wr-timer", "wt-timer", nil)
	swWaitStatus(t, env, "r-wr-timer", events.StatusWaiting, 20*time.Second)
	env.srv.Shutdown()
	time.Sleep(2 * time.Second) // the timer's deadline passes while the server is down
	env.srv = natsserver.StartTB(t, so)
	for _, id := range ids[n/2:] {
		var err error
		for range 100 { // the connections reconnect
			if _, err = c.Signal(ctx, id, "approve", raw("ok", "true", "note", `"after nats"`)); err == nil || errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrBadRequest) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("signal %s after the NATS restart: %v", id, err)
		}
	}
	for _, id := range ids[n/2:] {
		if st := swWait(t, env, id, 30*time.Second); st.Status != events.StatusSucceeded {
			t.Fatalf("%s: %s: %s", id, st.Status, st.Error)
		}
	}
	if st := swWait(t, env, "r-wr-timer", 30*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("the timer run: %s: %s", st.Status, st.Error)
	}
	if got := calls.get("wt.act"); got != n+1 {
		t.Fatalf("wt.act called %d times for %d runs; want each run resumed exactly once", got, n+1)
	}
}

// TestSeqworkerWaitTriggered: a boot run and a scheduled run wait too and
// resume (the boot run on its signal, the tick on its timer), keeping
// their trigger.
func TestSeqworkerWaitTriggered(t *testing.T) {
	t.Parallel()
	env, calls, c := swWaitEnv(t)
	swStore(t, env, "name: wt-boot\nboot: true\ngroups:\n  - name: wt-boot-ok\n    in: {agent: string}\n    out: {ok: bool}\n    wait_for: {signal: go, timeout: 1h}\n  - name: wt-boot-after\n    in: {ok: bool, agent: string}\n    tools: [{tool: wt.act, args: {ok: $args.ok, agent: $args.agent}}]\n")
	swStore(t, env, "name: wt-tick\nschedule: \"@every 2s\"\ngroups:\n  - name: wt-tick-pause\n    wait_for: {duration: 1s}\n  - name: wt-tick-after\n    tools: [{tool: wt.check}]\n")
	// A tick of a schedule entry (the list form) waits and resumes too:
	// its resume is no new tick for the entry's overlap policy. (Its
	// resume used to lack the entry, read as "default", and was dropped as
	// a tick of an entry the sequence no longer has: the run waited for
	// ever, and under skip every later tick was skipped.)
	swStore(t, env, "name: wt-entry\nschedule: [{name: e, every: 2s}]\ngroups:\n  - name: wt-entry-pause\n    wait_for: {duration: 1s}\n  - name: wt-entry-after\n    tools: [{tool: wt.check}]\n")
	swWorker(t, env, seqworker.Config{})
	ctx := context.Background()
	subj, _ := events.AgentReadySubject("agent-w")
	if _, err := events.PublishMessage(ctx, env.js, subj, &events.AgentReady{Agent: "agent-w", BootID: "b1"}); err != nil {
		t.Fatal(err)
	}
	id := seqworker.BootRunID("agent-w", "b1", "wt-boot")
	st := swWaitStatus(t, env, id, events.StatusWaiting, 20*time.Second)
	if st.Trigger != events.TriggerBoot || st.Wait == nil || st.Wait.Signal != "go" {
		t.Fatalf("boot run waiting: trigger %s, wait %+v", st.Trigger, st.Wait)
	}
	if _, err := c.Signal(ctx, id, "go", raw("ok", "true")); err != nil {
		t.Fatal(err)
	}
	if st := swWait(t, env, id, 20*time.Second); st.Status != events.StatusSucceeded || st.Trigger != events.TriggerBoot || st.Agent != "agent-w" {
		t.Fatalf("boot run after its signal: %s, trigger %s, agent %q: %s", st.Status, st.Trigger, st.Agent, st.Error)
	}
	// The schedule's first tick (the server fires it) waits on its timer,
	// which the server fires as a resume carrying the scheduler's headers.
	tick := swSucceededOf(t, env, "wt-tick")
	if st := tick; st.Trigger != events.TriggerSchedule || st.ScheduledAt.IsZero() || swResult(t, st).Groups[0].Wait.Outcome != "elapsed" {
		t.Fatalf("the tick's run: trigger %s, scheduled_at %v, wait %+v", st.Trigger, st.ScheduledAt, swResult(t, st).Groups[0].Wait)
	}
	if calls.get("wt.act") != 1 || calls.get("wt.check") < 1 {
		t.Fatalf("calls act %d, check %d; want 1 and at least 1", calls.get("wt.act"), calls.get("wt.check"))
	}
	tick = swSucceededOf(t, env, "wt-entry")
	if st := tick; st.ScheduleEntry != "e" || swResult(t, st).Groups[0].Wait.Outcome != "elapsed" {
		t.Fatalf("the entry tick's run: entry %q, wait %+v", st.ScheduleEntry, swResult(t, st).Groups[0].Wait)
	}
}

// TestSeqworkerWaitSequenceDeleted: a run waiting when its sequence is
// deleted finishes, on its signal, with the definition it started with
// (docs/runs.md, "The definition a run uses"). Before, the resume failed
// with "no such sequence" although `runs show` says a resume uses the
// run's own version.
func TestSeqworkerWaitSequenceDeleted(t *testing.T) {
	t.Parallel()
	env, calls, c := swWaitEnv(t)
	swStore(t, env, swWaitDef("wt-del", "1h", "abort"))
	swWorker(t, env, seqworker.Config{})
	swRequest(t, env, "r-del", "wt-del", map[string]any{"svc": "a"})
	swWaitStatus(t, env, "r-del", events.StatusWaiting, 20*time.Second)
	ctx := context.Background()
	kv, err := env.js.KeyValue(ctx, events.BucketSequences)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, events.KeyFor("wt-del")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Signal(ctx, "r-del", "approve", raw("ok", "true", "note", `"go"`)); err != nil {
		t.Fatal(err)
	}
	if st := swWait(t, env, "r-del", 20*time.Second); st.Status != events.StatusSucceeded || calls.get("wt.act") != 1 {
		t.Fatalf("the run after its sequence was deleted and it was signalled: %s (%s), act called %d time(s); want succeeded, once", st.Status, st.Error, calls.get("wt.act"))
	}
}

// swSucceededOf waits (swUntilAll: on RUNS updates) for a succeeded run of
// the sequence and returns its state.
func swSucceededOf(t testing.TB, env *swEnv, sequence string) events.RunState {
	t.Helper()
	var found events.RunState
	swUntilAll(t, env.js, 20*time.Second, "a succeeded run of "+sequence, func(runs map[string]events.RunState) bool {
		for _, st := range runs {
			if st.Sequence == sequence && st.Status == events.StatusSucceeded {
				found = st
				return true
			}
		}
		return false
	})
	return found
}

// TestSeqworkerSignalResumeRequeued: a signal recorded in a waiting run's
// state whose resume was never queued (its worker failed between the two
// writes, or the RUNS leader was lost after storing it: TestChaosWaits)
// does not leave the run waiting for its timer: a second signal is
// refused (the first wins) and queues the first one's resume again, and
// the run goes on with the first signal's values.
func TestSeqworkerSignalResumeRequeued(t *testing.T) {
	t.Parallel()
	env, calls, c := swWaitEnv(t)
	swStore(t, env, swWaitDef("wrq", "1h", "abort"))
	swWorker(t, env, seqworker.Config{})
	ctx := context.Background()
	swRequest(t, env, "r-wrq", "wrq", map[string]any{"svc": "db"})
	st := swWaitStatus(t, env, "r-wrq", events.StatusWaiting, 20*time.Second)

	// The first signal, as a worker records it before it queues the resume
	// (nobody holds a waiting run, so nothing else writes its key).
	st.Wait.Signalled = &events.SignalInfo{By: "ann", At: time.Now().UTC(), Values: json.RawMessage(`{"ok":true,"note":"first"}`)}
	b, err := events.Encode(&st)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := env.js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Put(ctx, "r-wrq", b); err != nil {
		t.Fatal(err)
	}

	if _, err := c.Signal(ctx, "r-wrq", "approve", raw("ok", `true`, "note", `"second"`)); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "already signalled") {
		t.Fatalf("the second signal: %v; want 409, signalled already", err)
	}
	got := swWait(t, env, "r-wrq", 20*time.Second)
	if got.Status != events.StatusSucceeded || !strings.Contains(string(got.Slots["done"]), `"note":"first"`) || calls.get("wt.act") != 1 {
		t.Fatalf("after the second signal: %s %s, act called %d times; want succeeded with the first signal's note, act once", got.Status, got.Slots["done"], calls.get("wt.act"))
	}
}
