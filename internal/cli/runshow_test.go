package cli

import (
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestPrintRunGroups: runs show agrees with its status line — the group
// after a running run's checkpoint is shown running, not pending, and a
// run with finished groups whose results were not stored does not say
// that no group has run.
func TestPrintRunGroups(t *testing.T) {
	var b strings.Builder
	res := &seq.Result{Groups: []seq.GroupResult{
		{Name: "a", Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: "t", Status: seq.CallSucceeded, Attempts: 1}}},
		{Name: "b", Status: seq.GroupPending, Calls: []seq.CallResult{{Tool: "t", Status: seq.CallPending}}},
		{Name: "c", Status: seq.GroupPending, Calls: []seq.CallResult{{Tool: "t", Status: seq.CallPending}}},
	}}
	printRunGroups(&b, &events.RunState{Status: events.StatusRunning, FinishedGroups: 1}, res)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[3], "2 b") || !strings.Contains(lines[3], "running") || !strings.Contains(lines[5], "pending") {
		t.Errorf("running run's table:\n%s\nwant group 2 running and group 3 pending", b.String())
	}
	b.Reset()
	printRunGroups(&b, &events.RunState{Status: events.StatusFailed, FinishedGroups: 2137}, &seq.Result{})
	if got := b.String(); strings.Contains(got, "No group has run yet") || !strings.Contains(got, "2137 groups finished") {
		t.Errorf("failed run with 2137 finished groups and no stored result: %q", got)
	}
	b.Reset()
	printRunGroups(&b, &events.RunState{Status: events.StatusQueued}, &seq.Result{})
	if got := b.String(); !strings.Contains(got, "No group has run yet") {
		t.Errorf("queued run: %q", got)
	}
}
