package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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

// TestPrintSlotsShowsTextAsWritten: a one-line text output is shown as it
// reads — `<`, `>`, `&` and other characters as themselves, not as the
// \u003c escapes of the stored JSON — and a long one in full below the
// list, as the README promises for text outputs; a value stays JSON (quotes
// and backslashes escaped, control and bidi characters escaped).
func TestPrintSlotsShowsTextAsWritten(t *testing.T) {
	long := strings.Repeat("x < y && ", 30)
	for _, tc := range []struct {
		name, stored, want string
	}{
		{"html characters", `"if a \u003c b \u0026\u0026 c \u003e d"`, `  s: "if a < b && c > d"` + "\n"},
		{"quotes and backslashes", `"say \"hi\" \\u003c"`, `  s: "say \"hi\" \\u003c"` + "\n"},
		{"unicode escaped by another encoder", `"caf\u00e9 \ud83d\ude00 日本"`, `  s: "café 😀 日本"` + "\n"},
		{"control and bidi characters stay escaped", `"a\u001b[2J b\u202e c\u2028"`, `  s: "a\u001b[2J b\u202e c\u2028"` + "\n"},
		{"inside an object", `{"cmp":"a \u003c b","n":1}`, `  s: {"cmp":"a < b","n":1}` + "\n"},
		{"long one-line text in full", mustJSON(t, long), "  s: text, 1 line(s), below\n\n── s ──\n" + long + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printSlots(&out, map[string]json.RawMessage{"s": json.RawMessage(tc.stored)}, nil)
			if got := strings.TrimPrefix(out.String(), "\nOutputs:\n"); got != tc.want {
				t.Errorf("printSlots(%s) =\n%q; want\n%q", tc.stored, got, tc.want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunShowsOneLineTextAsWritten: `skillbus run` of a sequence whose
// text.render writes `if a < b && c > "d" — é` shows that text, not
// `\u003c` and `\u0026` escapes.
func TestRunShowsOneLineTextAsWritten(t *testing.T) {
	t.Setenv(EnvNATSURL, "")
	dir := t.TempDir()
	p := filepath.Join(dir, "t.seq.yaml")
	src := "name: t\ngroups:\n  - name: t-g\n    out: {s: string}\n    tools:\n      - tool: text.render\n        args: {template: 'if a < b && c > \"d\" — é'}\n        as: s\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runMain(t, "run", p, "--tools-root", dir, "--data", t.TempDir())
	if want := `  s: "if a < b && c > \"d\" — é"` + "\n"; code != ExitOK || !strings.Contains(out, want) {
		t.Errorf("run = %d, stdout %q, stderr %q; want stdout to hold %q", code, out, errb, want)
	}
}
