package seq

import (
	"errors"
	"strings"
	"testing"
)

func schedSeq(schedule, tz string) string {
	s := "name: s\n"
	if schedule != "" {
		s += "schedule: " + quoteYAML(schedule) + "\n"
	}
	if tz != "-" {
		s += "timezone: " + quoteYAML(tz) + "\n"
	}
	return s + "groups:\n  - name: g\n    tools: [{tool: t}]\n"
}

func quoteYAML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + `"`
}

// A cron schedule may name the IANA time zone it is read in; the zone is
// checked when the sequence is stored and only allowed with cron.
func TestTimeZone(t *testing.T) {
	for _, tt := range []struct{ schedule, tz string }{
		{"0 0 3 * * *", "Europe/Berlin"},
		{"0 30 9 * * MON-FRI", "America/New_York"},
		{"0 0 8 * * *", "Asia/Shanghai"},
		{"0 0 0 1 * *", "Asia/Kolkata"}, // a half-hour offset
		{"@daily", "Australia/Lord_Howe"},
		{"@hourly", "UTC"},
		{"0 0 12 * * *", "Etc/GMT-14"},
		{"0 0 12 * * *", "America/Argentina/Buenos_Aires"},
	} {
		s, err := ParseYAML([]byte(schedSeq(tt.schedule, tt.tz)))
		if err != nil {
			t.Errorf("schedule %q timezone %q: %v; want valid", tt.schedule, tt.tz, err)
			continue
		}
		if s.TimeZone != tt.tz {
			t.Errorf("TimeZone = %q; want %q", s.TimeZone, tt.tz)
		}
		roundTrip(t, s)
		if b := mustEncode(t, s); !strings.Contains(string(b), `"timezone":"`+tt.tz+`"`) {
			t.Errorf("canonical form %s lacks the timezone", b)
		}
	}
	for _, tt := range []struct{ schedule, tz, want string }{
		{"0 0 3 * * *", "Europe/Berlln", `unknown time zone "Europe/Berlln"`},
		{"0 0 3 * * *", "europe/berlin", "case-sensitive"},
		{"0 0 3 * * *", "Mars/Olympus_Mons", "unknown time zone"},
		{"0 0 3 * * *", "Europe/Berlin\r\nX-Evil: 1", "space or control character"},
		{"0 0 3 * * *", "../../etc/passwd", "unknown time zone"},
		{"0 0 3 * * *", "/usr/share/zoneinfo/UTC", "unknown time zone"},
		{"0 0 3 * * *", "", "empty"},
		{"0 0 3 * * *", "Local", "differ"},
		{"@every 1h", "Europe/Berlin", "@every"},
		{"", "Europe/Berlin", "has no schedule"},
	} {
		_, err := ParseYAML([]byte(schedSeq(tt.schedule, tt.tz)))
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "timezone: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("schedule %q timezone %q: %v; want an invalid timezone containing %q", tt.schedule, tt.tz, err, tt.want)
		}
	}
	// Unknown fields stay errors, in both forms.
	for _, src := range []string{
		schedSeq("0 0 3 * * *", "-") + "time_zone: Europe/Berlin\n",
		`{"name":"s","schedule":"0 0 3 * * *","tz":"Europe/Berlin","groups":[{"name":"g","tools":"{\"tool\":\"t\"};"}]}`,
	} {
		if _, err := Parse([]byte(src)); !errors.Is(err, ErrUnknownField) || !strings.Contains(err.Error(), "timezone") {
			t.Errorf("%q: %v; want an unknown field suggesting timezone", src, err)
		}
	}
	// JSON form.
	s, err := ParseJSON([]byte(`{"name":"s","schedule":"0 0 9 * * MON","timezone":"Asia/Tokyo","groups":[{"name":"g","tools":"{\"tool\":\"t\"};"}]}`))
	if err != nil || s.TimeZone != "Asia/Tokyo" {
		t.Errorf("JSON form: %v, %+v", err, s)
	}
}

