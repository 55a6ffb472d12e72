package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// The schedule tools (docs/mcp.md): list the schedule entries, run a tick
// now, pause and unpause an entry — through the seqworker's
// skillbus.seq.schedules.* endpoints, behind the same permissions as
// `skillbus schedules` (docs/security.md).
type (
	scheduleRefIn struct {
		Sequence string `json:"sequence" jsonschema:"the scheduled sequence's name, as schedule_list shows it"`
		Entry    string `json:"entry,omitempty" jsonschema:"the schedule entry's name; leave out when the sequence has one entry (schedule_pause: every entry)"`
	}

	schedulePauseIn struct {
		Sequence string `json:"sequence" jsonschema:"the scheduled sequence's name"`
		Entry    string `json:"entry,omitempty" jsonschema:"the schedule entry's name; leave out to pause every entry of the sequence"`
		Note     string `json:"note" jsonschema:"why the entry is paused, shown to whoever looks at it"`
		// Overwrite replaces the pause of an entry paused already (its
		// note, by and time); without it that pause stays as it was.
		Overwrite bool `json:"overwrite,omitempty" jsonschema:"replace the note of an entry that is paused already; without it the first pause and its note stay"`
	}

	scheduleView struct {
		Sequence string `json:"sequence"`
		Entry    string `json:"entry"`
		Schedule string `json:"schedule" jsonschema:"cron (6 fields, seconds first, such as \"0 0 9 * * MON-FRI\") or \"@every 1h0m0s\""`
		TimeZone string `json:"timezone,omitempty"`
		Overlap  string `json:"overlap"`
		Jitter   string `json:"jitter,omitempty" jsonschema:"each tick's run starts after a random delay of up to this (a Go duration)"`
		// CatchupWindow and the fields after it say what the entry does
		// on its own: catch up, pause itself, start and stop firing
		// (docs/sequences.md, "Schedule entries").
		CatchupWindow  string   `json:"catchup_window,omitempty" jsonschema:"after a NATS server outage, the ticks it did not fire this far back run first (a Go duration)"`
		PauseOnFailure int      `json:"pause_on_failure,omitempty" jsonschema:"the entry pauses itself after this many failed runs in a row"`
		StartAt        string   `json:"start_at,omitempty" jsonschema:"no tick before this time, RFC 3339 UTC"`
		EndAt          string   `json:"end_at,omitempty" jsonschema:"no tick after this time, RFC 3339 UTC"`
		Next           []string `json:"next,omitempty" jsonschema:"the next fire times, RFC 3339 UTC"`
		Paused         bool     `json:"paused"`
		Note           string   `json:"note,omitempty"`
		PausedBy       string   `json:"paused_by,omitempty"`
		PausedAt       string   `json:"paused_at,omitempty" jsonschema:"RFC 3339 UTC"`
		Current        []string `json:"current,omitempty" jsonschema:"the run ids of the entry's runs not finished yet"`
		Buffered       int      `json:"buffered,omitempty" jsonschema:"ticks waiting for the current run to end (overlap buffer_one or buffer_all)"`
		LastRun        string   `json:"last_run,omitempty"`
		LastStatus     string   `json:"last_status,omitempty"`
		LastAt         string   `json:"last_at,omitempty"`
		// Started and the counts after it are the entry's ticks so far,
		// by what became of them.
		Started             int64 `json:"started"`
		Skipped             int64 `json:"skipped"`
		Dropped             int64 `json:"dropped" jsonschema:"ticks dropped: paused, outside start_at and end_at"`
		Missed              int64 `json:"missed" jsonschema:"ticks missed in an outage and not caught up"`
		ConsecutiveFailures int   `json:"consecutive_failures"`
		// PausedBefore is the pause an entry already had when
		// schedule_pause or schedule_unpause came (pause and unpause
		// answers only).
		PausedBefore *pauseView `json:"paused_before,omitempty" jsonschema:"the pause the entry already had when this pause or unpause came: its note, who paused it and when"`
	}

	pauseView struct {
		Note string `json:"note,omitempty"`
		By   string `json:"by,omitempty"`
		At   string `json:"at,omitempty" jsonschema:"RFC 3339 UTC"`
	}

	scheduleListOut struct {
		Entries []scheduleView `json:"entries"`
	}

	scheduleTickOut struct {
		Ticks []tickView `json:"ticks"`
	}

	tickView struct {
		RunID   string `json:"run_id" jsonschema:"the tick's run id: follow a started one with seq_status"`
		At      string `json:"at"`
		Outcome string `json:"outcome" jsonschema:"started, buffered (it starts when the entry's current run ends), skipped, cancelled (the current run is cancelled first), paused or dropped"`
		Why     string `json:"why,omitempty"`
	}
)

