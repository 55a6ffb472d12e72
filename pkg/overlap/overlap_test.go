package overlap_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/overlap"
	"github.com/skillbus/skillbus/pkg/seq"
)

var (
	t0  = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(time.Second)
)

// busy is a state with run r0 of the 09:00 tick going.
func busy(buffered ...string) overlap.State {
	st := overlap.State{Current: []overlap.Run{{RunID: "r0", At: t0.Add(-time.Hour), Admitted: t0.Add(-time.Hour)}}, Started: 1}
	for _, b := range buffered {
		st.Buffered = append(st.Buffered, overlap.Record{RunID: b, At: t0.Add(-30 * time.Minute), Outcome: overlap.Buffered})
	}
	return st
}

func ids(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("b%d", i))
	}
	return out
}

// TestAdmit: each policy's outcome, reason, buffer, cancels and counters
// for a tick at 10:00, with the entry idle or its run r0 going.
func TestAdmit(t *testing.T) {
	tick := overlap.Tick{RunID: "t1", At: t0, Trigger: "schedule", Scheduled: true}
	for _, tt := range []struct {
		name     string
		entry    seq.ScheduleEntry
		st       overlap.State
		tick     overlap.Tick
		fates    map[string]overlap.Fate
		outcome  string
		why      string   // a substring of Why ("" = Why is empty)
		current  []string // run ids current afterwards
		buffered []string // run ids buffered afterwards
		start    []string
		cancel   []string
		again    bool
		check    func(t *testing.T, st overlap.State)
	}{
		{name: "skip idle", entry: seq.ScheduleEntry{Overlap: seq.OverlapSkip}, outcome: overlap.Started, current: []string{"t1"},
			check: func(t *testing.T, st overlap.State) {
				if st.Started != 1 || !st.LastTick.Equal(t0) {
					t.Errorf("started %d, last tick %v; want 1, %v", st.Started, st.LastTick, t0)
				}
			}},
		{name: "skip busy", entry: seq.ScheduleEntry{Overlap: seq.OverlapSkip}, st: busy(), outcome: overlap.Skipped,
			why: "run r0 of the entry is still going (overlap skip)", current: []string{"r0"},
			check: func(t *testing.T, st overlap.State) {
				if st.Skipped != 1 {
					t.Errorf("skipped %d; want 1", st.Skipped)
				}
			}},
		{name: "buffer_one busy", entry: seq.ScheduleEntry{Overlap: seq.OverlapBufferOne}, st: busy(), outcome: overlap.Buffered,
			why: "waits for run r0 (overlap buffer_one)", current: []string{"r0"}, buffered: []string{"t1"},
			check: func(t *testing.T, st overlap.State) {
				if st.Buffers != 1 || st.Buffered[0].Outcome != overlap.Buffered {
					t.Errorf("buffers %d, buffered %+v", st.Buffers, st.Buffered)
				}
			}},
		{name: "buffer_one full", entry: seq.ScheduleEntry{Overlap: seq.OverlapBufferOne}, st: busy("b0"), outcome: overlap.Skipped,
			why: "run r0 is still going and 1 tick(s) already wait (overlap buffer_one)", current: []string{"r0"}, buffered: []string{"b0"}},
		{name: "buffer_all busy", entry: seq.ScheduleEntry{Overlap: seq.OverlapBufferAll}, st: busy("b0", "b1"), outcome: overlap.Buffered,
			why: "waits for run r0 (overlap buffer_all)", current: []string{"r0"}, buffered: []string{"b0", "b1", "t1"}},
		{name: "buffer_all full", entry: seq.ScheduleEntry{Overlap: seq.OverlapBufferAll}, st: busy(ids(seq.MaxBuffered)...), outcome: overlap.Skipped,
			why: "100 tick(s) already wait (overlap buffer_all)", current: []string{"r0"}, buffered: ids(seq.MaxBuffered)},
		{name: "cancel_other busy", entry: seq.ScheduleEntry{Overlap: seq.OverlapCancelOther}, st: busy("b0"), outcome: overlap.Cancelled,
			why: "starts once run r0, cancelled for it, has stopped (overlap cancel_other)", current: []string{"r0"}, buffered: []string{"t1"}, cancel: []string{"r0"},
			check: func(t *testing.T, st overlap.State) {
				if n := len(st.Recent); n != 2 || st.Recent[0].RunID != "b0" || st.Recent[0].Outcome != overlap.Skipped ||
					st.Recent[0].Why != "replaced by the later tick t1 (overlap cancel_other)" || st.Skipped != 1 {
					t.Errorf("recent %+v, skipped %d; want b0 skipped as replaced, then t1", st.Recent, st.Skipped)
				}
			}},
		{name: "cancel_other idle", entry: seq.ScheduleEntry{Overlap: seq.OverlapCancelOther}, outcome: overlap.Started, current: []string{"t1"}},
		{name: "allow_all busy", entry: seq.ScheduleEntry{Overlap: seq.OverlapAllowAll}, st: busy(), outcome: overlap.Started, current: []string{"r0", "t1"}},
		{name: "paused", entry: seq.ScheduleEntry{Overlap: seq.OverlapAllowAll}, st: overlap.State{Paused: true, Note: "holiday"}, outcome: overlap.Paused,
			why: "the entry is paused: holiday",
			check: func(t *testing.T, st overlap.State) {
				if st.Skipped != 1 || st.Started != 0 {
					t.Errorf("skipped %d started %d; want 1, 0", st.Skipped, st.Started)
				}
			}},
		{name: "paused, triggered", entry: seq.ScheduleEntry{Overlap: seq.OverlapSkip}, st: overlap.State{Paused: true},
			tick: overlap.Tick{RunID: "t1", At: t0, Trigger: "manual-tick", Explicit: true}, outcome: overlap.Started, current: []string{"t1"},
			check: func(t *testing.T, st overlap.State) {
				if !st.LastTick.IsZero() {
					t.Errorf("a trigger moved the last tick to %v", st.LastTick)
				}
			}},
		{name: "before start_at", entry: seq.ScheduleEntry{StartAt: t0.Add(time.Hour)}, outcome: overlap.Dropped, why: "before the entry's start_at 2026-01-01T11:00:00Z",
			check: func(t *testing.T, st overlap.State) {
				if st.Dropped != 1 || !st.LastTick.Equal(t0) {
					t.Errorf("dropped %d, last tick %v; want 1 and the tick's time", st.Dropped, st.LastTick)
				}
			}},
		{name: "after end_at", entry: seq.ScheduleEntry{EndAt: t0.Add(-time.Hour)}, outcome: overlap.Dropped, why: "after the entry's end_at 2026-01-01T09:00:00Z"},
		{name: "before start_at, backfilled", entry: seq.ScheduleEntry{StartAt: t0.Add(time.Hour)}, tick: overlap.Tick{RunID: "t1", At: t0, Explicit: true},
			outcome: overlap.Started, current: []string{"t1"}},
		{name: "current run ended starts the buffered tick", entry: seq.ScheduleEntry{Overlap: seq.OverlapBufferOne}, st: busy("b0"),
			fates:   map[string]overlap.Fate{"r0": {Ended: &overlap.End{RunID: "r0", Status: overlap.StatusFailed, FinishedAt: t0}}},
			outcome: overlap.Buffered, why: "waits for run b0", current: []string{"b0"}, buffered: []string{"t1"}, start: []string{"b0"},
			check: func(t *testing.T, st overlap.State) {
				if st.LastRun != "r0" || st.LastStatus != overlap.StatusFailed || st.ConsecutiveFailures != 1 || st.Started != 2 {
					t.Errorf("last %s %s failures %d started %d", st.LastRun, st.LastStatus, st.ConsecutiveFailures, st.Started)
				}
			}},
		{name: "current run lost", entry: seq.ScheduleEntry{Overlap: seq.OverlapSkip}, st: busy(), fates: map[string]overlap.Fate{"r0": {Lost: true}},
			outcome: overlap.Started, current: []string{"t1"},
			check: func(t *testing.T, st overlap.State) {
				if st.Missed != 1 || st.LastRun != "" {
					t.Errorf("missed %d last run %q; want 1, none", st.Missed, st.LastRun)
				}
			}},
		{name: "redelivered while current", st: overlap.State{Current: []overlap.Run{{RunID: "t1"}}}, outcome: overlap.Started, again: true, current: []string{"t1"}},
		{name: "redelivered while buffered", entry: seq.ScheduleEntry{Overlap: seq.OverlapBufferOne}, st: busy("t1"), outcome: overlap.Buffered, again: true,
			current: []string{"r0"}, buffered: []string{"t1"}},
		{name: "redelivered after a skip", st: overlap.State{Recent: []overlap.Record{{RunID: "t1", Outcome: overlap.Skipped, Why: "run r0 of the entry is still going (overlap skip)"}}},
			outcome: overlap.Skipped, why: "run r0 of the entry is still going", again: true},
		{name: "fresh after a skip", st: overlap.State{Recent: []overlap.Record{{RunID: "t1", Outcome: overlap.Skipped}}},
			tick: overlap.Tick{RunID: "t1", At: t0, Trigger: "backfill", Explicit: true, Fresh: true}, outcome: overlap.Started, current: []string{"t1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tick.RunID == "" {
				tt.tick = tick
			}
			before := fmt.Sprintf("%+v", tt.st)
			d := overlap.Admit(&tt.entry, tt.st, tt.tick, tt.fates, now)
			if d.Outcome != tt.outcome || d.Again != tt.again {
				t.Errorf("Admit = %s (again %v); want %s (again %v)", d.Outcome, d.Again, tt.outcome, tt.again)
			}
			if (tt.why == "") != (d.Why == "") || !strings.Contains(d.Why, tt.why) {
				t.Errorf("why = %q; want %q", d.Why, tt.why)
			}
			var cur, buf, start []string
			for _, c := range d.State.Current {
				cur = append(cur, c.RunID)
			}
			for _, b := range d.State.Buffered {
				buf = append(buf, b.RunID)
			}
			for _, b := range d.Start {
				start = append(start, b.RunID)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"current", cur, tt.current}, {"buffered", buf, tt.buffered}, {"start", start, tt.start}, {"cancel", d.Cancel, tt.cancel}} {
				if !slicesEqual(c.got, c.want) {
					t.Errorf("%s = %v; want %v", c.what, c.got, c.want)
				}
			}
			if !tt.again {
				last := d.State.Recent[len(d.State.Recent)-1]
				if last.RunID != "t1" || last.Outcome != d.Outcome || last.Why != d.Why || !last.Seen.Equal(now) {
					t.Errorf("the tick's record %+v; want t1 %s %q seen at %v", last, d.Outcome, d.Why, now)
				}
			}
			if tt.check != nil {
				tt.check(t, d.State)
			}
			if after := fmt.Sprintf("%+v", tt.st); after != before {
				t.Errorf("Admit changed the state it was given:\n%s\n%s", before, after)
			}
		})
	}
}

