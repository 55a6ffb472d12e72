package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestSeqworkerGracefulStop stops a worker while a run's group is running:
// with time enough the group (and run) finishes before Stop returns; with
// too little, the run is interrupted, handed back at once, and a second
// worker finishes it from the checkpoint.
func TestSeqworkerGracefulStop(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	started := make(chan struct{}, 8)
	swServe(t, env,
		tool.Tool{Name: "stop.slow", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("stop.slow")
			started <- struct{}{}
			select {
			case <-time.After(600 * time.Millisecond):
				return args, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}},
		swEcho("stop.first", &calls),
	)
	swStore(t, env, `
name: sw-stop
groups:
  - name: sw-stop-first
    tools: [{tool: stop.first}]
  - name: sw-stop-slow
    tools: [{tool: stop.slow}]
`)
	t.Run("finishes within the deadline", func(t *testing.T) {
		w := swWorker(t, env, seqworker.Config{})
		swRequest(t, env, "r-stop-1", "sw-stop", nil)
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("Stop = %v; want nil (the group finishes in time)", err)
		}
		if st, _ := swState(t, env, "r-stop-1"); st.Status != events.StatusSucceeded {
			t.Errorf("after Stop: %s (%s); want succeeded", st.Status, st.Error)
		}
		if err := w.Stop(ctx); err != nil {
			t.Errorf("second Stop = %v; want the first result (nil)", err)
		}
	})

	t.Run("interrupted at the deadline, resumed elsewhere", func(t *testing.T) {
		w := swWorker(t, env, seqworker.Config{})
		swRequest(t, env, "r-stop-2", "sw-stop", nil)
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := w.Stop(ctx); err == nil {
			t.Error("Stop = nil; want the deadline error (the run was interrupted)")
		}
		st, _ := swState(t, env, "r-stop-2")
		if st.Status != events.StatusInterrupted || st.FinishedGroups != 1 || st.Worker == "" || st.Interrupted.IsZero() {
			t.Errorf("after Stop: %s with %d groups, worker %q, interrupted at %v; want interrupted with group 1 checkpointed, naming the worker", st.Status, st.FinishedGroups, st.Worker, st.Interrupted)
		}
		// Handed back at once: the request can be fetched right away (after
		// a silent stop it would come back only after AckWait, 1 s here).
		cons, err := env.js.Consumer(context.Background(), events.StreamSeqRuns, events.ConsumerSeqworker)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		m, err := cons.Next(jetstream.FetchMaxWait(700 * time.Millisecond))
		if err != nil {
			t.Fatalf("the interrupted run's request is not available 700ms after Stop (%v): not handed back", err)
		}
		t.Logf("request available again %s after Stop", time.Since(t0).Round(time.Millisecond))
		_ = m.Nak() // give it to the next worker (delivery 3)
		swWorker(t, env, seqworker.Config{})
		st = swWait(t, env, "r-stop-2", 10*time.Second)
		if st.Status != events.StatusSucceeded || st.Attempt != 3 {
			t.Errorf("resumed: %s attempt %d (%s); want succeeded on delivery 3", st.Status, st.Attempt, st.Error)
		}
		if n := calls.get("stop.first"); n != 2 { // one per run
			t.Errorf("stop.first called %d times; want 2 (group 1 of r-stop-2 not run again)", n)
		}
	})
}
