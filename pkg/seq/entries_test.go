package seq

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const entriesSeq = `name: report
schedule:
  - name: berlin
    cron: "0 0 9 * * MON-FRI"
    timezone: Europe/Berlin
    args: {team: berlin, limit: 10}
    overlap: buffer_one
    jitter: 30s
    pause_on_failure: 3
  - every: 1h
    args: {team: ops, limit: null}
    start_at: "2026-01-01T00:00:00+01:00"
    end_at: "2027-01-01T00:00:00Z"
    catchup_window: 2h
groups:
  - name: g
    in: {team: string, limit: integer}
    tools: [{tool: t, args: {team: $args.team, n: $args.limit}}]
`

// The list form of schedule: every field read, defaults filled in, the
// unnamed entry named after its position, and a round trip through Encode
// (which writes the list under "schedule").
func TestScheduleEntries(t *testing.T) {
	s, err := ParseYAML([]byte(entriesSeq))
	if err != nil {
		t.Fatalf("ParseYAML: %v", err)
	}
	es := s.ScheduleEntries()
	if len(es) != 2 || !s.Scheduled() || s.Schedule != "" {
		t.Fatalf("entries = %+v", es)
	}
	b := es[0]
	if b.Name != "berlin" || b.Cron != "0 0 9 * * MON-FRI" || b.TimeZone != "Europe/Berlin" || b.Overlap != OverlapBufferOne ||
		b.Jitter != Duration(30*time.Second) || b.PauseOnFailure != 3 || b.Args["team"] != "berlin" {
		t.Errorf("entry 1 = %+v", b)
	}
	o := es[1]
	if o.Name != "entry2" || o.Every != Duration(time.Hour) || o.Overlap != OverlapSkip || o.Pattern() != "@every 1h0m0s" ||
		!o.StartAt.Equal(time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC)) || o.CatchupWindow != Duration(2*time.Hour) {
		t.Errorf("entry 2 = %+v", o)
	}
	if _, ok := o.Args["limit"]; !ok || o.Args["limit"] != nil {
		t.Errorf("entry 2 args = %v; want limit: null kept", o.Args)
	}
	roundTrip(t, s)
	enc, _ := Encode(s)
	if !strings.Contains(string(enc), `"schedule":[{"name":"berlin","cron":"0 0 9 * * MON-FRI"`) {
		t.Errorf("Encode = %s; want the entries under schedule", enc)
	}
	// The JSON form takes the same list.
	js := `{"name":"r","schedule":[{"name":"a","every":"30s","overlap":"allow_all"}],"groups":[{"name":"g","tools":"{\"tool\":\"t\"};"}]}`
	s2, err := ParseJSON([]byte(js))
	if err != nil || s2.Entries[0].Overlap != OverlapAllowAll {
		t.Fatalf("ParseJSON = %+v, %v", s2, err)
	}
	roundTrip(t, s2)
}

// The single-string form keeps decoding as before (stored sequences have
// it) and is one entry named default with overlap skip.
func TestScheduleSingleStringIsOneEntry(t *testing.T) {
	stored := `{"name":"s","schedule":"0 0 3 * * *","timezone":"Europe/Berlin","groups":[{"name":"g","parallel":true,"missing":"fail","timeout":"1m0s","on_error":"abort","tools":[{"tool":"t"}]}],"signature":{}}`
	s, err := Decode([]byte(stored))
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := Encode(s)
	if string(enc) != stored {
		t.Errorf("Encode = %s\nwant the stored bytes %s", enc, stored)
	}
	es := s.ScheduleEntries()
	if len(es) != 1 || es[0].Name != DefaultEntry || es[0].Cron != "0 0 3 * * *" || es[0].TimeZone != "Europe/Berlin" || es[0].Overlap != OverlapSkip {
		t.Errorf("entries = %+v", es)
	}
	s, _ = ParseYAML([]byte("name: s\nschedule: \"@every 90s\"\ngroups:\n  - name: g\n    tools: [{tool: t}]\n"))
	if e := s.ScheduleEntries()[0]; e.Every != Duration(90*time.Second) || e.Pattern() != "@every 1m30s" {
		t.Errorf("every entry = %+v", e)
	}
}

