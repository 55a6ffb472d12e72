package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
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
