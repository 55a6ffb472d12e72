package integration

import (
	"context"
	"encoding/json"
	"errors"
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

// TestStoreFull: RUNS limited to 256 KiB. Runs of two groups (each
// writing 1 KB) are started four at a time until seq.run refuses one: the
// refusal is a 503 naming RUNS, how full it is and the flag to raise, and
// every run accepted before it finished succeeded with both groups'
// outputs (none lost, none cut short by the full bucket). docs/runs.md,
// "Retention and sizing".
func TestStoreFull(t *testing.T) {
	opts := swOptions()
	opts.RunsMaxBytes = 256 << 10
	env := swStart(t, natsserver.Options{}, opts)
	swWorker(t, env, seqworker.Config{})
	pad := strings.Repeat("x", 1000)
	swServe(t, env, tool.Tool{Name: "full.pad", Func: func(ctx context.Context, _ json.RawMessage) (any, error) { return pad, nil }})
	swStore(t, env, `name: filler
groups:
  - name: filler-a
    out: {a: string}
    tools: [{tool: full.pad, as: a}]
  - name: filler-b
    in: {a: string}
    out: {b: string}
    tools: [{tool: full.pad, as: b}]
`)
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var accepted []string
	var refusal error
	for batch := 0; refusal == nil && batch < 100; batch++ {
		var ids []string
		for i := range 4 {
			id := fmt.Sprintf("full-%d-%d", batch, i)
			if _, err := c.Start(ctx, events.SeqRunRequest{RunID: id, Sequence: "filler"}); err != nil {
				refusal = err
				break
			}
			ids = append(ids, id)
		}
		accepted = append(accepted, ids...)
		for _, id := range ids {
			if _, err := c.Wait(ctx, id, client.WaitOptions{Poll: 200 * time.Millisecond}); err != nil {
				t.Fatalf("Wait %s: %v", id, err)
			}
		}
	}
	if refusal == nil {
		t.Fatalf("%d runs accepted into a RUNS of 256 KiB; want a refusal", len(accepted))
	}
	msg := refusal.Error()
	if !errors.Is(refusal, client.ErrUnavailable) || !strings.Contains(msg, "RUNS bucket (run states) is full") || !strings.Contains(msg, "--runs-max-bytes") {
		t.Errorf("refusal = %v; want a 503 naming RUNS and --runs-max-bytes", refusal)
	}
	t.Logf("%d runs accepted, then: %v", len(accepted), refusal)
	for _, id := range accepted {
		st, err := c.Status(ctx, id)
		if err != nil {
			t.Fatalf("Status %s: %v", id, err)
		}
		if st.Status != events.StatusSucceeded || st.FinishedGroups != 2 || len(st.Slots["b"]) < 1000 {
			t.Errorf("accepted run %s: %s, %d groups, slot b %d bytes, error %q; want succeeded with both groups", id, st.Status, st.FinishedGroups, len(st.Slots["b"]), st.Error)
		}
	}
}
