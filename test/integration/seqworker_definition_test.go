package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// defSeq is a three-group sequence whose calls say which version of it
// they belong to; extra adds a fourth group (an edit that changes the
// group count).
func defSeq(name, version string, extra bool) string {
	src := fmt.Sprintf(`
name: %[1]s
groups:
  - name: %[1]s-one
    tools: [{tool: def.step, args: {v: %[2]s-1}}]
  - name: %[1]s-two
    timeout: 60s
    tools: [{tool: def.block, args: {v: %[2]s-2, s: %[1]s}}]
  - name: %[1]s-three
    tools: [{tool: def.step, args: {v: %[2]s-3}}]
`, name, version)
	if extra {
		src += fmt.Sprintf("  - name: %[1]s-four\n    tools: [{tool: def.step, args: {v: %[2]s-4}}]\n", name, version)
	}
	return src
}

// TestSeqworkerResumeUsesStartDefinition: a run resumed after its holder
// was killed (SIGKILL of a worker process) finishes with the definition it
// started with, although its sequence was edited meanwhile (a command
// changed and a group added): no call of the new definition is made and
// the run's three groups succeed (before: the resumed run ran the new
// command, or failed with "the checkpoint has 3 groups, the sequence now
// has 4" and stored every group pending). When the copy of the starting
// definition is gone too, the run fails naming both revisions and keeps
// the groups that ran.
func TestSeqworkerResumeUsesStartDefinition(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var mu sync.Mutex
	var seen []string
	entered := make(chan string, 8)
	killed := make(chan struct{})
	first := map[string]bool{}
	swServe(t, env,
		tool.Tool{Name: "def.step", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			mu.Lock()
			seen = append(seen, string(args))
			mu.Unlock()
			return args, nil
		}},
		tool.Tool{Name: "def.block", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			mu.Lock()
			seen = append(seen, string(args))
			again := first[string(args)]
			first[string(args)] = true
			mu.Unlock()
			if !again {
				entered <- string(args)
				select { // the first call hangs until its worker is dead
				case <-killed:
				case <-ctx.Done():
				}
				return nil, tool.Errorf("500", "caller gone")
			}
			return args, nil
		}},
	)
	revKeep := swStore(t, env, defSeq("defkeep", "old", false))
	revGone := swStore(t, env, defSeq("defgone", "old", false))

	cmd := exec.Command(os.Args[0], "-test.run=^TestSeqworkerChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), swChildEnv+"="+env.srv.ClientURL())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	swRequest(t, env, "r-defkeep", "defkeep", nil)
	swRequest(t, env, "r-defgone", "defgone", nil)
	for range 2 {
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			st, _ := swState(t, env, "r-defkeep")
			t.Fatalf("the child worker never reached group 2 of both runs; state %s; its output:\n%s", st.Result, out.String())
		}
	}
	for _, id := range []string{"r-defkeep", "r-defgone"} {
		st, _ := swState(t, env, id)
		if st.Status != events.StatusRunning || st.FinishedGroups != 1 || st.Definition == nil {
			t.Fatalf("%s before the kill: %s, %d finished, definition %+v; want running with group 1's checkpoint and its definition recorded", id, st.Status, st.FinishedGroups, st.Definition)
		}
	}
	// Edit both sequences while their runs are in flight: a new command
	// in every group, and one more group.
	newKeep := swStore(t, env, defSeq("defkeep", "new", true))
	newGone := swStore(t, env, defSeq("defgone", "new", true))
	// The copy of defgone's starting definition disappears.
	st, _ := swState(t, env, "r-defgone")
	obs, err := env.js.ObjectStore(context.Background(), events.BucketRunSlots)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(context.Background(), st.Definition.Object); err != nil {
		t.Fatalf("delete %s: %v", st.Definition.Object, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(killed)

	swWorker(t, env, seqworker.Config{})
	keep := swWait(t, env, "r-defkeep", 60*time.Second)
	gone := swWait(t, env, "r-defgone", 60*time.Second)

	if keep.Status != events.StatusSucceeded || keep.FinishedGroups != 3 || keep.Groups != 3 {
		t.Errorf("r-defkeep: %s, %d of %d groups (%s); want succeeded with the 3 groups it started with", keep.Status, keep.FinishedGroups, keep.Groups, keep.Error)
	}
	if keep.Definition == nil || keep.Definition.Revision != revKeep {
		t.Errorf("r-defkeep definition %+v; want revision %d (the one it started with, not %d)", keep.Definition, revKeep, newKeep)
	}
	mu.Lock()
	calls := strings.Join(seen, " ")
	mu.Unlock()
	if strings.Contains(calls, "new-") {
		t.Errorf("calls of the edited definition were made: %s", calls)
	}
	if !strings.Contains(calls, `{"v":"old-3"}`) {
		t.Errorf("group 3 of the starting definition was not called: %s", calls)
	}

	if gone.Status != events.StatusFailed || gone.Attempt != 2 {
		t.Errorf("r-defgone: %s on delivery %d (%s); want failed on the resuming delivery", gone.Status, gone.Attempt, gone.Error)
	}
	for _, want := range []string{fmt.Sprintf("revision %d", revGone), fmt.Sprintf("now at revision %d", newGone), "start a new run"} {
		if !strings.Contains(gone.Error, want) {
			t.Errorf("r-defgone error %q; want it to name %q", gone.Error, want)
		}
	}
	if res := swResult(t, gone); len(res.Groups) != 3 || res.Groups[0].Status != "succeeded" {
		t.Errorf("r-defgone result: %d groups, group 1 %v; want the 3 groups it ran with group 1 succeeded", len(res.Groups), res.Groups)
	}
}
