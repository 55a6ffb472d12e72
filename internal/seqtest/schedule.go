package seqtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/overlap"
	"github.com/skillbus/skillbus/pkg/seq"
)

// ScheduleCheck asserts a schedule entry's next fire times for a given
// now (docs/testing.md, "Schedule checks"), as `skillbus schedules show`
// computes them (seq.ScheduleEntry.NextFires): DST and time zones
// included; and, with Ticks, what those fire times do through the entry's
// overlap policy when each run takes RunTakes (docs/testing.md, "Simulated
// ticks"), decided by overlap.Admit and overlap.Ended as the seqworker
// decides them.
type ScheduleCheck struct {
	Entry     string
	EntryLine int // of entry: (0: left out, the default entry)
	Now       time.Time
	// LastTick is the last tick an `every` entry counts from (zero: now).
	LastTick time.Time
	Next     []time.Time
	// Ticks are the expected outcomes of the next len(Ticks) fire times
	// after Now, in order (nil: not simulated).
	Ticks []TickExpect
	// RunTakes is how long each run the simulation starts takes in virtual
	// time: the n-th run started the n-th, the last repeating (each > 0).
	RunTakes []time.Duration
	// RunStatus is how each started run ends, succeeded or failed, in the
	// same way (nil: every run succeeds).
	RunStatus []string
	Line      int
}

// TickExpect is what one simulated tick is expected to do: its outcome (a
// word `skillbus schedules show` prints, overlap.Started …), and when set
// its fire time, a substring of the reason and when its run starts (a
// buffered tick's start after the run it waited for).
type TickExpect struct {
	At      time.Time // zero: not checked
	Outcome string
	Why     string // "": not checked
	// Starts is when the tick's run starts (zero: not checked, unless
	// Never: the run never starts within the simulation).
	Starts time.Time
	Never  bool
	Line   int
}

// scheduleFields are a schedule check's fields, in the order errors name
// them; tickFields a simulated tick's.
var (
	scheduleFields = []string{"entry", "now", "last_tick", "next", "ticks", "run_takes", "run_status"}
	tickFields     = []string{"at", "outcome", "why", "starts"}
	tickOutcomes   = []string{overlap.Started, overlap.Buffered, overlap.Skipped, overlap.Cancelled, overlap.Paused, overlap.Dropped}
)

// maxTicks bounds next, ticks, run_takes and run_status.
const maxTicks = 100

