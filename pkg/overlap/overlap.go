// Package overlap decides what a tick of a schedule entry does: start a
// run, wait in the entry's buffer, be skipped, cancel the running one, or
// be dropped (paused, before start_at, after end_at) — the rules of
// docs/sequences.md, "Overlap", and docs/runs.md, "Scheduled runs". It is
// pure: no NATS, no clock of its own (the time is passed in), no I/O. The
// seqworker calls Admit inside its compare-and-set loop on the entry's
// SEQ_SCHEDULES key and Ended when a run of the entry finishes;
// `skillbus test` (internal/seqtest) calls the same two functions to
// simulate an entry's ticks in virtual time (docs/testing.md, "Simulated
// ticks"), so the simulation cannot drift from the seqworker.
//
// Why a package of its own: the decision needs the entry (pkg/seq) and the
// entry's state, whose wire type is events.ScheduleState. pkg/events links
// nats.go, and pkg/seq may not import it (pkg/seq has no NATS dependency,
// docs/architecture.md); pkg/events may not import pkg/seq either (it
// would link CEL into every tool provider). So this package imports
// pkg/seq only and has its own State, Run and Record, field for field the
// policy's part of events.ScheduleState, events.ScheduleRun and
// events.ScheduleTick: the seqworker converts them with Go struct
// conversions, which stop compiling if the two drift apart.
package overlap

