package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/streamread"
)

// apiInfo is GET /api/info: what the page shows in its header.
func (s *Server) apiInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"version":   version.String(),
		"nats_url":  s.cfg.NATSURL,
		"live":      s.hub.live(),
		"runs_live": s.index.live(),
		"user":      s.cfg.User,
		// The credentials' skillbus role ("" when unknown) and the
		// refusals of the server no request asked for (perms.go).
		"role":        s.access.role,
		"credentials": s.access.credentials,
		"refused":     s.refusals(),
		// What the credentials are known not to allow, up front (perms.go).
		"limits": s.access.limits(),
		// The console's own NATS connection (natsstate.go).
		"nats": s.natsw.state(),
	})
}

// runsPage is the answer of GET /api/runs.
type runsPage struct {
	Runs []events.RunSummary `json:"runs"`
	// Total counts the runs that match every filter (all pages).
	Total int `json:"total"`
	// Counts counts the runs that match the filters other than status, by
	// status; nil when the runs were listed through seq.list.
	Counts map[string]int `json:"counts,omitempty"`
	// Next is the cursor of the next page ("" on the last one).
	Next string `json:"next,omitempty"`
	// First is the position of the page's first run among all that match
	// (0 on the newest page), HasPrev whether newer runs precede the page
	// and Prev the cursor of the page before ("" for the newest page); the
	// three are known only for the live list (else First is 0 and HasPrev
	// false: the browser's Back goes to the page before).
	First   int    `json:"first"`
	HasPrev bool   `json:"has_prev,omitempty"`
	Prev    string `json:"prev,omitempty"`
	// Statuses are the statuses a filter offers, in order: the known ones
	// (runStatuses), then any other that a run has (a status of a newer
	// seqworker), so a new status shows without a change of the console.
	Statuses []string `json:"statuses"`
	// Live is true when the list comes from the RUNS watch (and so is
	// kept up to date by the stream's summaries).
	Live bool `json:"live"`
	// NotLive says why the RUNS watch is not running (the server's
	// refusal, with its subject and the credentials), when it is known.
	NotLive string `json:"not_live,omitempty"`
	// Note says what is not as asked (the trigger filter applied to one
	// page of seq.list only).
	Note string `json:"note,omitempty"`
}

// runStatuses are the run statuses the console knows, in the order the
// runs page shows them (events.Status*).
var runStatuses = []string{events.StatusQueued, events.StatusRunning, events.StatusInterrupted, events.StatusSucceeded, events.StatusFailed, events.StatusCancelled}

// Run triggers a filter accepts (events.Trigger*).
var triggers = []string{events.TriggerManual, events.TriggerBoot, events.TriggerSchedule, events.TriggerManualTick, events.TriggerBackfill, events.TriggerSeqCall}

// runFilter is GET /api/runs' query: status, sequence, trigger, since and
// until (RFC 3339 times, or for since a duration back from now: 90m, 24h),
// q (a search: see matches), limit (default 50, at most 1000) and before
// (a page cursor).
type runFilter struct {
	req          events.SeqListRequest
	trigger      string
	until        time.Time
	words        []searchWord // q split at white space
	limit        int
	beforeCursor string
}

// maxSearch bounds the length of a search (q).
const maxSearch = 256

// matches reports whether r matches every word of the search: a word
// matches a run whose id holds it with the same case (run ids are
// case-sensitive: two ids may differ only in the case of a letter), whose
// sequence, worker or error holds it in any case, or whose status or
// trigger it is (docs/console.md, Runs).
func (f *runFilter) matches(r events.RunSummary) bool {
	for _, sw := range f.words {
		word, w := sw.typed, sw.lower
		trig := r.Trigger
		if trig == "" || trig == events.TriggerCall {
			trig = events.TriggerManual
		}
		ok := strings.Contains(r.RunID, word) || strings.Contains(strings.ToLower(r.Sequence), w) ||
			strings.Contains(strings.ToLower(r.Worker), w) || strings.Contains(strings.ToLower(r.Error), w) ||
			r.Status == w || trig == w || strings.ReplaceAll(trig, "_", " ") == w
		if !ok {
			return false
		}
	}
	return true
}

// searchWord is a word of a search as typed (matched against run ids,
// which are case-sensitive) and in lower case (matched against the rest).
type searchWord struct{ typed, lower string }

