package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// The Schedules page (docs/console.md, "Schedules"; the rules are
// docs/runs.md, "Scheduled runs"): the entries of every scheduled
// sequence, one entry's next fire times and recent ticks, and pause,
// unpause, trigger and backfill — through the seqworker's
// skillbus.seq.schedules.* endpoints (pkg/client), as `skillbus
// schedules` calls them, so the page shows the CLI's errors.

// scheduleList is the answer of GET /api/schedules: the seqworker's list
// and the bound of one backfill.
type scheduleList struct {
	events.ScheduleListReply
	// MaxBackfill is events.MaxBackfillTicks: a backfill over more ticks
	// is refused.
	MaxBackfill int `json:"max_backfill"`
}

// scheduleDetail is the answer of GET /api/schedules/{seq}/{entry}: the
// entry (seq.schedules.show: 10 next fire times, its state and recent
// ticks), the status of each run its ticks started that the console's
// runs index holds (run id → status), and the backfill bound.
type scheduleDetail struct {
	events.ScheduleInfo
	RunStatus   map[string]string `json:"run_status"`
	MaxBackfill int               `json:"max_backfill"`
}

// scheduleRef reads {seq} and {entry} of a schedule route, normalized as
// the CLI normalizes NAME/ENTRY; a bad one is answered 400.
func scheduleRef(w http.ResponseWriter, r *http.Request) (name, entry string, ok bool) {
	name = seq.NormalizeName(r.PathValue("seq"))
	entry = r.PathValue("entry")
	if err := seq.CheckName(name); err != nil {
		writeErr(w, http.StatusBadRequest, "", err.Error())
		return "", "", false
	}
	if err := events.CheckEntryName(entry); err != nil {
		writeErr(w, http.StatusBadRequest, "", "entry "+strconv.Quote(entry)+": "+seq.EntryNameRule)
		return "", "", false
	}
	return name, entry, true
}

// apiSchedules is GET /api/schedules[?sequence=NAME]: seq.schedules.list,
// as `skillbus schedules` lists them.
func (s *Server) apiSchedules(w http.ResponseWriter, r *http.Request) {
	reply, err := s.runs.Schedules(r.Context(), seq.NormalizeName(r.URL.Query().Get("sequence")))
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	if reply.Entries == nil {
		reply.Entries = []events.ScheduleInfo{}
	}
	writeJSON(w, http.StatusOK, scheduleList{ScheduleListReply: *reply, MaxBackfill: events.MaxBackfillTicks})
}

// apiSchedule is GET /api/schedules/{seq}/{entry}: seq.schedules.show, as
// `skillbus schedules show NAME/ENTRY`.
func (s *Server) apiSchedule(w http.ResponseWriter, r *http.Request) {
	name, entry, ok := scheduleRef(w, r)
	if !ok {
		return
	}
	info, err := s.runs.Schedule(r.Context(), name, entry)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	d := scheduleDetail{ScheduleInfo: *info, RunStatus: map[string]string{}, MaxBackfill: events.MaxBackfillTicks}
	if st := info.State; st != nil {
		want := map[string]bool{st.LastRun: true}
		for _, t := range st.Recent {
			want[t.RunID] = true
		}
		for _, c := range st.Current {
			want[c.RunID] = true
		}
		runs, _ := s.index.snapshot()
		for _, run := range runs {
			if want[run.RunID] {
				d.RunStatus[run.RunID] = string(run.Status)
			}
		}
	}
	writeJSON(w, http.StatusOK, d)
}

// pauseForm is the body of POST /api/schedules/{seq}/{entry}/pause: why
// (required, shown with the entry, at most events.MaxReasonLength bytes).
type pauseForm struct {
	Note string `json:"note"`
}

// apiSchedulePause is POST …/pause ({"note"}) and …/unpause ({}):
// seq.schedules.pause or unpause (by = Config.User). A pause without a
// note is answered 400 under the field "note", as `schedules pause`
// refuses it without --note. The answer is the entry as show describes it.
func (s *Server) apiSchedulePause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var form pauseForm
		if !readJSON(w, r, &form) {
			return
		}
		name, entry, ok := scheduleRef(w, r)
		if !ok {
			return
		}
		ctx := r.Context()
		var err error
		if pause {
			if strings.TrimSpace(form.Note) == "" {
				writeJSON(w, http.StatusBadRequest, apiError{Error: "the entry was not paused: say why in the note (shown to whoever looks at the entry)", Code: "400",
					Fields: map[string]string{"note": "a note is required: say why the entry is paused"}})
				return
			}
			_, err = s.runs.PauseSchedule(ctx, name, entry, form.Note, s.cfg.User)
		} else {
			_, err = s.runs.UnpauseSchedule(ctx, name, entry, s.cfg.User)
		}
		if err != nil {
			var te *toolcall.Error
			if pause && errors.As(err, &te) && te.Code == "400" && strings.Contains(te.Description, "note") {
				writeJSON(w, http.StatusBadRequest, apiError{Error: te.Description, Code: "400", Fields: map[string]string{"note": te.Description}})
				return
			}
			writeFail(w, r, seqErr(err))
			return
		}
		s.apiSchedule(w, r)
	}
}

