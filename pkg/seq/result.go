package seq

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// Status is the state of a run.
type Status string

// The run states. A Result handed to an observer is StatusRunning; Run
// returns one of the others.
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
	// StatusWaiting: the run stopped at a wait_for group to wait for a
	// signal or a time (Run returned ErrWaiting); resume it with
	// WithResume and WithWaitOutcome.
	StatusWaiting Status = "waiting"
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
	GroupWaiting     GroupStatus = "waiting" // a wait_for group waiting for its signal or time
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
	// ArgsNotKept counts the calls and for_each items whose arguments
	// were sent but not recorded, the run's MaxRunArgs being spent
	// (SentArgs; docs/runs.md, "What a run state holds").
	ArgsNotKept int `json:"args_not_kept,omitempty"`
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
	// ReusedFrom names the run a retry took this finished group from
	// (docs/runs.md, "Retry"): none of its tools was called in this run,
	// its times and attempts are that run's. "" for a group this run ran.
	ReusedFrom string `json:"reused_from,omitempty"`
	// Wait is what a wait_for group waits, or waited, for and how the
	// wait ended (docs/sequences.md, "wait_for"); nil for other groups.
	Wait *Wait `json:"wait,omitempty"`
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
	// SentArgs are the arguments the tool was sent, after substitution
	// (docs/runs.md, "What a run state holds"); for a for_each call, those
	// of its first item ($index 0), each other item's being in its
	// ItemResult among FanOut.Details.
	SentArgs
}

// SentArgs are the arguments one call (or one for_each item) was sent:
// its `args` after $args.KEY, $item and $index were substituted, as the
// JSON object the tool received (the same for every attempt). They are
// bounded so that a run state still fits its RUNS entry (docs/runs.md,
// "What a run state holds"): one call's arguments are kept up to
// MaxCallArgs bytes, and all of a run's together grow its state by at most
// MaxRunArgs bytes. Arguments over MaxCallArgs are clipped: Args is then
// nil and ArgsClipped says how long they were and holds their start. Once
// the run's MaxRunArgs are spent a call keeps none (both fields zero) and
// Result.ArgsNotKept counts it.
//
// Both fields are zero for a call that was never sent (not run, skipped,
// or its arguments could not be substituted: its Error says why).
// Arguments are recorded as sent: the sequence language has no secret
// arguments to redact (docs/security.md, "What this does not cover").
type SentArgs struct {
	Args        json.RawMessage `json:"args,omitempty"`
	ArgsClipped *ClippedArgs    `json:"args_clipped,omitempty"`
}

// ClippedArgs stands for arguments longer than MaxCallArgs: Size is their
// full length in bytes, Head their first bytes as text, cut at a UTF-8
// boundary (shorter than MaxCallArgs when the run's MaxRunArgs ran out).
type ClippedArgs struct {
	Size int    `json:"size"`
	Head string `json:"head,omitempty"`
}

// Bounds on the arguments a run state records (SentArgs): MaxCallArgs
// bytes of JSON text per call or for_each item, and MaxRunArgs bytes for
// all the calls and items of one run — their text and their JSON members
// (argsCost), counted in group and call order (a for_each call's first
// item, then its items in Details). A run of 1,000 groups (MaxGroups) with
// 3 KiB of arguments per call keeps the start of its first 16 calls'
// and counts the others in Result.ArgsNotKept.
const (
	MaxCallArgs = 2 << 10
	MaxRunArgs  = 32 << 10
)

// The bytes a call's recorded arguments add to its JSON besides their
// text: `,"args":` and `,"args_clipped":{"size":N,"head":""}` (N up to
// ten digits).
const (
	argsMember    = len(`,"args":`)
	clippedMember = len(`,"args_clipped":{"size":1234567890,"head":""}`)
)

// clip bounds the arguments held in a.Args (as sent) to MaxCallArgs bytes
// and the run's budget *left, which it decreases by what a then adds to
// the run's JSON (cost). It reports false when the budget kept none of
// them. It allocates only when it clips.
func (a *SentArgs) clip(left *int) bool {
	args := a.Args
	a.ArgsClipped = nil
	if len(args) == 0 {
		return true
	}
	if len(args) <= MaxCallArgs {
		if c := argsMember + rawJSONLen(args); c <= *left {
			*left -= c
			return true
		}
	}
	room := *left - clippedMember
	if room < 0 {
		a.Args = nil
		return false
	}
	n, enc := 0, 0
	for n < len(args) && n < MaxCallArgs {
		r, size := utf8.DecodeRune(args[n:])
		w := escapedLen(r, size)
		if n+size > MaxCallArgs || enc+w > room {
			break
		}
		n, enc = n+size, enc+w
	}
	a.Args, a.ArgsClipped = nil, &ClippedArgs{Size: len(args), Head: string(args[:n])}
	*left -= clippedMember + enc
	return true
}

// cost is what the arguments a keeps add to the run's JSON, at most: the
// member and the text as json.Marshal writes it.
func (a *SentArgs) cost() int {
	switch {
	case a.ArgsClipped != nil:
		n := clippedMember
		for _, r := range a.ArgsClipped.Head {
			n += escapedLen(r, utf8.RuneLen(r))
		}
		return n
	case len(a.Args) > 0:
		return argsMember + rawJSONLen(a.Args)
	}
	return 0
}

// rawJSONLen is the length of the JSON text b as json.Marshal writes a
// json.RawMessage: <, > and & become \u003c and the like, U+2028 and
// U+2029 \u2028 and \u2029.
func rawJSONLen(b []byte) int {
	n := len(b)
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			n += 5
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			n += 3
		}
	}
	return n
}

// escapedLen is the length of rune r (size bytes of text) inside a JSON
// string as json.Marshal writes it.
func escapedLen(r rune, size int) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 || r == utf8.RuneError && size == 1:
		return 6
	}
	return size
}

// argsCost is what the groups' recorded arguments cost of the run's
// MaxRunArgs (a resumed run's budget goes on from there).
func argsCost(groups []GroupResult) int {
	n := 0
	for gi := range groups {
		for ci := range groups[gi].Calls {
			c := &groups[gi].Calls[ci]
			n += c.SentArgs.cost()
			if c.ForEach != nil {
				for i := range c.ForEach.Details {
					n += c.ForEach.Details[i].SentArgs.cost()
				}
			}
		}
	}
	return n
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
// own, with its status, attempts, duration, error (clipped to 300
// characters) and the arguments it was sent (SentArgs: $item and $index
// substituted, within the run's bounds).
type ItemResult struct {
	Index    int        `json:"index"`
	Status   CallStatus `json:"status"`
	Attempts int        `json:"attempts"`
	Duration Duration   `json:"duration"`
	Error    string     `json:"error,omitempty"`
	SentArgs
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