// didYouMean returns ` (did you mean "X"?)` for the candidate word most
// likely misspells, or "".
func didYouMean(word string, candidates []string) string {
	if c := suggest.Closest(word, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// rfcTime reads an RFC 3339 time (in UTC).
func rfcTime(v *yaml.Node, what string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v.Value)
	if v.Kind != yaml.ScalarNode || err != nil {
		return time.Time{}, perr(v.Line, "%s: %q is not an RFC 3339 time such as 2026-03-28T12:00:00Z or 2026-03-28T13:00:00+01:00", what, v.Value)
	}
	return t.UTC(), nil
}

// scalarOrList returns the items of a scalar or a list of 1 to maxTicks
// scalars.
func scalarOrList(v *yaml.Node, what, help string) ([]*yaml.Node, error) {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	if len(items) == 0 || len(items) > maxTicks {
		return nil, perr(v.Line, "%s: must be %s, or a list of 1 to %d of them (the n-th run started takes the n-th, the last repeats)", what, help, maxTicks)
	}
	for _, it := range items {
		if it.Kind != yaml.ScalarNode {
			return nil, perr(it.Line, "%s: must be %s, or a list of them", what, help)
		}
	}
	return items, nil
}

// parseSchedules reads a test file's schedules: a list of {entry, now,
// last_tick, next, ticks, run_takes, run_status}.
func parseSchedules(n *yaml.Node) ([]ScheduleCheck, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, perr(n.Line, "schedules must be a list of {entry: NAME, now: TIME, next: [TIME, ...]} or {entry: NAME, now: TIME, run_takes: DURATION, ticks: [OUTCOME, ...]}")
	}
	var out []ScheduleCheck
	var errs []error // every check's problems, not only the first's
	for _, sn := range n.Content {
		sc := ScheduleCheck{Line: sn.Line}
		hasNow := false
		var takesLine, statusLine int
		err := fields(sn, "a schedule check ({entry, now, next} or {entry, now, run_takes, ticks})", func(k, v *yaml.Node) error {
			var err error
			switch k.Value {
			case "entry":
				if v.Kind != yaml.ScalarNode || v.Value == "" {
					return perr(v.Line, "entry: must be the name of a schedule entry of the sequence (default for the single-string schedule)")
				}
				sc.Entry = v.Value
				sc.EntryLine = v.Line
			case "now":
				sc.Now, err = rfcTime(v, "now")
				hasNow = true
			case "last_tick":
				sc.LastTick, err = rfcTime(v, "last_tick")
			case "next":
				if v.Kind != yaml.SequenceNode || len(v.Content) == 0 || len(v.Content) > maxTicks {
					return perr(v.Line, "next: must be a list of 1 to %d RFC 3339 times, the entry's next fire times after now in order", maxTicks)
				}
				for _, tn := range v.Content {
					t, err := rfcTime(tn, "next")
					if err != nil {
						return err
					}
					sc.Next = append(sc.Next, t)
				}
			case "ticks":
				sc.Ticks, err = parseTicks(v)
			case "run_takes":
				takesLine = k.Line
				items, err := scalarOrList(v, "run_takes", "a duration such as 90m or 26h")
				if err != nil {
					return err
				}
				for _, it := range items {
					d, err := time.ParseDuration(it.Value)
					if err != nil || d <= 0 {
						return perr(it.Line, "run_takes: %q is not a duration above 0 such as 90s, 90m or 26h (how long a started run runs)", it.Value)
					}
					sc.RunTakes = append(sc.RunTakes, d)
				}
			case "run_status":
				statusLine = k.Line
				items, err := scalarOrList(v, "run_status", "succeeded or failed")
				if err != nil {
					return err
				}
				for _, it := range items {
					if it.Value != overlap.StatusSucceeded && it.Value != overlap.StatusFailed {
						return perr(it.Line, "run_status: %q; a simulated run ends succeeded or failed%s", it.Value, didYouMean(it.Value, []string{overlap.StatusSucceeded, overlap.StatusFailed}))
					}
					sc.RunStatus = append(sc.RunStatus, it.Value)
				}
			default:
				return perr(k.Line, "unknown schedule check field %q%s; a schedule check has entry, now, last_tick, next, ticks, run_takes and run_status", k.Value, didYouMean(k.Value, scheduleFields))
			}
			return err
		})
		if err != nil {
			errs = append(errs, err)
		}
		switch {
		case err != nil: // the field's problem is enough
		case !hasNow:
			errs = append(errs, perr(sn.Line, "a schedule check needs now: the time after which the next fire times are counted"))
		case sc.Next == nil && sc.Ticks == nil:
			errs = append(errs, perr(sn.Line, "a schedule check needs next: the fire times expected after now, or ticks: what each of the next fire times does (with run_takes)"))
		case sc.Ticks != nil && sc.RunTakes == nil:
			errs = append(errs, perr(sn.Line, "a schedule check with ticks needs run_takes: how long each run it starts runs (a duration such as 90m, or a list, one per run)"))
		case sc.Ticks == nil && sc.RunTakes != nil:
			errs = append(errs, perr(takesLine, "run_takes: only with ticks (the outcomes of the simulated fire times)"))
		case sc.Ticks == nil && sc.RunStatus != nil:
			errs = append(errs, perr(statusLine, "run_status: only with ticks (the outcomes of the simulated fire times)"))
		}
		if sc.Entry == "" {
			sc.Entry = seq.DefaultEntry
		}
		out = append(out, sc)
	}
	return out, errors.Join(errs...)
}

