package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/seq"
)

// The NATS server's JetStream error codes for a refused schedule.
const (
	errCodeSchedulePattern  = 10189 // message schedules pattern is invalid
	errCodeScheduleTimeZone = 10223 // message schedules time zone is invalid
)

// schedCase is one schedule offered to both judges.
type schedCase struct {
	pattern, tz string
}

// schedCorpus: valid patterns, invalid ones and edge cases of every kind
// the server's parser has (nats-server 2.15.2, server/cron.go and
// server/scheduler.go).
var schedCorpus = []schedCase{
	// predefined and @every
	{"@hourly", ""}, {"@daily", ""}, {"@midnight", ""}, {"@weekly", ""}, {"@monthly", ""}, {"@yearly", ""}, {"@annually", ""},
	{"@HOURLY", ""}, {"@hourly ", ""}, {" @daily", ""}, {"@sometimes", ""}, {"@every", ""}, {"@", ""},
	{"@every 1s", ""}, {"@every 1h30m", ""}, {"@every 1.5s", ""}, {"@every 1000ms", ""}, {"@every 999ms", ""}, {"@every 0s", ""},
	{"@every -1h", ""}, {"@every 1h ", ""}, {"@every  1h", ""}, {"@every 1d", ""}, {"@every forever", ""}, {"@every 2562047h", ""},
	// field counts
	{"* * * * *", ""}, {"* * * * * * *", ""}, {"0", ""}, {"  0  0  *  *  *  *  ", ""},
	// plain values and bounds
	{"0 0 0 * * *", ""}, {"59 59 23 31 12 6", ""}, {"60 * * * * *", ""}, {"* 60 * * * *", ""}, {"* * 24 * * *", ""},
	{"* * * 0 * *", ""}, {"* * * 32 * *", ""}, {"* * * * 0 *", ""}, {"* * * * 13 *", ""}, {"0 0 0 * * 7", ""}, {"0 0 0 * * 0", ""},
	{"+5 * * * * *", ""}, {"05 * * * * *", ""}, {"0x5 * * * * *", ""}, {"5.0 * * * * *", ""}, {"99999999999999999999 * * * * *", ""},
	// ranges
	{"0 50-10 * * * *", ""}, {"0 10-50 * * * *", ""}, {"0 0 9-17 * * MON-FRI", ""}, {"0 0 0 * * FRI-MON", ""}, {"0 0 0 * * 5-5", ""},
	{"0 1-2-3 * * * *", ""}, {"0 -5 * * * *", ""}, {"0 5- * * * *", ""}, {"0 0 0 * NOV-FEB *", ""}, {"0 0 0 * FEB-NOV *", ""},
	// steps
	{"*/15 * * * * *", ""}, {"*/0 * * * * *", ""}, {"0 */60 * * * *", ""}, {"0 */61 * * * *", ""}, {"0 5/10 * * * *", ""},
	{"0 0-30/5 * * * *", ""}, {"0 30-0/5 * * * *", ""}, {"0 */5/2 * * * *", ""}, {"0 */x * * * *", ""}, {"0 */-1 * * * *", ""},
	{"0 0 0 */2 * *", ""}, {"0 0 0 ?/3 * *", ""}, {"0 0 0 * JAN/3 *", ""}, {"0 0 0 * * MON/2", ""},
	// names
	{"0 0 12 * jan-mar sun", ""}, {"0 0 12 * Jan SUN", ""}, {"0 0 12 * JANUARY *", ""}, {"0 0 12 * * SUNDAY", ""}, {"0 0 12 MON * *", ""},
	{"0 0 12 * * jan", ""}, {"0 0 12 * dec-dec *", ""},
	// lists
	{"0 0 0 1,15 * ?", ""}, {"0 0,30 * * * *", ""}, {"0 1,,2 * * * *", ""}, {"0 ,5 * * * *", ""}, {"0 5, * * * *", ""},
	{"0 0 0 1,32 * *", ""}, {"0 0 0 * * 1-5,0", ""}, {"0 0 0 , * *", ""}, {"0 0 0 * , *", ""},
	// impossible and rare dates
	{"0 0 0 30 2 *", ""}, {"0 0 0 31 2 *", ""}, {"0 0 0 29 2 *", ""}, {"0 0 0 31 4 *", ""}, {"0 0 0 31 4,6,9,11 *", ""},
	{"0 0 0 31 4,5 *", ""}, {"0 0 0 30-31 2 *", ""}, {"0 0 0 31 * *", ""}, {"0 0 0 30 2 ?", ""}, {"0 0 0 30 2 MON", ""},
	{"0 0 0 30 2 */2", ""}, {"0 0 0 30 2 */1", ""}, {"0 0 0 ? 2 MON", ""}, {"0 0 0 29 2 MON", ""}, {"0 0 0 31 APR *", ""},
	// time zones
	{"0 0 3 * * *", "Europe/Berlin"}, {"0 30 9 * * MON-FRI", "America/New_York"}, {"@daily", "Asia/Kolkata"},
	{"0 0 3 * * *", "Europe/Berlln"}, {"0 0 3 * * *", "europe/berlin"}, {"@every 1h", "Europe/Berlin"},
	{"0 0 3 * * *", "UTC"}, {"0 0 3 * * *", "Etc/GMT+5"},
}

