package events

import (
	"encoding/json"
	"fmt"
)

// Names used by the seqworker beyond those of DESIGN.md §3's table (an
// addition made with the seqworker, issue 6).
const (
	// ConsumerSeqworkerBoot is the durable pull consumer on EVENTS,
	// filtered on SubjectAgentReadyAll, that seqworker replicas share to
	// start boot sequences (DESIGN.md §4, Boot).
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

	// SeqCallSubject, SeqRunSubject and SeqStatusSubject are the endpoints
	// of the ServiceSeq micro service.
	SeqCallSubject   = SeqPrefix + ".call"
	SeqRunSubject    = SeqPrefix + ".run"
	SeqStatusSubject = SeqPrefix + ".status"
)

// SeqCallRequest asks the seqworker to run one group, by its name (group
// names are unique among stored sequences, DESIGN.md §4), on
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
	V        int                        `json:"v"`
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
// seqworker makes one); given, it must be a single subject token and makes
// the request idempotent. Exactly one of Sequence and Inline is set.
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
}

func (m *SeqRunReply) version() int { return m.V }
func (m *SeqRunReply) check() error {
	return checkToken("run_id", m.RunID)
}

// SeqStatusRequest reads a run's state through SeqStatusSubject; the reply
// is the RunState.
type SeqStatusRequest struct {
	V     int    `json:"v"`
	RunID string `json:"run_id"`
}

func (m *SeqStatusRequest) version() int { return m.V }
func (m *SeqStatusRequest) check() error {
	if m.RunID == "" {
		return fmt.Errorf("%w: status request without \"run_id\"", ErrBadMessage)
	}
	return nil
}
