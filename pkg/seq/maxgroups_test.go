package seq

import (
	"fmt"
	"strings"
	"testing"
)

// TestMaxGroups: a sequence of MaxGroups groups parses; one more is
// refused naming the count and the limit (its run state could not fit one
// RUNS entry: docs/runs.md, Large state).
func TestMaxGroups(t *testing.T) {
	src := func(n int) string {
		var b strings.Builder
		b.WriteString("name: many\ngroups:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - name: g%d\n    out: {o%d: object}\n    tools:\n      - {tool: fs.stat, args: {path: .}, as: o%d}\n", i, i, i)
		}
		return b.String()
	}
	if _, err := Parse([]byte(src(MaxGroups))); err != nil {
		t.Fatalf("%d groups: %v", MaxGroups, err)
	}
	_, err := Parse([]byte(src(MaxGroups + 1)))
	if err == nil {
		t.Fatalf("%d groups parsed; want an error", MaxGroups+1)
	}
	if want := fmt.Sprintf("%d groups; a sequence has at most %d", MaxGroups+1, MaxGroups); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q; want it to contain %q", err, want)
	}
}