// schedStricter are schedules the server accepts and skillbus refuses on
// purpose, with the reason its message gives.
var schedStricter = map[schedCase]string{
	{"*-5 * * * * *", ""}:            "ignored by the NATS server",
	{"0 ?-3 * * * *", ""}:            "ignored by the NATS server",
	{"@at 2030-01-02T03:04:05Z", ""}: "@at fires once",
	{"0 0 0 1 * ,", ""}:              "no value",
	{"0\t0 0 * * *", ""}:             "control character U+0009",
	{"0 0 3 * * *", "Local"}:         "whichever machine",
	{"0 0 0\u00a0* * *", ""}:         "U+00A0",
}

// serverVerdict publishes a schedule message with the Nats-Schedule (and
// Nats-Schedule-Time-Zone) header and reports whether the server took it.
func serverVerdict(t *testing.T, js jetstream.JetStream, i int, c schedCase) (bool, string) {
	t.Helper()
	m := nats.NewMsg(fmt.Sprintf("schedtest.s%d", i))
	m.Header.Set(jetstream.ScheduleHeader, c.pattern)
	m.Header.Set(jetstream.ScheduleTargetHeader, "schedtest.target")
	if c.tz != "" {
		m.Header.Set(jetstream.ScheduleTimeZoneHeader, c.tz)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := js.PublishMsg(ctx, m)
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return true, ""
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == errCodeSchedulePattern || apiErr.ErrorCode == errCodeScheduleTimeZone):
		return false, apiErr.Description
	}
	t.Fatalf("publishing schedule %q (zone %q): %v; want an ack or a schedule error", c.pattern, c.tz, err)
	return false, ""
}

// ourVerdict is pkg/seq's store-time check, through a whole sequence.
func ourVerdict(c schedCase) error {
	src := fmt.Sprintf(`{"name":"s","schedule":%q,%s"groups":[{"name":"g","tools":"{\"tool\":\"t\"};"}]}`, c.pattern, map[bool]string{true: fmt.Sprintf(`"timezone":%q,`, c.tz), false: ""}[c.tz != ""])
	_, err := seq.ParseJSON([]byte(src))
	return err
}

// randomCron builds cron patterns from the pieces the server's parser
// knows: mostly values valid for their field, sometimes ones out of range,
// names in the wrong field, reversed ranges, odd steps and empty items.
func randomCron(r *rand.Rand) string {
	valid := [6][]string{
		{"0", "1", "30", "59", "*", "?"},
		{"0", "15", "45", "59", "*", "?"},
		{"0", "9", "12", "23", "*", "?"},
		{"1", "15", "28", "29", "30", "31", "*", "?"},
		{"1", "2", "4", "12", "JAN", "feb", "Apr", "nov", "*", "?"},
		{"0", "1", "5", "6", "SUN", "mon", "Fri", "*", "?"},
	}
	odd := []string{"60", "24", "32", "13", "7", "-1", "x", "", "00", "+3", "MON", "dec"}
	item := func(f int) string {
		pick := func() string {
			if r.IntN(30) == 0 {
				return odd[r.IntN(len(odd))]
			}
			return valid[f][r.IntN(len(valid[f]))]
		}
		s := pick()
		if r.IntN(5) == 0 && s != "*" && s != "?" {
			s += "-" + pick()
		}
		if r.IntN(6) == 0 {
			s += "/" + []string{"0", "1", "2", "3", "7", "15", "100", ""}[r.IntN(8)]
		}
		return s
	}
	f := make([]string, 6)
	for i := range f {
		parts := make([]string, 1+r.IntN(2))
		for j := range parts {
			parts[j] = item(i)
		}
		f[i] = strings.Join(parts, ",")
		if i == 0 && strings.Trim(f[i], ",") == "" {
			// The server finds an empty seconds field invalid only after
			// walking five years second by second: keep the test fast.
			f[i] = "0"
		}
	}
	return strings.Join(f, " ")
}

