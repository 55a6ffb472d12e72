package events

import (
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Headers that the seqworker puts on every RUNS entry it writes: the run's
// summary, so that listing runs reads headers only (a consumer with
// HeadersOnly) instead of every state with its slots and result.
const (
	RunHeaderStatus   = "Skillbus-Run-Status"
	RunHeaderSequence = "Skillbus-Run-Sequence"
	RunHeaderTrigger  = "Skillbus-Run-Trigger"
	RunHeaderWorker   = "Skillbus-Run-Worker"
	// RunHeaderGroups is "<finished>/<groups>".
	RunHeaderGroups  = "Skillbus-Run-Groups"
	RunHeaderAttempt = "Skillbus-Run-Attempt"
	// RunHeaderCreated, RunHeaderUpdated and RunHeaderFinished are RFC
	// 3339 times with nanoseconds.
	RunHeaderCreated  = "Skillbus-Run-Created"
	RunHeaderUpdated  = "Skillbus-Run-Updated"
	RunHeaderFinished = "Skillbus-Run-Finished"
	// RunHeaderError is the first line of RunState.Error, cut at 200 bytes.
	RunHeaderError = "Skillbus-Run-Error"
	// RunHeaderWaiting is RunSummary.Waiting of a waiting run.
	RunHeaderWaiting = "Skillbus-Run-Waiting"
)

// Summary returns the summary of st that RunSummary and the RUNS headers
// hold.
func (m *RunState) Summary() RunSummary {
	st := *m
	st.Normalize()
	return RunSummary{
		RunID: st.RunID, Sequence: st.Sequence, Status: st.Status, Trigger: st.Trigger, Worker: st.Worker,
		FinishedGroups: st.FinishedGroups, Groups: st.Groups, Attempt: st.Attempt, Error: headerText(st.Error, 200),
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, FinishedAt: st.FinishedAt,
		Waiting: st.Wait.summary(st.Status),
	}
}

// SetHeader writes s into h as the RunHeader* headers.
func (s RunSummary) SetHeader(h nats.Header) {
	set := func(k, v string) {
		if v != "" {
			h.Set(k, v)
		}
	}
	tm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	set(RunHeaderStatus, s.Status)
	set(RunHeaderSequence, headerText(s.Sequence, MaxNameLength))
	set(RunHeaderTrigger, s.Trigger)
	set(RunHeaderWorker, headerText(s.Worker, MaxNameLength))
	set(RunHeaderGroups, strconv.Itoa(s.FinishedGroups)+"/"+strconv.Itoa(s.Groups))
	if s.Attempt > 0 {
		set(RunHeaderAttempt, strconv.Itoa(s.Attempt))
	}
	set(RunHeaderCreated, tm(s.CreatedAt))
	set(RunHeaderUpdated, tm(s.UpdatedAt))
	set(RunHeaderFinished, tm(s.FinishedAt))
	set(RunHeaderError, headerText(s.Error, 200))
	set(RunHeaderWaiting, headerText(s.Waiting, 200))
}

// SummaryFromHeader reads the summary of run runID from the RunHeader*
// headers of a RUNS entry; ok is false when the entry has none (written by
// an older worker or by hand: read the state itself then).
func SummaryFromHeader(runID string, h nats.Header) (s RunSummary, ok bool) {
	status := h.Get(RunHeaderStatus)
	if status == "" {
		return s, false
	}
	tm := func(k string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, h.Get(k))
		return t
	}
	s = RunSummary{RunID: runID, Status: status, Sequence: h.Get(RunHeaderSequence), Trigger: h.Get(RunHeaderTrigger),
		Worker: h.Get(RunHeaderWorker), Error: h.Get(RunHeaderError), Waiting: waitingText(h.Get(RunHeaderWaiting)),
		CreatedAt: tm(RunHeaderCreated), UpdatedAt: tm(RunHeaderUpdated), FinishedAt: tm(RunHeaderFinished)}
	if f, g, ok := strings.Cut(h.Get(RunHeaderGroups), "/"); ok {
		s.FinishedGroups, _ = strconv.Atoi(f)
		s.Groups, _ = strconv.Atoi(g)
	}
	s.Attempt, _ = strconv.Atoi(h.Get(RunHeaderAttempt))
	if s.Status == StatusPending {
		s.Status = StatusQueued
	}
	return s, true
}

// headerText makes s safe as a header value: its first line, cut at n
// bytes (on a UTF-8 boundary).
func headerText(s string, n int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
