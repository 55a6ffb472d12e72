package seqtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skillbus/skillbus/pkg/overlap"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Simulated ticks (docs/testing.md, "Simulated ticks"): an entry's next
// fire times after a check's now (seq.ScheduleEntry.NextFires) go through
// the entry's start_at/end_at, pause and overlap policy in virtual time,
// decided by overlap.Admit, and each run the simulation starts ends after
// its run_takes with its run_status, through overlap.Ended (the last run,
// pause_on_failure, the oldest buffered tick started) — the two functions
// the seqworker calls. A run that ends at a tick's time ends before the
// tick; a run cancelled for a tick (cancel_other) stops at the tick's
// time. Jitter, catch-up after an outage, triggers, backfills and pauses
// through the CLI are not simulated.

// simTick is what one simulated tick did.
type simTick struct {
	runID   string
	at      time.Time
	outcome string
	why     string
	starts  time.Time // zero: its run never started
}

// simulation is the outcome of one check's simulated ticks.
type simulation struct {
	ticks []simTick
	// short: the entry fires fewer times after now than the check lists.
	short bool
	trace []string
}

// simRun is a run the simulation started and has not ended.
type simRun struct {
	id     string
	ends   time.Time
	status string
}

// simRunID is the run id of a simulated tick, as the seqworker names a
// tick's run (entryTickRunID) when the names are ASCII letters, digits, -
// and _: tick-SEQUENCE-ENTRY-TIME (no ENTRY for "default"); other names
// are written as they are, where the seqworker replaces or hashes them.
func simRunID(sequence, entry string, at time.Time) string {
	stamp := fmt.Sprintf("%s%03dZ", at.UTC().Format("20060102T150405"), at.Nanosecond()/1e6)
	if entry == seq.DefaultEntry {
		return "tick-" + sequence + "-" + stamp
	}
	return "tick-" + sequence + "-" + entry + "-" + stamp
}

