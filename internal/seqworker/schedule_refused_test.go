package seqworker

import (
	"context"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestScheduleRefusedEvent: when the NATS server refuses a schedule that
// the sequence language accepted (a server older or stricter than the
// validator), the worker publishes a refused schedule event with the
// server's reason instead of failing silently. The refusal is provoked by
// handing the worker's catalog a sequence whose schedule the validator
// would now refuse.
func TestScheduleRefusedEvent(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	w := startTestWorker(t, nc, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good, err := seq.ParseYAML([]byte("name: refused\nschedule: \"@hourly\"\ngroups:\n  - name: refused-one\n    tools: [{tool: a}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := seq.Encode(good)
	rev, err := w.sequences.Put(ctx, events.KeyFor("refused"), raw)
	if err != nil {
		t.Fatal(err)
	}
	bad := *good
	bad.Schedule = "0 0 0 30 2 *"      // 30 February: the server refuses it
	time.Sleep(300 * time.Millisecond) // let the watcher apply the put first
	w.cat.put("refused", &bad, rev, nil)
	if err := w.reconcileSchedule(ctx, "refused"); err != nil {
		t.Fatalf("reconcileSchedule = %v; want nil (a refusal is reported, not an error)", err)
	}
	s, err := w.js.Stream(ctx, events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := events.ScheduleEventSubject("refused")
	var ev events.ScheduleEvent
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if err == nil && events.Decode(m.Data, &ev) == nil && ev.Status == events.ScheduleRefused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refused schedule event; last %+v (%v)", ev, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ev.Schedule != bad.Schedule || ev.Error == "" {
		t.Errorf("refused event %+v; want the schedule and the server's reason", ev)
	}
}