// parseTicks reads ticks: a list of outcomes, each a word or {at, outcome,
// why, starts}.
func parseTicks(v *yaml.Node) ([]TickExpect, error) {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 || len(v.Content) > maxTicks {
		return nil, perr(v.Line, "ticks: must be a list of 1 to %d ticks, one per fire time after now in order, each an outcome (%s) or {at, outcome, why, starts}", maxTicks, strings.Join(tickOutcomes, ", "))
	}
	outcome := func(n *yaml.Node) (string, error) {
		if n.Kind != yaml.ScalarNode || !slices.Contains(tickOutcomes, n.Value) {
			return "", perr(n.Line, "ticks: outcome %q%s; a tick is %s", n.Value, didYouMean(n.Value, tickOutcomes), strings.Join(tickOutcomes, ", "))
		}
		return n.Value, nil
	}
	var out []TickExpect
	for _, tn := range v.Content {
		te := TickExpect{Line: tn.Line}
		if tn.Kind == yaml.ScalarNode {
			o, err := outcome(tn)
			if err != nil {
				return nil, err
			}
			te.Outcome = o
			out = append(out, te)
			continue
		}
		err := fields(tn, "a tick (an outcome, or {at, outcome, why, starts})", func(k, fv *yaml.Node) error {
			var err error
			switch k.Value {
			case "at":
				te.At, err = rfcTime(fv, "at")
			case "outcome":
				te.Outcome, err = outcome(fv)
			case "why":
				if fv.Kind != yaml.ScalarNode || fv.Value == "" {
					return perr(fv.Line, "why: must be a text, a part of the reason the tick did not start")
				}
				te.Why = fv.Value
			case "starts":
				if fv.Kind == yaml.ScalarNode && fv.Value == "never" {
					te.Never = true
					return nil
				}
				te.Starts, err = rfcTime(fv, "starts")
				if err != nil {
					return perr(fv.Line, "starts: %q is neither an RFC 3339 time such as 2026-03-28T12:00:00Z nor never (when the tick's run starts)", fv.Value)
				}
			default:
				return perr(k.Line, "unknown tick field %q%s; a tick has at, outcome, why and starts", k.Value, didYouMean(k.Value, tickFields))
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if te.Outcome == "" {
			return nil, perr(tn.Line, "a tick needs outcome: %s", strings.Join(tickOutcomes, ", "))
		}
		out = append(out, te)
	}
	return out, nil
}

// name is the check's name in the results (and for --run).
func (sc *ScheduleCheck) name() string {
	if sc.Ticks != nil {
		return fmt.Sprintf("schedule %s ticks after %s", sc.Entry, sc.Now.Format(time.RFC3339))
	}
	return fmt.Sprintf("schedule %s after %s", sc.Entry, sc.Now.Format(time.RFC3339))
}

// runSchedule checks sc against the entries of s.
func runSchedule(path string, s *seq.Sequence, sc *ScheduleCheck) Result {
	r := Result{File: path, Case: sc.name(), Line: sc.Line}
	e := s.Entry(sc.Entry)
	if e == nil {
		var names []string
		for _, x := range s.ScheduleEntries() {
			names = append(names, x.Name)
		}
		have := "it has no schedule"
		if len(names) > 0 {
			have = "its entries are " + strings.Join(names, ", ")
		}
		r.Failures = []string{fmt.Sprintf("%s:%d: the sequence %s has no schedule entry %q (%s)", path, sc.Line, s.Name, sc.Entry, have)}
		return r
	}
	if sc.Next != nil {
		r.Failures = append(r.Failures, checkNext(e, sc)...)
	}
	if sc.Ticks != nil && len(sc.RunTakes) == 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%s:%d: ticks need run_takes: how long each run the simulation starts runs", path, sc.Line))
	} else if sc.Ticks != nil {
		sim := simulate(s.Name, e, sc)
		if fs := sim.check(path, e, sc); len(fs) > 0 {
			r.Failures = append(r.Failures, fs...)
			r.Trace = sim.trace
		}
	}
	r.Passed = len(r.Failures) == 0
	return r
}

// checkNext compares the entry's next fire times with sc.Next.
func checkNext(e *seq.ScheduleEntry, sc *ScheduleCheck) []string {
	got := e.NextFires(sc.LastTick, sc.Now, len(sc.Next))
	want := make([]string, len(sc.Next))
	for i, t := range sc.Next {
		want[i] = t.Format(time.RFC3339)
	}
	have := make([]string, len(got))
	for i, t := range got {
		have[i] = t.Format(time.RFC3339)
	}
	if strings.Join(want, " ") != strings.Join(have, " ") {
		return []string{fmt.Sprintf("next fire times of %s (%s in %s)\n    expected: %s\n    actual:   %s", e.Name, e.Pattern(), zoneOf(e), strings.Join(want, ", "), strings.Join(have, ", "))}
	}
	return nil
}

// zoneOf is the zone an entry's cron is read in.
func zoneOf(e *seq.ScheduleEntry) string {
	if e.TimeZone == "" {
		return "UTC"
	}
	return e.TimeZone
}
