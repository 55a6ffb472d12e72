package seqworker

import (
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestWaitTimersApartFromSchedules: the timers of waiting runs share the
// stream subjects seq.schedule.> with the schedules of sequences, and a
// schedule's reconcile purges every seq.schedule.<sequence>.* it does not
// want. A sequence named "wait" with entries must then not reach a timer:
// the timers' token "_wait" is no sequence's token.
func TestWaitTimersApartFromSchedules(t *testing.T) {
	if err := seq.CheckName("_wait"); err == nil {
		t.Fatal(`"_wait" is a valid sequence name, so its schedules would share the subjects of the waits' timers`)
	}
	timer, err := events.WaitTimerSubject("run-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wait", "_wait", "Wait", "wait-for"} {
		if seq.CheckName(name) != nil {
			continue // no sequence has this name
		}
		base, err := events.ScheduleSubject(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(timer, base+".") || timer == base {
			t.Errorf("the timer %s is under the schedules of sequence %q (%s.*)", timer, name, base)
		}
		entry, err := events.ScheduleEntrySubject(name, "run-1", false)
		if err == nil && entry == timer {
			t.Errorf("sequence %q's entry run-1 has the subject of run-1's timer: %s", name, timer)
		}
	}
}