// scheduleTools returns the schedule tools.
func (s *Server) scheduleTools() []toolDef {
	return []toolDef{
		defineTool(s, mcp.Tool{Name: "schedule_list", Title: "List schedule entries",
			Description: "List every schedule entry of every scheduled sequence: its schedule and time zone, its next fire time, its overlap policy, jitter, catch-up window, pause on failure and start and end times, its current runs and buffered ticks, its last run and status, its tick counts, and whether it is paused (with the note, who paused it and when). Use it to see what runs on its own and when.\n\nExample: {}",
		}, true, []string{events.SeqSchedulesListSubject}, s.scheduleList),
		defineTool(s, mcp.Tool{Name: "schedule_trigger", Title: "Run a schedule entry now",
			Description: "Run a tick of a schedule entry now, with the entry's arguments and through its overlap policy: if a run of the entry is still going the tick may be skipped, buffered or cancel it, as the policy says. The answer says what became of the tick and its run id (follow it with seq_status).\n\nExample: {\"sequence\": \"nightly-deps-audit\"}",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
			false, []string{events.SeqSchedulesTriggerSubject}, s.scheduleTrigger),
		defineTool(s, mcp.Tool{Name: "schedule_pause", Title: "Pause a schedule entry",
			Description: "Pause a schedule entry (every entry of the sequence when entry is left out): its ticks do not run, each is recorded, until schedule_unpause. The note says why. An entry paused already keeps its first pause and note (the answer's paused_before says whose) unless overwrite is true. Use it during an incident, or when the user asks to stop a scheduled job for a while.\n\nExample: {\"sequence\": \"team-report\", \"entry\": \"berlin\", \"note\": \"holiday\"}",
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
			false, []string{events.SeqSchedulesPauseSubject}, s.schedulePause),
		defineTool(s, mcp.Tool{Name: "schedule_unpause", Title: "Unpause a schedule entry",
			Description: "Unpause a schedule entry paused by schedule_pause (or by pause_on_failure): its ticks run again.\n\nExample: {\"sequence\": \"team-report\", \"entry\": \"berlin\"}",
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
			false, []string{events.SeqSchedulesUnpauseSubject}, s.scheduleUnpause),
	}
}

func scheduleViews(infos []events.ScheduleInfo) scheduleListOut {
	out := scheduleListOut{Entries: []scheduleView{}}
	for _, e := range infos {
		v := scheduleView{Sequence: e.Sequence, Entry: e.Entry, Schedule: e.Pattern, TimeZone: e.TimeZone, Overlap: e.Overlap,
			Jitter: e.Jitter, CatchupWindow: e.CatchupWindow, PauseOnFailure: e.PauseOnFailure, StartAt: rfc3339(e.StartAt), EndAt: rfc3339(e.EndAt)}
		for _, t := range e.Next {
			v.Next = append(v.Next, rfc3339(t))
		}
		if st := e.State; st != nil {
			v.Paused, v.Note, v.PausedBy, v.PausedAt = st.Paused, st.Note, st.PausedBy, rfc3339(st.PausedAt)
			v.LastRun, v.LastStatus, v.LastAt = st.LastRun, st.LastStatus, rfc3339(st.LastAt)
			v.Started, v.Skipped, v.Dropped, v.Missed, v.ConsecutiveFailures = st.Started, st.Skipped, st.Dropped, st.Missed, st.ConsecutiveFailures
			for _, r := range st.Current {
				v.Current = append(v.Current, r.RunID)
			}
			v.Buffered = len(st.Buffered)
		}
		if p := e.PausedBefore; p != nil {
			v.PausedBefore = &pauseView{Note: p.Note, By: p.By, At: rfc3339(p.At)}
		}
		out.Entries = append(out.Entries, v)
	}
	return out
}

// rfc3339 is t in RFC 3339 UTC, or "" for the zero time (a field left
// out).
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) scheduleList(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (scheduleListOut, string, error) {
	reply, err := s.c.Schedules(ctx, "")
	if err != nil {
		return scheduleListOut{}, "", err
	}
	return scheduleViews(reply.Entries), "", nil
}

func (s *Server) scheduleTrigger(ctx context.Context, req *mcp.CallToolRequest, in scheduleRefIn) (scheduleTickOut, string, error) {
	reply, err := s.c.TriggerSchedule(ctx, in.Sequence, in.Entry, mcpBy(req))
	if err != nil {
		return scheduleTickOut{}, "", err
	}
	out := scheduleTickOut{Ticks: []tickView{}}
	for _, t := range reply.Ticks {
		out.Ticks = append(out.Ticks, tickView{RunID: t.RunID, At: t.At.UTC().Format(time.RFC3339), Outcome: t.Outcome, Why: t.Why})
	}
	return out, "", nil
}

func (s *Server) schedulePause(ctx context.Context, req *mcp.CallToolRequest, in schedulePauseIn) (scheduleListOut, string, error) {
	var opts []client.PauseOption
	if in.Overwrite {
		opts = append(opts, client.WithOverwrite())
	}
	reply, err := s.c.PauseSchedule(ctx, in.Sequence, in.Entry, in.Note, mcpBy(req), opts...)
	if err != nil {
		return scheduleListOut{}, "", err
	}
	return scheduleViews(reply.Entries), "", nil
}

func (s *Server) scheduleUnpause(ctx context.Context, req *mcp.CallToolRequest, in scheduleRefIn) (scheduleListOut, string, error) {
	reply, err := s.c.UnpauseSchedule(ctx, in.Sequence, in.Entry, mcpBy(req))
	if err != nil {
		return scheduleListOut{}, "", err
	}
	return scheduleViews(reply.Entries), "", nil
}

// mcpBy names the MCP client for the records of an operation.
func mcpBy(req *mcp.CallToolRequest) string {
	if ci := req.ClientInfo(); ci != nil && ci.Name != "" {
		return "mcp: " + clip(ci.Name, 100)
	}
	return "mcp"
}
