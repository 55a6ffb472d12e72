package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// Names used by the seqworker: its boot consumer and the headers of run
// requests and schedules (docs/architecture.md, NATS resources and Headers).
const (
	// ConsumerSeqworkerBoot is the durable pull consumer on EVENTS,
	// filtered on SubjectAgentReadyAll, that seqworker replicas share to
	// start boot sequences (docs/sequences.md, Boot).
	ConsumerSeqworkerBoot = "seqworker-boot"

	// AdvisoryMaxDeliveriesSeqworker is the server advisory published when
	// a run request exhausted the seqworker consumer's MaxDeliver. A
	// work-queue stream keeps such a message, so the seqworker records the
	// run as failed and deletes it.
	AdvisoryMaxDeliveriesSeqworker = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamSeqRuns + "." + ConsumerSeqworker

	// HeaderSequenceRevision carries the SEQUENCES revision a schedule
	// message was made from, so replicas can tell an older schedule from
	// a newer one. It travels on to every tick.
	HeaderSequenceRevision = "Skillbus-Sequence-Revision"

	// HeaderScheduler and HeaderScheduleNext are set by the NATS server on
	// every tick of a message schedule (nats-server 2.14+): the schedule's
	// subject and the time of the next tick (RFC 3339), or "purge" for a
	// one-shot schedule.
	HeaderScheduler    = "Nats-Scheduler"
	HeaderScheduleNext = "Nats-Schedule-Next"

	// HeaderSchedule carries, on a schedule message and so on each of its
	// ticks (the server strips its own Nats-Schedule* headers from ticks),
	// the sequence's schedule: the seqworker derives the tick's own time
	// from it (internal/seqworker TickTime).
	HeaderSchedule = "Skillbus-Schedule"
	// HeaderScheduleTimeZone is the server's header naming the IANA time
	// zone of a cron schedule (nats-server 2.15).
	HeaderScheduleTimeZone = "Nats-Schedule-Time-Zone"

	// The endpoints of the ServiceSeq micro service; the request and
	// reply types are below (docs/runs.md).
	SeqCallSubject   = SeqPrefix + ".call"   // SeqCallRequest → SeqCallReply
	SeqRunSubject    = SeqPrefix + ".run"    // SeqRunRequest → SeqRunReply
	SeqStatusSubject = SeqPrefix + ".status" // SeqStatusRequest → RunState
	SeqCancelSubject = SeqPrefix + ".cancel" // SeqCancelRequest → RunState
	SeqListSubject   = SeqPrefix + ".list"   // SeqListRequest → SeqListReply
	SeqRerunSubject  = SeqPrefix + ".rerun"  // SeqRerunRequest → SeqRunReply
	SeqRetrySubject  = SeqPrefix + ".retry"  // SeqRetryRequest → SeqRunReply

	// HeaderPendingRevision, on a run request that the seqworker queued
	// itself (seq.run, boot runs), holds the RUNS revision of the run's
	// queued state: a claim hint. It is used only when the state at that
	// revision is queued and was made from the same request (digest);
	// otherwise the request is claimed as any other.
	HeaderPendingRevision = "Skillbus-Pending-Revision"
)

// SeqCallRequest asks the seqworker to run one group, by its name (group
// names are unique among stored sequences, docs/sequences.md), on
// SeqCallSubject. Args must hold exactly the group's `in` keys.
type SeqCallRequest struct {
	V     int             `json:"v"`
	Group string          `json:"group"`
	Args  json.RawMessage `json:"args,omitempty"`
}

func (m *SeqCallRequest) version() int { return m.V }

func (m *SeqCallRequest) check() error {
	if m.Group == "" {
		return fmt.Errorf("%w: seq_call request without \"group\": name the group to run", ErrBadMessage)
	}
	if err := CheckNameLength("group name", m.Group); err != nil {
		return fmt.Errorf("%w: seq_call request: %v", ErrBadMessage, err)
	}
	if len(m.Args) != 0 && !isJSONObject(m.Args) && string(m.Args) != "null" {
		return fmt.Errorf("%w: seq_call request: \"args\" must be a JSON object, got %.40s", ErrBadMessage, m.Args)
	}
	return nil
}

