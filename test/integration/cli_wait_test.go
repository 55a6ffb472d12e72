package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
)

// cliWaitSeq: a listing, a 1 s timer, a listing.
const cliWaitSeq = `name: nu-fe
groups:
  - name: nu-list
    out: {a: object}
    tools: [{tool: fs.list, args: {path: .}, as: a}]
  - name: nu-approve
    wait_for: {duration: 1s}
  - name: nu-after
    out: {b: object}
    tools: [{tool: fs.list, args: {path: .}, as: b}]
`

// TestCLIWaitGroup: against a real stack (registry, seqworker, built-in
// tools), `skillbus call` of a wait group prints only its error (stderr,
// exit 1; it printed an empty table on stdout first; with -o json the
// reply, and no call-… run is recorded for it), and `skillbus run`
// of a sequence with a duration wait prints the wait and the resume after
// group 1 and before groups 2 and 3 (the resume came after them).
func TestCLIWaitGroup(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nu-fe.seq.yaml"), []byte(cliWaitSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	cliStack(t, dir, t.TempDir())
	cliEventually(t, "the sequence stored", func() bool {
		code, out, _ := cliRun(t, "seqs")
		return code == 0 && strings.Contains(out, "nu-fe")
	})
	code, out, errOut := cliRun(t, "call", "nu-approve")
	if code != 1 || out != "" || !strings.Contains(errOut, "is a wait (wait_for), which only a run can do") {
		t.Errorf("call of a wait group = %d, stdout %q, stderr %q; want 1, nothing on stdout, the error", code, out, errOut)
	}
	code, out, errOut = cliRun(t, "call", "nu-approve", "-o", "json")
	var reply events.SeqCallReply
	if code != 1 || json.Unmarshal([]byte(out), &reply) != nil || !strings.Contains(reply.Error, "which only a run can do") || !strings.Contains(errOut, "which only a run can do") || reply.RunID != "" {
		t.Errorf("call -o json of a wait group = %d, stdout %q, stderr %q; want 1, the reply with its error and no run id (nothing recorded) on stdout, the error on stderr", code, out, errOut)
	}
	code, _, errOut = cliRun(t, "run", "nu-fe")
	if code != 0 {
		t.Fatalf("run nu-fe = %d\n%s", code, errOut)
	}
	order := []string{"group 1/3 nu-list", `waiting at group 2 "nu-approve" for a timer (duration until `, "resumed by worker ", "group 2/3 nu-approve", "group 3/3 nu-after", " succeeded in "}
	rest := errOut
	for _, want := range order {
		i := strings.Index(rest, want)
		if i < 0 || strings.Count(errOut, want) > 1 && want != " succeeded in " {
			t.Fatalf("run's progress: %q missing, out of order or repeated; want %q in that order, once each:\n%s", want, order, errOut)
		}
		rest = rest[i+len(want):]
	}
}
