package seq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/suggest"
)

// ScheduleEntry is one entry of a sequence's `schedule` list
// (docs/sequences.md, "Schedules"): when it fires (Cron or Every, exactly
// one), with which run arguments, and what a tick does while the entry's
// previous run is still going. The single-string form of `schedule` is one
// entry named DefaultEntry with the default policies (Sequence.ScheduleEntries).
type ScheduleEntry struct {
	// Name identifies the entry in the commands (`skillbus schedules
	// pause NAME/ENTRY`), its server-side schedule and its state: given,
	// or "entryN" for the N-th entry (1-based) of a list that names none.
	// EntryNameRule says which names are allowed.
	Name string `json:"name"`
	// Cron is a 6-field cron expression or @hourly … @yearly, read as the
	// NATS server reads it (checkSchedule); "" when Every is set.
	Cron string `json:"cron,omitempty"`
	// Every is a fixed interval of at least 1s; 0 when Cron is set.
	Every Duration `json:"every,omitempty"`
	// TimeZone is the IANA zone in which Cron is read ("" = UTC); only
	// with Cron.
	TimeZone string `json:"timezone,omitempty"`
	// Args are the run arguments of the entry's runs: every key of the
	// sequence's signature, each of its type (null allowed), and no other.
	Args map[string]any `json:"args,omitempty"`
	// Overlap is what a tick does while the entry's previous run is not
	// finished; OverlapSkip when not written.
	Overlap Overlap `json:"overlap"`
	// Jitter delays each tick's run by a random time up to Jitter (0 =
	// none); at most MaxJitter, and less than Every.
	Jitter Duration `json:"jitter,omitempty"`
	// StartAt and EndAt bound the ticks that run (UTC; zero = unbounded):
	// a tick before StartAt or after EndAt is dropped and recorded.
	StartAt time.Time `json:"start_at,omitzero"`
	EndAt   time.Time `json:"end_at,omitzero"`
	// CatchupWindow is how far back missed ticks are run after an outage
	// (0 = none beyond the one tick the server fires); at most
	// MaxCatchupWindow.
	CatchupWindow Duration `json:"catchup_window,omitempty"`
	// PauseOnFailure pauses the entry after this many consecutive failed
	// runs (0 = never), 1 to MaxPauseOnFailure.
	PauseOnFailure int `json:"pause_on_failure,omitempty"`
}

// Overlap is a schedule entry's overlap policy (docs/sequences.md,
// "Overlap").
type Overlap string

// The legal values of Overlap.
const (
	OverlapSkip        Overlap = "skip"         // the tick is dropped and recorded (the default)
	OverlapBufferOne   Overlap = "buffer_one"   // at most one tick waits; it starts when the current run ends
	OverlapBufferAll   Overlap = "buffer_all"   // every tick waits, in order (up to MaxBuffered)
	OverlapCancelOther Overlap = "cancel_other" // the running one is cancelled, then the tick starts
	OverlapAllowAll    Overlap = "allow_all"    // every tick starts at once (the behaviour before overlap policies)
)

// Limits of schedule entries (docs/sequences.md, "Schedules").
const (
	// DefaultEntry is the name of the one entry of the single-string form.
	DefaultEntry = "default"
	// MaxEntries is the most entries a `schedule` list may have.
	MaxEntries = 32
	// MaxJitter bounds `jitter`.
	MaxJitter = time.Hour
	// MaxCatchupWindow bounds `catchup_window`.
	MaxCatchupWindow = 7 * 24 * time.Hour
	// MaxPauseOnFailure bounds `pause_on_failure`.
	MaxPauseOnFailure = 1000
	// MaxBuffered bounds the ticks a buffer_all entry keeps waiting; a
	// tick beyond it is skipped and recorded.
	MaxBuffered = 100
)

var overlaps = []string{string(OverlapSkip), string(OverlapBufferOne), string(OverlapBufferAll), string(OverlapCancelOther), string(OverlapAllowAll)}

var entryFields = []string{"name", "cron", "every", "timezone", "args", "overlap", "jitter", "start_at", "end_at", "catchup_window", "pause_on_failure"}

// EntryNameRule is the rule of schedule entry names.
const EntryNameRule = "1 to 32 ASCII letters, digits, `-` or `_`, starting with a letter (for example nightly)"

var entryNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// Scheduled reports whether the sequence has a schedule, in either form.
func (s *Sequence) Scheduled() bool { return s.Schedule != "" || len(s.Entries) > 0 }

