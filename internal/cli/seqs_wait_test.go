package cli

import (
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/seq"
)

// TestDescribeWaitGroup: `seqs show` says what a wait_for group waits for
// and leaves out what only calls have (parallelism, the group timeout,
// missing); it printed "(parallel, timeout 1m0s, missing: fail" for a wait.
func TestDescribeWaitGroup(t *testing.T) {
	s, err := seq.Parse([]byte("name: w\ngroups:\n  - name: w-ask\n    out: {ok: bool}\n    wait_for: {signal: approve, timeout: 1h}\n  - name: w-nap\n    wait_for: {duration: 10m}\n  - name: w-go\n    in: {ok: bool}\n    tools: [{tool: t.x, args: {ok: $args.ok}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	describeSequence(&b, s)
	out := b.String()
	for _, want := range []string{`1. w-ask  (waits for the signal "approve" (timeout 1h0m0s), on_error: abort)`, "2. w-nap  (waits for 10m0s, on_error: abort)", "3. w-go  (parallel, timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("seqs show lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "missing:") != 1 {
		t.Errorf("seqs show gives a missing policy to a wait group:\n%s", out)
	}
}