func slicesEqual(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// TestAdmitKeepsRecentBounded: the records keep the newest MaxRecent.
func TestAdmitKeepsRecentBounded(t *testing.T) {
	e := &seq.ScheduleEntry{Overlap: seq.OverlapSkip}
	st := busy()
	for i := range overlap.MaxRecent + 5 {
		st = overlap.Admit(e, st, overlap.Tick{RunID: fmt.Sprint("t", i), At: t0.Add(time.Duration(i) * time.Minute)}, nil, now).State
	}
	if n := len(st.Recent); n != overlap.MaxRecent || st.Recent[n-1].RunID != fmt.Sprint("t", overlap.MaxRecent+4) || st.Recent[0].RunID != "t5" {
		t.Errorf("%d records from %s to %s; want %d, t5 to t%d", n, st.Recent[0].RunID, st.Recent[n-1].RunID, overlap.MaxRecent, overlap.MaxRecent+4)
	}
}

// TestEnded: a finished run leaves the current runs, is the entry's last,
// starts the oldest buffered tick, and pause_on_failure pauses the entry
// (then nothing starts).
func TestEnded(t *testing.T) {
	e := &seq.ScheduleEntry{Overlap: seq.OverlapBufferAll, PauseOnFailure: 2}
	fail := overlap.End{RunID: "r0", Status: overlap.StatusFailed, FinishedAt: t0, Error: "github.com unreachable"}

	d := overlap.Ended(e, busy("b0", "b1"), fail, now)
	if !d.Changed || d.PausedNow || len(d.Start) != 1 || d.Start[0].RunID != "b0" || d.State.Current[0].RunID != "b0" ||
		!d.State.Current[0].Admitted.Equal(now) || len(d.State.Buffered) != 1 || d.State.ConsecutiveFailures != 1 || d.State.LastRun != "r0" {
		t.Errorf("first failure: %+v", d)
	}

	st := busy("b0")
	st.ConsecutiveFailures = 1
	d = overlap.Ended(e, st, fail, now)
	if !d.PausedNow || !d.State.Paused || d.State.PausedBy != "pause_on_failure" || len(d.Start) != 0 || len(d.State.Buffered) != 1 ||
		d.State.Note != "paused after 2 consecutive failed runs (pause_on_failure: 2); the last, r0: github.com unreachable" {
		t.Errorf("second failure: paused %v by %q note %q, start %v; want paused with a note, nothing started", d.State.Paused, d.State.PausedBy, d.State.Note, d.Start)
	}

	d = overlap.Ended(e, st, overlap.End{RunID: "r0", Status: overlap.StatusSucceeded}, now)
	if d.PausedNow || d.State.ConsecutiveFailures != 0 {
		t.Errorf("a success: paused %v failures %d; want 0", d.PausedNow, d.State.ConsecutiveFailures)
	}
	d = overlap.Ended(e, st, overlap.End{RunID: "r0", Status: overlap.StatusCancelled}, now)
	if d.State.ConsecutiveFailures != 1 {
		t.Errorf("a cancel: failures %d; want 1 (unchanged)", d.State.ConsecutiveFailures)
	}
	if d := overlap.Ended(e, st, overlap.End{RunID: "zz", Status: overlap.StatusFailed}, now); d.Changed {
		t.Errorf("a run not current changed the state: %+v", d)
	}
}

// TestWordsAreEvents: the outcomes, statuses and bound are pkg/events'.
func TestWordsAreEvents(t *testing.T) {
	for _, p := range [][2]any{
		{overlap.Started, events.TickStarted}, {overlap.Skipped, events.TickSkipped}, {overlap.Buffered, events.TickBuffered},
		{overlap.Paused, events.TickPaused}, {overlap.Dropped, events.TickDropped}, {overlap.Cancelled, events.TickCancelled},
		{overlap.StatusSucceeded, events.StatusSucceeded}, {overlap.StatusFailed, events.StatusFailed}, {overlap.StatusCancelled, events.StatusCancelled},
		{overlap.MaxRecent, events.MaxRecentTicks},
	} {
		if fmt.Sprint(p[0]) != fmt.Sprint(p[1]) {
			t.Errorf("%v; pkg/events says %v", p[0], p[1])
		}
	}
}
