package seq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	// The IANA time zone database, built into every binary that links this
	// package, so that `timezone` is checked the same way on every machine
	// (and an embedded NATS server finds the zone too) whether or not the
	// host has /usr/share/zoneinfo.
	_ "time/tzdata"
)

// CheckSchedule reports whether a sequence's `schedule` and `timezone`
// (timeZone, "" for none) are ones the NATS server's message scheduler
// accepts (docs/sequences.md, "Schedules"): the same rules as a sequence's
// parse, for callers that hold the two strings alone. The error wraps
// ErrInvalidValue and says what is wrong in the pattern and how to fix it.
func CheckSchedule(schedule, timeZone string) error {
	if msg := checkSchedule(schedule); msg != "" {
		return &Error{Kind: ErrInvalidValue, Field: "schedule", Message: msg}
	}
	if timeZone != "" {
		if msg := checkTimeZone(timeZone, schedule, true); msg != "" {
			return &Error{Kind: ErrInvalidValue, Field: "timezone", Message: msg}
		}
	}
	return nil
}

// checkSchedule validates a `schedule` exactly as nats-server 2.15.2 reads
// the Nats-Schedule header (its server/scheduler.go parseMsgSchedule and
// server/cron.go, checked by a differential test against a real server in
// test/integration): `@every DURATION` (one space, a Go duration of at
// least 1s), one of @yearly @annually @monthly @weekly @daily @midnight
// @hourly, or 6 cron fields (second minute hour day-of-month month
// day-of-week) that can fire at least once. It is stricter than the
// server in three places, each refused with a reason: `@at TIME`
// (one-shot, not a schedule for a stored sequence), characters other than
// printable ASCII (the pattern travels in a NATS header), and a `*` or `?`
// followed by `-…`, which the server silently reads as `*`. It returns ""
// when valid, else a message.
func checkSchedule(s string) string {
	const help = `a schedule is "@every DURATION" (e.g. "@every 1h"), @hourly, @daily, @weekly, @monthly, @yearly, or 6 cron fields "SECOND MINUTE HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK" (e.g. "0 30 9 * * MON-FRI")`
	if s == "" {
		return "the schedule is empty; remove `schedule` to run the sequence only on demand, or write " + help
	}
	for i, r := range s {
		if r < ' ' || r > '~' {
			return fmt.Sprintf("got %q: character %d is %s; a schedule is plain ASCII letters, digits, spaces and * ? , - /", clip(s, 60), utf8.RuneCountInString(s[:i])+1, describeRune(r))
		}
	}
	// A NATS header value loses its leading and trailing blanks on the
	// way, so the server never sees them.
	s = strings.Trim(s, " ")
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, err := time.ParseDuration(rest)
		switch {
		case err != nil && strings.TrimSpace(rest) != rest:
			return fmt.Sprintf("got %q: write exactly one space after @every, e.g. \"@every %s\"", clip(s, 60), strings.TrimSpace(rest))
		case err != nil && strings.HasSuffix(rest, "d"):
			return fmt.Sprintf("got %q: a Go duration has no days; write hours, e.g. \"@every 24h\", or use @daily", clip(s, 60))
		case err != nil:
			return fmt.Sprintf("got %q: after @every write one Go duration such as 30s, 15m, 1h or 1h30m", clip(s, 60))
		case d < time.Second:
			return fmt.Sprintf("got %q: the interval must be at least 1s", clip(s, 60))
		}
		return ""
	}
	switch s {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
		return ""
	}
	if strings.HasPrefix(s, "@at ") {
		return fmt.Sprintf("got %q: @at fires once, at one moment, which is not a schedule for a stored sequence; start the run at that time with `skillbus run`, or write %s", clip(s, 60), help)
	}
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
	var sets [6]uint64
	for i, f := range fields {
		bits, msg := cronField(f, cronFields[i])
		if msg != "" {
			return fmt.Sprintf("got %q: %s", clip(s, 60), msg)
		}
		sets[i] = bits
	}
	return cronFires(s, sets)
}

// cronBounds is one cron field as the server reads it.
type cronBounds struct {
	name     string
	min, max uint
	names    []string // names[i] is the name of the value i (months from 1)
	hint     string
}

var cronFields = [6]cronBounds{
	{"second", 0, 59, nil, "0–59"},
	{"minute", 0, 59, nil, "0–59"},
	{"hour", 0, 23, nil, "0–23"},
	{"day-of-month", 1, 31, nil, "1–31"},
	{"month", 1, 12, []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}, "1–12 or JAN–DEC"},
	{"day-of-week", 0, 6, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, "0–6 or SUN–SAT (Sunday is 0; 7 is not accepted)"},
}

// cronStar marks a field written with * or ? (without a step above 1):
// the server then combines day-of-month and day-of-week with AND, else
// with OR.
const cronStar = 1 << 63

