package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestScheduleCancelOtherWaiting: overlap cancel_other cancels a run of
// its entry that waits for a signal as seq.cancel does (one code:
// recordCancel) — the run no longer says it waits, no group is left
// waiting, and its wait's timer is removed; before, the tick's cancel left
// the wait in the state and the timer on the server.
func TestScheduleCancelOtherWaiting(t *testing.T) {
	t.Parallel()
	env, _, _ := swWaitEnv(t)
	swWorker(t, env, seqworker.Config{})
	def := strings.Replace(swWaitDef("cw", "1h", "abort"), "name: cw\n", "name: cw\nschedule:\n  - name: e\n    every: 1h\n    overlap: cancel_other\n    args: {svc: db}\n", 1)
	swStore(t, env, def)
	trigger := func() string {
		t.Helper()
		var trig events.ScheduleTriggerReply
		deadline := time.Now().Add(5 * time.Second)
		for {
			e := schedRequest(t, env, events.SeqSchedulesTriggerSubject, &events.ScheduleRef{V: 1, Sequence: "cw", Entry: "e"}, &trig)
			if e == "" && len(trig.Ticks) == 1 {
				return trig.Ticks[0].RunID
			}
			if time.Now().After(deadline) {
				t.Fatalf("trigger = %+v, %s", trig, e)
			}
		}
	}
	first := trigger()
	swWaitStatus(t, env, first, events.StatusWaiting, 20*time.Second)
	if n := timerCount(t, env, first); n != 1 {
		t.Fatalf("timer messages of the waiting run = %d; want 1", n)
	}
	second := trigger()
	st := swWaitStatus(t, env, first, events.StatusCancelled, 20*time.Second)
	if !strings.Contains(st.Error, "cancel_other") {
		t.Errorf("the first run's error = %q; want the cancel_other reason", st.Error)
	}
	if st.Wait != nil {
		t.Errorf("the run cancelled by cancel_other still waits: wait %+v", st.Wait)
	}
	for _, g := range swResult(t, st).Groups {
		if g.Status == seq.GroupWaiting {
			t.Errorf("the cancelled run's group %s is still %s", g.Name, g.Status)
		}
	}
	if n := timerCount(t, env, first); n != 0 {
		t.Errorf("timer messages after the cancel = %d; want 0", n)
	}
	swWaitStatus(t, env, second, events.StatusWaiting, 20*time.Second) // the tick that replaced it runs
}
