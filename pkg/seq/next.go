package seq

import (
	"fmt"
	"strings"
	"time"
)

// NextTick returns when the NATS server's message scheduler next fires a
// sequence's schedule after the instant after, for showing it to people
// (`skillbus ui`'s sequences page). schedule and timeZone are a sequence's
// `schedule` and `timezone` ("" = UTC), as docs/sequences.md ("Schedules")
// describes them.
//
//   - A cron schedule (6 fields, or @hourly, @daily, @midnight, @weekly,
//     @monthly, @yearly, @annually) gives the next matching second in the
//     time zone, and interval 0. Day-of-month and day-of-week combine as
//     the server combines them (both must match when either is * or ?,
//     else either), and hours are stepped in absolute time as the server's
//     cron code does, so a local time in the hour skipped in spring does
//     not fire that day and one in the hour repeated in autumn fires twice
//     (docs/runs.md, "Time zones").
//   - "@every D" gives a zero time and interval D: its ticks are counted
//     from when the server stored the schedule, which the pattern alone
//     does not tell; the caller adds D to a tick it knows.
//
// Errors: an invalid schedule or time zone, with CheckSchedule's message
// (wrapping ErrInvalidValue); a cron schedule with no tick in the five
// years after after (the server refuses those when they are stored).
func NextTick(schedule, timeZone string, after time.Time) (next time.Time, interval time.Duration, err error) {
	if err := CheckSchedule(schedule, timeZone); err != nil {
		return time.Time{}, 0, err
	}
	s := strings.Trim(schedule, " ")
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, _ := time.ParseDuration(rest) // checked by CheckSchedule
		return time.Time{}, d, nil
	}
	switch s {
	case "@yearly", "@annually":
		s = "0 0 0 1 1 *"
	case "@monthly":
		s = "0 0 0 1 * *"
	case "@weekly":
		s = "0 0 0 * * 0"
	case "@daily", "@midnight":
		s = "0 0 0 * * *"
	case "@hourly":
		s = "0 0 * * * *"
	}
	var sets [6]uint64
	for i, f := range strings.Fields(s) {
		bits, msg := cronField(f, cronFields[i])
		if msg != "" { // unreachable after CheckSchedule; kept for safety
			return time.Time{}, 0, &Error{Kind: ErrInvalidValue, Field: "schedule", Message: msg}
		}
		sets[i] = bits
	}
	loc := time.UTC
	if timeZone != "" {
		if loc, err = time.LoadLocation(timeZone); err != nil {
			return time.Time{}, 0, &Error{Kind: ErrInvalidValue, Field: "timezone", Message: err.Error()}
		}
	}
	has := func(set uint64, v int) bool { return set&(1<<uint(v)) != 0 }
	sec, min, hour, dom, month, dow := sets[0], sets[1], sets[2], sets[3], sets[4], sets[5]
	dayMatches := func(t time.Time) bool {
		d, w := has(dom, t.Day()), has(dow, int(t.Weekday()))
		if dom&cronStar != 0 || dow&cronStar != 0 {
			return d && w
		}
		return d || w
	}
	t := after.In(loc).Truncate(time.Second).Add(time.Second)
	limit := after.AddDate(5, 0, 1)
	for t.Before(limit) {
		switch {
		case !has(month, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case !has(hour, t.Hour()):
			// Absolute time: through a repeated hour twice, over a skipped
			// one not at all.
			t = t.Add(time.Hour - time.Duration(t.Minute())*time.Minute - time.Duration(t.Second())*time.Second)
		case !has(min, t.Minute()):
			t = t.Add(time.Minute - time.Duration(t.Second())*time.Second)
		case !has(sec, t.Second()):
			t = t.Add(time.Second)
		default:
			return t, 0, nil
		}
	}
	return time.Time{}, 0, fmt.Errorf("%w: schedule %q does not fire in the five years after %s", ErrInvalidValue, schedule, after.UTC().Format(time.RFC3339))
}
