package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// seqView is one sequence on the sequences page: the registry's summary
// plus when its schedule fires next.
type seqView struct {
	events.SequenceSummary
	TimeZone string `json:"timezone,omitempty"`
	// NextTick is the next time the schedule fires (cron schedules, and
	// @every schedules once a tick is known); Every is an @every
	// schedule's interval (Go duration text).
	NextTick *time.Time `json:"next_tick,omitempty"`
	Every    string     `json:"every,omitempty"`
	// ScheduleNote says why NextTick is unknown.
	ScheduleNote string `json:"schedule_note,omitempty"`
	// Entries are the sequence's schedule entries as the seqworker
	// describes them (seq.schedules.list: pattern, zone, overlap, the next
	// fire time, paused or not), in either form of `schedule`; on a
	// sequence's page, the stored sequence's entries without Next and
	// State when the seqworker did not answer (EntriesNote says why).
	Entries     []events.ScheduleInfo `json:"entries,omitempty"`
	EntriesNote string                `json:"entries_note,omitempty"`
}

// apiSeqs is GET /api/seqs: seq.list (as `skillbus seqs`), with the next
// fire time of each schedule.
func (s *Server) apiSeqs(w http.ResponseWriter, r *http.Request) {
	list, err := s.seqList(r.Context())
	if err != nil {
		writeFail(w, r, err)
		return
	}
	out := make([]seqView, 0, len(list.Sequences))
	var entries map[string][]events.ScheduleInfo
	var entriesNote string
	for _, sum := range list.Sequences {
		if sum.Schedule != "" {
			entries, entriesNote = s.scheduleEntries(r.Context(), "")
			break
		}
	}
	for _, sum := range list.Sequences {
		v := seqView{SequenceSummary: sum}
		if sum.Schedule != "" {
			v.Entries = entries[sum.Name]
			if v.Entries == nil {
				v.EntriesNote = entriesNote
			}
		}
		// The list form's summary ("berlin: 0 0 9 * * MON-FRI
		// Europe/Berlin; ops: @every 6h0m0s") has no one next tick: its
		// entries have theirs.
		if sum.Schedule != "" && !strings.Contains(sum.Schedule, ": ") {
			tz := ""
			if raw, err := s.seqGet(r.Context(), sum.Name); err == nil {
				var sq struct {
					TimeZone string `json:"timezone"`
				}
				_ = json.Unmarshal(raw, &sq)
				tz = sq.TimeZone
			}
			s.nextTick(&v, tz)
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sequences": out})
}

// nextTick fills v's schedule fields. An @every schedule's ticks count
// from when the server stored it; the latest tick the console knows (the
// newest scheduled run) anchors them.
func (s *Server) nextTick(v *seqView, tz string) {
	v.TimeZone = tz
	now := time.Now()
	next, every, err := seq.NextTick(v.Schedule, tz, now)
	switch {
	case err != nil:
		v.ScheduleNote = err.Error()
	case every == 0:
		v.NextTick = &next
	default:
		v.Every = every.String()
		var last time.Time
		runs, _ := s.index.snapshot()
		for _, run := range runs {
			if run.Sequence == v.Name && run.Trigger == events.TriggerSchedule && run.CreatedAt.After(last) {
				last = run.CreatedAt
			}
		}
		if last.IsZero() {
			v.ScheduleNote = fmt.Sprintf("every %s, counted from when the NATS server stored the schedule; the next time is known after the first tick", every)
			return
		}
		n := last.Truncate(time.Second).Add(every)
		if n.Before(now) {
			n = n.Add(every * (now.Sub(n)/every + 1))
		}
		v.NextTick = &n
	}
}

// seqDetail is the answer of GET /api/seqs/{name}.
type seqDetail struct {
	seqView
	// Sequence is the stored AST (canonical JSON, as `skillbus seqs show
	// NAME --json` prints it).
	Sequence json.RawMessage `json:"sequence"`
	// ScheduleState is the last schedule event of the sequence (set, or
	// refused with the server's reason), when EVENTS still holds one.
	ScheduleState *events.ScheduleEvent `json:"schedule_state,omitempty"`
}

// apiSeq is GET /api/seqs/{name}: one sequence (seq.get) with its summary.
func (s *Server) apiSeq(w http.ResponseWriter, r *http.Request) {
	name := seq.NormalizeName(r.PathValue("name")) // as the CLI: a decomposed é is the composed one (docs/sequences.md, Names)
	ctx := r.Context()
	raw, err := s.seqGet(ctx, name)
	if err != nil {
		writeFail(w, r, err)
		return
	}
	sq, err := seq.Decode(raw)
	if err != nil {
		writeErr(w, http.StatusBadGateway, "", fmt.Sprintf("the stored sequence %q cannot be read: %v", name, err))
		return
	}
	d := seqDetail{Sequence: raw}
	d.Name, d.Description, d.Boot, d.Schedule = sq.Name, sq.Description, sq.Boot, sq.Schedule
	d.Signature = map[string]string{}
	for k, t := range sq.Signature {
		d.Signature[k] = string(t)
	}
	for _, g := range sq.Groups {
		d.Groups = append(d.Groups, g.Name)
	}
	if list, err := s.seqList(ctx); err == nil {
		for _, sum := range list.Sequences {
			if sum.Name == sq.Name {
				d.Source = sum.Source
			}
		}
	}
	if sq.Schedule != "" {
		s.nextTick(&d.seqView, sq.TimeZone)
		d.ScheduleState = s.scheduleState(ctx, sq.Name)
	}
	if es := sq.ScheduleEntries(); len(es) > 0 {
		d.Entries, d.EntriesNote = s.seqEntries(ctx, sq.Name, es)
	}
	writeJSON(w, http.StatusOK, d)
}

// seqEntries describes the stored entries es of the sequence name: the
// seqworker's description of each (next fire time, state) when it
// answers, else the entry as stored, with why not.
func (s *Server) seqEntries(ctx context.Context, name string, es []seq.ScheduleEntry) ([]events.ScheduleInfo, string) {
	known, note := s.scheduleEntries(ctx, name)
	out := make([]events.ScheduleInfo, 0, len(es))
	for _, e := range es {
		info := events.ScheduleInfo{Sequence: name, Entry: e.Name, Pattern: e.Pattern(), TimeZone: e.TimeZone, Overlap: string(e.Overlap), Args: e.ArgsJSON()}
		for _, k := range known[name] {
			if k.Entry == e.Name {
				info = k
			}
		}
		out = append(out, info)
	}
	return out, note
}

// scheduleState returns the last schedule event of a sequence in EVENTS.
func (s *Server) scheduleState(ctx context.Context, name string) *events.ScheduleEvent {
	subj, err := events.ScheduleEventSubject(name)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	stream, err := s.js.Stream(ctx, events.StreamEvents)
	if err != nil {
		return nil
	}
	m, err := stream.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		return nil
	}
	var ev events.ScheduleEvent
	if events.Decode(m.Data, &ev) != nil {
		return nil
	}
	return &ev
}

// runForm is the body of POST /api/seqs/{name}/run: each run argument as
// the text typed in its field, read as `--arg KEY=TEXT` reads it.
type runForm struct {
	// Args are the run arguments: as text, read as --arg reads it (what
	// the page's form sends), or as a JSON value of the argument's type
	// (what a program sends: 5, true, ["a"]).
	Args formValues `json:"args"`
}

// formValues are a run form's arguments, each key once: a key given twice
// is refused, as --args-file refuses it (runargs.DecodeObject), instead of
// JSON's silent "the last one wins".
type formValues map[string]json.RawMessage

// UnmarshalJSON reads the object with runargs.DecodeObject.
func (f *formValues) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*f = nil
		return nil
	}
	m, err := runargs.DecodeObject(b)
	if err != nil {
		return fmt.Errorf("args: %w", err)
	}
	*f = m
	return nil
}

