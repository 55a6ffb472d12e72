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
	// Attempts counts the calls made to the tool (0 when never started).
	Attempts int      `json:"attempts"`
	Duration Duration `json:"duration"`
	Error    string   `json:"error,omitempty"`
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
