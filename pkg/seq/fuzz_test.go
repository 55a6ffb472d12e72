package seq

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addExamples seeds a fuzz target with the example sequences of the given
// extension (the checked-in corpus under testdata/fuzz holds more seeds).
func addExamples(f *testing.F, ext string) {
	files, _ := filepath.Glob("../../examples/sequences/*" + ext)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// checkParsed asserts the properties every parser result must have: a
// success round-trips through Encode; a failure is a non-empty Errors whose
// problems each wrap a sentinel and have a message.
func checkParsed(t *testing.T, s *Sequence, err error) {
	if err != nil {
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %v is not a non-empty Errors", err)
		}
		for i, e := range errs {
			if e.Kind == nil || e.Message == "" {
				t.Fatalf("problem without kind or message: %+v", e)
			}
			if i > 0 && e.Line < errs[i-1].Line {
				t.Fatalf("problems out of line order: line %d after line %d:\n%v", e.Line, errs[i-1].Line, errs)
			}
		}
		return
	}
	if s == nil || len(s.Groups) == 0 || s.Signature == nil {
		t.Fatalf("success with an incomplete sequence: %+v", s)
	}
	roundTrip(t, s)
}

func FuzzParseJSON(f *testing.F) {
	addExamples(f, ".json")
	f.Add([]byte(`{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"t\"};"}]}`))
	// when limits and exact numbers
	f.Add([]byte(`{"name":"s","groups":[{"name":"g","in":{"l":"array"},"when":"[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, $args.l.exists(c, c == a + b)))","tools":"{\"tool\":\"t\"};"}]}`))
	f.Add([]byte(`{"name":"s","groups":[{"name":"g","in":{"n":"integer"},"when":"$args.n == 9007199254740993","tools":"{\"tool\":\"t\",\"args\":{\"n\":9.007199254740993e15,\"m\":123456789012345678901234567890,\"t\":\"$args.n x\"}};"}]}`))
	f.Add([]byte(`{"name":"s","groups":[{"name":"g","out":{"ok":"bool"},"wait_for":{"signal":"approve","timeout":"24h"}},{"name":"h","in":{"at":"string"},"wait_for":{"until":"$args.at"},"tools":null}]}`))
	f.Add([]byte(`{"name":"s","schedule":[{"name":"a","every":"30s","overlap":"buffer_all","args":{"x":1},"pause_on_failure":2}],"groups":[{"name":"g","in":{"x":"integer"},"tools":"{\"tool\":\"t\",\"args\":{\"x\":\"$args.x\"}};"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseJSON(data)
		checkParsed(t, s, err)
	})
}

func FuzzParseYAML(f *testing.F) {
	addExamples(f, ".yaml")
	f.Add([]byte("name: s\ngroups:\n  - name: g\n    tools: [{tool: t}]\n"))
	f.Add([]byte("name: 开机自检\nboot: true\ngroups:\n  - name: 检查磁盘\n    tools: [{tool: t}]\n  - name: cafe\u0301\n    tools: [{tool: t}]\n  - name: pаyments\n    tools: [{tool: t}]\n"))
	f.Add([]byte("name: s\ngroups:\n  - name: g\n    in: {n: number}\n    when: $args.n > 1e308 || size('" + strings.Repeat("x", 50) + "' + '') > 1\n    tools: [{tool: t, args: {a: 9007199254740993.0, b: 0x1F, c: .5, d: 1e999}}]\n"))
	f.Add([]byte("name: t3\n\n\ngruops:\n\n\n  - name: g\n    missing: degarde\n    when: >-\n      $args.x >\ntimezone: europe/berlin\n"))
	f.Add([]byte("---\nname: s\ndescription: d\n---\n# Title\n"))
	f.Add([]byte("name: s\ngroups:\n  - name: g\n    out: {ok: bool}\n    wait_for: {signal: approve, timeout: 24h}\n    on_error: continue\n  - name: h\n    wait_for: {duration: 1h, timeout: 2h}\n    tools: [{tool: t}]\n"))
	// schedule entries (entries.go)
	f.Add([]byte(entriesSeq))
	f.Add([]byte("name: s\nschedule:\n  - every: 1h\n    every: 2h\n  - {cron: \"0 0 9 * * *\", timezone: UTC, jitter: 1m, overlap: cancel_other, start_at: \"2026-01-01T00:00:00Z\"}\ngroups:\n  - name: g\n    tools: [{tool: t}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseYAML(data)
		checkParsed(t, s, err)
	})
}

func FuzzSplitTools(f *testing.F) {
	for _, s := range []string{`{"tool":"a"};`, `{"tool":"a","args":{"q":"x;y"}};{"tool":"b"};`, `{"a":"\"};"};`, `{;`, `};{`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spans, err := SplitTools(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("SplitTools(%q) error %v does not wrap ErrSyntax", s, err)
			}
			return
		}
		if len(spans) == 0 {
			t.Fatalf("SplitTools(%q) = no spans and no error", s)
		}
		// The spans, each followed by `;`, rebuild the input minus blanks between them.
		var b strings.Builder
		prev := 0
		for _, sp := range spans {
			if s[sp.Offset:sp.Offset+len(sp.Text)] != sp.Text || sp.Offset < prev {
				t.Fatalf("SplitTools(%q): span %+v does not match the input", s, sp)
			}
			if strings.TrimSpace(strings.TrimSpace(s[prev:sp.Offset])) != "" && strings.Trim(s[prev:sp.Offset], " \t\r\n;") != "" {
				t.Fatalf("SplitTools(%q): text between spans was dropped: %q", s, s[prev:sp.Offset])
			}
			if sp.Text[0] != '{' || sp.Text[len(sp.Text)-1] != '}' {
				t.Fatalf("SplitTools(%q): span %q is not an object", s, sp.Text)
			}
			b.WriteString(sp.Text)
			b.WriteString(";")
			prev = sp.Offset + len(sp.Text)
		}
		if strings.Trim(s[prev:], " \t\r\n") != ";" {
			t.Fatalf("SplitTools(%q): the input does not end with one `;` after the last span", s)
		}
	})
}

// FuzzCheckSchedule: the schedule check never panics, and what it accepts
// is printable ASCII, keeps its verdict with spaces around it, and is an
// @ form or 6 cron fields. (test/integration's FuzzScheduleVerdicts
// compares its verdicts with a real NATS server.)
func FuzzCheckSchedule(f *testing.F) {
	for _, s := range []string{"@every 1h", "@hourly", "0 30 9 * * MON-FRI", "*/5 * * * *", "0 50-10 * * * *", "0 0 0 30 2 *", "0 0 0 29 2 *",
		"0 0 0 * * 7", "*/0 * * * * *", "*-5 * * * * *", "0 0 0 1 * ,", "@at 2030-01-02T03:04:05Z", "0 1,,2 * * * *", "0 5/10 * * * *", "0 0 0 30 2 */2", "@every  1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		msg := checkSchedule(s)
		if msg != "" {
			return
		}
		for _, r := range s {
			if r < ' ' || r > '~' {
				t.Fatalf("accepted %q with the character %U", s, r)
			}
		}
		if again := checkSchedule("  " + s + " "); again != "" {
			t.Fatalf("accepted %q but not with spaces around it: %s", s, again)
		}
		if tr := strings.TrimSpace(s); !strings.HasPrefix(tr, "@") && len(strings.Fields(tr)) != 6 {
			t.Fatalf("accepted %q, which is neither an @ form nor 6 fields", s)
		}
	})
}