// simulate runs the next len(sc.Ticks) fire times of entry e of sequence
// through its policy, then lets every run end (so a buffered tick's start
// after the last fire time is known).
func simulate(sequence string, e *seq.ScheduleEntry, sc *ScheduleCheck) *simulation {
	sim := &simulation{}
	fires := e.NextFires(sc.LastTick, sc.Now, len(sc.Ticks))
	sim.short = len(fires) < len(sc.Ticks)
	st := overlap.State{LastTick: sc.LastTick}
	var running []simRun
	index := map[string]int{} // run id → its tick in sim.ticks
	started := 0
	note := func(at time.Time, format string, a ...any) {
		sim.trace = append(sim.trace, at.Format(time.RFC3339)+"  "+fmt.Sprintf(format, a...))
	}
	start := func(id string, at time.Time) {
		takes := sc.RunTakes[min(started, len(sc.RunTakes)-1)]
		status := overlap.StatusSucceeded
		if len(sc.RunStatus) > 0 {
			status = sc.RunStatus[min(started, len(sc.RunStatus)-1)]
		}
		started++
		running = append(running, simRun{id: id, ends: at.Add(takes), status: status})
		if i, ok := index[id]; ok {
			sim.ticks[i].starts = at
		}
		note(at, "run %s starts (takes %s, ends %s)", id, takes, status)
	}
	end := func(r simRun, at time.Time) {
		running = slices.DeleteFunc(running, func(x simRun) bool { return x.id == r.id })
		why := ""
		if r.status == overlap.StatusFailed {
			why = "simulated failure (run_status: failed)"
		}
		if r.status == overlap.StatusCancelled {
			why = "cancelled for a later tick (overlap cancel_other)"
		}
		d := overlap.Ended(e, st, overlap.End{RunID: r.id, Status: r.status, FinishedAt: at, Error: why}, at)
		st = d.State
		note(at, "run %s ends %s", r.id, r.status)
		if d.PausedNow {
			note(at, "entry paused: %s", st.Note)
		}
		for _, b := range d.Start {
			start(b.RunID, at)
		}
	}
	// endUntil ends, in time order, the runs that end at or before t.
	endUntil := func(t time.Time) {
		for len(running) > 0 {
			first := slices.MinFunc(running, func(a, b simRun) int { return a.ends.Compare(b.ends) })
			if first.ends.After(t) {
				return
			}
			end(first, first.ends)
		}
	}
	for i, at := range fires {
		endUntil(at)
		id := simRunID(sequence, e.Name, at)
		index[id] = i
		sim.ticks = append(sim.ticks, simTick{runID: id, at: at})
		d := overlap.Admit(e, st, overlap.Tick{RunID: id, At: at, Trigger: "schedule", Scheduled: true}, nil, at)
		st = d.State
		sim.ticks[i].outcome, sim.ticks[i].why = d.Outcome, d.Why
		if d.Why != "" {
			note(at, "tick %s: %s — %s", id, d.Outcome, d.Why)
		} else {
			note(at, "tick %s: %s", id, d.Outcome)
		}
		if d.Outcome == overlap.Started {
			start(id, at)
		}
		for _, b := range d.Start {
			start(b.RunID, at)
		}
		for _, c := range d.Cancel {
			if j := slices.IndexFunc(running, func(r simRun) bool { return r.id == c }); j >= 0 {
				r := running[j]
				r.status = overlap.StatusCancelled
				end(r, at)
			}
		}
	}
	endUntil(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	return sim
}

// check compares the simulated ticks with sc.Ticks: every tick is listed,
// expected against actual, when one differs.
func (sim *simulation) check(path string, e *seq.ScheduleEntry, sc *ScheduleCheck) []string {
	if sim.short {
		return []string{fmt.Sprintf("%s:%d: the entry %s (%s) fires %d time(s) after %s; ticks lists %d", path, sc.Line, e.Name, e.Pattern(),
			len(sim.ticks), sc.Now.Format(time.RFC3339), len(sc.Ticks))}
	}
	var rows []string
	bad := false
	for i, want := range sc.Ticks {
		got := sim.ticks[i]
		ok := got.outcome == want.Outcome &&
			(want.At.IsZero() || want.At.Equal(got.at)) &&
			(want.Why == "" || strings.Contains(got.why, want.Why)) &&
			(!want.Never || got.starts.IsZero()) &&
			(want.Starts.IsZero() || want.Starts.Equal(got.starts))
		mark := "  "
		if !ok {
			mark, bad = "✗ ", true
		}
		rows = append(rows, fmt.Sprintf("  %s%d (line %d)  expected: %s\n        actual:   %s", mark, i+1, want.Line, want.describe(), got.describe()))
	}
	if !bad {
		return nil
	}
	policy := string(e.Overlap)
	if policy == "" {
		policy = string(seq.OverlapSkip)
	}
	var takes []string
	for _, d := range sc.RunTakes {
		takes = append(takes, d.String())
	}
	head := fmt.Sprintf("ticks of %s (%s in %s, overlap %s; runs take %s) after %s, expected vs actual:", e.Name, e.Pattern(), zoneOf(e), policy,
		strings.Join(takes, ", "), sc.Now.Format(time.RFC3339))
	return []string{head + "\n" + strings.Join(rows, "\n")}
}

// describe says what a tick is expected to do, with the fields given.
func (te TickExpect) describe() string {
	s := te.Outcome
	if !te.At.IsZero() {
		s += " at " + te.At.Format(time.RFC3339)
	}
	switch {
	case te.Never:
		s += ", never starts"
	case !te.Starts.IsZero():
		s += ", starts " + te.Starts.Format(time.RFC3339)
	}
	if te.Why != "" {
		s += fmt.Sprintf(", why contains %q", te.Why)
	}
	return s
}

// describe says what a simulated tick did.
func (st simTick) describe() string {
	s := st.outcome + " at " + st.at.Format(time.RFC3339)
	if st.starts.IsZero() {
		s += ", never starts"
	} else if !st.starts.Equal(st.at) {
		s += ", starts " + st.starts.Format(time.RFC3339)
	}
	if st.why != "" {
		s += ": " + st.why
	}
	return s
}
