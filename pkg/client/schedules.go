package client

import (
	"context"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
)

// Schedule entries (docs/runs.md, "Scheduled runs"): list, show, pause,
// unpause, trigger and backfill them through the seqworker's
// skillbus.seq.schedules.* endpoints. An entry is named by its sequence
// and its name ("" = the sequence's only entry, or for Pause and Unpause
// every entry of the sequence).

// Schedules lists the entries of every scheduled sequence (sequence ""),
// or of one, each with its state and next fire time. Errors:
// ErrBadRequest, ErrUnavailable, ErrClosed.
func (c *Client) Schedules(ctx context.Context, sequence string) (*events.ScheduleListReply, error) {
	var reply events.ScheduleListReply
	if err := c.request(ctx, events.SeqSchedulesListSubject, &events.ScheduleListRequest{Sequence: sequence}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// Schedule describes one entry: its state, its recent ticks and its next
// 10 fire times. Errors: ErrNotFound (no such sequence or entry),
// ErrBadRequest (entry "" for a sequence of several entries),
// ErrUnavailable, ErrClosed.
func (c *Client) Schedule(ctx context.Context, sequence, entry string) (*events.ScheduleInfo, error) {
	var reply events.ScheduleInfo
	if err := c.request(ctx, events.SeqSchedulesShowSubject, &events.ScheduleRef{Sequence: sequence, Entry: entry}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// PauseOption configures PauseSchedule.
type PauseOption func(*events.SchedulePauseRequest)

// WithOverwrite makes a pause of an entry paused already replace that
// pause's note, by and time with this one's; without it the first pause
// stays as it was (as kubectl annotate keeps a value without --overwrite).
func WithOverwrite() PauseOption {
	return func(r *events.SchedulePauseRequest) { r.Overwrite = true }
}

// PauseSchedule pauses an entry (every entry of the sequence when entry
// is "") with a note saying why; its ticks are dropped, and recorded,
// until UnpauseSchedule. It returns the entries paused; an entry that was
// paused already has PausedBefore set and keeps that pause unless
// WithOverwrite is given (docs/runs.md, "Scheduled runs"). Errors: as for
// Schedule.
func (c *Client) PauseSchedule(ctx context.Context, sequence, entry, note, by string, opts ...PauseOption) (*events.ScheduleListReply, error) {
	in := &events.SchedulePauseRequest{Sequence: sequence, Entry: entry, Note: note, By: by}
	for _, o := range opts {
		o(in)
	}
	var reply events.ScheduleListReply
	if err := c.request(ctx, events.SeqSchedulesPauseSubject, in, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// UnpauseSchedule unpauses an entry (every entry when entry is ""); a
// tick buffered meanwhile starts. Errors: as for Schedule.
func (c *Client) UnpauseSchedule(ctx context.Context, sequence, entry, by string) (*events.ScheduleListReply, error) {
	var reply events.ScheduleListReply
	if err := c.request(ctx, events.SeqSchedulesUnpauseSubject, &events.SchedulePauseRequest{Sequence: sequence, Entry: entry, By: by}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// TriggerSchedule runs a tick of an entry now, through its overlap policy
// (trigger manual-tick; also while the entry is paused). The reply's one
// tick says whether it started (its RunID), was buffered or skipped.
// Errors: as for Schedule.
func (c *Client) TriggerSchedule(ctx context.Context, sequence, entry, by string) (*events.ScheduleTriggerReply, error) {
	var reply events.ScheduleTriggerReply
	if err := c.request(ctx, events.SeqSchedulesTriggerSubject, &events.ScheduleRef{Sequence: sequence, Entry: entry, By: by}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// BackfillSchedule runs one tick per fire time of an entry in [from, to],
// through its overlap policy; a range of more than
// events.MaxBackfillTicks ticks is refused (ErrBadRequest naming the
// bound). Errors: as for Schedule.
func (c *Client) BackfillSchedule(ctx context.Context, sequence, entry string, from, to time.Time, by string) (*events.ScheduleTriggerReply, error) {
	var reply events.ScheduleTriggerReply
	if err := c.request(ctx, events.SeqSchedulesBackfillSubject, &events.ScheduleBackfillRequest{Sequence: sequence, Entry: entry, From: from, To: to, By: by}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}