// searchWords splits a search at white space.
func searchWords(q string) []searchWord {
	var ws []searchWord
	for _, w := range strings.Fields(q) {
		ws = append(ws, searchWord{typed: w, lower: strings.ToLower(w)})
	}
	return ws
}

func parseRunFilter(r *http.Request) (*runFilter, error) {
	q := r.URL.Query()
	f := &runFilter{limit: events.DefaultListLimit}
	f.req.Status, f.req.Sequence, f.trigger, f.beforeCursor = q.Get("status"), q.Get("sequence"), q.Get("trigger"), q.Get("before")
	if f.trigger != "" && !slices.Contains(triggers, f.trigger) {
		return nil, fmt.Errorf("trigger %q; want manual, boot, schedule, manual-tick, backfill or seq_call", f.trigger)
	}
	if v := q.Get("q"); v != "" {
		if len(v) > maxSearch {
			return nil, fmt.Errorf("q: the search is %d bytes; at most %d", len(v), maxSearch)
		}
		f.words = searchWords(v)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > events.MaxListLimit {
			return nil, fmt.Errorf("limit %q; want 1 to %d", v, events.MaxListLimit)
		}
		f.limit = n
	}
	if v := q.Get("since"); v != "" {
		t, err := parseWhen(v)
		if err != nil {
			return nil, fmt.Errorf("since: %v", err)
		}
		f.req.Since = t
	}
	if v := q.Get("until"); v != "" {
		t, err := parseWhen(v)
		if err != nil {
			return nil, fmt.Errorf("until: %v", err)
		}
		f.until = t
	}
	// The seq.list request's own checks (status, lengths), so a bad filter
	// reads as `skillbus runs ls` says it.
	check := f.req
	check.Limit, check.Before = f.limit, f.beforeCursor
	if _, err := events.Encode(&check); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), events.ErrBadMessage.Error()+": "))
	}
	return f, nil
}

// parseWhen reads an RFC 3339 time, or a duration back from now.
func parseWhen(v string) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor a duration (90m, 24h)", v)
	}
	return t, nil
}

func (f *runFilter) keep(r events.RunSummary, withStatus bool) bool {
	return (!withStatus || f.req.Status == "" || r.Status == f.req.Status) &&
		(f.req.Sequence == "" || r.Sequence == f.req.Sequence) &&
		(f.trigger == "" || r.Trigger == f.trigger || f.trigger == events.TriggerManual && (r.Trigger == "" || r.Trigger == events.TriggerCall)) &&
		(f.req.Since.IsZero() || !r.CreatedAt.Before(f.req.Since)) &&
		(f.until.IsZero() || !r.CreatedAt.After(f.until)) &&
		f.matches(r)
}

// statusesOf returns runStatuses and then, sorted, any other status of
// runs.
func statusesOf(runs []events.RunSummary) []string {
	out := slices.Clone(runStatuses)
	var more []string
	for _, r := range runs {
		if r.Status != "" && !slices.Contains(out, r.Status) && !slices.Contains(more, r.Status) {
			more = append(more, r.Status)
		}
	}
	slices.Sort(more)
	return append(out, more...)
}

// cursor is a run's page cursor, as seq.list writes it: its created time
// (fixed width, so cursors compare as times) and its id.
func cursor(r events.RunSummary) string {
	return fmt.Sprintf("%s|%s", r.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z"), r.RunID)
}

// apiRuns is GET /api/runs: runs newest first, filtered, with counts by
// status.
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	f, err := parseRunFilter(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "400", err.Error())
		return
	}
	all, live := s.index.snapshot()
	if !live {
		s.runsThroughList(w, r, f)
		return
	}
	page := runsPage{Live: true, Counts: map[string]int{}, Statuses: statusesOf(all)}
	for _, st := range page.Statuses {
		page.Counts[st] = 0
	}
	keep := all[:0]
	for _, run := range all {
		if !f.keep(run, false) {
			continue
		}
		page.Counts[run.Status]++
		if f.keep(run, true) {
			keep = append(keep, run)
		}
	}
	slices.SortFunc(keep, func(a, b events.RunSummary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.RunID, a.RunID)
	})
	page.Total = len(keep)
	start := 0
	if f.beforeCursor != "" {
		start = len(keep)
		for i, run := range keep {
			if cursor(run) < f.beforeCursor {
				start = i
				break
			}
		}
	}
	end := min(start+f.limit, len(keep))
	page.Runs = slices.Clone(keep[start:end])
	if end < len(keep) && end > start {
		page.Next = cursor(keep[end-1])
	}
	page.First, page.HasPrev = start, start > 0
	if p := start - f.limit; p > 0 {
		page.Prev = cursor(keep[p-1])
	}
	writeJSON(w, http.StatusOK, page)
}

