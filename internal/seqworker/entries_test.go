package seqworker

import (
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
)

// A tick's jitter is the same for every delivery of the tick and within
// [0, max); ticks differ.
func TestJitterFor(t *testing.T) {
	max := 30 * time.Second
	seen := map[time.Duration]bool{}
	for i := range 50 {
		id := "tick-s-e-20261201T0900" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		d := jitterFor(id, max)
		if d < 0 || d >= max || d != jitterFor(id, max) {
			t.Fatalf("jitterFor(%q) = %s (again %s); want the same value in [0, %s)", id, d, jitterFor(id, max), max)
		}
		seen[d] = true
	}
	if len(seen) < 40 {
		t.Errorf("%d distinct delays for 50 ticks; want them spread", len(seen))
	}
	if jitterFor("x", 0) != 0 {
		t.Error("jitterFor with no jitter is not 0")
	}
}

// The next fire times of a cron entry follow the server's daylight-saving
// rule: 02:30 New York time does not exist on 8 March 2026 and is skipped
// that day; an every entry counts from the last tick seen.
func TestNextFires(t *testing.T) {
	e := &seq.ScheduleEntry{Cron: "0 30 2 * * *", TimeZone: "America/New_York"}
	got := e.NextFires(time.Time{}, time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), 2)
	// 7 March 02:30 EST has passed at 12:00 UTC; 8 March has no 02:30; 9 March 02:30 EDT = 06:30 UTC.
	want := []time.Time{time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), time.Date(2026, 3, 10, 6, 30, 0, 0, time.UTC)}
	if len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Errorf("NextFires(02:30 New York) = %v; want %v (8 March skipped)", got, want)
	}
	ev := &seq.ScheduleEntry{Every: seq.Duration(time.Hour)}
	last := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got = ev.NextFires(last, last.Add(150*time.Minute), 2)
	if len(got) != 2 || !got[0].Equal(last.Add(3*time.Hour)) || !got[1].Equal(last.Add(4*time.Hour)) {
		t.Errorf("NextFires(every 1h, last %s, now +2h30m) = %v; want +3h, +4h", last, got)
	}
	if n := len(ticksBetween(ev, last, last.Add(200*time.Hour), 100)); n != 101 {
		t.Errorf("ticksBetween over 201 hourly ticks = %d; want the bound plus one (101), so the caller refuses it", n)
	}
}
