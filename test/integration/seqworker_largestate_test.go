package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestSeqworkerLargeStateResumes: group 1 reads six "files" of 700 KiB
// each into one array slot (4.1 MiB, far over a RUNS entry); the worker
// process is SIGKILLed in group 2; another worker resumes the run: group 1
// is not run again, its slot is read back from the RUN_SLOTS object store
// whole, and the final state refers to it.
func TestSeqworkerLargeStateResumes(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	inTwo := make(chan struct{}, 4)
	killed := make(chan struct{})
	const fileSize = 700 << 10
	swServe(t, env,
		tool.Tool{Name: "big.read", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("big.read")
			var a struct{ N int }
			_ = json.Unmarshal(args, &a)
			return strings.Repeat(string(rune('a'+a.N)), fileSize), nil
		}},
		tool.Tool{Name: "big.wait", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if calls.add("big.wait") == 1 {
				inTwo <- struct{}{}
				select {
				case <-killed:
				case <-ctx.Done():
				}
				return nil, tool.Errorf("500", "caller gone")
			}
			return true, nil
		}},
		tool.Tool{Name: "big.measure", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("big.measure")
			return 6 * fileSize, nil
		}},
	)
	swStore(t, env, `
name: big
groups:
  - name: big-read
    out: {files: array<string>}
    tools:
      - {tool: big.read, args: {n: 0}, as: files}
      - {tool: big.read, args: {n: 1}, as: files}
      - {tool: big.read, args: {n: 2}, as: files}
      - {tool: big.read, args: {n: 3}, as: files}
      - {tool: big.read, args: {n: 4}, as: files}
      - {tool: big.read, args: {n: 5}, as: files}
  - name: big-wait
    timeout: 2m
    tools: [{tool: big.wait}]
  - name: big-measure
    in: {files: array<string>}
    out: {total: integer}
    when: size($args.files) == 6 && size($args.files[0]) == 716800 && size($args.files[5]) == 716800 && $args.files[5].startsWith('f')
    tools: [{tool: big.measure, args: {files: []}, as: total}]
`)
	cmd, out := swChild(t, env, 5*time.Second)
	swRequest(t, env, "r-big-state", "big", nil)
	select {
	case <-inTwo:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child never reached group 2; its output:\n%s", out.String())
	}
	st, _ := swState(t, env, "r-big-state")
	if st.FinishedGroups != 1 || st.SlotRefs["files"].Size < 6*fileSize {
		t.Fatalf("checkpoint after group 1: %d groups, slot refs %+v; want group 1 with its 4 MiB slot in the object store", st.FinishedGroups, st.SlotRefs)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(killed)
	swWorker(t, env, seqworker.Config{WorkerID: "survivor"})
	st = swWait(t, env, "r-big-state", 60*time.Second)
	if st.Status != events.StatusSucceeded || st.Attempt < 2 {
		t.Fatalf("after the kill: %s attempt %d (%s); want succeeded on a later delivery", st.Status, st.Attempt, st.Error)
	}
	if n := calls.get("big.read"); n != 6 {
		t.Errorf("big.read called %d times; want 6 (group 1 not run again)", n)
	}
	if r := swResult(t, st); r.Groups[2].Status != "succeeded" || calls.get("big.measure") != 1 {
		t.Errorf("group 3 %s (%s), big.measure called %d times; want succeeded once: its when checks the 6 × 700 KiB slot read back whole", r.Groups[2].Status, r.Groups[2].Reason, calls.get("big.measure"))
	}
	c, _ := client.New(env.nc)
	slots, err := c.Slots(context.Background(), &st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest state resumed: slot files of %d bytes (%.1f MiB) from the object store; RUNS entry %d bytes", len(slots["files"]), float64(len(slots["files"]))/(1<<20), len(mustJSON(t, st)))
	if len(slots["files"]) < 6*fileSize {
		t.Errorf("slot files read back: %d bytes; want at least %d", len(slots["files"]), 6*fileSize)
	}
}

// TestSeqworkerSlotLimit: a group that writes a slot over the per-slot
// limit fails the run with an error naming the group, the calls and the
// size — nothing is silently dropped.
func TestSeqworkerSlotLimit(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swServe(t, env, tool.Tool{Name: "lim.read", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		return strings.Repeat("z", 600<<10), nil
	}})
	swStore(t, env, `
name: lim
groups:
  - name: lim-read
    out: {blobs: array<string>}
    tools: [{tool: lim.read, as: blobs}, {tool: lim.read, as: blobs}]
  - name: lim-next
    tools: [{tool: lim.read}]
`)
	swWorker(t, env, seqworker.Config{SlotMaxBytes: 1 << 20, RunSlotsMaxBytes: 2 << 20})
	swRequest(t, env, "r-lim", "lim", nil)
	st := swWait(t, env, "r-lim", 30*time.Second)
	for _, want := range []string{`group 1 "lim-read"`, `call 1 "lim.read" and call 2 "lim.read"`, `slot "blobs"`, "1.2 MiB", "limit per slot is 1.0 MiB"} {
		if st.Status != events.StatusFailed || !strings.Contains(st.Error, want) {
			t.Errorf("state %s, error %q; want failed naming %q", st.Status, st.Error, want)
		}
	}
	if r := swResult(t, st); r.Groups[1].Status != "pending" {
		t.Errorf("group 2 is %s; want pending (the run stopped at the limit)", r.Groups[1].Status)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
