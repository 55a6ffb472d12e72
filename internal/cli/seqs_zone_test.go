package cli

import (
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/seq"
)

// TestScheduleWithZone: a cron schedule is shown with the zone it is read
// in (UTC when none is named), an interval without one.
func TestScheduleWithZone(t *testing.T) {
	for _, tc := range []struct{ schedule, tz, want string }{
		{"0 0 3 * * *", "", "0 0 3 * * * (UTC)"},
		{"0 0 3 * * *", "Europe/Berlin", "0 0 3 * * * (Europe/Berlin)"},
		{"@daily", "America/New_York", "@daily (America/New_York)"},
		{"@every 10m", "", "@every 10m"},
	} {
		if got := scheduleWithZone(tc.schedule, tc.tz); got != tc.want {
			t.Errorf("scheduleWithZone(%q, %q) = %q; want %q", tc.schedule, tc.tz, got, tc.want)
		}
	}
	s, err := seq.Parse([]byte("name: nightly\nschedule: \"0 0 3 * * *\"\ntimezone: Europe/Berlin\ngroups:\n  - name: g\n    tools: [{tool: fs.list, args: {path: .}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	describeSequence(&b, s)
	if !strings.Contains(b.String(), "schedule: 0 0 3 * * * (Europe/Berlin)\n") {
		t.Errorf("seqs show of a zoned schedule:\n%s\nwant the line 'schedule: 0 0 3 * * * (Europe/Berlin)'", b.String())
	}
}
