package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// swForEachSeq is one group whose one call fans out over the run argument
// items (docs/sequences.md, "for_each").
const swForEachSeq = `
name: sw-bench-each
groups:
  - name: sw-bench-each-g
    in: {items: array<integer>}
    out: {r: array<object>}
    tools:
      - {tool: bench.echo, for_each: $args.items, args: {i: $item, n: $index}, as: r}
`

// BenchmarkSeqworkerForEach measures a 100-item for_each of an echo tool
// beside 100 parallel requests of plain nats.go to an echo subscriber, in
// the same benchmark run on the same server (issue 21's goal: the
// worker's p50 at most 1.3 × raw's). "raw" sends the 100 requests at once
// and waits for every reply; "floor" the same through the pkg/tool
// client and server the engine uses; "engine" is pkg/seq's engine over the
// pkg/tool client (no queue, no checkpoint); "worker" publishes a run
// request on SEQ_RUNS and waits for the run's finished event (claim,
// checkpoint, the 100 results stored), and "worker-1-item" the same run
// over a list of one item: the cost of a run whatever its fan-out (queue,
// claim, final state). raw runs first and last ("raw-again"); each path
// reports p50-ns and x-raw-p50 (its p50 ÷ the median of raw's so far).
//
//	go test -run '^$' -bench 'BenchmarkSeqworkerForEach$' -benchtime 30x ./test/integration/
func BenchmarkSeqworkerForEach(b *testing.B) {
	const n = 100
	env := swStart(b, natsserver.Options{}, events.Options{})
	swServe(b, env, tool.Tool{Name: "bench.echo", Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }})
	swStore(b, env, swForEachSeq)
	swWorker(b, env, seqworker.Config{Concurrency: 16})
	client, err := tool.NewClient(natsserver.ConnectTB(b, env.srv))
	if err != nil {
		b.Fatal(err)
	}
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	argsJSON, _ := json.Marshal(map[string]any{"items": items})

	rawProvider := natsserver.ConnectTB(b, env.srv)
	if _, err := rawProvider.QueueSubscribe("_bench.raw.echo", "bench-raw", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	if err := rawProvider.Flush(); err != nil {
		b.Fatal(err)
	}
	rawConn := natsserver.ConnectTB(b, env.srv)
	rawRun := func() error {
		return inParallel(n, func(ctx context.Context, i int) error {
			_, err := rawConn.RequestWithContext(ctx, "_bench.raw.echo", fmt.Appendf(nil, `{"i":%d,"n":%d}`, i, i))
			return err
		})
	}

	// The same 100 calls through the pkg/tool client, as the engine makes them.
	floorRun := func() error {
		return inParallel(n, func(ctx context.Context, i int) error {
			_, err := client.Call(ctx, "bench.echo", fmt.Appendf(nil, `{"i":%d,"n":%d}`, i, i))
			return err
		})
	}

	parsed, err := seq.Parse([]byte(swForEachSeq))
	if err != nil {
		b.Fatal(err)
	}
	runArgs := map[string]json.RawMessage{"items": json.RawMessage(argsJSON[len(`{"items":`) : len(argsJSON)-1])}
	engineRun := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := seq.Run(ctx, parsed, client, runArgs)
		if err == nil && r.Groups[0].Calls[0].ForEach.Succeeded != n {
			err = fmt.Errorf("fan-out %+v", r.Groups[0].Calls[0].ForEach)
		}
		return err
	}

	pub := natsserver.ConnectTB(b, env.srv)
	js, err := jetstream.New(pub)
	if err != nil {
		b.Fatal(err)
	}
	var waitMu sync.Mutex
	waiters := map[string]chan events.RunEvent{}
	sub, err := pub.Subscribe("events.run.*.finished", func(m *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) != nil {
			return
		}
		waitMu.Lock()
		ch := waiters[ev.RunID]
		delete(waiters, ev.RunID)
		waitMu.Unlock()
		if ch != nil {
			ch <- ev
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	var seqNo atomic.Int64
	oneJSON := []byte(`{"items":[0]}`)
	workerRunOf := func(args []byte) error {
		id := fmt.Sprintf("bench-each-%d-%d", time.Now().UnixNano(), seqNo.Add(1))
		ch := make(chan events.RunEvent, 1)
		waitMu.Lock()
		waiters[id] = ch
		waitMu.Unlock()
		subj, _ := events.RunSubject("sw-bench-each")
		if _, err := events.PublishMessage(context.Background(), js, subj, &events.RunRequest{RunID: id, Sequence: "sw-bench-each", Args: args}, jetstream.WithMsgID(id)); err != nil {
			return err
		}
		select {
		case ev := <-ch:
			if ev.Status != events.StatusSucceeded {
				return fmt.Errorf("run %s: %s %s", id, ev.Status, ev.Error)
			}
			return nil
		case <-time.After(30 * time.Second):
			return fmt.Errorf("run %s: no finished event", id)
		}
	}

	workerRun := func() error { return workerRunOf(argsJSON) }
	workerOne := func() error { return workerRunOf(oneJSON) }

	var rawP50 []float64
	for _, path := range []struct {
		name string
		run  func() error
	}{{"raw", rawRun}, {"floor", floorRun}, {"engine", engineRun}, {"worker", workerRun}, {"worker-1-item", workerOne}, {"raw-again", rawRun}} {
		b.Run(path.name, func(b *testing.B) {
			cpu0 := processCPU()
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				if err := path.run(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			reportCPU(b, cpu0)
			slices.Sort(took)
			p50 := float64(took[len(took)/2].Nanoseconds())
			b.ReportMetric(p50, "p50-ns")
			if path.name == "raw" || path.name == "raw-again" {
				rawP50 = append(rawP50, p50)
			}
			b.ReportMetric(p50/median(rawP50), "x-raw-p50")
		})
	}
}