// SeqCallReply is the answer to a SeqCallRequest: the group's out slots
// and its result (pkg/seq GroupResult JSON: status, calls, attempts,
// errors). A group that ran but failed is a reply with Error set, not a
// micro error.
type SeqCallReply struct {
	V int `json:"v"`
	// RunID is the id under which the call is recorded in RUNS (a run of
	// one group, trigger seq_call); "" when it could not be recorded.
	RunID    string                     `json:"run_id,omitempty"`
	Group    string                     `json:"group"`
	Sequence string                     `json:"sequence"`
	Slots    map[string]json.RawMessage `json:"slots"`
	Result   json.RawMessage            `json:"result,omitempty"`
	Error    string                     `json:"error,omitempty"`
}

func (m *SeqCallReply) version() int { return m.V }
func (m *SeqCallReply) check() error {
	if m.Group == "" {
		return fmt.Errorf("%w: seq_call reply without group", ErrBadMessage)
	}
	return nil
}

// SeqRunRequest starts a run through SeqRunSubject. RunID is optional (the
// seqworker makes one); given, it must pass CheckRunID and makes the
// request idempotent. Exactly one of Sequence and Inline is set. Errors
// (micro error codes): 400 a bad request (the message names the field and
// limit), 404 no such stored sequence, 409 the run id was used for another
// request, 503 the service cannot reach JetStream or is stopping.
type SeqRunRequest struct {
	V        int             `json:"v"`
	RunID    string          `json:"run_id,omitempty"`
	Sequence string          `json:"sequence,omitempty"`
	Inline   json.RawMessage `json:"inline,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
}

func (m *SeqRunRequest) version() int { return m.V }

func (m *SeqRunRequest) check() error {
	r := RunRequest{V: m.V, RunID: m.RunID, Sequence: m.Sequence, Inline: m.Inline, Args: m.Args}
	if r.RunID == "" {
		r.RunID = "x"
	}
	return r.check()
}

// SeqRunReply answers a SeqRunRequest with the run's id (the RUNS key).
type SeqRunReply struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
	// Existing is true when the request's run id named a run that already
	// existed with the same request (a run id is an idempotency key): that
	// run was returned and no new one was started.
	Existing bool `json:"existing,omitempty"`
}

func (m *SeqRunReply) version() int { return m.V }
func (m *SeqRunReply) check() error {
	return CheckRunID(m.RunID)
}

// SeqStatusRequest reads a run's state through SeqStatusSubject; the reply
// is the RunState. Errors: 400 a run id that fails CheckRunID, 404 no such
// run (unknown, or expired after the RUNS retention).
type SeqStatusRequest struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
}

func (m *SeqStatusRequest) version() int { return m.V }
func (m *SeqStatusRequest) check() error {
	if m.RunID == "" {
		return fmt.Errorf("%w: status request without \"run_id\"", ErrBadMessage)
	}
	if err := CheckRunID(m.RunID); err != nil {
		return fmt.Errorf("%w: status request: %v", ErrBadMessage, err)
	}
	return nil
}

// SeqCancelRequest asks to cancel a run through SeqCancelSubject. The
// reply is the run's state after the request: a queued run is cancelled at
// once (it never starts); a running one keeps its status until the worker
// holding it has stopped it (its in-flight calls end canceled, no further
// group starts), then ends cancelled. Cancelling a cancelled run again
// returns its state (idempotent). Errors: 400 bad request, 404 no such run,
// 409 the run already finished (succeeded or failed).
type SeqCancelRequest struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
	// By names who asks (a user, a program); optional, recorded.
	By string `json:"by,omitempty"`
	// Reason is why; optional, recorded.
	Reason string `json:"reason,omitempty"`
}

func (m *SeqCancelRequest) version() int { return m.V }
func (m *SeqCancelRequest) check() error {
	if err := CheckRunID(m.RunID); err != nil {
		return fmt.Errorf("%w: cancel request: %v", ErrBadMessage, err)
	}
	if err := checkLen("by", m.By, MaxReasonLength); err != nil {
		return fmt.Errorf("%w: cancel request: %v", ErrBadMessage, err)
	}
	if err := checkLen("reason", m.Reason, MaxReasonLength); err != nil {
		return fmt.Errorf("%w: cancel request: %v", ErrBadMessage, err)
	}
	return nil
}

// Limits of SeqListRequest.Limit.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// SeqListRequest lists runs through SeqListSubject, newest first (by
// CreatedAt, then run id). Every filter is optional. Errors: 400 a bad
// filter.
type SeqListRequest struct {
	V int `json:"v"`
	// Status keeps runs with this status (a Status constant).
	Status string `json:"status,omitempty"`
	// Sequence keeps runs of this sequence.
	Sequence string `json:"sequence,omitempty"`
	// Since keeps runs created at or after this time.
	Since time.Time `json:"since,omitzero"`
	// Limit is the page size: default DefaultListLimit, at most
	// MaxListLimit.
	Limit int `json:"limit,omitempty"`
	// Before is the cursor of the next page: SeqListReply.Next of the
	// previous one ("" = the newest runs).
	Before string `json:"before,omitempty"`
}

func (m *SeqListRequest) version() int { return m.V }
func (m *SeqListRequest) check() error {
	switch m.Status {
	case "", StatusQueued, StatusRunning, StatusWaiting, StatusInterrupted, StatusSucceeded, StatusFailed, StatusCancelled:
	default:
		return fmt.Errorf("%w: list request: status %q; want queued, running, interrupted, succeeded, failed or cancelled (or waiting: at a wait_for group)", ErrBadMessage, m.Status)
	}
	if m.Limit < 0 || m.Limit > MaxListLimit {
		return fmt.Errorf("%w: list request: limit %d; want 1 to %d (0 = %d)", ErrBadMessage, m.Limit, MaxListLimit, DefaultListLimit)
	}
	if err := CheckNameLength("sequence", m.Sequence); err != nil {
		return fmt.Errorf("%w: list request: %v", ErrBadMessage, err)
	}
	if err := checkLen("before", m.Before, 2*MaxRunIDLength); err != nil {
		return fmt.Errorf("%w: list request: %v", ErrBadMessage, err)
	}
	if err := CheckListCursor(m.Before); err != nil { // cursor.go
		return fmt.Errorf("list request: before: %w", err)
	}
	return nil
}

// RunSummary is one run in a SeqListReply: what RUNS holds of it without
// its slots and result.
type RunSummary struct {
	RunID          string    `json:"run_id"`
	Sequence       string    `json:"sequence,omitempty"`
	Status         string    `json:"status"`
	Trigger        string    `json:"trigger,omitempty"`
	Worker         string    `json:"worker,omitempty"`
	FinishedGroups int       `json:"finished_groups"`
	Groups         int       `json:"groups,omitempty"`
	Attempt        int       `json:"attempt,omitempty"`
	Error          string    `json:"error,omitempty"`
	CreatedAt      time.Time `json:"created_at,omitzero"`
	UpdatedAt      time.Time `json:"updated_at,omitzero"`
	FinishedAt     time.Time `json:"finished_at,omitzero"`
	// Waiting says what a waiting run waits for and since when (`signal
	// "approve" since 2026-12-01T09:00:00Z`, `duration until …`), "" for
	// any other run.
	Waiting string `json:"waiting,omitempty"`
}

