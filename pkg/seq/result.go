package seq

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Status is the state of a run.
type Status string

// The run states. A Result handed to an observer is StatusRunning; Run
// returns one of the other three.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	// StatusFailed: a group failed (a tool error under abort or after its
	// retries, a missing tool under missing: fail, a group timeout, a bad
	// argument or a `when` that could not be evaluated). Not resumable.
	StatusFailed Status = "failed"
	// StatusInterrupted: the run's context ended or an observer failed. The
	// run can be resumed from its last checkpoint (WithResume).
	StatusInterrupted Status = "interrupted"
)

// GroupStatus is the state of one group in a run.
type GroupStatus string

// The group states. Succeeded, Partial and Skipped are finished: a resumed
// run does not run such a group again.
const (
	GroupPending     GroupStatus = "pending"
	GroupRunning     GroupStatus = "running"
	GroupSucceeded   GroupStatus = "succeeded"
	GroupPartial     GroupStatus = "partial" // finished; some calls failed under on_error: continue
	GroupSkipped     GroupStatus = "skipped" // `when` was false; its slots are null
	GroupFailed      GroupStatus = "failed"
	GroupInterrupted GroupStatus = "interrupted"
)

// Finished reports whether a group in this state is done for good.
func (s GroupStatus) Finished() bool {
	return s == GroupSucceeded || s == GroupPartial || s == GroupSkipped
}

// CallStatus is the state of one tool call in a run.
type CallStatus string

// The call states.
const (
	CallPending   CallStatus = "pending"
	CallSucceeded CallStatus = "succeeded"
	CallFailed    CallStatus = "failed"
	CallSkipped   CallStatus = "skipped"  // group skipped, or tool missing under missing: skip
	CallDegraded  CallStatus = "degraded" // tool missing under missing: degrade; slot = fallback
	CallCanceled  CallStatus = "canceled" // stopped because another call failed the group or the run was interrupted
	CallNotRun    CallStatus = "not_run"  // never started (parallel: false, an earlier call failed the group)
)

// Result is the state of a run: the checkpoint handed to observers after
// each finished group, the value to resume from, and the final result that
// the seqworker stores in the RUNS bucket (see package events). It is plain JSON.
type Result struct {
	Sequence string `json:"sequence"`
	Status   Status `json:"status"`
	// Error is the run's error message when Status is failed or interrupted.
	Error string `json:"error,omitempty"`
	// Args are the run arguments.
	Args map[string]json.RawMessage `json:"args,omitempty"`
	// Slots holds every out slot written so far (null for skipped ones):
	// after a successful run, the sequence's outputs.
	Slots map[string]json.RawMessage `json:"slots"`
	// Groups has one entry per group of the sequence, in order.
	Groups   []GroupResult `json:"groups"`
	Duration Duration      `json:"duration"`
}

// GroupResult is the state of one group in a run.
type GroupResult struct {
	Name   string      `json:"name"`
	Status GroupStatus `json:"status"`
	// Reason says why a group was skipped (e.g. "when is false").
	Reason   string       `json:"reason,omitempty"`
	Error    string       `json:"error,omitempty"`
	Started  time.Time    `json:"started,omitzero"`
	Duration Duration     `json:"duration"`
	Calls    []CallResult `json:"calls"`
}

// CallResult is the state of one tool call in a run.
type CallResult struct {
	Tool   string     `json:"tool"`
	As     string     `json:"as,omitempty"`
	Status CallStatus `json:"status"`
	// Attempts counts the calls made to the tool (0 when never started);
	// for a for_each call, the attempts of all its items.
	Attempts int      `json:"attempts"`
	Duration Duration `json:"duration"`
	Error    string   `json:"error,omitempty"`
	// ForEach is the fan-out of a for_each call: its items' counts and the
	// items that did not simply succeed; nil for a call without for_each
	// (and for one whose group never reached it).
	ForEach *FanOut `json:"for_each,omitempty"`
}

// FanOut is what the items of one for_each call did (docs/sequences.md,
// "for_each"). The counts add up to Items once the group has finished.
// The call's own Status is failed when any item failed, else canceled
// when any item was canceled, else skipped when every item was skipped,
// else degraded when any item was degraded, else succeeded (an empty list
// succeeds).
type FanOut struct {
	// Items is the length of the list; MaxParallel the bound on items in
	// flight that was in force.
	Items       int `json:"items"`
	MaxParallel int `json:"max_parallel,omitempty"`
	Succeeded   int `json:"succeeded"`
	Failed      int `json:"failed,omitempty"`
	Skipped     int `json:"skipped,omitempty"`
	Degraded    int `json:"degraded,omitempty"`
	Canceled    int `json:"canceled,omitempty"`
	NotRun      int `json:"not_run,omitempty"`
	// Running counts the items in flight; 0 once the group has finished.
	Running int `json:"running,omitempty"`
	// FailedItems holds the 0-based index of every failed item, in order.
	FailedItems []int `json:"failed_items,omitempty"`
	// Details lists, in item order, the items that did not succeed at
	// their first attempt (failed, canceled, skipped, degraded, retried),
	// at most MaxItemDetails of them; Omitted counts the others left out.
	Details []ItemResult `json:"details,omitempty"`
	Omitted int          `json:"omitted,omitempty"`
}

// MaxItemDetails bounds FanOut.Details, so that a run state with
// thousands of failed items still fits its RUNS entry (docs/runs.md,
// Large state); FanOut.FailedItems names them all.
const MaxItemDetails = 100

// ItemResult is the state of one item of a for_each call: a call of its
// own, with its status, attempts, duration and error (clipped to 300
// characters).
type ItemResult struct {
	Index    int        `json:"index"`
	Status   CallStatus `json:"status"`
	Attempts int        `json:"attempts"`
	Duration Duration   `json:"duration"`
	Error    string     `json:"error,omitempty"`
}

// Clone returns a deep copy of r (slot values are shared: a json.RawMessage
// held by a Result is never modified).
func (r *Result) Clone() *Result {
	c := *r
	c.Args = maps.Clone(r.Args)
	c.Slots = maps.Clone(r.Slots)
	c.Groups = slices.Clone(r.Groups)
	for i := range c.Groups {
		c.Groups[i].Calls = slices.Clone(c.Groups[i].Calls)
	}
	return &c
}