// runsThroughList lists through seq.list (the RUNS watch is not running).
func (s *Server) runsThroughList(w http.ResponseWriter, r *http.Request, f *runFilter) {
	req := f.req
	req.Limit, req.Before = f.limit, f.beforeCursor
	narrowed := f.trigger != "" || !f.until.IsZero() || len(f.words) > 0
	if narrowed {
		req.Limit = events.MaxListLimit
	}
	reply, err := s.runs.List(r.Context(), req)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	page := runsPage{Runs: []events.RunSummary{}, Total: reply.Total, Next: reply.Next, NotLive: s.index.why(), Statuses: statusesOf(reply.Runs)}
	for _, run := range reply.Runs {
		if f.keep(run, true) && len(page.Runs) < f.limit {
			page.Runs = append(page.Runs, run)
		}
	}
	if narrowed {
		page.Total, page.Next = len(page.Runs), ""
		page.Note = fmt.Sprintf("the live run list is not available, so the search and the trigger and until filters were applied to the newest %d runs of seq.list only", events.MaxListLimit)
	}
	writeJSON(w, http.StatusOK, page)
}

// slotView is one slot of a run as the page shows it: the value, or for a
// value larger than maxSlotView its start.
type slotView struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Preview   string          `json:"preview,omitempty"`
	Size      int             `json:"size"`
	Truncated bool            `json:"truncated,omitempty"`
	// Stored says where a large value lives (RUN_SLOTS object).
	Stored string `json:"stored,omitempty"`
}

// maxSlotView bounds a slot value sent to the page whole.
const maxSlotView = 256 << 10

// runView is the answer of GET /api/runs/{id}.
type runView struct {
	State *events.RunState `json:"state"`
	// Sequence is the sequence's AST (pkg/seq canonical JSON): the run's
	// own inline definition, else the stored sequence of that name.
	Sequence json.RawMessage `json:"sequence,omitempty"`
	// SequenceNote says why Sequence is missing or may differ from what ran.
	SequenceNote string              `json:"sequence_note,omitempty"`
	Slots        map[string]slotView `json:"slots"`
	SlotsError   string              `json:"slots_error,omitempty"`
	// Timeline is the run's events in the EVENTS stream, oldest first
	// (their results left out); TimelineNote says when they cannot be read.
	Timeline     []events.RunEvent `json:"timeline,omitempty"`
	TimelineNote string            `json:"timeline_note,omitempty"`
}

// apiRun is GET /api/runs/{id}[?part=state]: a run's state (seq.status),
// its sequence, its slots (large ones read from RUN_SLOTS) and its
// timeline; part=state leaves out the sequence and the timeline.
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx := r.Context()
	st, err := s.runs.Status(ctx, id)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	v := runView{State: st, Slots: map[string]slotView{}}
	sctx, sdone := s.access.watch.Context(ctx, natsconn.JetStreamAPI("OBJ_"+events.BucketRunSlots)...)
	slots, err := s.runs.Slots(sctx, st)
	if err = natsconn.RefusedCause(sctx, err); err != nil {
		v.SlotsError = err.Error()
		slots = st.Slots
	}
	sdone()
	for k, val := range slots {
		sv := slotView{Size: len(val)}
		if ref, ok := st.SlotRefs[k]; ok {
			sv.Stored = events.BucketRunSlots + "/" + ref.Object
		}
		if len(val) > maxSlotView {
			sv.Preview, sv.Truncated = string(val[:maxSlotView]), true
		} else {
			sv.Value = val
		}
		v.Slots[k] = sv
	}
	if r.URL.Query().Get("part") != "state" {
		v.Sequence, v.SequenceNote = s.runSequence(ctx, st)
		v.Timeline, v.TimelineNote = s.timeline(ctx, id)
	}
	writeJSON(w, http.StatusOK, v)
}