// SeqListReply answers a SeqListRequest.
type SeqListReply struct {
	V    int          `json:"v"`
	Runs []RunSummary `json:"runs"`
	// Next is the cursor of the next page ("" when this is the last).
	Next string `json:"next,omitempty"`
	// Total counts the runs that match the filters (all pages).
	Total int `json:"total"`
}

func (m *SeqListReply) version() int { return m.V }
func (m *SeqListReply) check() error { return nil }

// SeqRerunRequest starts a new run with the sequence (or inline AST) and
// arguments of an earlier one, through SeqRerunSubject; the reply is a
// SeqRunReply with the new run's id. NewRunID is optional (as
// SeqRunRequest.RunID; not RunID itself). The reply's Existing is true
// when NewRunID names a run already requested with the same sequence and
// arguments: nothing new is started. Errors: 400, 404 no such run (or its
// sequence is no longer stored), 409 NewRunID used for another request;
// every error text names the run to rerun.
type SeqRerunRequest struct {
	V        int    `json:"v"`
	RunID    string `json:"run_id"`
	NewRunID string `json:"new_run_id,omitempty"`
}

// SeqRetryRequest starts a new run that continues RunID from its first
// group that did not finish (docs/runs.md, "Retry"), through
// SeqRetrySubject: the finished groups' slots are reused (none of their
// tools is called again), with RunID's arguments and, unless Latest, the
// definition RunID ran. Latest takes the stored definition instead, which
// must have the same signature and the same groups up to that point.
// From, when set, starts the new run at an earlier group instead: a
// group's name, or its 1-based number as a decimal ("2"), at or before
// the first group that did not finish; that group and every one after it
// run again, the groups before it are reused with only their own slots
// (docs/runs.md, "Retry from a group"). Without From only a failed or
// cancelled run can be retried; with it a succeeded one too. The reply is
// a SeqRunReply with the new run's id (NewRunID, or a new one). Errors:
// 400 (a malformed request, From naming no group of the run — with the
// closest name and the groups allowed), 404 no such run, 409 not
// retryable (its status; From a group the run never reached, with the
// groups allowed), definition changed (with what differs), or NewRunID
// used for another request; every error text names the run to retry.
type SeqRetryRequest struct {
	V        int    `json:"v"`
	RunID    string `json:"run_id"`
	NewRunID string `json:"new_run_id,omitempty"`
	Latest   bool   `json:"latest,omitempty"`
	// From is the group to start at: its name or 1-based number; "" for
	// the first group that did not finish (an older client's request).
	// At most MaxNameLength bytes.
	From string `json:"from,omitempty"`
}

