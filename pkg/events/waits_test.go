package events

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestWaitSummary: a waiting run's summary (RunSummary.Waiting, the
// Skillbus-Run-Waiting header) says a timer's kind and "until" once, as
// docs/runs.md shows (`duration until …`, and `until …` for an until wait,
// not `until until …`); a header an older seqworker wrote with the word
// twice reads back with it once.
func TestWaitSummary(t *testing.T) {
	since := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		w    WaitState
		want string
	}{
		{"signal", WaitState{Kind: "signal", Signal: "approve", Since: since, Deadline: since.Add(time.Hour)}, `signal "approve" since 2026-12-01T09:00:00Z`},
		{"duration", WaitState{Kind: "duration", Since: since, Deadline: since.Add(time.Hour)}, "duration until 2026-12-01T10:00:00Z"},
		{"until", WaitState{Kind: "until", Since: since, Deadline: since.Add(time.Hour)}, "until 2026-12-01T10:00:00Z"},
	} {
		st := RunState{RunID: "r1", Sequence: "s", Status: StatusWaiting, Wait: &tc.w}
		if got := st.Summary().Waiting; got != tc.want {
			t.Errorf("%s: Summary().Waiting = %q; want %q", tc.name, got, tc.want)
		}
		h := nats.Header{}
		st.Summary().SetHeader(h)
		if s, ok := SummaryFromHeader("r1", h); !ok || s.Waiting != tc.want {
			t.Errorf("%s: from its header = %q, %v; want %q", tc.name, s.Waiting, ok, tc.want)
		}
	}
	h := nats.Header{}
	(&RunState{RunID: "r1", Sequence: "s", Status: StatusWaiting}).Summary().SetHeader(h)
	h.Set(RunHeaderWaiting, "until until 2026-12-01T10:00:00Z")
	if s, _ := SummaryFromHeader("r1", h); s.Waiting != "until 2026-12-01T10:00:00Z" {
		t.Errorf("an older header reads %q; want %q", s.Waiting, "until 2026-12-01T10:00:00Z")
	}
}
