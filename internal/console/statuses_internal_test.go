package console

import (
	"net/http/httptest"
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
	f := &runFilter{words: searchWords("waiting")}
	if !f.matches(events.RunSummary{Status: "waiting"}) || f.matches(events.RunSummary{Status: "succeeded", Sequence: "x"}) {
		t.Error("a search for a new status does not find its runs only")
	}
}

// TestSearchRunIDCase: run ids are case-sensitive, and ids made together
// share their start and may differ only in the case of one letter
// ("…RhCJ" and "…Rhcj" came out of one test run): a search for one id
// finds that run alone, while the other words match in any case.
func TestSearchRunIDCase(t *testing.T) {
	req := httptest.NewRequest("GET", "/api/runs?q=run-G60dgFY20ORLVOEVZQRhCJ", nil)
	f, err := parseRunFilter(req)
	if err != nil {
		t.Fatal(err)
	}
	upper := events.RunSummary{RunID: "run-G60dgFY20ORLVOEVZQRhCJ", Sequence: "demo", Status: "succeeded"}
	lower := events.RunSummary{RunID: "run-G60dgFY20ORLVOEVZQRhcj", Sequence: "demo", Status: "succeeded"}
	if !f.matches(upper) || f.matches(lower) {
		t.Errorf("q=%s matches %s: %v, %s: %v; want the first only", f.words[0].typed, upper.RunID, f.matches(upper), lower.RunID, f.matches(lower))
	}
	f, err = parseRunFilter(httptest.NewRequest("GET", "/api/runs?q=DEMO+Succeeded", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !f.matches(upper) {
		t.Errorf("q=DEMO Succeeded does not match a succeeded run of demo; want sequence and status in any case")
	}
}
