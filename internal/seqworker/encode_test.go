package seqworker

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// benchResult is a result of a 3-group × 8-call run (the shape of
// BenchmarkSeqworker in test/integration) after group done (0-based)
// finished: later groups are pending.
func benchResult(done int) *seq.Result {
	r := &seq.Result{Sequence: "sw-bench", Status: seq.StatusRunning, Args: map[string]json.RawMessage{"who": json.RawMessage(`"<b>&co"`)},
		Slots: map[string]json.RawMessage{"out": json.RawMessage(`{"a": [1, 2]}`)}, Duration: seq.Duration(3 * time.Millisecond)}
	for g := range 3 {
		gr := seq.GroupResult{Name: fmt.Sprintf("sw-bench-g%d", g+1), Status: seq.GroupPending}
		for c := range 8 {
			cr := seq.CallResult{Tool: "bench.echo", Status: seq.CallPending}
			if g <= done {
				cr.Status, cr.Attempts, cr.Duration = seq.CallSucceeded, 1, seq.Duration(time.Duration(345678+c)*time.Nanosecond)
			}
			gr.Calls = append(gr.Calls, cr)
		}
		if g <= done {
			gr.Status, gr.Started, gr.Duration = seq.GroupSucceeded, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), seq.Duration(time.Millisecond)
		}
		r.Groups = append(r.Groups, gr)
	}
	if done == 2 {
		r.Status = seq.StatusSucceeded
	}
	return r
}

// sameJSON reports whether a and b decode to the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("invalid JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func TestResultCoderMatchesMarshal(t *testing.T) {
	c := &resultCoder{}
	for done := range 3 {
		r := benchResult(done)
		got, err := c.result(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(r)
		if !sameJSON(t, got, want) {
			t.Errorf("result after group %d = %s; want %s", done+1, got, want)
		}
		g, _ := c.group(r, done)
		wantG, _ := json.Marshal(r.Groups[done])
		if !sameJSON(t, g, wantG) {
			t.Errorf("group %d = %s; want %s", done+1, g, wantG)
		}
	}
	// Only finished groups are kept: a pending group is encoded afresh.
	for i, g := range c.groups {
		if g == nil {
			t.Errorf("group %d not kept after it finished", i+1)
		}
	}
	// A group that started is encoded afresh, not from its pending JSON.
	fresh := &resultCoder{}
	if _, err := fresh.result(benchResult(0)); err != nil {
		t.Fatal(err)
	}
	if fresh.pending[1] == nil || fresh.groups[1] != nil {
		t.Errorf("after group 1: group 2 pending JSON kept = %v, finished JSON kept = %v; want true, false", fresh.pending[1] != nil, fresh.groups[1] != nil)
	}
	running := benchResult(0)
	running.Groups[1].Status = seq.GroupRunning
	got, _ := fresh.group(running, 1)
	want, _ := json.Marshal(running.Groups[1])
	if !sameJSON(t, got, want) {
		t.Errorf("running group 2 = %s; want %s", got, want)
	}
}

func TestEncodeStateMatchesEncode(t *testing.T) {
	base := &events.RunState{RunID: "r-1", Sequence: "sw-bench", Status: events.StatusRunning, Attempt: 2, StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for _, tc := range []struct {
		name string
		st   *events.RunState
	}{
		{"no result", base},
		{"checkpoint", stateFrom(base, benchResult(0), nil)},
		{"final", stateFrom(base, benchResult(2), &resultCoder{})},
		{"result with spaces (read back from RUNS)", &events.RunState{RunID: "r-2", Status: events.StatusFailed, Error: "x", Result: json.RawMessage(`{ "groups" : [ ] }`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeState(tc.st)
			if err != nil {
				t.Fatal(err)
			}
			want, err := events.Encode(tc.st)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, got, want) {
				t.Errorf("encodeState(%s) = %s; want %s", tc.name, got, want)
			}
			var back events.RunState
			if err := events.Decode(got, &back); err != nil {
				t.Errorf("decode: %v", err)
			}
		})
	}
	if _, err := encodeState(&events.RunState{RunID: "r", Status: "bogus", Result: json.RawMessage(`{}`)}); err == nil {
		t.Errorf("encodeState(status bogus) = nil error; want the events.Encode check error")
	}
}

func TestEncodeEventMatchesEncode(t *testing.T) {
	gj, _ := json.Marshal(benchResult(0).Groups[0])
	for _, ev := range []*events.RunEvent{
		{RunID: "r-1", Kind: events.RunStarted, Sequence: "s", Status: events.StatusRunning},
		{RunID: "r-1", Kind: events.RunGroup, Sequence: "s", Group: 1, GroupName: "sw-bench-g1", Status: "succeeded", Result: gj},
	} {
		got, err := encodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := events.Encode(ev)
		if !sameJSON(t, got, want) {
			t.Errorf("encodeEvent(%s) = %s; want %s", ev.Kind, got, want)
		}
		var back events.RunEvent
		if err := events.Decode(got, &back); err != nil {
			t.Errorf("decode %s: %v", got, err)
		}
	}
}

// BenchmarkCheckpointEncode measures the JSON work of one 3-group × 8-call
// run on the worker's critical path — two checkpoints, the final state and
// three group events — as it was ("marshal": json.Marshal of the whole
// result each time and events.Encode) and as it is ("coder").
func BenchmarkCheckpointEncode(b *testing.B) {
	base := &events.RunState{RunID: "bench-1", Sequence: "sw-bench", Status: events.StatusRunning, Attempt: 1, StartedAt: time.Now()}
	results := []*seq.Result{benchResult(0), benchResult(1), benchResult(2)}
	ev := func(gj []byte, enc func(*events.RunEvent) ([]byte, error)) {
		if _, err := enc(&events.RunEvent{RunID: "bench-1", Kind: events.RunGroup, Sequence: "sw-bench", Group: 1, GroupName: "g", Status: "succeeded", Result: gj}); err != nil {
			b.Fatal(err)
		}
	}
	encode := func(ev *events.RunEvent) ([]byte, error) { return events.Encode(ev) }
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			for g, r := range results {
				st := *base
				st.Slots = r.Slots
				st.Result, _ = json.Marshal(r)
				if _, err := events.Encode(&st); err != nil {
					b.Fatal(err)
				}
				gj, _ := json.Marshal(r.Groups[g])
				ev(gj, encode)
			}
		}
	})
	b.Run("coder", func(b *testing.B) {
		for b.Loop() {
			c := &resultCoder{}
			for g, r := range results {
				if _, err := encodeState(stateFrom(base, r, c)); err != nil {
					b.Fatal(err)
				}
				gj, _ := c.group(r, g)
				ev(gj, encodeEvent)
			}
		}
	})
}
