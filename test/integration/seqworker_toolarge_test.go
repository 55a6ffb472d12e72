package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// tooLargeSeq is a sequence of n one-call groups, each writing a slot of
// about 300 bytes: its state outgrows a 48 KiB RUNS entry after about 30
// groups.
func tooLargeSeq(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ngroups:\n", name)
	for i := range n {
		fmt.Fprintf(&b, "  - name: %s-%d\n    out: {o%d: string}\n    tools:\n      - {tool: big.pad, as: o%d}\n", name, i, i, i)
	}
	return b.String()
}

// TestSeqworkerStateTooLarge: a run whose checkpoint outgrows its RUNS
// entry fails at once — on its first delivery, every group's tool called
// once, with an error naming the group and the limit — instead of running
// its last group again on each of its deliveries until they are exhausted
// (before: "gave up after N deliveries", the group re-run each time). The
// failed state keeps the last checkpoint's groups (runs show does not say
// "No group has run yet").
func TestSeqworkerStateTooLarge(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.MaxValueSize = 48 << 10
	env := swStart(t, natsserver.Options{}, opts)
	var calls swCounter
	pad := strings.Repeat("x", 300)
	swServe(t, env, tool.Tool{Name: "big.pad", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		calls.add("big.pad")
		return pad, nil
	}})
	swStore(t, env, tooLargeSeq("toolarge", 150))
	swWorker(t, env, seqworker.Config{})
	start := time.Now()
	swRequest(t, env, "r-toolarge", "toolarge", nil)
	st := swWait(t, env, "r-toolarge", 60*time.Second)
	took := time.Since(start)
	if st.Status != events.StatusFailed {
		t.Fatalf("status %s (%s); want failed", st.Status, st.Error)
	}
	if st.Attempt != 1 {
		t.Errorf("failed on delivery %d; want 1 (a state too large is permanent, not redelivered)", st.Attempt)
	}
	for _, want := range []string{"does not fit in its RUNS entry", "the limit is", `"toolarge-`, "split it"} {
		if !strings.Contains(st.Error, want) {
			t.Errorf("error %q; want it to contain %q", st.Error, want)
		}
	}
	if st.FinishedGroups < 10 || st.FinishedGroups >= 150 {
		t.Errorf("finished groups %d; want the last checkpoint's (between 10 and 150)", st.FinishedGroups)
	}
	res := swResult(t, st)
	if len(res.Groups) != 150 || !res.Groups[st.FinishedGroups-1].Status.Finished() {
		t.Errorf("stored result has %d groups (group %d %s); want the checkpoint's 150 with the finished ones", len(res.Groups), st.FinishedGroups, res.Groups[st.FinishedGroups-1].Status)
	}
	// Each group ran once: the groups of the checkpoint and the one
	// whose checkpoint did not fit.
	if n := calls.get("big.pad"); n != st.FinishedGroups+1 {
		t.Errorf("big.pad called %d times; want %d (each group once, the failing one included)", n, st.FinishedGroups+1)
	}
	t.Logf("failed after %d groups in %v: %s", st.FinishedGroups, took.Round(time.Millisecond), st.Error)
}

// TestSeqworkerCancelFullState: a run whose stored state fills its RUNS
// entry (as states written before the reserve for the final state could)
// can still be cancelled: the cancel is recorded without the groups'
// results (before: "record the cancel: seqworker: run state too large").
func TestSeqworkerCancelFullState(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.MaxValueSize = 48 << 10
	env := swStart(t, natsserver.Options{}, opts)
	swStore(t, env, tooLargeSeq("fullstate", 3))
	swWorker(t, env, seqworker.Config{})
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	// An interrupted run whose state is a few bytes under the entry limit.
	st := &events.RunState{RunID: "r-full", Sequence: "fullstate", Status: events.StatusInterrupted, Groups: 3, FinishedGroups: 1, Attempt: 1,
		CreatedAt: time.Now().UTC(), Error: "the worker stopped"}
	for size := 0; ; {
		st.Slots = map[string]json.RawMessage{"o0": json.RawMessage(`"` + strings.Repeat("y", 48<<10-400-size) + `"`)}
		b, _ := events.Encode(st)
		if len(b) <= 48<<10-8 {
			break
		}
		size += len(b) - (48<<10 - 8)
	}
	b, _ := events.Encode(st)
	if _, err := kv.Put(context.Background(), "r-full", b); err != nil {
		t.Fatalf("store a full state (%d bytes): %v", len(b), err)
	}
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Cancel(context.Background(), "r-full", "tester", "too big to keep")
	if err != nil {
		t.Fatalf("cancel a run whose state fills its entry: %v", err)
	}
	if got.Status != events.StatusCancelled || got.FinishedGroups != 1 || !strings.Contains(got.Error, "cancelled by tester") {
		t.Fatalf("after cancel: %s, %d finished, %q; want cancelled with its finished group kept and who asked", got.Status, got.FinishedGroups, got.Error)
	}
}
