package console

import (
	"slices"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
)

// TestStatusesOf: the runs page offers the known statuses in their order,
// then any other a run has — a status of a newer seqworker (waiting) shows
// as a filter and a count without a change of the console.
func TestStatusesOf(t *testing.T) {
	runs := []events.RunSummary{{Status: "succeeded"}, {Status: "waiting"}, {Status: "paused"}, {Status: "waiting"}, {Status: ""}}
	got := statusesOf(runs)
	want := []string{"queued", "running", "interrupted", "succeeded", "failed", "cancelled", "paused", "waiting"}
	if !slices.Equal(got, want) {
		t.Errorf("statusesOf = %v; want %v", got, want)
	}
	if got := statusesOf(nil); !slices.Equal(got, runStatuses) {
		t.Errorf("statusesOf(nil) = %v; want the known ones", got)
	}
	f := &runFilter{words: []string{"waiting"}}
	if !f.matches(events.RunSummary{Status: "waiting"}) || f.matches(events.RunSummary{Status: "succeeded", Sequence: "x"}) {
		t.Error("a search for a new status does not find its runs only")
	}
}