// Every mistake in an entry is refused at its line, saying how to fix it.
func TestScheduleEntryErrors(t *testing.T) {
	head := "name: s\nschedule:\n"
	tail := "groups:\n  - name: g\n    tools: [{tool: t}]\n"
	argTail := "groups:\n  - name: g\n    in: {team: string}\n    tools: [{tool: t, args: {x: $args.team}}]\n"
	for _, tc := range []struct {
		name, entries, tail string
		kind                error
		line                int
		want                []string
	}{
		{"unknown key", "  - every: 1h\n    overlapp: skip\n", tail, ErrUnknownField, 4, []string{`unknown field "overlapp"`, `Did you mean "overlap"?`}},
		{"cron and every", "  - cron: \"0 0 9 * * *\"\n    every: 1h\n", tail, ErrInvalidValue, 4, []string{"cron or every, not both"}},
		{"neither", "  - name: a\n    overlap: skip\n", tail, ErrMissingField, 3, []string{"add cron:", "every: 1h"}},
		{"duplicate names", "  - name: a\n    every: 1h\n  - name: a\n    every: 2h\n", tail, ErrInvalidValue, 5, []string{`"a" is already used by entry 1`}},
		{"derived name clash", "  - name: entry2\n    every: 1h\n  - every: 2h\n", tail, ErrInvalidValue, 5, []string{`named "entry2", which entry 1 already uses`}},
		{"bad overlap", "  - every: 1h\n    overlap: skipp\n", tail, ErrInvalidValue, 4, []string{`got "skipp"`, `"skip"`, "buffer_one"}},
		{"bad every", "  - every: 1d\n", tail, ErrInvalidValue, 3, []string{"no days", "24h"}},
		{"short every", "  - every: 10ms\n", tail, ErrInvalidValue, 3, []string{"at least 1s"}},
		{"every in cron", "  - cron: \"@every 1h\"\n", tail, ErrInvalidValue, 3, []string{"write every: 1h"}},
		{"bad cron", "  - cron: \"0 0 25 * * *\"\n", tail, ErrInvalidValue, 3, []string{"hour field"}},
		{"zone with every", "  - every: 1h\n    timezone: Europe/Berlin\n", tail, ErrInvalidValue, 4, []string{"only to cron"}},
		{"bad zone", "  - cron: \"0 0 9 * * *\"\n    timezone: Europe/Berlln\n", tail, ErrInvalidValue, 4, []string{"Europe/Berlin"}},
		{"jitter over every", "  - every: 10s\n    jitter: 10s\n", tail, ErrInvalidValue, 4, []string{"smaller than every"}},
		{"bad start", "  - every: 1h\n    start_at: tomorrow\n", tail, ErrInvalidValue, 4, []string{"RFC 3339", "2026-12-01T09:00:00Z"}},
		{"end before start", "  - every: 1h\n    start_at: \"2026-02-01T00:00:00Z\"\n    end_at: \"2026-01-01T00:00:00Z\"\n", tail, ErrInvalidValue, 5, []string{"not after start_at"}},
		{"pause zero", "  - every: 1h\n    pause_on_failure: 0\n", tail, ErrInvalidValue, 4, []string{"from 1 to"}},
		{"catchup too long", "  - every: 1h\n    catchup_window: 800h\n", tail, ErrInvalidValue, 4, []string{"catchup_window is from 0 to"}},
		{"bad name", "  - name: \"a/b\"\n    every: 1h\n", tail, ErrInvalidValue, 3, []string{"not allowed", "ASCII letters"}},
		{"top-level zone", "  - every: 1h\ntimezone: UTC\n", tail, ErrInvalidValue, 4, []string{"each cron entry its own timezone"}},
		{"missing arg", "  - every: 1h\n", argTail, ErrDataflow, 3, []string{`gives no value for the run argument "team"`, "add args: {team:"}},
		{"wrong arg type", "  - every: 1h\n    args: {team: 5}\n", argTail, ErrInvalidValue, 4, []string{`"team" is string, got integer`}},
		{"unknown arg", "  - every: 1h\n    args: {team: a, teem: b}\n", argTail, ErrInvalidValue, 4, []string{`no run argument "teem"`}},
		{"empty list", "  []\n", tail, ErrInvalidValue, 3, []string{"the list is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseYAML([]byte(head + tc.entries + tc.tail))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("ParseYAML = %v; want Errors", err)
			}
			e := errs[0]
			if !errors.Is(e, tc.kind) || e.Line != tc.line {
				t.Errorf("got %v (kind %v, line %d); want kind %v at line %d", e, e.Kind, e.Line, tc.kind, tc.line)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
