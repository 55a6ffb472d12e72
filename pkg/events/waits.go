package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Waits (docs/runs.md, "Waiting runs"): a run at a wait_for group is
// StatusWaiting in RUNS, held by no worker; a signal (SeqSignalSubject) or
// its timer — a message scheduled on the NATS server at WaitTimerSubject
// — publishes a resume request (RunRequest.Resume) that any worker takes.

const (
	// SeqSignalSubject delivers a signal to a waiting run:
	// SeqSignalRequest → RunState.
	SeqSignalSubject = SeqPrefix + ".signal"

	// WaitTimerPrefix starts the subject of every wait's timer
	// (WaitTimerSubject). Its token, "_wait", can be no sequence's token
	// (a sequence name starts with a letter, and TokenFor writes either
	// the name itself or "=" and base64url), so the timers never mix with
	// the schedules of a sequence, seq.schedule.<sequence>[.<entry>].
	WaitTimerPrefix = "seq.schedule._wait."

	// HeaderResume, on a resume request (and on the timer message that
	// becomes one), holds the token of the wait it resumes (WaitState.Token).
	HeaderResume = "Skillbus-Resume"

	// Run event kinds of waits (RunEvent.Wait says what for).
	RunWaiting   = "waiting"   // the run stopped at a wait_for group
	RunSignalled = "signalled" // a signal reached the waiting run (RunEvent.By, .Reason)

	// Resume causes (ResumeRequest.Cause).
	ResumeSignal = "signal" // a signal recorded in WaitState.Signal
	ResumeTimer  = "timer"  // the wait's timer fired
)

// WaitTimerSubject returns seq.schedule._wait.<run id>, the subject of the
// timer message of a waiting run: a single-fire schedule (`@at`) in
// StreamSeqRuns whose target is RunSubject(sequence). Errors: ErrBadToken.
func WaitTimerSubject(runID string) (string, error) {
	if err := CheckRunID(runID); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	return WaitTimerPrefix + TokenFor(runID), nil
}

// WaitState is RunState.Wait: what a waiting run waits for. Times are UTC.
type WaitState struct {
	// Group is the 1-based wait group and GroupName its name.
	Group     int    `json:"group"`
	GroupName string `json:"group_name"`
	// Kind is "signal", "duration" or "until" (pkg/seq's Wait kinds);
	// Signal names the signal of a signal wait.
	Kind   string `json:"kind"`
	Signal string `json:"signal,omitempty"`
	// Out are the values a signal brings, name → type (the group's out).
	Out map[string]string `json:"out,omitempty"`
	// Since is when the run began to wait; Deadline when its timer fires.
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Token identifies this wait: a resume request carrying another token
	// (a wait that ended, a duplicate) is dropped.
	Token string `json:"token"`
	// Signal is set, compare-and-set, by the first signal: the run is
	// resumed with it, and any later signal is refused.
	Signalled *SignalInfo `json:"signalled,omitempty"`
}

// SignalInfo is the signal a waiting run received (WaitState.Signalled).
type SignalInfo struct {
	// Values are the signal's values (a JSON object), checked against
	// WaitState.Out; absent for a rejection.
	Values json.RawMessage `json:"values,omitempty"`
	// Reject fails the wait group with Reason.
	Reject bool      `json:"reject,omitempty"`
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
}

// ResumeRequest is RunRequest.Resume: the request resumes the waiting run
// whose wait has Token, after Cause.
type ResumeRequest struct {
	Token string `json:"token"`
	Cause string `json:"cause"` // ResumeSignal or ResumeTimer
}

// SeqSignalRequest delivers a signal to a waiting run through
// SeqSignalSubject (docs/runs.md, "Waiting runs"). Values (a JSON object)
// must fit the wait's `out` types as run arguments fit a signature;
// Reject fails the wait group with Reason instead (Values must then be
// absent). The reply is the run's state with the signal recorded.
// Errors: 400 bad request or values that do not fit, 404 no such run,
// 409 the run is not waiting for a signal of that name (not waiting,
// waiting for another signal or a timer, or already signalled).
type SeqSignalRequest struct {
	V      int             `json:"v"`
	RunID  string          `json:"run_id"`
	Name   string          `json:"name"`
	Values json.RawMessage `json:"values,omitempty"`
	Reject bool            `json:"reject,omitempty"`
	Reason string          `json:"reason,omitempty"`
	By     string          `json:"by,omitempty"`
}

func (m *SeqSignalRequest) version() int { return m.V }
func (m *SeqSignalRequest) check() error {
	if err := CheckRunID(m.RunID); err != nil {
		return fmt.Errorf("%w: signal request: %v", ErrBadMessage, err)
	}
	if m.Name == "" {
		return fmt.Errorf("%w: signal request without \"name\": name the signal the run waits for", ErrBadMessage)
	}
	if err := CheckNameLength("signal name", m.Name); err != nil {
		return fmt.Errorf("%w: signal request: %v", ErrBadMessage, err)
	}
	if len(m.Values) != 0 && string(m.Values) != "null" && !isJSONObject(m.Values) {
		return fmt.Errorf("%w: signal request: \"values\" must be a JSON object of name → value, got %.40s", ErrBadMessage, m.Values)
	}
	if m.Reject && len(m.Values) != 0 && string(m.Values) != "null" && string(m.Values) != "{}" {
		return fmt.Errorf("%w: signal request: a rejection carries no values (only a reason); drop the values or the reject", ErrBadMessage)
	}
	if !m.Reject && m.Reason != "" {
		return fmt.Errorf("%w: signal request: a reason goes with reject; set reject, or drop the reason", ErrBadMessage)
	}
	if err := checkLen("by", m.By, MaxReasonLength); err != nil {
		return fmt.Errorf("%w: signal request: %v", ErrBadMessage, err)
	}
	if err := checkLen("reason", m.Reason, MaxReasonLength); err != nil {
		return fmt.Errorf("%w: signal request: %v", ErrBadMessage, err)
	}
	return nil
}

// summary is RunSummary.Waiting: `signal "approve" since 2026-12-01T09:00:00Z`
// or `duration until 2026-12-01T10:00:00Z` for a waiting run, "" for any
// other (or a nil wait).
func (w *WaitState) summary(status string) string {
	if w == nil || status != StatusWaiting {
		return ""
	}
	if w.Signal != "" {
		return fmt.Sprintf("signal %q since %s", w.Signal, w.Since.UTC().Format(time.RFC3339))
	}
	return TimerText(w.Kind, w.Deadline.UTC().Format(time.RFC3339))
}

// TimerText says what a timer wait of kind ("duration" or "until", pkg/seq's
// Wait kinds) waits for, with its deadline as the caller writes it:
// `duration until 2026-12-01T10:00:00Z`, and for an until wait, whose kind
// is the word itself, `until 2026-12-01T10:00:00Z` (docs/runs.md, "Waiting
// runs"). Every front end writes a timer wait with it, so "until" is never
// said twice.
func TimerText(kind, deadline string) string {
	if kind == "until" || kind == "" {
		return "until " + deadline
	}
	return kind + " until " + deadline
}

// waitingText mends a Skillbus-Run-Waiting header written by an older
// seqworker, which said an until wait's kind before its "until"
// (`until until …`): such entries stay in RUNS until they expire.
func waitingText(h string) string {
	if rest, ok := strings.CutPrefix(h, "until until "); ok {
		return "until " + rest
	}
	return h
}
