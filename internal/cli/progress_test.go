package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestProgressFinishPrintsEveryGroup checks that every finished group gets
// its line although its event never arrived (a timed-out group whose event
// came after the final state, an interrupted group that has no event), and
// that a group whose event did arrive is not printed twice.
func TestProgressFinishPrintsEveryGroup(t *testing.T) {
	s, err := seq.ParseYAML([]byte("name: p\ngroups:\n  - name: first\n    tools:\n      - tool: a\n  - name: slow\n    timeout: 1s\n    tools:\n      - tool: b\n  - name: never\n    tools:\n      - tool: c\n"))
	if err != nil {
		t.Fatal(err)
	}
	first := seq.GroupResult{Name: "first", Status: seq.GroupSucceeded, Duration: seq.Duration(2 * time.Millisecond), Calls: []seq.CallResult{{Tool: "a", Status: seq.CallSucceeded, Attempts: 1}}}
	slow := seq.GroupResult{Name: "slow", Status: seq.GroupFailed, Error: "group timeout", Duration: seq.Duration(time.Second), Calls: []seq.CallResult{{Tool: "b", Status: seq.CallFailed, Attempts: 1, Error: "the group timeout of 1s ended the attempts"}}}
	never := seq.GroupResult{Name: "never", Status: seq.GroupPending}
	for _, tc := range []struct {
		name   string
		status seq.GroupStatus
		mark   string
	}{
		{"timed out", seq.GroupFailed, "✗ group 2/3 slow: failed in 1s"},
		{"interrupted", seq.GroupInterrupted, "✗ group 2/3 slow: interrupted in 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			pr := newProgress(&out, s, "r1")
			pr.start()
			firstJSON, _ := json.Marshal(first)
			pr.group(&events.RunEvent{RunID: "r1", Kind: events.RunGroup, Group: 1, GroupName: "first", Status: "succeeded", Result: firstJSON})
			g2 := slow
			g2.Status = tc.status
			res, _ := json.Marshal(seq.Result{Sequence: "p", Status: seq.StatusFailed, Groups: []seq.GroupResult{first, g2, never}})
			pr.finish(&events.RunState{RunID: "r1", Sequence: "p", Status: events.StatusFailed, Result: res})
			got := out.String()
			for _, want := range []string{"✓ group 1/3 first: succeeded", tc.mark, "    b: failed in 0s: the group timeout of 1s ended the attempts", "run r1 failed in "} {
				if !strings.Contains(got, want) {
					t.Errorf("progress output lacks %q:\n%s", want, got)
				}
			}
			if n := strings.Count(got, "group 1/3"); n != 1 {
				t.Errorf("group 1 printed %d times; want once:\n%s", n, got)
			}
			if strings.Contains(got, "never") {
				t.Errorf("a group that never ran got a line:\n%s", got)
			}
			if i, j := strings.Index(got, "group 2/3"), strings.Index(got, "run r1 failed"); i < 0 || i > j {
				t.Errorf("group 2's line is not before the run's last line:\n%s", got)
			}
		})
	}
}

// TestProgressResumedInGroupOrder: after a resume, a later group's event
// can arrive while an earlier group's event was missed (it finished on the
// worker that stopped); the lines still come out in group order: the later
// group waits until the checkpoint fills the gap.
func TestProgressResumedInGroupOrder(t *testing.T) {
	s, err := seq.ParseYAML([]byte("name: p\ngroups:\n  - name: one\n    tools: [{tool: a}]\n  - name: two\n    tools: [{tool: b}]\n  - name: three\n    tools: [{tool: c}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := func(name, tool string) seq.GroupResult {
		return seq.GroupResult{Name: name, Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: tool, Status: seq.CallSucceeded, Attempts: 1}}}
	}
	one, two, three := g("one", "a"), g("two", "b"), g("three", "c")
	var out bytes.Buffer
	pr := newProgress(&out, s, "r1")
	pr.start()
	b, _ := json.Marshal(one)
	pr.group(&events.RunEvent{RunID: "r1", Kind: events.RunGroup, Group: 1, GroupName: "one", Status: "succeeded", Result: b})
	b, _ = json.Marshal(three)
	pr.group(&events.RunEvent{RunID: "r1", Kind: events.RunGroup, Group: 3, GroupName: "three", Status: "succeeded", Result: b})
	if strings.Contains(out.String(), "three") {
		t.Fatalf("group 3 printed before group 2:\n%s", out.String())
	}
	cp, _ := json.Marshal(seq.Result{Sequence: "p", Status: seq.StatusRunning, Groups: []seq.GroupResult{one, two, {Name: "three", Status: seq.GroupPending}}})
	pr.event(&events.RunEvent{RunID: "r1", Kind: events.RunResumed, Worker: "w2", Group: 2, Groups: 3, Attempt: 2}, &events.RunState{RunID: "r1", FinishedGroups: 2, Result: cp})
	final, _ := json.Marshal(seq.Result{Sequence: "p", Status: seq.StatusSucceeded, Groups: []seq.GroupResult{one, two, three}})
	pr.finish(&events.RunState{RunID: "r1", Status: events.StatusSucceeded, Result: final})
	got := out.String()
	i1, i2, i3 := strings.Index(got, "group 1/3 one"), strings.Index(got, "group 2/3 two"), strings.Index(got, "group 3/3 three")
	if i1 < 0 || i2 < 0 || i3 < 0 || !(i1 < i2 && i2 < i3) {
		t.Errorf("groups not printed once each in order:\n%s", got)
	}
	for _, n := range []string{"group 1/3", "group 2/3", "group 3/3"} {
		if c := strings.Count(got, n); c != 1 {
			t.Errorf("%s printed %d times:\n%s", n, c, got)
		}
	}
	if !strings.Contains(got, "resumed by worker w2") {
		t.Errorf("the resume note is missing:\n%s", got)
	}
}