// Schedules are checked as nats-server 2.15.2 reads them (the differential
// test in test/integration compares the two on hundreds of patterns); here:
// each message says what is wrong in the pattern and how to fix it.
func TestCheckSchedule(t *testing.T) {
	for _, ok := range []string{"@every 1h", "@every 90s", "@every 1h30m", "@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually",
		"0 30 9 * * MON-FRI", "*/15 * * * * *", "0 0 0 1,15 * ?", "0 0 12 * jan-mar sun", " 0 0 3 * * * ", "0 0 0 29 2 *", "0 0 0 30 2 MON",
		"0 0 0 31 1-12 *", "0 5/10 * * * *", "0 0 0 * * 0", "0 1,,2 * * * *", "59 59 23 31 12 6", "0 0 0 ? 2 MON", "0 0 0 30 2 */2"} {
		if err := CheckSchedule(ok, ""); err != nil {
			t.Errorf("CheckSchedule(%q) = %v; want valid", ok, err)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"", "the schedule is empty; remove `schedule`"},
		{"@every", "a schedule is \"@every DURATION\""},
		{"@every 500ms", "at least 1s"},
		{"@every  1h", "exactly one space after @every, e.g. \"@every 1h\""},
		{"@every 1d", "a Go duration has no days; write hours, e.g. \"@every 24h\""},
		{"@every forever", "one Go duration such as 30s, 15m, 1h or 1h30m"},
		{"@sometimes", "a schedule is"},
		{"@at 2030-01-02T03:04:05Z", "@at fires once"},
		{"*/5 * * * *", "5-field cron expression; NATS schedules use 6 fields with the seconds first: write \"0 */5 * * * *\""},
		{"* * * *", "with 4 fields"},
		{"0 50-10 * * * *", "the minute field \"50-10\": the range starts at 50, after its end 10; write 10-50, or to wrap around write two ranges: 50-59,0-10"},
		{"0 0 0 * * FRI-MON", "the range starts at 5, after its end 1; write 1-5, or to wrap around write two ranges: 5-6,0-1"},
		{"0 0 0 30 2 *", "it never fires, because no day-of-month in 30 exists in FEB"},
		{"0 0 0 31 4,6,9,11 *", "no day-of-month in 31 exists in APR,JUN,SEP,NOV"},
		{"0 0 0 30 2 ?", "never fires"},
		{"0 0 0 * * 7", "7 is above the largest day-of-week, 6; use 0–6 or SUN–SAT (Sunday is 0; 7 is not accepted)"},
		{"60 * * * * *", "the second field \"60\": 60 is above the largest second, 59"},
		{"* * * 0 * *", "0 is below the smallest day-of-month, 1"},
		{"*/0 * * * * *", "a step of 0; the step must be 1 or more"},
		{"0 */x * * * *", "the step \"x\" is not a whole number"},
		{"0 */5/2 * * * *", "more than one `/`"},
		{"0 1-2-3 * * * *", "more than one `-`"},
		{"0 -5 * * * *", "a value is missing around `-`"},
		{"0 0 12 * JANUARY *", "\"JANUARY\" is not a number or a name; use 1–12 or JAN–DEC"},
		{"0 0 12 MON * *", "\"MON\" is not a number; use 1–31"},
		{"0 0 0 1,32 * *", "item \"32\": 32 is above the largest day-of-month"},
		{"*-5 * * * * *", "\"-5\" after * is ignored by the NATS server, so this means every value; write * alone for every value, or a range such as 0-59"},
		{"0 0 0 1 * ,", "the day-of-week field \",\": no value"},
		{"0\t0 0 * * *", "character 2 is the control character U+0009"},
		{"0 0 0 * * *\r\nX: y", "the control character U+000D"},
		{"0 0 0\u00a0* * *", "the space character U+00A0"},
		{"0 0 0 * * ＊", "'＊' (U+FF0A)"},
	} {
		err := CheckSchedule(tt.in, "")
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "schedule: ") {
			t.Errorf("CheckSchedule(%q) = %v; want an invalid schedule containing %q", tt.in, err, tt.want)
		}
	}
	if err := CheckSchedule("0 0 3 * * *", "Europe/Berlln"); err == nil || !strings.HasPrefix(err.Error(), "timezone: ") {
		t.Errorf("CheckSchedule with an unknown zone = %v", err)
	}
}