import (
	"fmt"
	"slices"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Tick outcomes: the words `skillbus schedules show` prints, equal to
// pkg/events' Tick* constants (a test holds them equal).
const (
	Started   = "started"   // a run was started for the tick
	Skipped   = "skipped"   // dropped by the overlap policy (or a full buffer)
	Buffered  = "buffered"  // waits for the entry's current run to end
	Paused    = "paused"    // dropped: the entry is paused
	Dropped   = "dropped"   // dropped: before start_at or after end_at
	Cancelled = "cancelled" // the current run is cancelled for this tick (cancel_other)
)

// Run statuses Ended reads (pkg/events' StatusSucceeded, StatusFailed and
// StatusCancelled).
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// MaxRecent is how many tick records State.Recent keeps, newest last
// (events.MaxRecentTicks).
const MaxRecent = 20

// Run is a run of the entry that has not finished (events.ScheduleRun):
// the run of the tick at At, admitted at Admitted.
type Run struct {
	RunID    string
	At       time.Time
	Admitted time.Time
	Trigger  string
}

// Record is one tick and what became of it (events.ScheduleTick): Outcome
// is one of the outcome constants, Why says more for a tick that did not
// start; Seen is when it was decided.
type Record struct {
	RunID   string
	At      time.Time
	Trigger string
	Outcome string
	Why     string
	Seen    time.Time
}

// State is what the policy reads and writes of an entry's state: every
// field of events.ScheduleState but its version, names and write time,
// with the same meaning (docs/runs.md, "Scheduled runs").
type State struct {
	Paused   bool
	Note     string
	PausedBy string
	PausedAt time.Time
	// Current holds the runs of the entry that have not finished (at most
	// one unless the overlap is allow_all).
	Current []Run
	// Buffered holds the ticks waiting for the current run, oldest first.
	Buffered []Record
	// LastRun, LastStatus and LastAt: the entry's last finished run.
	LastRun    string
	LastStatus string
	LastAt     time.Time
	// LastTick is the time of the last tick of the server's schedule.
	LastTick            time.Time
	ConsecutiveFailures int
	Started             int64
	Skipped             int64
	Buffers             int64
	Missed              int64
	Dropped             int64
	// Recent holds the last MaxRecent ticks and their outcome, newest last.
	Recent []Record
}

// clone returns a copy of st that shares no slice with it.
func (st State) clone() State {
	st.Current = slices.Clone(st.Current)
	st.Buffered = slices.Clone(st.Buffered)
	st.Recent = slices.Clone(st.Recent)
	return st
}

// Tick is one tick to admit.
type Tick struct {
	RunID   string
	At      time.Time // the tick's own time
	Trigger string    // recorded as it is (events.TriggerSchedule, TriggerManualTick, TriggerBackfill)
	// Scheduled: fired by the server's schedule (not a trigger or a
	// backfill); it moves State.LastTick.
	Scheduled bool
	// Explicit: asked for by a person (trigger, backfill): it runs while
	// the entry is paused and outside start_at/end_at.
	Explicit bool
	// Fresh: the tick's run is known not to exist, so an earlier record of
	// the tick in State.Recent (a skip, a drop) is history, not this
	// admission's answer: the tick is admitted again.
	Fresh bool
}

// End is a finished run of the entry: its status (StatusSucceeded,
// StatusFailed, StatusCancelled), when it finished and its error.
type End struct {
	RunID      string
	Status     string
	FinishedAt time.Time
	Error      string
}

// Fate is what the caller read of one of the entry's current runs before
// admitting a tick (the seqworker reads RUNS). The zero Fate is a run that
// is still going, or whose state could not be read: it stays current.
type Fate struct {
	// Lost: the run never appeared within two ack waits of its admission
	// (its tick was lost before a worker claimed it); counted as missed.
	Lost bool
	// Ended, when set: the run finished; it is recorded as the last run.
	Ended *End
}

// Decision is what Admit decided about a tick.
type Decision struct {
	// Outcome is one of the outcome constants; Started: run it now.
	Outcome string
	// Why says why a tick did not start ("" for a started tick).
	Why string
	// Again: the tick was admitted before (a redelivery); Outcome and Why
	// are the earlier answer and State is unchanged.
	Again bool
	// Start holds buffered ticks to start now (already current in State).
	Start []Record
	// Cancel holds the runs to cancel for the tick (cancel_other).
	Cancel []string
	// State is the entry's new state (a copy; the one given is not changed).
	State State
}

// Admit decides what tick t of entry e does given the entry's state st at
// time now, through the entry's start_at/end_at, pause and overlap policy
// (docs/sequences.md, "Overlap"), and records it in the state. fates says
// which of st.Current finished or were lost (nil: all still going); they
// are pruned before the policy looks at the current runs, and the oldest
// buffered tick starts when none is left. A tick already current, buffered
// or recorded (unless t.Fresh) gets its earlier answer with Again set.
func Admit(e *seq.ScheduleEntry, st State, t Tick, fates map[string]Fate, now time.Time) Decision {
	st = st.clone()
	d := Decision{}
	done := func() Decision { d.State = st; return d }
	if slices.ContainsFunc(st.Current, func(c Run) bool { return c.RunID == t.RunID }) {
		d.Outcome, d.Again = Started, true
		return done()
	}
	if slices.ContainsFunc(st.Buffered, func(b Record) bool { return b.RunID == t.RunID }) {
		d.Outcome, d.Again = Buffered, true
		return done()
	}
	if i := slices.IndexFunc(st.Recent, func(r Record) bool { return r.RunID == t.RunID }); i >= 0 && !t.Fresh {
		d.Outcome, d.Why, d.Again = st.Recent[i].Outcome, st.Recent[i].Why, true
		return done()
	}
	if t.Scheduled && t.At.After(st.LastTick) {
		st.LastTick = t.At
	}
	rec := Record{RunID: t.RunID, At: t.At, Trigger: t.Trigger, Seen: now}
	record := func(outcome, why string) Decision {
		d.Outcome, d.Why = outcome, why
		rec.Outcome, rec.Why = outcome, why
		st.Recent = append(st.Recent, rec)
		if n := len(st.Recent) - MaxRecent; n > 0 {
			st.Recent = slices.Delete(st.Recent, 0, n)
		}
		return done()
	}
	switch {
	case !t.Explicit && !e.StartAt.IsZero() && t.At.Before(e.StartAt):
		st.Dropped++
		return record(Dropped, "before the entry's start_at "+e.StartAt.Format(time.RFC3339))
	case !t.Explicit && !e.EndAt.IsZero() && t.At.After(e.EndAt):
		st.Dropped++
		return record(Dropped, "after the entry's end_at "+e.EndAt.Format(time.RFC3339))
	case !t.Explicit && st.Paused:
		st.Skipped++
		why := "the entry is paused"
		if st.Note != "" {
			why += ": " + st.Note
		}
		return record(Paused, why)
	}
	Prune(&st, fates)
	d.Start = PopBuffered(&st, now)
	if len(st.Current) == 0 || e.Overlap == seq.OverlapAllowAll {
		st.Current = append(st.Current, Run{RunID: t.RunID, At: t.At, Admitted: now, Trigger: t.Trigger})
		st.Started++
		return record(Started, "")
	}
	running := st.Current[0].RunID
	switch e.Overlap {
	case seq.OverlapBufferOne, seq.OverlapBufferAll:
		limit := 1
		if e.Overlap == seq.OverlapBufferAll {
			limit = seq.MaxBuffered
		}
		if len(st.Buffered) >= limit {
			st.Skipped++
			return record(Skipped, fmt.Sprintf("run %s is still going and %d tick(s) already wait (overlap %s)", running, len(st.Buffered), e.Overlap))
		}
		rec.Outcome = Buffered
		st.Buffered = append(st.Buffered, rec)
		st.Buffers++
		return record(Buffered, fmt.Sprintf("waits for run %s (overlap %s)", running, e.Overlap))
	case seq.OverlapCancelOther:
		for _, old := range st.Buffered {
			st.Skipped++
			old.Outcome, old.Why, old.Seen = Skipped, "replaced by the later tick "+t.RunID+" (overlap cancel_other)", now
			st.Recent = append(st.Recent, old)
		}
		rec.Outcome = Buffered
		st.Buffered = []Record{rec}
		for _, c := range st.Current {
			d.Cancel = append(d.Cancel, c.RunID)
		}
		return record(Cancelled, fmt.Sprintf("starts once run %s, cancelled for it, has stopped (overlap cancel_other)", running))
	}
	st.Skipped++
	return record(Skipped, fmt.Sprintf("run %s of the entry is still going (overlap skip)", running))
}

// EndDecision is what Ended decided about a finished run.
type EndDecision struct {
	// Changed: the run was one of the entry's current runs (false: a
	// repeated call, nothing to write).
	Changed bool
	// PausedNow: the entry was paused by its pause_on_failure.
	PausedNow bool
	// Start holds the buffered tick to start now (already current in State).
	Start []Record
	// State is the entry's new state (a copy).
	State State
}

// Ended takes finished run end out of the current runs of entry e at time
// now: it records the run as the entry's last, pauses the entry after
// pause_on_failure consecutive failed runs (PausedBy "pause_on_failure",
// with a note naming the last failure), and starts the oldest buffered
// tick. A run that is not current changes nothing (Changed false).
func Ended(e *seq.ScheduleEntry, st State, end End, now time.Time) EndDecision {
	st = st.clone()
	i := slices.IndexFunc(st.Current, func(c Run) bool { return c.RunID == end.RunID })
	if i < 0 {
		return EndDecision{State: st}
	}
	d := EndDecision{Changed: true}
	st.Current = slices.Delete(st.Current, i, i+1)
	noteEnded(&st, end)
	if n := e.PauseOnFailure; n > 0 && st.ConsecutiveFailures >= n && !st.Paused {
		st.Paused, st.PausedAt, st.PausedBy = true, now, "pause_on_failure"
		st.Note = fmt.Sprintf("paused after %d consecutive failed runs (pause_on_failure: %d); the last, %s: %s", st.ConsecutiveFailures, n, end.RunID, clip(end.Error, 200))
		d.PausedNow = true
	}
	d.Start = PopBuffered(&st, now)
	d.State = st
	return d
}

// Prune removes from st the current runs whose fate says they ended
// (recording each as the entry's last run, in the order of st.Current) or
// were lost (counted in Missed); the others stay.
func Prune(st *State, fates map[string]Fate) {
	keep := st.Current[:0:0]
	for _, c := range st.Current {
		f := fates[c.RunID]
		switch {
		case f.Lost:
			st.Missed++
		case f.Ended != nil:
			noteEnded(st, *f.Ended)
		default:
			keep = append(keep, c)
		}
	}
	st.Current = keep
}

// PopBuffered moves the oldest buffered tick to the current runs (admitted
// at now) when no run of the entry is going and the entry is not paused;
// it returns the tick to start (nil when none).
func PopBuffered(st *State, now time.Time) []Record {
	if len(st.Current) > 0 || len(st.Buffered) == 0 || st.Paused {
		return nil
	}
	b := st.Buffered[0]
	st.Buffered = slices.Delete(slices.Clone(st.Buffered), 0, 1)
	st.Current = append(st.Current, Run{RunID: b.RunID, At: b.At, Admitted: now, Trigger: b.Trigger})
	st.Started++
	return []Record{b}
}

// noteEnded records a finished run as the entry's last.
func noteEnded(st *State, end End) {
	st.LastRun, st.LastStatus, st.LastAt = end.RunID, end.Status, end.FinishedAt
	switch end.Status {
	case StatusFailed:
		st.ConsecutiveFailures++
	case StatusSucceeded:
		st.ConsecutiveFailures = 0
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
