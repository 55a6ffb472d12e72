package events

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Schedule entries (docs/sequences.md, "Schedule entries"; docs/runs.md,
// "Scheduled runs"): the names, state and endpoint types of the entries
// of a sequence's schedule.
const (
	// BucketSchedules: key = ScheduleKey(sequence, entry); value =
	// ScheduleState, written by the seqworker with compare-and-set. No
	// TTL: an entry's state lives as long as the entry.
	BucketSchedules = "SEQ_SCHEDULES"

	// TriggerManualTick: a run started by `skillbus schedules trigger`
	// (seq.schedules.trigger) through the entry's overlap policy.
	TriggerManualTick = "manual-tick"
	// TriggerBackfill: a run of a tick of the past started by `skillbus
	// schedules backfill` (seq.schedules.backfill) through the entry's
	// overlap policy; its scheduled_at is the tick's own time.
	TriggerBackfill = "backfill"

	// The endpoints of the schedules, on the ServiceSeq micro service.
	// They live under skillbus.seq.schedules.* — not seq.schedule.>,
	// which is the SEQ_RUNS stream's subject space of schedule messages.
	SeqSchedulesListSubject     = SeqPrefix + ".schedules.list"     // ScheduleListRequest → ScheduleListReply
	SeqSchedulesShowSubject     = SeqPrefix + ".schedules.show"     // ScheduleRef → ScheduleInfo
	SeqSchedulesPauseSubject    = SeqPrefix + ".schedules.pause"    // SchedulePauseRequest → ScheduleListReply
	SeqSchedulesUnpauseSubject  = SeqPrefix + ".schedules.unpause"  // SchedulePauseRequest → ScheduleListReply
	SeqSchedulesTriggerSubject  = SeqPrefix + ".schedules.trigger"  // ScheduleRef → ScheduleTriggerReply
	SeqSchedulesBackfillSubject = SeqPrefix + ".schedules.backfill" // ScheduleBackfillRequest → ScheduleTriggerReply

	// MaxBackfillTicks bounds the ticks of one backfill; a larger range is
	// refused (400) naming the bound.
	MaxBackfillTicks = 100
	// MaxRecentTicks is how many recent tick outcomes a ScheduleState keeps.
	MaxRecentTicks = 20
)

// Tick outcomes: ScheduleTick.Outcome, and the Status of a ScheduleEvent
// about a tick.
const (
	TickStarted   = "started"   // a run was started for the tick
	TickSkipped   = "skipped"   // dropped by the overlap policy (or a full buffer)
	TickBuffered  = "buffered"  // waits for the entry's current run to end
	TickPaused    = "paused"    // dropped: the entry is paused
	TickDropped   = "dropped"   // dropped: before start_at, after end_at, or the entry is gone
	TickCancelled = "cancelled" // the current run was cancelled for this tick (cancel_other)
	TickMissed    = "missed"    // not fired during a server outage and older than the entry's catchup_window
)

// entryRE is pkg/seq's rule of entry names (seq.EntryNameRule).
var entryRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// CheckEntryName reports whether entry is a valid schedule entry name.
// Errors: ErrBadToken.
func CheckEntryName(entry string) error {
	if !entryRE.MatchString(entry) {
		return fmt.Errorf("%w: schedule entry %q: 1 to 32 ASCII letters, digits, - or _, starting with a letter", ErrBadToken, clipToken(entry))
	}
	return nil
}

// ScheduleKey returns the BucketSchedules key of a sequence's entry:
// KeyFor(sequence) + "." + entry. Errors: ErrBadToken.
func ScheduleKey(sequence, entry string) (string, error) {
	if err := CheckNameLength("sequence name", sequence); err != nil || sequence == "" {
		return "", fmt.Errorf("%w: sequence name %q", ErrBadToken, clipToken(sequence))
	}
	if err := CheckEntryName(entry); err != nil {
		return "", err
	}
	return KeyFor(sequence) + "." + entry, nil
}

// ScheduleEntrySubject returns the subject of an entry's schedule message:
// seq.schedule.<token> for the one entry of a single-string schedule
// (legacy, named "default"; the subject schedules had before entries),
// else seq.schedule.<token>.<entry>. Errors: ErrBadToken.
func ScheduleEntrySubject(sequence, entry string, single bool) (string, error) {
	subj, err := ScheduleSubject(sequence)
	if err != nil || single {
		return subj, err
	}
	if err := CheckEntryName(entry); err != nil {
		return "", err
	}
	return subj + "." + entry, nil
}

// ScheduleSubjectParts splits a schedule message subject into the
// sequence name and the entry ("" for seq.schedule.<token>, the subject of
// a single-string schedule). Errors: ErrBadToken.
func ScheduleSubjectParts(subject string) (sequence, entry string, err error) {
	rest, ok := strings.CutPrefix(subject, "seq.schedule.")
	if !ok || rest == "" {
		return "", "", fmt.Errorf("%w: %q is not a seq.schedule subject", ErrBadToken, clipToken(subject))
	}
	tok, entry, _ := strings.Cut(rest, ".")
	sequence, err = NameForToken(tok)
	return sequence, entry, err
}

// ScheduleRun is a run of an entry that has not finished: admitted by the
// overlap policy at Admitted.
type ScheduleRun struct {
	RunID    string    `json:"run_id"`
	At       time.Time `json:"at"` // the tick's time
	Admitted time.Time `json:"admitted"`
	Trigger  string    `json:"trigger,omitempty"`
}

// ScheduleTick is one tick and what became of it (Outcome, one of the
// Tick constants; Why says more for a skipped or dropped tick).
type ScheduleTick struct {
	RunID   string    `json:"run_id"`
	At      time.Time `json:"at"`
	Trigger string    `json:"trigger,omitempty"`
	Outcome string    `json:"outcome,omitempty"`
	Why     string    `json:"why,omitempty"`
	// Seen is when the seqworker handled the tick.
	Seen time.Time `json:"seen,omitzero"`
}

// ScheduleState is the value of a BucketSchedules key: what the
// seqworkers know of one schedule entry, shared by every replica and
// changed only with compare-and-set (docs/runs.md, "Scheduled runs").
type ScheduleState struct {
	V        int    `json:"v"`
	Sequence string `json:"sequence"`
	Entry    string `json:"entry"`
	// Paused entries drop their ticks (recorded, TickPaused); Note says
	// why, By who paused it and At when.
	Paused   bool      `json:"paused,omitempty"`
	Note     string    `json:"note,omitempty"`
	PausedBy string    `json:"paused_by,omitempty"`
	PausedAt time.Time `json:"paused_at,omitzero"`
	// Current holds the runs of the entry that have not finished (at most
	// one unless the overlap is allow_all).
	Current []ScheduleRun `json:"current,omitempty"`
	// Buffered holds the ticks waiting for the current run to end, oldest
	// first (buffer_one: at most one).
	Buffered []ScheduleTick `json:"buffered,omitempty"`
	// LastRun, LastStatus and LastAt: the entry's last finished run.
	LastRun    string    `json:"last_run,omitempty"`
	LastStatus string    `json:"last_status,omitempty"`
	LastAt     time.Time `json:"last_at,omitzero"`
	// LastTick is the time of the last tick of the server's schedule seen.
	LastTick time.Time `json:"last_tick,omitzero"`
	// ConsecutiveFailures counts the failed runs since the last that
	// succeeded (pause_on_failure).
	ConsecutiveFailures int `json:"consecutive_failures,omitempty"`
	// Counters since the entry was first seen.
	Started int64 `json:"started,omitempty"`
	Skipped int64 `json:"skipped,omitempty"`
	Buffers int64 `json:"buffered_total,omitempty"`
	Missed  int64 `json:"missed,omitempty"`
	Dropped int64 `json:"dropped,omitempty"`
	// Recent holds the last MaxRecentTicks ticks and their outcome,
	// newest last.
	Recent    []ScheduleTick `json:"recent,omitempty"`
	UpdatedAt time.Time      `json:"updated_at,omitzero"`
}

func (m *ScheduleState) version() int { return m.V }
func (m *ScheduleState) check() error {
	if m.Sequence == "" || m.Entry == "" {
		return fmt.Errorf("%w: schedule state without sequence or entry", ErrBadMessage)
	}
	return nil
}

// ScheduleRef names one entry (Entry "" = every entry of Sequence, where
// the endpoint allows it).
type ScheduleRef struct {
	V        int    `json:"v"`
	Sequence string `json:"sequence"`
	Entry    string `json:"entry,omitempty"`
	// By names who asks; recorded with a trigger.
	By string `json:"by,omitempty"`
}

func (m *ScheduleRef) version() int { return m.V }
func (m *ScheduleRef) check() error {
	if m.Sequence == "" {
		return fmt.Errorf("%w: schedule request without \"sequence\"", ErrBadMessage)
	}
	if err := CheckNameLength("sequence name", m.Sequence); err != nil {
		return fmt.Errorf("%w: schedule request: %v", ErrBadMessage, err)
	}
	if m.Entry != "" {
		if err := CheckEntryName(m.Entry); err != nil {
			return fmt.Errorf("%w: schedule request: %v", ErrBadMessage, err)
		}
	}
	return checkLen("by", m.By, MaxReasonLength)
}

// SchedulePauseRequest pauses (or, on the unpause endpoint, unpauses) an
// entry, or every entry of the sequence when Entry is "". Pausing an entry
// paused already keeps its pause as it was — note, by and at — unless
// Overwrite is set, which replaces them with this request's; either way the
// reply's ScheduleInfo.PausedBefore says what the pause was (docs/runs.md,
// "Scheduled runs").
type SchedulePauseRequest struct {
	V         int    `json:"v"`
	Sequence  string `json:"sequence"`
	Entry     string `json:"entry,omitempty"`
	Note      string `json:"note,omitempty"`
	By        string `json:"by,omitempty"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// SchedulePause is a pause as it was when a pause or unpause request came
// (ScheduleInfo.PausedBefore): its note, who paused the entry and when.
type SchedulePause struct {
	Note string    `json:"note,omitempty"`
	By   string    `json:"by,omitempty"`
	At   time.Time `json:"at,omitzero"`
}

func (m *SchedulePauseRequest) version() int { return m.V }
func (m *SchedulePauseRequest) check() error {
	ref := ScheduleRef{Sequence: m.Sequence, Entry: m.Entry, By: m.By}
	if err := ref.check(); err != nil {
		return err
	}
	return checkLen("note", m.Note, MaxReasonLength)
}

// ScheduleBackfillRequest runs one tick per fire time of the entry in
// [From, To], through its overlap policy; at most MaxBackfillTicks.
type ScheduleBackfillRequest struct {
	V        int       `json:"v"`
	Sequence string    `json:"sequence"`
	Entry    string    `json:"entry,omitempty"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	By       string    `json:"by,omitempty"`
}

func (m *ScheduleBackfillRequest) version() int { return m.V }
func (m *ScheduleBackfillRequest) check() error {
	ref := ScheduleRef{Sequence: m.Sequence, Entry: m.Entry, By: m.By}
	if err := ref.check(); err != nil {
		return err
	}
	if m.From.IsZero() || m.To.IsZero() || m.To.Before(m.From) {
		return fmt.Errorf("%w: backfill needs from and to (RFC 3339), to not before from (both ends are included)", ErrBadMessage)
	}
	return nil
}

// ScheduleInfo describes one entry: its definition, its state and its
// next fire times.
type ScheduleInfo struct {
	V        int    `json:"v"`
	Sequence string `json:"sequence"`
	Entry    string `json:"entry"`
	// Pattern is the entry's schedule in the server's syntax (cron, or
	// "@every D"); TimeZone its zone ("" = UTC).
	Pattern  string          `json:"pattern"`
	TimeZone string          `json:"timezone,omitempty"`
	Overlap  string          `json:"overlap"`
	Args     json.RawMessage `json:"args,omitempty"`
	// Jitter and CatchupWindow are the entry's jitter and catchup_window
	// as Go durations ("30s"; "" = none), PauseOnFailure its
	// pause_on_failure (0 = never), StartAt and EndAt its start_at and
	// end_at (zero = unbounded): docs/sequences.md, "Schedule entries".
	Jitter         string    `json:"jitter,omitempty"`
	CatchupWindow  string    `json:"catchup_window,omitempty"`
	PauseOnFailure int       `json:"pause_on_failure,omitempty"`
	StartAt        time.Time `json:"start_at,omitzero"`
	EndAt          time.Time `json:"end_at,omitzero"`
	// Next holds the next fire times (UTC; 1 in a list, 10 in show); for
	// an "@every" entry they count from the last tick seen.
	Next  []time.Time    `json:"next,omitempty"`
	State *ScheduleState `json:"state,omitempty"`
	// PausedBefore is set only in the replies of the pause and unpause
	// endpoints, for an entry that was paused when the request came: that
	// pause (kept by a pause unless it had Overwrite; ended by an unpause).
	// Nil there: the entry was not paused.
	PausedBefore *SchedulePause `json:"paused_before,omitempty"`
}

func (m *ScheduleInfo) version() int { return m.V }
func (m *ScheduleInfo) check() error { return nil }

// ScheduleListRequest lists the entries of every scheduled sequence (or of
// Sequence).
type ScheduleListRequest struct {
	V        int    `json:"v"`
	Sequence string `json:"sequence,omitempty"`
}

func (m *ScheduleListRequest) version() int { return m.V }
func (m *ScheduleListRequest) check() error { return nil }

// ScheduleListReply is every entry, ordered by sequence and entry.
type ScheduleListReply struct {
	V       int            `json:"v"`
	Entries []ScheduleInfo `json:"entries"`
}

func (m *ScheduleListReply) version() int { return m.V }
func (m *ScheduleListReply) check() error { return nil }

// ScheduleTriggerReply says what became of each tick a trigger or a
// backfill made (Outcome per tick).
type ScheduleTriggerReply struct {
	V     int            `json:"v"`
	Ticks []ScheduleTick `json:"ticks"`
}

func (m *ScheduleTriggerReply) version() int { return m.V }
func (m *ScheduleTriggerReply) check() error { return nil }
