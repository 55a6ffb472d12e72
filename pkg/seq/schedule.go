package seq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	// The IANA time zone database, built into every binary that links this
	// package, so that `timezone` is checked the same way on every machine
	// (and an embedded NATS server finds the zone too) whether or not the
	// host has /usr/share/zoneinfo.
	_ "time/tzdata"
)

// checkSchedule validates a `schedule` as the NATS server's message
// scheduler reads it (docs/sequences.md; nats-server 2.15): `@every DURATION`
// (at least 1s), one of @yearly @annually @monthly @weekly @daily @midnight
// @hourly, or a cron expression of 6 fields (second minute hour
// day-of-month month day-of-week). It returns "" when valid, else a message.
func checkSchedule(s string) string {
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return fmt.Sprintf("got %q: after @every write a duration such as 30s, 15m or 1h", clip(s, 60))
		}
		if d < time.Second {
			return fmt.Sprintf("got %q: the interval must be at least 1s", s)
		}
		return ""
	}
	switch s {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
		return ""
	}
	const help = "a schedule is \"@every DURATION\" (e.g. \"@every 1h\"), @hourly, @daily, @weekly, @monthly, @yearly, or a 6-field cron expression \"SECOND MINUTE HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK\" (e.g. \"0 30 9 * * MON-FRI\")"
	if strings.HasPrefix(s, "@") {
		return fmt.Sprintf("got %q; %s", clip(s, 60), help)
	}
	fields := strings.Fields(s)
	if len(fields) == 5 {
		return fmt.Sprintf("got %q, a 5-field cron expression; NATS schedules use 6 fields with the seconds first: write \"0 %s\"", s, strings.Join(fields, " "))
	}
	if len(fields) != 6 {
		return fmt.Sprintf("got %q with %d fields; %s", clip(s, 60), len(fields), help)
	}
	bounds := []struct {
		name     string
		min, max int
		names    []string
	}{
		{"second", 0, 59, nil}, {"minute", 0, 59, nil}, {"hour", 0, 23, nil},
		{"day of month", 1, 31, nil},
		{"month", 1, 12, []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
		{"day of week", 0, 6, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
	}
	for i, f := range fields {
		b := bounds[i]
		val := func(v string) bool {
			if n, err := strconv.Atoi(v); err == nil {
				return n >= b.min && n <= b.max
			}
			return b.names != nil && slices.Contains(b.names, strings.ToLower(v)) && v != ""
		}
		for _, part := range strings.Split(f, ",") {
			rng, step, hasStep := strings.Cut(part, "/")
			ok := true
			if hasStep {
				n, err := strconv.Atoi(step)
				ok = err == nil && n > 0
			}
			if rng != "*" && rng != "?" {
				lo, hi, isRange := strings.Cut(rng, "-")
				ok = ok && val(lo) && (!isRange || val(hi))
			}
			if !ok {
				return fmt.Sprintf("got %q: the %s field %q is not valid (allowed: *, numbers %d–%d%s, ranges a-b, lists a,b, steps */n); %s", clip(s, 60), b.name, f, b.min, b.max, map[bool]string{true: " or names", false: ""}[b.names != nil], help)
			}
		}
	}
	return ""
}

// checkTimeZone validates a sequence's `timezone`: an IANA zone name that
// time.LoadLocation knows (as the NATS server loads its
// Nats-Schedule-Time-Zone header), other than "Local", and only with a cron
// schedule — the server refuses a time zone with @every. hasSchedule says
// whether a schedule field was given at all. It returns "" when valid.
func checkTimeZone(tz, schedule string, hasSchedule bool) string {
	const example = "an IANA time zone name such as \"Europe/Berlin\", \"America/New_York\", \"Asia/Shanghai\" or \"UTC\""
	switch {
	case tz == "":
		return "the time zone is empty; write " + example + ", or remove timezone for UTC"
	case tz == "Local":
		return "\"Local\" is the zone of whichever machine runs the NATS server, which can differ from one server to the next; write " + example
	}
	if _, err := time.LoadLocation(tz); err != nil {
		hint := ""
		if i := strings.IndexFunc(tz, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
			hint = " (it contains a space or control character)"
		}
		return fmt.Sprintf("unknown time zone %q%s; write %s (names are case-sensitive: Region/City from the IANA time zone database)", clip(tz, 60), hint, example)
	}
	switch {
	case !hasSchedule:
		return "timezone says in which zone a cron schedule is read, but the sequence has no schedule; add a cron schedule (e.g. \"0 0 9 * * MON-FRI\") or remove timezone"
	case strings.HasPrefix(schedule, "@every"):
		return fmt.Sprintf("timezone applies only to cron schedules, and %q runs at a fixed interval in every zone (the NATS server refuses a time zone with @every); remove timezone, or write a cron schedule", clip(schedule, 40))
	}
	return ""
}