// ScheduleEntries returns the sequence's schedule entries: the list form
// as written (defaults filled in), or for the single-string form one entry
// named DefaultEntry with its pattern (Cron, or Every for "@every D"), its
// TimeZone and the default policies; nil when the sequence has no
// schedule.
func (s *Sequence) ScheduleEntries() []ScheduleEntry {
	if len(s.Entries) > 0 {
		return s.Entries
	}
	if s.Schedule == "" {
		return nil
	}
	e := ScheduleEntry{Name: DefaultEntry, TimeZone: s.TimeZone, Overlap: OverlapSkip}
	if rest, ok := strings.CutPrefix(s.Schedule, "@every "); ok {
		d, _ := time.ParseDuration(rest)
		e.Every = Duration(d)
	} else {
		e.Cron = s.Schedule
	}
	return []ScheduleEntry{e}
}

// Entry returns the schedule entry called name, or nil.
func (s *Sequence) Entry(name string) *ScheduleEntry {
	es := s.ScheduleEntries()
	if i := slices.IndexFunc(es, func(e ScheduleEntry) bool { return e.Name == name }); i >= 0 {
		return &es[i]
	}
	return nil
}

// Pattern returns the entry's schedule in the NATS server's syntax: Cron,
// or "@every D".
func (e *ScheduleEntry) Pattern() string {
	if e.Cron != "" {
		return e.Cron
	}
	return "@every " + time.Duration(e.Every).String()
}

