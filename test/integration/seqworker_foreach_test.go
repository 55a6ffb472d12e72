package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestSeqworkerForEach runs a 200-item for_each through a seqworker in a
// child process over a real NATS server: at most max_parallel items are in
// flight (measured by the tool), failed items are null under continue and
// named in the run state, the 200 results (over 64 KiB) go to the object
// store, and after the child is killed in the next group the survivor
// finishes the run without calling any item again. A list over the
// survivor's MaxItems fails its run with the limit named.
func TestSeqworkerForEach(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	var inFlight, maxIn atomic.Int32
	inWait := make(chan struct{}, 4)
	killed := make(chan struct{})
	swServe(t, env,
		tool.Tool{Name: "fe.work", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("fe.work")
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := maxIn.Load(); n > m && !maxIn.CompareAndSwap(m, n); m = maxIn.Load() {
			}
			var a struct {
				Name string
				I    int
			}
			_ = json.Unmarshal(args, &a)
			time.Sleep(2 * time.Millisecond)
			if a.I%50 == 7 {
				return nil, tool.Errorf("500", "item %d is broken", a.I)
			}
			return map[string]any{"name": a.Name, "i": a.I, "pad": strings.Repeat("x", 1000)}, nil
		}},
		tool.Tool{Name: "fe.wait", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if calls.add("fe.wait") == 1 {
				inWait <- struct{}{}
				select {
				case <-killed:
				case <-ctx.Done():
				}
				return nil, tool.Errorf("500", "caller gone")
			}
			return true, nil
		}},
		swEcho("fe.echo", &calls),
	)
	swStore(t, env, `
name: fe
groups:
  - name: fe-fan
    in: {items: array<object>}
    out: {results: array<object>}
    on_error: continue
    tools:
      - {tool: fe.work, for_each: $args.items, max_parallel: 10, args: {name: $item.name, i: $index}, as: results}
  - name: fe-wait
    timeout: 2m
    tools: [{tool: fe.wait}]
  - name: fe-use
    in: {results: array<object>}
    out: {n: object}
    when: size($args.results) == 200 && $args.results[7] == null && $args.results[199].i == 199
    tools: [{tool: fe.echo, args: {first: "$args.results"}, as: n}]
`)
	list := make([]map[string]any, 200)
	for i := range list {
		list[i] = map[string]any{"name": fmt.Sprintf("svc-%d", i)}
	}
	cmd, out := swChild(t, env, 5*time.Second)
	swRequest(t, env, "r-fe", "fe", map[string]any{"items": list})
	select {
	case <-inWait:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child never reached group 2; its output:\n%s", out.String())
	}
	st, _ := swState(t, env, "r-fe")
	if st.FinishedGroups != 1 || st.SlotRefs["results"].Size < 200*1000 {
		t.Fatalf("checkpoint after the fan-out: %d groups, slot refs %+v; want group 1 with its slot in the object store", st.FinishedGroups, st.SlotRefs)
	}
	fan := swResult(t, st).Groups[0].Calls[0].ForEach
	if fan == nil || fan.Items != 200 || fan.Succeeded != 196 || fan.Failed != 4 || fmt.Sprint(fan.FailedItems) != "[7 57 107 157]" || len(fan.Details) != 4 || !strings.Contains(fan.Details[0].Error, "item 7 is broken") {
		t.Fatalf("fan-out in the checkpoint: %+v", fan)
	}
	if got := maxIn.Load(); got != 10 {
		t.Errorf("at most %d items in flight; want max_parallel 10 reached and never passed", got)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(killed)
	swWorker(t, env, seqworker.Config{WorkerID: "survivor", MaxItems: 200})
	st = swWait(t, env, "r-fe", 60*time.Second)
	if st.Status != events.StatusSucceeded || st.Attempt < 2 {
		t.Fatalf("after the kill: %s attempt %d (%s); want succeeded on a later delivery", st.Status, st.Attempt, st.Error)
	}
	if n := calls.get("fe.work"); n != 200 {
		t.Errorf("fe.work called %d times; want 200 (no item of the finished group again)", n)
	}
	if r := swResult(t, st); r.Groups[2].Status != "succeeded" || calls.get("fe.echo") != 1 {
		t.Errorf("group 3 %s (%s); want succeeded: its when reads the 200 results back from the object store, in item order", r.Groups[2].Status, r.Groups[2].Reason)
	}
	c, _ := client.New(env.nc)
	slots, err := c.Slots(context.Background(), &st)
	if err != nil {
		t.Fatal(err)
	}
	var results []json.RawMessage
	if err := json.Unmarshal(slots["results"], &results); err != nil || len(results) != 200 {
		t.Fatalf("results: %d (%v)", len(results), err)
	}
	for i, r := range results {
		if want := fmt.Sprintf(`"name":"svc-%d"`, i); (i%50 == 7) != (string(r) == "null") || i%50 != 7 && !strings.Contains(string(r), want) {
			t.Fatalf("result %d = %.80s", i, r)
		}
	}

	// Over the survivor's bound: refused before any item is called.
	swRequest(t, env, "r-fe-big", "fe", map[string]any{"items": make([]map[string]any, 201)})
	st = swWait(t, env, "r-fe-big", 30*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Error, "holds 201 items, over the limit of 200 items per for_each call") || calls.get("fe.work") != 200 {
		t.Fatalf("201 items: %s %q, %d calls", st.Status, st.Error, calls.get("fe.work"))
	}
}