// runSequence returns the AST a run ran: its inline definition, or the
// stored sequence of its name (which may have changed since: the note says
// so when the groups differ from the run's result).
func (s *Server) runSequence(ctx context.Context, st *events.RunState) (json.RawMessage, string) {
	if len(st.Inline) > 0 {
		return st.Inline, ""
	}
	if st.Sequence == "" {
		return nil, "the run names no sequence"
	}
	raw, err := s.seqGet(ctx, st.Sequence)
	if err = natsconn.RefusedCause(ctx, err); err != nil {
		return nil, fmt.Sprintf("the sequence %q cannot be read from the registry (%v); the run is drawn from its result", st.Sequence, err)
	}
	var res seq.Result
	sq, err := seq.Decode(raw)
	if err != nil {
		return nil, fmt.Sprintf("the stored sequence %q cannot be read: %v", st.Sequence, err)
	}
	if len(st.Result) > 0 && json.Unmarshal(st.Result, &res) == nil && len(res.Groups) > 0 {
		same := len(res.Groups) == len(sq.Groups)
		for i := 0; same && i < len(res.Groups); i++ {
			same = res.Groups[i].Name == sq.Groups[i].Name && len(res.Groups[i].Calls) == len(sq.Groups[i].Tools)
		}
		if !same {
			return nil, fmt.Sprintf("the sequence %q was changed since this run; the run is drawn from its result", st.Sequence)
		}
	}
	return raw, ""
}

// maxTimeline bounds the events read for one run.
const maxTimeline = 500

// timeline reads a run's events from the EVENTS stream (events.run.<id>.>,
// by STREAM.MSG.GET from the first sequence on: no consumer, see
// pkg/streamread), oldest first, without their results.
func (s *Server) timeline(ctx context.Context, runID string) ([]events.RunEvent, string) {
	subj, err := events.RunEventSubject(runID, events.RunStarted)
	if err != nil {
		return nil, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ctx, done := s.access.watch.Context(ctx, natsconn.JetStreamAPI(events.StreamEvents)...)
	defer done()
	filter := strings.TrimSuffix(subj, events.RunStarted) + ">"
	var out []events.RunEvent
	for seq := uint64(1); len(out) < maxTimeline; {
		m, err := streamread.Next(ctx, s.nc, events.StreamEvents, filter, seq, time.Time{})
		if err != nil {
			return out, "the run's events cannot be read from the EVENTS stream: " + natsconn.RefusedCause(ctx, err).Error()
		}
		if m == nil {
			break
		}
		seq = m.Sequence + 1
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) == nil {
			ev.Result = nil
			out = append(out, ev)
		}
	}
	return out, ""
}

// cancelRequest is the body of POST /api/runs/{id}/cancel.
type cancelRequest struct {
	Reason string `json:"reason"`
}

// apiCancel is POST /api/runs/{id}/cancel: seq.cancel, as `skillbus runs
// cancel` sends it (by = Config.User). The answer is the run's state
// after the request; a running run ends cancelled shortly after (the
// stream shows it).
func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	var req cancelRequest
	if !readJSON(w, r, &req) {
		return
	}
	st, err := s.runs.Cancel(r.Context(), r.PathValue("id"), s.cfg.User, req.Reason)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// apiRerun is POST /api/runs/{id}/rerun: seq.rerun, as `skillbus runs
// rerun`; the answer is {"run_id": NEW}.
func (s *Server) apiRerun(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if !readJSON(w, r, &req) {
		return
	}
	id, err := s.runs.Rerun(r.Context(), r.PathValue("id"), "")
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"run_id": id})
}

// apiRetry is POST /api/runs/{id}/retry: seq.retry, as `skillbus runs
// retry` — a new run that continues a failed or cancelled run from its
// first group that did not finish (docs/runs.md, Retry), or with the
// body's "from" (a group's name or 1-based number, as `runs retry
// --from`) re-runs a failed, cancelled or succeeded run from that group
// (docs/runs.md, "Retry from a group"); the answer is {"run_id": NEW}. A
// run that cannot be retried, or a group it never reached, answers 409; a
// from that names no group of the run 400 (the seqworker's words: the
// closest name, the groups allowed).
func (s *Server) apiRetry(w http.ResponseWriter, r *http.Request) {
	var req struct {
		From string `json:"from"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	var opts []client.RetryOption
	if req.From != "" {
		opts = append(opts, client.WithRetryFrom(req.From))
	}
	id, err := s.runs.Retry(r.Context(), r.PathValue("id"), "", false, opts...)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"run_id": id})
}