// The store-time schedule check and nats-server 2.15.2 give the same
// verdict for every pattern of the corpus (and for random ones), except
// the few that skillbus refuses on purpose, which the server must accept.
func TestScheduleVerdictsMatchServer(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SCHEDDIFF", Subjects: []string{"schedtest.>"}, Storage: jetstream.MemoryStorage, AllowMsgSchedules: true}); err != nil {
		t.Fatal(err)
	}

	cases := append([]schedCase(nil), schedCorpus...)
	r := rand.New(rand.NewPCG(7, 11))
	for range 500 {
		cases = append(cases, schedCase{pattern: randomCron(r)})
	}
	if len(schedCorpus) < 60 {
		t.Fatalf("the corpus has %d patterns; want at least 60", len(schedCorpus))
	}
	accepted, refused, i := 0, 0, 0
	for _, c := range cases {
		i++
		// The stricter cases are checked below.
		if _, ok := schedStricter[c]; ok {
			continue
		}
		ours := ourVerdict(c)
		theirs, why := serverVerdict(t, js, i, c)
		switch {
		case ours == nil && !theirs:
			t.Errorf("schedule %q (zone %q): skillbus accepts it, the server refuses it (%s)", c.pattern, c.tz, why)
		case ours != nil && theirs:
			if strings.Contains(ours.Error(), "ignored by the NATS server") {
				continue // a random "*-…": refused on purpose, accepted by the server
			}
			t.Errorf("schedule %q (zone %q): skillbus refuses it (%v), the server accepts it", c.pattern, c.tz, ours)
		case ours != nil:
			refused++
			if !errors.Is(ours, seq.ErrInvalidValue) || !strings.Contains(ours.Error(), "schedule: ") && !strings.Contains(ours.Error(), "timezone: ") {
				t.Errorf("schedule %q: the error %v does not name the field", c.pattern, ours)
			}
		default:
			accepted++
		}
	}
	t.Logf("%d schedules (%d of the corpus, %d random): %d accepted and %d refused by both", len(cases), len(schedCorpus), len(cases)-len(schedCorpus), accepted, refused)
	if accepted < 40 || refused < 40 {
		t.Errorf("the corpus exercises too little: %d accepted, %d refused", accepted, refused)
	}

	for c, reason := range schedStricter {
		i++
		ours := ourVerdict(c)
		if ours == nil || !strings.Contains(ours.Error(), reason) {
			t.Errorf("schedule %q (zone %q): %v; want it refused saying %q", c.pattern, c.tz, ours, reason)
		}
		if ok, why := serverVerdict(t, js, i, c); !ok {
			t.Errorf("schedule %q (zone %q) is in the stricter list but the server refuses it too (%s): move it to the corpus", c.pattern, c.tz, why)
		}
	}
}

// FuzzScheduleVerdicts offers fuzzed schedules to pkg/seq's check and to a
// real nats-server (one per fuzzing process) and requires the same verdict,
// the stricter refusals aside. Run it with
// go test ./test/integration -run X -fuzz FuzzScheduleVerdicts.
func FuzzScheduleVerdicts(f *testing.F) {
	for _, c := range schedCorpus {
		if c.tz == "" {
			f.Add(c.pattern)
		}
	}
	srv := natsserver.StartTB(f, natsserver.Options{})
	nc := natsserver.ConnectTB(f, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SCHEDFUZZ", Subjects: []string{"schedtest.>"}, Storage: jetstream.MemoryStorage, AllowMsgSchedules: true, MaxMsgsPerSubject: 1}); err != nil {
		f.Fatal(err)
	}
	i := 0
	f.Fuzz(func(t *testing.T, pattern string) {
		for _, r := range pattern {
			if r < ' ' || r > '~' {
				t.Skip("not a header value; refused by skillbus on its own")
			}
		}
		if fs := strings.Fields(pattern); len(fs) == 6 && strings.Trim(fs[0], ",") == "" {
			t.Skip("an empty seconds field makes the server walk five years second by second")
		}
		if strings.TrimSpace(pattern) == "" {
			t.Skip("an empty Nats-Schedule is a plain message to the server")
		}
		i++
		ours := ourVerdict(schedCase{pattern: pattern})
		theirs, why := serverVerdict(t, js, i%1000, schedCase{pattern: pattern})
		switch {
		case ours == nil && !theirs:
			t.Fatalf("schedule %q: skillbus accepts it, the server refuses it (%s)", pattern, why)
		case ours != nil && theirs && !isStricter(ours):
			t.Fatalf("schedule %q: skillbus refuses it (%v), the server accepts it", pattern, ours)
		}
	})
}

// isStricter reports whether err is one of skillbus's deliberate refusals
// of a schedule the server would take.
func isStricter(err error) bool {
	for _, s := range []string{"ignored by the NATS server", "@at fires once", "no value"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
