package events

import (
	"errors"
	"testing"
)

// Entry subjects and keys: a schedule string keeps seq.schedule.<name>,
// an entry of a list gets seq.schedule.<name>.<entry>; both split back;
// a bad entry name is refused.
func TestScheduleEntryNames(t *testing.T) {
	for _, tc := range []struct {
		seq, entry string
		single     bool
		want       string
	}{
		{"team-digest", "berlin", false, "seq.schedule.team-digest.berlin"},
		{"team-digest", "default", true, "seq.schedule.team-digest"},
		{"检查网络", "ops", false, "seq.schedule.=5qOA5p-l572R57uc.ops"},
	} {
		got, err := ScheduleEntrySubject(tc.seq, tc.entry, tc.single)
		if err != nil || got != tc.want {
			t.Errorf("ScheduleEntrySubject(%q, %q, %v) = %q, %v; want %q", tc.seq, tc.entry, tc.single, got, err, tc.want)
			continue
		}
		name, entry, err := ScheduleSubjectParts(got)
		wantEntry := tc.entry
		if tc.single {
			wantEntry = ""
		}
		if err != nil || name != tc.seq || entry != wantEntry {
			t.Errorf("ScheduleSubjectParts(%q) = %q, %q, %v; want %q, %q", got, name, entry, err, tc.seq, wantEntry)
		}
	}
	if k, err := ScheduleKey("检查网络", "ops"); err != nil || k != "=5qOA5p-l572R57uc.ops" {
		t.Errorf("ScheduleKey = %q, %v", k, err)
	}
	for _, bad := range []string{"", "a.b", "a/b", "1a", "a*"} {
		if _, err := ScheduleKey("s", bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("ScheduleKey(s, %q) = %v; want ErrBadToken", bad, err)
		}
	}
	if err := (&ScheduleEvent{Sequence: "s", Status: TickSkipped}).check(); err != nil {
		t.Errorf("a skipped tick event: %v", err)
	}
	if err := (&ScheduleEvent{Sequence: "s", Status: "nope"}).check(); err == nil {
		t.Error("a schedule event of status nope was accepted")
	}
	if err := (&ScheduleBackfillRequest{Sequence: "s"}).check(); err == nil {
		t.Error("a backfill without from and to was accepted")
	}
}