// ArgsJSON returns the entry's run arguments as a JSON object (nil when
// it has none).
func (e *ScheduleEntry) ArgsJSON() json.RawMessage {
	if len(e.Args) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(e.Args) != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// MarshalJSON writes the sequence as Encode describes; the list form of
// `schedule` is written under "schedule" as a list of entries (after the
// other fields), the single-string form as a string, as before.
func (s Sequence) MarshalJSON() ([]byte, error) {
	type plain Sequence
	var v any = (*plain)(&s)
	if len(s.Entries) > 0 {
		v = struct {
			*plain
			Schedule []ScheduleEntry `json:"schedule"`
		}{(*plain)(&s), s.Entries}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// scheduleField decodes the sequence's `schedule` and `timezone`: a string
// (the single form, with an optional top-level timezone) or a list of
// entries (each with its own timezone).
func (d *decoder) scheduleField(root *node, s *Sequence) {
	sn, tzn := root.get("schedule"), root.get("timezone")
	if sn != nil && sn.kind == kindArray {
		s.Entries = d.entries(sn)
		if tzn != nil {
			d.errf(ErrInvalidValue, at{}, "timezone", tzn, "a top-level timezone goes with the single-string schedule; with a list of entries, give each cron entry its own timezone (move it into the entries)")
		}
		return
	}
	if sn != nil && sn.kind == kindObject {
		d.errf(ErrInvalidValue, at{}, "schedule", sn, "got an object; schedule is a string (\"@every 1h\" or \"0 0 9 * * MON-FRI\") or a list of entries: write `- cron: ...` (a list item) for one entry")
		return
	}
	if v, ok := d.str(sn, at{}, "schedule", `"@every 1h" or "0 0 9 * * MON-FRI", or a list of entries`); ok {
		if msg := checkSchedule(v); msg != "" {
			d.errf(ErrInvalidValue, at{}, "schedule", sn, "%s", msg)
		}
		s.Schedule = strings.Trim(v, " ") // as the server reads its header
	}
	if v, ok := d.str(tzn, at{}, "timezone", `"Europe/Berlin"`); ok {
		if msg := checkTimeZone(v, s.Schedule, sn != nil); msg != "" {
			d.errf(ErrInvalidValue, at{}, "timezone", tzn, "%s", msg)
		}
		s.TimeZone = v
	}
}

// entries decodes the list form of `schedule`.
func (d *decoder) entries(sn *node) []ScheduleEntry {
	switch {
	case len(sn.vals) == 0:
		d.errf(ErrInvalidValue, at{}, "schedule", sn, "the list is empty; give at least one entry (`- every: 1h`), or remove schedule")
		return nil
	case len(sn.vals) > MaxEntries:
		d.errf(ErrInvalidValue, at{}, "schedule", sn, "%d entries; a schedule has at most %d; split the sequence", len(sn.vals), MaxEntries)
		return nil
	}
	var out []ScheduleEntry
	seen := map[string]int{}
	for i, en := range sn.vals {
		e, nameNode := d.entry(i+1, en)
		if e.Name == "" {
			continue
		}
		if prev, dup := seen[e.Name]; dup {
			f := fmt.Sprintf("schedule[%d].name", i+1)
			if nameNode == nil {
				d.errf(ErrInvalidValue, at{}, f, en, "this entry has no name, so it is named %q, which entry %d already uses; give it a name of its own", e.Name, prev)
			} else {
				d.errf(ErrInvalidValue, at{}, f, nameNode, "the entry name %q is already used by entry %d; entry names must be unique (the commands name an entry as SEQUENCE/ENTRY); rename one", e.Name, prev)
			}
			continue
		}
		seen[e.Name] = i + 1
		out = append(out, e)
	}
	return out
}

// entry decodes one schedule entry (idx is 1-based). It returns the entry
// and the node of its name (nil when derived).
func (d *decoder) entry(idx int, en *node) (ScheduleEntry, *node) {
	e := ScheduleEntry{Overlap: OverlapSkip}
	f := func(name string) string { return fmt.Sprintf("schedule[%d].%s", idx, name) }
	if en.kind != kindObject {
		d.errf(ErrInvalidValue, at{}, fmt.Sprintf("schedule[%d]", idx), en, "got %s; each schedule entry is an object with the fields %s, e.g. {every: 1h} or {cron: \"0 0 9 * * MON-FRI\", timezone: Europe/Berlin}", en.describe(), strings.Join(entryFields, ", "))
		return e, nil
	}
	for i, k := range en.keys {
		if l := en.keyLine(i); l > 0 {
			d.fieldLines[fieldAt{0, 0, f(k)}] = l
		}
		if !slices.Contains(entryFields, k) {
			hint := ""
			if s := suggest.Closest(k, entryFields); s != "" {
				hint = fmt.Sprintf(" Did you mean %q?", s)
			}
			line := en.keyLine(i)
			if line == 0 {
				line = en.vals[i].line
			}
			d.errfLine(ErrUnknownField, at{}, fmt.Sprintf("schedule[%d]", idx), line, "unknown field %q in a schedule entry; the allowed fields are %s.%s Remove it or rename it.", k, strings.Join(entryFields, ", "), hint)
		}
	}
	nameNode := en.get("name")
	if v, ok := d.str(nameNode, at{}, f("name"), `"nightly"`); ok {
		if !entryNameRE.MatchString(v) {
			d.errf(ErrInvalidValue, at{}, f("name"), nameNode, "the entry name %q is not allowed; use %s", clip(v, 40), EntryNameRule)
		}
		e.Name = v
	} else if nameNode == nil {
		e.Name = "entry" + strconv.Itoa(idx)
	}
	cn, evn := en.get("cron"), en.get("every")
	switch {
	case cn != nil && evn != nil:
		d.errf(ErrInvalidValue, at{}, f("every"), evn, "an entry has cron or every, not both; keep cron (a time of day) or every (a fixed interval) and remove the other, or make two entries")
	case cn == nil && evn == nil:
		d.errf(ErrMissingField, at{}, f("cron"), en, "the entry says neither when nor how often it fires; add cron: \"0 0 9 * * MON-FRI\" (6 fields, seconds first) or every: 1h")
	}
	if v, ok := d.str(cn, at{}, f("cron"), `"0 0 9 * * MON-FRI" or "@daily"`); ok {
		v = strings.Trim(v, " ")
		if rest, isEvery := strings.CutPrefix(v, "@every "); isEvery {
			d.errf(ErrInvalidValue, at{}, f("cron"), cn, "got %q; an interval goes in every: write every: %s instead of cron", clip(v, 40), strings.TrimSpace(rest))
		} else if msg := checkSchedule(v); msg != "" {
			d.errf(ErrInvalidValue, at{}, f("cron"), cn, "%s", msg)
		}
		e.Cron = v
	}
	if v, ok := d.str(evn, at{}, f("every"), `"1h" or "15m"`); ok {
		v = strings.TrimPrefix(strings.Trim(v, " "), "@every ")
		t, err := time.ParseDuration(v)
		switch {
		case err != nil && strings.HasSuffix(v, "d"):
			d.errf(ErrInvalidValue, at{}, f("every"), evn, "got %q: a Go duration has no days; write hours, e.g. every: 24h, or cron: \"@daily\"", clip(v, 40))
		case err != nil:
			d.errf(ErrInvalidValue, at{}, f("every"), evn, "got %q, which is not a duration; write a Go duration such as 30s, 15m, 1h or 1h30m", clip(v, 40))
		case t < time.Second:
			d.errf(ErrInvalidValue, at{}, f("every"), evn, "got %q; the interval must be at least 1s", clip(v, 40))
		default:
			e.Every = Duration(t)
		}
	}
	if tzn := en.get("timezone"); tzn != nil {
		if v, ok := d.str(tzn, at{}, f("timezone"), `"Europe/Berlin"`); ok {
			pattern := e.Cron
			if evn != nil {
				pattern = "@every"
			}
			if msg := checkTimeZone(v, pattern, cn != nil || evn != nil); msg != "" {
				d.errf(ErrInvalidValue, at{}, f("timezone"), tzn, "%s", msg)
			}
			e.TimeZone = v
		}
	}
	if an := en.get("args"); an != nil {
		if an.kind != kindObject {
			d.errf(ErrInvalidValue, at{}, f("args"), an, "got %s; args is an object of run argument → value, for example {repo: skillbus/skillbus}", an.describe())
		} else {
			for i, k := range an.keys {
				if l := an.keyLine(i); l > 0 {
					d.fieldLines[fieldAt{0, 0, f("args." + k)}] = l
				}
			}
			if len(an.keys) > 0 {
				e.Args = an.toValue().(map[string]any)
			}
		}
	}
	if v, ok := d.str(en.get("overlap"), at{}, f("overlap"), `"skip"`); ok {
		if !slices.Contains(overlaps, v) {
			d.errf(ErrInvalidValue, at{}, f("overlap"), en.get("overlap"), "got %q;%s overlap must be one of skip (the default: a tick while the previous run goes is dropped and recorded), buffer_one (one tick waits), buffer_all (every tick waits), cancel_other (the running one is cancelled first), allow_all (runs side by side)", clip(v, 40), didYouMean(v, overlaps))
		}
		e.Overlap = Overlap(v)
	}
	if v, ok := d.str(en.get("jitter"), at{}, f("jitter"), `"30s"`); ok {
		t, err := time.ParseDuration(v)
		switch {
		case err != nil:
			d.errf(ErrInvalidValue, at{}, f("jitter"), en.get("jitter"), "got %q, which is not a duration; write one such as 30s or 5m", clip(v, 40))
		case t < 0 || t > MaxJitter:
			d.errf(ErrInvalidValue, at{}, f("jitter"), en.get("jitter"), "got %q; jitter is from 0 to %s", v, MaxJitter)
		case e.Every > 0 && t >= time.Duration(e.Every):
			d.errf(ErrInvalidValue, at{}, f("jitter"), en.get("jitter"), "got %q, not less than the interval %s, so a tick could start after the next one; make jitter smaller than every", v, e.Every)
		default:
			e.Jitter = Duration(t)
		}
	}
	e.StartAt = d.instant(en.get("start_at"), f("start_at"))
	e.EndAt = d.instant(en.get("end_at"), f("end_at"))
	if !e.StartAt.IsZero() && !e.EndAt.IsZero() && !e.EndAt.After(e.StartAt) {
		d.errf(ErrInvalidValue, at{}, f("end_at"), en.get("end_at"), "end_at (%s) is not after start_at (%s), so no tick would ever run; swap them or move end_at later", e.EndAt.Format(time.RFC3339), e.StartAt.Format(time.RFC3339))
	}
	if v, ok := d.str(en.get("catchup_window"), at{}, f("catchup_window"), `"1h"`); ok {
		t, err := time.ParseDuration(v)
		switch {
		case err != nil:
			d.errf(ErrInvalidValue, at{}, f("catchup_window"), en.get("catchup_window"), "got %q, which is not a duration; write one such as 1h or 24h", clip(v, 40))
		case t < 0 || t > MaxCatchupWindow:
			d.errf(ErrInvalidValue, at{}, f("catchup_window"), en.get("catchup_window"), "got %q; catchup_window is from 0 to %s", v, MaxCatchupWindow)
		default:
			e.CatchupWindow = Duration(t)
		}
	}
	if pn := en.get("pause_on_failure"); pn != nil {
		n, err := strconv.Atoi(pn.str)
		switch {
		case pn.kind != kindNumber || !pn.isInt || err != nil:
			d.errf(ErrInvalidValue, at{}, f("pause_on_failure"), pn, "got %s; pause_on_failure is a whole number of consecutive failed runs, from 1 to %d", pn.describe(), MaxPauseOnFailure)
		case n < 1 || n > MaxPauseOnFailure:
			d.errf(ErrInvalidValue, at{}, f("pause_on_failure"), pn, "got %d; pause_on_failure is from 1 to %d (remove it never to pause on failures)", n, MaxPauseOnFailure)
		default:
			e.PauseOnFailure = n
		}
	}
	if en.line > 0 {
		d.fieldLines[fieldAt{0, 0, fmt.Sprintf("schedule[%d]", idx)}] = en.line
	}
	return e, nameNode
}

// instant reads an RFC 3339 time (stored in UTC).
func (d *decoder) instant(n *node, field string) time.Time {
	v, ok := d.str(n, at{}, field, `"2026-12-01T09:00:00Z"`)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		d.errf(ErrInvalidValue, at{}, field, n, "got %q, which is not an RFC 3339 time; write a date, a time and a zone, e.g. \"2026-12-01T09:00:00Z\" or \"2026-12-01T09:00:00+01:00\"", clip(v, 40))
		return time.Time{}
	}
	return t.UTC()
}

// checkEntryArgs checks each entry's args against the signature, as run
// arguments are checked when a run is started: every argument given (null
// allowed), each of its type, no other.
func (d *decoder) checkEntryArgs(s *Sequence) {
	for i, e := range s.Entries {
		f := fmt.Sprintf("schedule[%d]", i+1)
		for _, k := range s.Signature.Keys() {
			t := s.Signature[k]
			v, ok := e.Args[k]
			if !ok {
				d.errfLine(ErrDataflow, at{}, f+".args", 0, "the entry %q gives no value for the run argument %q (%s), which the sequence reads; add args: {%s: %s} to the entry (null is allowed)", e.Name, k, t, k, typeExample(t))
				continue
			}
			raw, err := json.Marshal(v)
			if err != nil {
				continue
			}
			if ok, got := checkType(t, raw); !ok {
				d.errfLine(ErrInvalidValue, at{}, f+".args."+k, 0, "the run argument %q is %s, got %s (%s); write a value of type %s, e.g. %s", k, t, got, clip(string(raw), 40), t, typeExample(t))
			}
		}
		for _, k := range argKeys(e.Args) {
			if _, ok := s.Signature[k]; !ok {
				hint := ""
				if sg := suggest.Closest(k, s.Signature.Keys()); sg != "" {
					hint = fmt.Sprintf(" Did you mean %q?", sg)
				}
				d.errfLine(ErrInvalidValue, at{}, f+".args."+k, 0, "the sequence has no run argument %q; it takes %s.%s Remove it from the entry's args", k, s.Signature, hint)
			}
		}
	}
}

func argKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeExample is a value of type t to show in a message.
func typeExample(t Type) string {
	switch {
	case t == "string":
		return `"text"`
	case t == "bool":
		return "true"
	case t == "integer":
		return "10"
	case t == "number":
		return "1.5"
	case t == "object":
		return "{key: value}"
	case t.IsArray():
		return "[]"
	}
	return "null"
}

// NextFires returns the next n fire times of entry e after now (UTC), as
// the NATS server fires them: a cron entry in its zone (DST as
// docs/sequences.md, "Time zones", says), an `every` entry counting from
// lastTick (the last tick seen; from now when none was). It is what
// `skillbus schedules show` and a test file's schedule checks
// (docs/testing.md) show; fewer than n when the cron has no more.
func (e *ScheduleEntry) NextFires(lastTick, now time.Time, n int) []time.Time {
	var out []time.Time
	if e.Every > 0 {
		d := time.Duration(e.Every)
		t := lastTick
		if t.IsZero() {
			t = now
		}
		if t.Before(now) {
			t = t.Add(now.Sub(t).Truncate(d))
		}
		for len(out) < n {
			t = t.Add(d)
			out = append(out, t.UTC())
		}
		return out
	}
	after := now
	for len(out) < n {
		next, _, err := NextTick(e.Cron, e.TimeZone, after)
		if err != nil || next.IsZero() {
			break
		}
		out = append(out, next.UTC())
		after = next
	}
	return out
}