// TestProgressResumeBeforeLaterGroups: `skillbus run` of a sequence whose
// group 2 is a `wait_for: {duration: …}` says the wait and the resume
// after group 1 and before groups 2 and 3, as the events tell it — when
// the checkpoint read at the resume already holds groups 2 and 3 (the
// timer's resume finishes them at once), and when the later groups' events
// arrive before the resume's.
func TestProgressResumeBeforeLaterGroups(t *testing.T) {
	s, err := seq.ParseYAML([]byte("name: p\ngroups:\n  - name: one\n    tools: [{tool: a}]\n  - name: pause\n    wait_for: {duration: 3s}\n  - name: three\n    tools: [{tool: c}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(name, tool string) seq.GroupResult {
		return seq.GroupResult{Name: name, Status: seq.GroupSucceeded, Calls: []seq.CallResult{{Tool: tool, Status: seq.CallSucceeded, Attempts: 1}}}
	}
	one, pause, three := ok("one", "a"), seq.GroupResult{Name: "pause", Status: seq.GroupSucceeded}, ok("three", "c")
	since := time.Now()
	ws := &events.WaitState{Group: 2, GroupName: "pause", Kind: seq.WaitDuration, Since: since, Deadline: since.Add(3 * time.Second)}
	groupEv := func(n int, gr seq.GroupResult) *events.RunEvent {
		b, _ := json.Marshal(gr)
		return &events.RunEvent{RunID: "r1", Kind: events.RunGroup, Group: n, GroupName: gr.Name, Status: string(gr.Status), Result: b}
	}
	all, _ := json.Marshal(seq.Result{Sequence: "p", Status: seq.StatusSucceeded, Groups: []seq.GroupResult{one, pause, three}})
	checkpoint := &events.RunState{RunID: "r1", Status: events.StatusRunning, FinishedGroups: 3, Result: all}
	waiting := &events.RunEvent{RunID: "r1", Kind: events.RunWaiting, Group: 2, GroupName: "pause", Groups: 3, Wait: ws}
	resumed := &events.RunEvent{RunID: "r1", Kind: events.RunResumed, Worker: "w1", Group: 1, Groups: 3, Attempt: 2}
	for _, tc := range []struct {
		name string
		feed func(pr *progress)
	}{
		{"the checkpoint holds the later groups", func(pr *progress) {
			pr.group(groupEv(1, one))
			pr.event(waiting, nil)
			pr.event(resumed, checkpoint)
			pr.group(groupEv(2, pause))
			pr.group(groupEv(3, three))
		}},
		{"the later groups' events come first", func(pr *progress) {
			pr.group(groupEv(1, one))
			pr.event(waiting, nil)
			pr.group(groupEv(2, pause))
			pr.group(groupEv(3, three))
			pr.event(resumed, checkpoint)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			pr := newProgress(&out, s, "r1")
			pr.start()
			tc.feed(pr)
			before := out.String() // before the final state: what a user sees live
			pr.finish(&events.RunState{RunID: "r1", Status: events.StatusSucceeded, Result: all})
			got := out.String()
			order := []string{"✓ group 1/3 one", `waiting at group 2 "pause" for a timer (duration until`, "resumed by worker w1 after group 1 of 3 (attempt 2)", "✓ group 2/3 pause", "✓ group 3/3 three", "run r1 succeeded"}
			at := -1
			for _, want := range order {
				i := strings.Index(got, want)
				if i < 0 || i < at {
					t.Fatalf("%q missing or out of order; want the lines in the order %q:\n%s", want, order, got)
				}
				at = i
				if want != "run r1 succeeded" && strings.Count(got, want) != 1 {
					t.Errorf("%q printed %d times:\n%s", want, strings.Count(got, want), got)
				}
			}
			if !strings.Contains(before, "✓ group 3/3 three") {
				t.Errorf("group 3 was held until the run's end; want it printed once the resume is said:\n%s", before)
			}
		})
	}
}
