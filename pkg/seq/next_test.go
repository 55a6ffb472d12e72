package seq

import (
	"errors"
	"testing"
	"time"
)

func TestNextTick(t *testing.T) {
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name, schedule, tz, after, want string
	}{
		{"every second", "* * * * * *", "", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"},
		{"hourly", "@hourly", "", "2026-01-01T10:20:30Z", "2026-01-01T11:00:00Z"},
		{"daily at 03:00 UTC", "0 0 3 * * *", "", "2026-01-01T03:00:00Z", "2026-01-02T03:00:00Z"},
		{"03:00 in Berlin in winter", "0 0 3 * * *", "Europe/Berlin", "2026-01-01T00:00:00Z", "2026-01-01T02:00:00Z"},
		{"03:00 in Berlin in summer", "0 0 3 * * *", "Europe/Berlin", "2026-07-01T00:00:00Z", "2026-07-01T01:00:00Z"},
		{"weekdays 09:30", "0 30 9 * * MON-FRI", "", "2026-01-02T10:00:00Z", "2026-01-05T09:30:00Z"}, // Fri → Mon
		{"every 15 minutes", "0 */15 * * * *", "", "2026-01-01T00:14:59Z", "2026-01-01T00:15:00Z"},
		{"February 29", "0 0 0 29 2 *", "", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"day of month OR day of week", "0 0 0 1 * MON", "", "2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z"},
		{"day of month AND every weekday", "0 0 0 1 * *", "", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"monthly", "@monthly", "", "2026-12-15T00:00:00Z", "2027-01-01T00:00:00Z"},
		// Spring forward in New York on 8 March 2026: 02:30 does not exist
		// that day and is not moved to 03:30.
		{"skipped local hour", "0 30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-09T06:30:00Z"},
		// Fall back on 1 November 2026: 01:30 happens twice, in EDT and EST.
		{"repeated local hour, first", "0 30 1 * * *", "America/New_York", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z"},
		{"repeated local hour, second", "0 30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, every, err := NextTick(tc.schedule, tc.tz, utc(tc.after))
			if err != nil || every != 0 {
				t.Fatalf("NextTick(%q, %q, %s) = %v, %v, %v", tc.schedule, tc.tz, tc.after, got, every, err)
			}
			if want := utc(tc.want); !got.Equal(want) {
				t.Errorf("NextTick(%q, %q, %s) = %s; want %s", tc.schedule, tc.tz, tc.after, got.UTC().Format(time.RFC3339), tc.want)
			}
		})
	}
	if next, every, err := NextTick("@every 90s", "", utc("2026-01-01T00:00:00Z")); err != nil || !next.IsZero() || every != 90*time.Second {
		t.Errorf("NextTick(@every 90s) = %v, %v, %v; want zero time and 1m30s", next, every, err)
	}
	for _, bad := range []string{"*/5 * * * *", "0 0 0 30 2 *", "@every 1d", ""} {
		if _, _, err := NextTick(bad, "", time.Now()); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("NextTick(%q) error = %v; want ErrInvalidValue", bad, err)
		}
	}
	if _, _, err := NextTick("0 0 3 * * *", "Europe/Berlln", time.Now()); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("NextTick with an unknown zone: error = %v; want ErrInvalidValue", err)
	}
}

// FuzzNextTick: any schedule text, never a panic; for a cron schedule
// that is valid, the tick is after the instant asked and is the next tick
// of the second before it (a tick is a tick).
func FuzzNextTick(f *testing.F) {
	for _, s := range []string{"@hourly", "0 0 3 * * *", "*/7 */5 1-3 * * MON-FRI", "0 0 0 29 2 *", "0 0 0 1 * MON", "@every 5m", "0 30 2 * * *", "* * * * *", "0 0 0 31 4 *", "?/1 0 0 L * *"} {
		f.Add(s, "")
	}
	f.Add("0 30 1 * * *", "America/New_York")
	f.Add("0 0 3 * * *", "Europe/Berlin")
	after := time.Date(2026, 11, 1, 4, 59, 59, 0, time.UTC)
	f.Fuzz(func(t *testing.T, schedule, tz string) {
		next, every, err := NextTick(schedule, tz, after)
		if err != nil || every != 0 {
			return
		}
		if !next.After(after) {
			t.Fatalf("NextTick(%q, %q) = %s, not after %s", schedule, tz, next, after)
		}
		again, _, err := NextTick(schedule, tz, next.Add(-time.Second))
		if err != nil || !again.Equal(next) {
			t.Fatalf("NextTick(%q, %q) from a second before %s = %s, %v", schedule, tz, next, again, err)
		}
	})
}