// apiScheduleTrigger is POST …/trigger ({}): seq.schedules.trigger (by =
// Config.User), a tick now through the entry's overlap policy, marked
// trigger manual-tick. The answer is what became of the tick
// (events.ScheduleTriggerReply).
func (s *Server) apiScheduleTrigger(w http.ResponseWriter, r *http.Request) {
	var form struct{}
	if !readJSON(w, r, &form) {
		return
	}
	name, entry, ok := scheduleRef(w, r)
	if !ok {
		return
	}
	reply, err := s.runs.TriggerSchedule(r.Context(), name, entry, s.cfg.User)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// backfillForm is the body of POST …/backfill: the range's first and last
// tick times, RFC 3339 (both included).
type backfillForm struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// apiScheduleBackfill is POST …/backfill ({"from","to"}):
// seq.schedules.backfill (by = Config.User), one tick per fire time in
// the range through the overlap policy. A time that does not parse, or a
// "to" not after "from", is answered 400 under its field; so is the
// seqworker's refusal of a range over events.MaxBackfillTicks ticks
// (under "to", with its words). The answer is what became of each tick.
func (s *Server) apiScheduleBackfill(w http.ResponseWriter, r *http.Request) {
	var form backfillForm
	if !readJSON(w, r, &form) {
		return
	}
	name, entry, ok := scheduleRef(w, r)
	if !ok {
		return
	}
	fields := map[string]string{}
	from, err1 := time.Parse(time.RFC3339, strings.TrimSpace(form.From))
	to, err2 := time.Parse(time.RFC3339, strings.TrimSpace(form.To))
	if err1 != nil {
		fields["from"] = "want an RFC 3339 time such as 2026-11-30T00:00:00Z, not " + strconv.Quote(form.From)
	}
	if err2 != nil {
		fields["to"] = "want an RFC 3339 time such as 2026-11-30T12:00:00Z, not " + strconv.Quote(form.To)
	}
	if len(fields) == 0 && !to.After(from) {
		fields["to"] = "the end " + to.Format(time.RFC3339) + " is not after the start " + from.Format(time.RFC3339)
	}
	if len(fields) > 0 {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "nothing was backfilled: the range is not right", Code: "400", Fields: fields})
		return
	}
	reply, err := s.runs.BackfillSchedule(r.Context(), name, entry, from, to, s.cfg.User)
	if err != nil {
		var te *toolcall.Error
		if errors.As(err, &te) && te.Code == "400" {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "nothing was backfilled: " + te.Description, Code: "400", Fields: map[string]string{"to": te.Description}})
			return
		}
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// scheduleEntries returns the seqworker's description of the entries of
// the sequence name ("" = every scheduled sequence), keyed by sequence,
// for the Sequences pages; nil and why not when the console may not list
// them or no seqworker answers within 3 s (the pages then show the
// entries of the stored sequence without their next fire times).
func (s *Server) scheduleEntries(ctx context.Context, name string) (map[string][]events.ScheduleInfo, string) {
	if !s.access.mayPublish(events.SeqSchedulesListSubject) {
		return nil, "these credentials may not list schedule entries (" + events.SeqSchedulesListSubject + ")"
	}
	// A refusal of the subject ends the request at once (perms.go), not
	// the page's whole request.
	ctx, done := s.access.watch.Context(ctx, events.SeqSchedulesListSubject)
	defer done()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	reply, err := s.runs.Schedules(ctx, name)
	err = natsconn.RefusedCause(ctx, err)
	if err != nil {
		return nil, errtext.Error(seqErr(err))
	}
	out := map[string][]events.ScheduleInfo{}
	for _, e := range reply.Entries {
		out[e.Sequence] = append(out[e.Sequence], e)
	}
	return out, ""
}
