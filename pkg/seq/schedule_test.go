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
