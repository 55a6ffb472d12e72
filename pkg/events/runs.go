package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Run triggers: why a run was requested (RunRequest.Trigger,
// RunState.Trigger). docs/runs.md lists them.
const (
	// TriggerManual: on demand, through seq.run (`skillbus run`, a Go
	// program with pkg/client) or a request published on the queue.
	TriggerManual = "manual"
	// TriggerSchedule: a schedule tick (docs/sequences.md, Schedules);
	// TriggerManualTick and TriggerBackfill (schedules.go) are ticks
	// asked for by a person.
	TriggerSchedule = "schedule"
	// TriggerBoot: an agent_ready event and boot: true.
	TriggerBoot = "boot"
	// TriggerSeqCall: one group run through the seq_call endpoint.
	TriggerSeqCall = "seq_call"
	// TriggerCall is the name TriggerManual had before run lifecycles
	// (RunState written by older workers); readers treat it as manual.
	TriggerCall = "call"
)

// Run statuses, in RunState.Status and RunEvent.Status. The lifecycle
// (docs/runs.md):
//
//	queued → running → succeeded | failed | cancelled
//	           ↓  ↑
//	        interrupted   (a worker stopped before the run ended; any
//	                       worker resumes it after its last checkpoint)
//	running → waiting → running  (a wait_for group: held by no worker
//	                       until its signal or timer resumes it)
//
// A queued run may also go straight to cancelled or failed (a request that
// can never run).
const (
	StatusQueued      = "queued"      // accepted, no group started yet
	StatusRunning     = "running"     // a worker holds it (RunState.Worker)
	StatusInterrupted = "interrupted" // a worker stopped mid-run; waits to be resumed
	StatusSucceeded   = "succeeded"   // every group finished without abort
	StatusFailed      = "failed"      // aborted: see RunState.Error
	StatusCancelled   = "cancelled"   // stopped on request: see RunState.Cancel
	// StatusWaiting: at a wait_for group, waiting for a signal or a time
	// (RunState.Wait); no worker holds it (docs/runs.md, "Waiting runs").
	StatusWaiting = "waiting"
	// StatusPending is what workers before the run lifecycle wrote for a
	// queued run. It is read as StatusQueued (RunState.Normalize) and never
	// written any more.
	StatusPending = "pending"
)

// Finished reports whether status is a final one (succeeded, failed or
// cancelled): such a run never runs again.
func Finished(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled
}

// RunRequest asks the seqworker to run a sequence. It is published on
// RunSubject(sequence) in StreamSeqRuns with Nats-Msg-Id = RunID, so a
// repeated request with the same id inside the duplicate window is dropped
// by the server (docs/architecture.md, the SEQ_RUNS stream).
type RunRequest struct {
	V int `json:"v"`
	// RunID identifies the run: the RUNS key and the dedupe id. Required;
	// CheckRunID's rule (at most MaxRunIDLength bytes of letters, digits,
	// '-' and '_').
	RunID string `json:"run_id"`
	// Sequence names a stored sequence (SEQUENCES bucket). Exactly one of
	// Sequence and Inline is set.
	Sequence string `json:"sequence,omitempty"`
	// Inline is a sequence AST (the JSON of pkg/seq's parsed sequence), for
	// a run of a sequence that is not stored.
	Inline json.RawMessage `json:"inline,omitempty"`
	// Args are the run arguments: a JSON object, or absent for none.
	Args json.RawMessage `json:"args,omitempty"`
	// Trigger is one of the Trigger constants; empty means TriggerManual.
	Trigger string `json:"trigger,omitempty"`
	// Agent and BootID identify the agent_ready event of a boot run.
	Agent  string `json:"agent,omitempty"`
	BootID string `json:"boot_id,omitempty"`
	// RequestedAt is when the request was made (UTC), informational.
	RequestedAt time.Time `json:"requested_at,omitzero"`
	// RetryOf is the run a seq.retry continues (its state was queued with
	// that run's checkpoint: docs/runs.md, "Retry"); "" otherwise.
	RetryOf string `json:"retry_of,omitempty"`
	// Resume makes the request resume a waiting run (waits.go): published
	// by seq.signal or fired by the wait's timer, with the run's own
	// sequence, inline definition and arguments; nil otherwise.
	Resume *ResumeRequest `json:"resume,omitempty"`
	// ScheduleEntry names the schedule entry a tick (trigger schedule or
	// manual-tick) belongs to (docs/runs.md, "Scheduled runs"); "" for
	// other runs, and on ticks of schedules made before entries (read as
	// the entry "default").
	ScheduleEntry string `json:"schedule_entry,omitempty"`
}

func (m *RunRequest) version() int { return m.V }

func (m *RunRequest) check() error {
	if err := CheckRunID(m.RunID); err != nil {
		return fmt.Errorf("%w: run request: %v", ErrBadMessage, err)
	}
	switch {
	case m.Sequence == "" && len(m.Inline) == 0:
		return fmt.Errorf("%w: run request %q names no sequence: set \"sequence\" (a stored sequence) or \"inline\" (a sequence definition)", ErrBadMessage, m.RunID)
	case m.Sequence != "" && len(m.Inline) != 0:
		return fmt.Errorf("%w: run request %q sets both \"sequence\" and \"inline\"; set exactly one", ErrBadMessage, m.RunID)
	}
	if err := CheckNameLength("sequence name", m.Sequence); err != nil {
		return fmt.Errorf("%w: run request %q: %v", ErrBadMessage, m.RunID, err)
	}
	if err := CheckNameLength("agent", m.Agent); err != nil {
		return fmt.Errorf("%w: run request %q: %v", ErrBadMessage, m.RunID, err)
	}
	if err := checkLen("boot_id", m.BootID, MaxIDLength); err != nil {
		return fmt.Errorf("%w: run request %q: %v", ErrBadMessage, m.RunID, err)
	}
	if len(m.Args) != 0 && !isJSONObject(m.Args) && string(m.Args) != "null" {
		return fmt.Errorf("%w: run request %q: \"args\" must be a JSON object, got %.40s", ErrBadMessage, m.RunID, m.Args)
	}
	switch m.Trigger {
	case "", TriggerManual, TriggerCall, TriggerSchedule, TriggerManualTick, TriggerBackfill, TriggerBoot, TriggerSeqCall:
	default:
		return fmt.Errorf("%w: run request %q: trigger %q; want manual, schedule, manual-tick, backfill, boot or seq_call", ErrBadMessage, m.RunID, m.Trigger)
	}
	return nil
}

// CancelInfo records who asked to cancel a run, why and when
// (RunState.Cancel).
type CancelInfo struct {
	// By names who asked (the client's own description: a user, a
	// program); "" when not given.
	By string `json:"by,omitempty"`
	// Reason is free text; "" when not given.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// SlotRef points at a slot value kept in the BucketRunSlots object store
// because it was too large for the RUNS entry (docs/runs.md, Large state).
type SlotRef struct {
	// Object is the object's name: RunSlotObject(run id, slot).
	Object string `json:"object"`
	// Size is the value's length in bytes.
	Size int64 `json:"size"`
	// Digest is "SHA-256=" + base64url of the value, as the object store
	// records it; a resume checks it.
	Digest string `json:"digest,omitempty"`
}

// RunState is the value of a RUNS key: the run's checkpoint while it runs
// and its result when done. The seqworker writes it when the run is
// queued, claimed, after every finished group, at every heartbeat and at
// the end; a worker that picks up a redelivered run resumes after
// FinishedGroups (docs/sequences.md, At-least-once delivery and resume).
type RunState struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
	// Sequence is the sequence's name (for an inline run, its own name).
	Sequence string `json:"sequence,omitempty"`
	// Status is one of the Status constants (never StatusPending once
	// normalised).
	Status string `json:"status"`
	// Trigger is why the run exists: TriggerManual, TriggerBoot,
	// TriggerSchedule or TriggerSeqCall ("" in states of older workers:
	// manual).
	Trigger string `json:"trigger,omitempty"`
	// Worker is the id of the worker that holds the run (running), held it
	// last (interrupted, finished) — Config.WorkerID of internal/seqworker,
	// by default host-pid-random.
	Worker string `json:"worker,omitempty"`
	// Heartbeat is when the holder last said it is alive (UTC); it is
	// renewed at every checkpoint and every heartbeat interval.
	Heartbeat time.Time `json:"heartbeat,omitzero"`
	// FinishedGroups counts the groups finished (or skipped) so far: the
	// checkpoint.
	FinishedGroups int `json:"finished_groups"`
	// Groups is the number of groups of the sequence (0 until known).
	Groups int `json:"groups,omitempty"`
	// Args are the run arguments (a JSON object), as requested.
	Args json.RawMessage `json:"args,omitempty"`
	// Inline is the AST of an inline run's sequence (so it can be rerun).
	Inline json.RawMessage `json:"inline,omitempty"`
	// Definition is the definition the run started with (a resumed run
	// finishes with it); nil until the holder records it, and in states of
	// older workers.
	Definition *DefinitionRef `json:"definition,omitempty"`
	// Agent and BootID: the agent_ready event of a boot run.
	Agent  string `json:"agent,omitempty"`
	BootID string `json:"boot_id,omitempty"`
	// ScheduledAt is the tick's own time of a scheduled run.
	ScheduledAt time.Time `json:"scheduled_at,omitzero"`
	// ScheduleEntry is the schedule entry of a scheduled or manual-tick
	// run (RunRequest.ScheduleEntry).
	ScheduleEntry string `json:"schedule_entry,omitempty"`
	// Slots holds the out slots written so far, by slot name, except those
	// in SlotRefs.
	Slots map[string]json.RawMessage `json:"slots,omitempty"`
	// SlotRefs holds the slots too large for the RUNS entry: their values
	// are objects of the BucketRunSlots object store.
	SlotRefs map[string]SlotRef `json:"slot_refs,omitempty"`
	// Result is pkg/seq's run result (every group and call: status,
	// attempts, duration, error) as JSON; its "slots" member leaves out the
	// slots of SlotRefs.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the reason of a failed run (or of the last interruption).
	Error string `json:"error,omitempty"`
	// Cancel is set once a cancel was asked (the run may still be running
	// until its holder stops it: Status tells).
	Cancel *CancelInfo `json:"cancel,omitempty"`
	// Request is the digest of the run request that created this run
	// (RequestDigest: its sequence, inline AST and arguments). A run id is
	// an idempotency key: starting it again with the same request returns
	// this run, with another request is refused (a conflict).
	Request string `json:"request,omitempty"`
	// Attempt counts deliveries of the run request (1 = first).
	Attempt int `json:"attempt,omitempty"`
	// RetryOf is the run this one retries (seq.retry: it continues that
	// run from its first group that did not finish); RetriedBy lists the
	// runs that retry this one, oldest first (docs/runs.md, "Retry").
	RetryOf   string   `json:"retry_of,omitempty"`
	RetriedBy []string `json:"retried_by,omitempty"`
	// CreatedAt is when the run was queued (or first claimed).
	CreatedAt   time.Time `json:"created_at,omitzero"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	Interrupted time.Time `json:"interrupted_at,omitzero"`
	// Wait is what a waiting run waits for (StatusWaiting); nil otherwise.
	Wait *WaitState `json:"wait,omitempty"`
	// Resumed is the wait the run last resumed from (its token and
	// signal), kept while the run goes on: a redelivery of that resume's
	// request (after a hand-back or a crash) continues the run instead of
	// being dropped (docs/runs.md, "Waiting runs"); nil when it never
	// waited.
	Resumed *WaitState `json:"resumed,omitempty"`
}

func (m *RunState) version() int { return m.V }

func (m *RunState) check() error {
	if m.RunID == "" {
		return fmt.Errorf("%w: run state without run_id", ErrBadMessage)
	}
	switch m.Status {
	case StatusQueued, StatusPending, StatusRunning, StatusInterrupted, StatusSucceeded, StatusFailed, StatusCancelled, StatusWaiting:
	default:
		return fmt.Errorf("%w: run state %q: status %q; want queued, running, waiting, interrupted, succeeded, failed or cancelled", ErrBadMessage, m.RunID, m.Status)
	}
	return nil
}

// Normalize maps what older workers wrote onto the current vocabulary:
// status pending → queued, trigger call or "" → manual. Decode does not
// call it; readers that show or compare states do.
func (m *RunState) Normalize() {
	if m.Status == StatusPending {
		m.Status = StatusQueued
	}
	if m.Trigger == "" || m.Trigger == TriggerCall {
		m.Trigger = TriggerManual
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = m.StartedAt
		if m.CreatedAt.IsZero() {
			m.CreatedAt = m.UpdatedAt
		}
	}
}

// Run event kinds: the last token of events.run.<run_id>.<kind>.
const (
	RunStarted     = "started"     // a worker claimed the run (first time)
	RunGroup       = "group"       // a group finished
	RunFinished    = "finished"    // succeeded, failed or cancelled
	RunInterrupted = "interrupted" // the holder stopped before the end
	RunResumed     = "resumed"     // another delivery took the run over
	// RunItems: progress of a for_each call while its group runs, about
	// once a second (docs/sequences.md, "for_each"): Group and GroupName
	// name the group, Result is a group result whose calls carry the
	// counts so far (succeeded, failed, running) in their "for_each".
	RunItems = "items"
	// RunCancelling: a cancel was asked (RunEvent.By, .Reason); the
	// worker holding the run listens to it and stops the run.
	RunCancelling = "cancelling"
)

// RunEvent reports run progress on RunEventSubject(run_id, kind).
type RunEvent struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
	// Kind is one of the Run* kinds.
	Kind     string `json:"kind"`
	Sequence string `json:"sequence,omitempty"`
	// Group is the 1-based number of the finished group and GroupName its
	// name (RunGroup); for RunInterrupted and RunResumed, Group is the
	// number of the last finished group (0: none) — the run resumes after
	// it.
	Group     int    `json:"group,omitempty"`
	GroupName string `json:"group_name,omitempty"`
	// Groups is the number of groups of the sequence (0 when unknown).
	Groups int `json:"groups,omitempty"`
	// Status: for RunGroup the group's status as pkg/seq reports it (for
	// example "succeeded", "skipped", "failed"); for RunFinished the run's
	// status (succeeded, failed or cancelled); for the others the run's
	// status after the event.
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Worker is the worker that sent the event (the run's holder), and
	// Attempt the delivery it holds.
	Worker  string `json:"worker,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Trigger is the run's trigger (RunStarted only).
	Trigger string `json:"trigger,omitempty"`
	// Agent and BootID: the agent_ready a boot run is for (RunStarted of
	// a boot run only), as the agent sent them (not encoded).
	Agent  string `json:"agent,omitempty"`
	BootID string `json:"boot_id,omitempty"`
	// By and Reason: who asked to cancel and why (RunCancelling,
	// RunFinished of a cancelled run).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Result is the group's or run's result JSON (optional).
	Result json.RawMessage `json:"result,omitempty"`
	// Wait is what the run waits for (RunWaiting) or the wait a signal
	// reached (RunSignalled, with the signal in Wait.Signalled).
	Wait *WaitState `json:"wait,omitempty"`
	At   time.Time  `json:"at,omitzero"`
}

func (m *RunEvent) version() int { return m.V }

func (m *RunEvent) check() error {
	if _, err := RunEventSubject(m.RunID, m.Kind); err != nil {
		return fmt.Errorf("%w: run event: %v", ErrBadMessage, err)
	}
	return nil
}

// Schedule statuses of a ScheduleEvent.
const (
	ScheduleSet     = "set"     // the server accepted the schedule
	ScheduleRefused = "refused" // the server refused it: the sequence never runs on its own
)

// ScheduleEvent reports, on ScheduleEventSubject(sequence), what the NATS
// server made of a sequence's schedule when a seqworker published it: set,
// or refused with the server's reason (a pattern or a time zone the
// server does not accept). `skillbus dev`, `seqs show` and `watch` show a
// refusal; the last event of a sequence is its schedule's current state.
type ScheduleEvent struct {
	V        int    `json:"v"`
	Sequence string `json:"sequence"`
	Schedule string `json:"schedule"`
	TimeZone string `json:"time_zone,omitempty"`
	// Status is ScheduleSet or ScheduleRefused.
	Status string `json:"status"`
	// Error is the server's reason for a refusal.
	Error string `json:"error,omitempty"`
	// Revision is the SEQUENCES revision the schedule was made from.
	Revision uint64    `json:"revision,omitempty"`
	At       time.Time `json:"at,omitzero"`
	// Entry, RunID and TickAt: for an event about one tick (Status one of
	// the Tick constants: skipped, buffered, paused, dropped, cancelled),
	// the entry, the tick's run id and its time; Error says why.
	Entry  string    `json:"entry,omitempty"`
	RunID  string    `json:"run_id,omitempty"`
	TickAt time.Time `json:"tick_at,omitzero"`
}

func (m *ScheduleEvent) version() int { return m.V }

func (m *ScheduleEvent) check() error {
	if _, err := ScheduleEventSubject(m.Sequence); err != nil {
		return fmt.Errorf("%w: schedule event: %v", ErrBadMessage, err)
	}
	switch m.Status {
	case ScheduleSet, ScheduleRefused, TickStarted, TickSkipped, TickBuffered, TickPaused, TickDropped, TickCancelled, TickMissed:
	default:
		return fmt.Errorf("%w: schedule event %q: status %q; want set, refused, or a tick outcome (started, skipped, buffered, paused, dropped, cancelled, missed)", ErrBadMessage, m.Sequence, m.Status)
	}
	return nil
}

// SubjectScheduleEventsAll matches every schedule event.
const SubjectScheduleEventsAll = "events.schedule.*"

// ScheduleEventSubject returns events.schedule.<token>, the sequence name
// encoded by TokenFor. Errors: ErrBadToken, as for RunSubject.
func ScheduleEventSubject(sequence string) (string, error) {
	tok, err := nameToken("sequence name", sequence)
	if err != nil {
		return "", err
	}
	return "events.schedule." + tok, nil
}