func (m *SeqRetryRequest) version() int { return m.V }
func (m *SeqRetryRequest) check() error {
	if err := CheckRunID(m.RunID); err != nil {
		return fmt.Errorf("%w: retry request: %v", ErrBadMessage, err)
	}
	if m.NewRunID != "" {
		if err := CheckRunID(m.NewRunID); err != nil {
			return fmt.Errorf("%w: retry request: new_run_id: %v", ErrBadMessage, err)
		}
		if m.NewRunID == m.RunID {
			return fmt.Errorf("%w: retry request: new_run_id %q is the run to retry; give the new run an id of its own, or none for a new one", ErrBadMessage, m.NewRunID)
		}
	}
	if len(m.From) > MaxNameLength {
		return fmt.Errorf("%w: retry request: from is %d bytes; a group's name is at most %d bytes (or give its 1-based number)", ErrBadMessage, len(m.From), MaxNameLength)
	}
	return nil
}

func (m *SeqRerunRequest) version() int { return m.V }
func (m *SeqRerunRequest) check() error {
	if err := CheckRunID(m.RunID); err != nil {
		return fmt.Errorf("%w: rerun request: %v", ErrBadMessage, err)
	}
	if m.NewRunID != "" {
		if err := CheckRunID(m.NewRunID); err != nil {
			return fmt.Errorf("%w: rerun request: new_run_id: %v", ErrBadMessage, err)
		}
		if m.NewRunID == m.RunID {
			return fmt.Errorf("%w: rerun request: new_run_id %q is the run to rerun; give the new run an id of its own, or none for a new one", ErrBadMessage, m.NewRunID)
		}
	}
	return nil
}
