package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// swBenchSeq is 3 groups × 8 parallel calls of an echo tool.
func swBenchSeq() string {
	var b strings.Builder
	b.WriteString("name: sw-bench\ngroups:\n")
	for g := 1; g <= 3; g++ {
		fmt.Fprintf(&b, "  - name: sw-bench-g%d\n    tools:\n", g)
		for c := 1; c <= 8; c++ {
			fmt.Fprintf(&b, "      - {tool: bench.echo, args: {g: %d, c: %d}}\n", g, c)
		}
	}
	return b.String()
}

// BenchmarkSeqworker measures a 3-group × 8-tool run against an echo tool,
// end to end (run request published → finished event received), beside
// the raw floor: the same 24 calls made directly by a client over the same
// server with the same shape (3 rounds of 8 parallel calls), and pkg/seq's
// engine alone over the same client. "worker" publishes the run request
// on the queue; "seqrun" starts the run through the skillbus.seq.run
// endpoint (a pending state stored, then the request queued), as
// `skillbus run` does. "latency" runs one run at a time; "throughput"
// keeps 16 runs in flight. Compare the ns/op (latency: also p50-ns, the
// median run) of worker and floor of the same mode: their ratio is the
// seqworker's overhead.
//
//	go test -run '^$' -bench BenchmarkSeqworker -benchtime 400x -count 6 ./test/integration/
func BenchmarkSeqworker(b *testing.B) {
	env := swStart(b, natsserver.Options{}, events.Options{})
	swServe(b, env, tool.Tool{Name: "bench.echo", Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }})
	swStore(b, env, swBenchSeq())
	swWorker(b, env, seqworker.Config{Concurrency: 16})

	client, err := tool.NewClient(natsserver.ConnectTB(b, env.srv))
	if err != nil {
		b.Fatal(err)
	}
	floorRun := func() error {
		for g := 1; g <= 3; g++ {
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for c := 1; c <= 8; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if _, err := client.Call(ctx, "bench.echo", json.RawMessage(fmt.Sprintf(`{"g":%d,"c":%d}`, g, c))); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				return err
			}
		}
		return nil
	}

	// The engine alone: pkg/seq's Run over the same tool client, no
	// queue, no checkpoints — splits the overhead between pkg/seq and the
	// seqworker.
	parsed, err := seq.Parse([]byte(swBenchSeq()))
	if err != nil {
		b.Fatal(err)
	}
	engineRun := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := seq.Run(ctx, parsed, client, nil)
		return err
	}

	// The worker path: a client publishes run requests and waits for the
	// finished events.
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
	workerRun := func() error {
		id := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), seqNo.Add(1))
		ch := make(chan events.RunEvent, 1)
		waitMu.Lock()
		waiters[id] = ch
		waitMu.Unlock()
		subj, _ := events.RunSubject("sw-bench")
		if _, err := events.PublishMessage(context.Background(), js, subj, &events.RunRequest{RunID: id, Sequence: "sw-bench"}, jetstream.WithMsgID(id)); err != nil {
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

	// The product path: the run started through the skillbus.seq.run
	// endpoint (as `skillbus run` does), which stores a pending state
	// before it queues the request; the worker then claims the run over
	// that state.
	seqrunRun := func() error {
		id := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), seqNo.Add(1))
		ch := make(chan events.RunEvent, 1)
		waitMu.Lock()
		waiters[id] = ch
		waitMu.Unlock()
		body, err := events.Encode(&events.SeqRunRequest{RunID: id, Sequence: "sw-bench"})
		if err != nil {
			return err
		}
		m, err := pub.Request(events.SeqRunSubject, body, 10*time.Second)
		if err != nil {
			return err
		}
		if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
			return fmt.Errorf("seq.run: %s %s", code, m.Header.Get(micro.ErrorHeader))
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

	for _, mode := range []string{"latency", "throughput"} {
		for _, path := range []struct {
			name string
			run  func() error
		}{{"floor", floorRun}, {"engine", engineRun}, {"worker", workerRun}, {"seqrun", seqrunRun}} {
			b.Run(mode+"/"+path.name, func(b *testing.B) {
				if mode == "latency" {
					// ns/op is a mean that one scheduling stall on a
					// shared machine moves; the median of the runs is
					// reported beside it (p50-ns) and is steadier.
					took := make([]time.Duration, 0, b.N)
					for b.Loop() {
						t0 := time.Now()
						if err := path.run(); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(t0))
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
					return
				}
				b.SetParallelism(8) // 16 in flight on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := path.run(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