// apiSeqRun is POST /api/seqs/{name}/run: the form's values are checked
// by the signature's types with the rules of --arg (internal/runargs, the
// CLI's code), each problem reported on its field; then seq.run starts the
// run (pkg/client, as `skillbus run NAME --detach`). The answer is
// {"run_id"}, or 400 with "fields" (key → problem).
func (s *Server) apiSeqRun(w http.ResponseWriter, r *http.Request) {
	var form runForm
	if !readJSON(w, r, &form) {
		return
	}
	name := seq.NormalizeName(r.PathValue("name")) // as the CLI: a decomposed é is the composed one (docs/sequences.md, Names)
	ctx := r.Context()
	raw, err := s.seqGet(ctx, name)
	if err != nil {
		writeFail(w, r, err)
		return
	}
	sq, err := seq.Decode(raw)
	if err != nil {
		writeErr(w, http.StatusBadGateway, "", fmt.Sprintf("the stored sequence %q cannot be read: %v", name, err))
		return
	}
	args, fields := formArgs(sq.Signature, form.Args)
	if len(fields) > 0 {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		writeJSON(w, http.StatusBadRequest, apiError{
			Error:  fmt.Sprintf("the run was not started: %s %s not right (the sequence takes %s)", strings.Join(keys, ", "), plural(len(keys), "is", "are"), runargs.SignatureText(sq.Signature)),
			Fields: fields,
		})
		return
	}
	b, _ := json.Marshal(args)
	id, err := s.runs.Start(ctx, events.SeqRunRequest{Sequence: sq.Name, Args: b})
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"run_id": id})
}

// formArgs reads a run form's values by sig's types and returns the
// arguments or the problems by field: text as --arg reads it
// (runargs.Value's message, after "KEY is declared TYPE;" as the CLI writes
// it), JSON values, unknown and missing keys as runargs.Problems says.
func formArgs(sig seq.Signature, values map[string]json.RawMessage) (map[string]json.RawMessage, map[string]string) {
	args := make(map[string]json.RawMessage, len(values))
	fields := map[string]string{}
	for k, raw := range values {
		var text string
		t, declared := sig[k]
		if b := bytes.TrimSpace(raw); !declared || len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &text) != nil {
			args[k] = raw // a JSON value: runargs.Problems checks it
			continue
		}
		val, err := runargs.Value(t, text) // the form's text, read as --arg reads it
		if err != nil {
			fields[k] = fmt.Sprintf("%s is declared %s; %v", k, t, err)
			continue
		}
		args[k] = val
	}
	for k, msg := range runargs.Problems(sig, args) {
		if _, ok := fields[k]; !ok {
			fields[k] = msg
		}
	}
	return args, fields
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