// cronField reads one field as the server's getField does: items separated
// by commas (empty items ignored), each `*`, `?`, N, NAME, A-B, with an
// optional /STEP. It returns the set of values as bits (plus cronStar), or
// a message naming the field, the item and the fix.
func cronField(f string, b cronBounds) (uint64, string) {
	var bits uint64
	bad := func(item, format string, a ...any) (uint64, string) {
		where := fmt.Sprintf("the %s field %q", b.name, f)
		if item != f {
			where += fmt.Sprintf(", item %q", item)
		}
		return 0, where + ": " + fmt.Sprintf(format, a...)
	}
	for _, item := range strings.Split(f, ",") {
		if item == "" {
			continue // the server skips empty items ("1,,2" is 1,2)
		}
		rng, step, hasStep := strings.Cut(item, "/")
		if strings.Contains(step, "/") {
			return bad(item, "more than one `/`; write RANGE/STEP, e.g. */15 or 0-30/5")
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		var start, end uint
		star := false
		switch lo {
		case "*", "?":
			if isRange {
				return bad(item, "%q after %s is ignored by the NATS server, so this means every value; write %s alone for every value, or a range such as %d-%d", "-"+hi, lo, lo, b.min, b.max)
			}
			start, end, star = b.min, b.max, true
		default:
			var msg string
			if start, msg = cronValue(lo, b); msg != "" {
				return bad(item, "%s", msg)
			}
			end = start
			if isRange {
				if strings.Contains(hi, "-") {
					return bad(item, "more than one `-`; a range is FROM-TO, e.g. %d-%d", b.min, b.max)
				}
				if end, msg = cronValue(hi, b); msg != "" {
					return bad(item, "%s", msg)
				}
			}
		}
		stepN := uint(1)
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n < 0 {
				return bad(item, "the step %q is not a whole number; write */N or FROM-TO/N with N ≥ 1, e.g. */15", step)
			}
			stepN = uint(n)
			if !isRange {
				end = b.max // "N/STEP" means N-max/STEP
			}
			if stepN > 1 {
				star = false
			}
		}
		switch {
		case start < b.min:
			return bad(item, "%d is below the smallest %s, %d; use %s", start, b.name, b.min, b.hint)
		case end > b.max:
			return bad(item, "%d is above the largest %s, %d; use %s", end, b.name, b.max, b.hint)
		case start > end:
			return bad(item, "the range starts at %d, after its end %d; write %d-%d, or to wrap around write two ranges: %d-%d,%d-%d", start, end, end, start, start, b.max, b.min, end)
		case stepN == 0:
			return bad(item, "a step of 0; the step must be 1 or more, e.g. */15")
		}
		for v := start; v <= end; v += stepN {
			bits |= 1 << v
		}
		if star {
			bits |= cronStar
		}
	}
	if bits&^cronStar == 0 {
		return bad(f, "no value; write *, a number (%s), a range FROM-TO or a list A,B", b.hint)
	}
	return bits, ""
}

// cronValue reads a number or (for months and days of the week) a name,
// case-insensitively, as the server's parseIntOrName does.
func cronValue(v string, b cronBounds) (uint, string) {
	if i := slices.Index(b.names, strings.ToLower(v)); i >= 0 && v != "" {
		return uint(i), ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		kind := "a number"
		if b.names != nil {
			kind = "a number or a name"
		}
		if v == "" {
			return 0, fmt.Sprintf("a value is missing around `-`; write %s (%s)", kind, b.hint)
		}
		return 0, fmt.Sprintf("%q is not %s; use %s", clip(v, 20), kind, b.hint)
	}
	return uint(n), ""
}

// cronFires reports whether 6 parsed fields can ever match a date: the
// server looks five years ahead and refuses a pattern it cannot place
// ("0 0 0 30 2 *": February never has a 30th). Day-of-month and
// day-of-week combine as the server's dayMatches does: with AND when
// either is * (or ?), else with OR.
func cronFires(s string, sets [6]uint64) string {
	dom, month, dow := sets[3], sets[4], sets[5]
	if dom&cronStar != 0 || dow&cronStar != 0 {
		if dom&cronStar != 0 {
			return "" // every day of the month, so every weekday in dow occurs
		}
		// dow is every day: some chosen day must exist in some chosen month.
	} else if dow&^cronStar != 0 {
		return "" // OR: any chosen weekday occurs in every month
	}
	monthDays := [13]uint{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31} // February 29 in leap years
	var months []string
	for m := uint(1); m <= 12; m++ {
		if month&(1<<m) == 0 {
			continue
		}
		months = append(months, strings.ToUpper(cronFields[4].names[m]))
		for d := uint(1); d <= monthDays[m]; d++ {
			if dom&(1<<d) != 0 {
				return ""
			}
		}
	}
	var days []string
	for d := uint(1); d <= 31; d++ {
		if dom&(1<<d) != 0 {
			days = append(days, strconv.Itoa(int(d)))
		}
	}
	return fmt.Sprintf("got %q: it never fires, because no day-of-month in %s exists in %s (FEB has at most 29 days; APR, JUN, SEP and NOV have 30); pick days that exist in those months, or other months", clip(s, 60), clip(strings.Join(days, ","), 40), strings.Join(months, ","))
}

// describeRune names a character for messages: its Unicode code point and,
// when it is visible, the character itself.
func describeRune(r rune) string {
	switch {
	case r == utf8.RuneError:
		return "not valid UTF-8"
	case unicode.IsControl(r):
		return fmt.Sprintf("the control character U+%04X", r)
	case unicode.IsSpace(r):
		return fmt.Sprintf("the space character U+%04X", r)
	case !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r):
		return fmt.Sprintf("the invisible character U+%04X", r)
	}
	return fmt.Sprintf("%q (U+%04X)", r, r)
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
		if z := suggestZone(tz); z != "" {
			return fmt.Sprintf("unknown time zone %q%s; did you mean %q? Names are case-sensitive: Region/City from the IANA time zone database", clip(tz, 60), hint, z)
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
