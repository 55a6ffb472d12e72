package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestPrintRunStateEndsWithNewline checks that the text form of a run ends
// with exactly one newline whether its last text output has one or not.
func TestPrintRunStateEndsWithNewline(t *testing.T) {
	for _, tc := range []struct{ name, text, end string }{
		{"text without final newline", "line 1\nline 2", "line 2\n"},
		{"text with final newline", "line 1\nline 2\n", "line 2\n"},
		{"one-line text, shown inline as JSON", "line 2", `report: "line 2"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := json.Marshal(tc.text)
			var out bytes.Buffer
			printRunState(&out, &events.RunState{RunID: "r", Sequence: "s", Status: events.StatusSucceeded, Slots: map[string]json.RawMessage{"report": v}}, nil)
			got := out.String()
			if !strings.HasSuffix(got, tc.end) || strings.HasSuffix(got, "\n\n") {
				t.Errorf("printRunState(report %q) ends %q; want it to end with %q", tc.text, got[max(0, len(got)-20):], tc.end)
			}
		})
	}
}

// TestErrorLineKeepsCode: an error cut to a table's width keeps the tool
// error's code (a 503 was hidden by the cut).
func TestErrorLineKeepsCode(t *testing.T) {
	long := `group "deploy": tool "very.long.provider.name.restart" failed (code 503): ` + strings.Repeat("the service is not ready ", 8)
	got := errorLine(long, 60)
	if !strings.Contains(got, "(code 503)") || len(got) > 60+len("…")+1 {
		t.Errorf("errorLine(long, 60) = %q (%d bytes); want at most about 60 bytes ending with (code 503)", got, len(got))
	}
	late := strings.Repeat("x", 80) + ` tool "t" failed (code 503): boom`
	if got := errorLine(late, 60); !strings.HasSuffix(got, "… (code 503)") {
		t.Errorf("errorLine(late, 60) = %q; want the cut text then (code 503)", got)
	}
	if got := errorLine("short (code 400): bad", 60); got != "short (code 400): bad" {
		t.Errorf("errorLine(short) = %q; want it unchanged", got)
	}
}

// TestResultTableSaysAnErrorOnce: a missing tool's text is in the run's
// error, its group's and its call's; the table says it once.
func TestResultTableSaysAnErrorOnce(t *testing.T) {
	callErr := `no provider serves tool "fs.gone"; start one or set missing: skip`
	groupErr := `call fs.gone: ` + callErr
	runErr := `group 1 "scan": ` + groupErr
	var b strings.Builder
	printResultTable(&b, []seq.GroupResult{{Name: "scan", Status: seq.GroupFailed, Error: groupErr,
		Calls: []seq.CallResult{{Tool: "fs.gone", Status: seq.CallFailed, Attempts: 1, Error: callErr}}}}, runErr)
	out := b.String()
	if n := strings.Count(out, "no provider serves"); n != 0 {
		t.Errorf("the table repeats the run's error %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "(the run's error)") || !strings.Contains(out, "(the group's error)") {
		t.Errorf("the table does not point at the error said above:\n%s", out)
	}
	b.Reset()
	printResultTable(&b, []seq.GroupResult{{Name: "scan", Status: seq.GroupFailed, Error: groupErr,
		Calls: []seq.CallResult{{Tool: "fs.gone", Status: seq.CallFailed, Attempts: 1, Error: callErr}}}}, "")
	if n := strings.Count(b.String(), "no provider serves"); n != 1 {
		t.Errorf("without a run error the text is said %d times; want once (the group's row):\n%s", n, b.String())
	}
}
