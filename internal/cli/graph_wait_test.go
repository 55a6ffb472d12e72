package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestGraphWait: a wait group is drawn as a hexagon saying what it waits
// for and what the signal brings, and its slots flow from it.
func TestGraphWait(t *testing.T) {
	src, err := os.ReadFile("../../examples/sequences/approve-restarts.seq.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := seq.ParseYAML(src)
	if err != nil {
		t.Fatal(err)
	}
	m, d := GraphMermaid(s), GraphDOT(s)
	for _, want := range []string{`g2c1{{"wait for signal approve (timeout 24h0m0s) → (approved: bool, note: string, restart: array#lt;string#gt;)"}}`, `g2c1 -. approved .-> g3`} {
		if !strings.Contains(m, want) {
			t.Errorf("GraphMermaid lacks %q:\n%s", want, m)
		}
	}
	for _, want := range []string{`g2c1 [label="wait for signal approve (timeout 24h0m0s) → (approved: bool, note: string, restart: array<string>)", shape=hexagon`, `g2c1 -> g3c1 [lhead=cluster_3, style=dashed, label="approved"]`} {
		if !strings.Contains(d, want) {
			t.Errorf("GraphDOT lacks %q:\n%s", want, d)
		}
	}
}

// TestWaitEventLines: watch and run say what a run waits for and since
// when, and who signalled or rejected it.
func TestWaitEventLines(t *testing.T) {
	since := time.Now().Add(-90 * time.Second)
	ws := &events.WaitState{Group: 2, GroupName: "approve", Kind: seq.WaitSignal, Signal: "approve", Out: map[string]string{"ok": "bool"},
		Since: since, Deadline: since.Add(24 * time.Hour)}
	line := eventLine(&events.RunEvent{RunID: "r-1", Kind: events.RunWaiting, Group: 2, GroupName: "approve", Wait: ws})
	for _, want := range []string{`waiting at group 2 "approve" for the signal "approve" with (ok: bool), since `, "(1m ago)", "signal it with `skillbus runs signal r-1 approve`"} {
		if !strings.Contains(line, want) {
			t.Errorf("waiting line %q lacks %q", line, want)
		}
	}
	rej := *ws
	rej.Signalled = &events.SignalInfo{Reject: true, Reason: "freeze", By: "bob"}
	line = eventLine(&events.RunEvent{RunID: "r-1", Kind: events.RunSignalled, Group: 2, GroupName: "approve", By: "bob", Reason: "freeze", Wait: &rej})
	if !strings.Contains(line, `rejected "approve" at group 2 approve by bob: freeze`) {
		t.Errorf("signalled line = %q", line)
	}
	timer := &events.WaitState{Group: 1, GroupName: "pause", Kind: seq.WaitDuration, Since: since, Deadline: since.Add(time.Hour)}
	if line := eventLine(&events.RunEvent{RunID: "r-2", Kind: events.RunWaiting, Wait: timer}); !strings.Contains(line, `waiting at group 1 "pause" for a timer (duration until `) {
		t.Errorf("timer line = %q", line)
	}
	// An until wait's kind is the word "until": it is said once, in the
	// event line and in a result table's wait line (docs/runs.md).
	until := &events.WaitState{Group: 1, GroupName: "pause", Kind: seq.WaitUntil, Since: since, Deadline: since.Add(time.Hour)}
	if line := eventLine(&events.RunEvent{RunID: "r-3", Kind: events.RunWaiting, Wait: until}); !strings.Contains(line, `waiting at group 1 "pause" for a timer (until 20`) || strings.Contains(line, "until until") || strings.Contains(line, "(until)") {
		t.Errorf("until line = %q", line)
	}
	for _, w := range []*seq.Wait{
		{Kind: seq.WaitUntil, Since: since, Deadline: since.Add(time.Hour)},
		{Kind: seq.WaitUntil, Since: since, Deadline: since.Add(time.Hour), Outcome: seq.WaitElapsed, Ended: since.Add(time.Hour)},
		{Kind: seq.WaitDuration, Since: since, Deadline: since.Add(time.Hour)},
	} {
		got := groupWaitText(w)
		if strings.Count(got, "until") != 1 || !strings.HasPrefix(got, strings.TrimPrefix(w.Kind+" ", "until ")+"until 20") {
			t.Errorf("groupWaitText(%s, %q) = %q; want %q once, as %s until …", w.Kind, w.Outcome, got, "until", w.Kind)
		}
	}
}
