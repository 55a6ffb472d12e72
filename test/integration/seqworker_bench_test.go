package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/internal/bench"
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
// end to end (run request sent → finished event received), beside two
// floors measured in the same run on the same server with the same shape
// (3 rounds of 8 parallel calls): "raw" is plain nats.go request/reply (a
// QueueSubscribe echo answered with Respond, RequestWithContext), "floor"
// the same 24 calls through the pkg/tool client and server, "durable" the
// durable floor (internal/bench.DurableFloor: the same rounds made durable
// with JetStream alone, the least a durable run does; BENCHMARKS.md). "engine" is
// pkg/seq's engine alone over that client (no queue, no checkpoints).
// "worker" publishes the run request on the SEQ_RUNS queue; "seqrun"
// starts the run through the skillbus.seq.run endpoint (a queued state
// stored, then the request queued), as `skillbus run` and pkg/client's
// Start do. "latency" runs one run at a time and reports the median run
// (p50-ns); "throughput" keeps 16 runs in flight and reports runs/s. Every
// path reports its ratio to raw measured in the same benchmark process
// (x-raw-p50: p50 ÷ raw's p50, lower is better; x-raw-runs/s: runs/s ÷
// raw's runs/s, higher is better; raw's figure is the median of its
// measurements so far), and the process CPU time per run (cpu-µs/run:
// server, worker, tool and client together). Issue 15's goals: x-raw-p50
// ≤ 2 and x-raw-runs/s ≥ 0.5 for worker and seqrun; issue 24's, against
// the durable floor (x-durable-p50, x-durable-runs/s): ≤ 1.25 and ≥ 0.9.
//
//	go test -run '^$' -bench 'BenchmarkSeqworker$' -benchtime 400x -count 6 ./test/integration/
func BenchmarkSeqworker(b *testing.B) {
	env := swStart(b, natsserver.Options{}, events.Options{})
	swServe(b, env, tool.Tool{Name: "bench.echo", Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }})
	swStore(b, env, swBenchSeq())
	swWorker(b, env, seqworker.Config{Concurrency: 16})

	client, err := tool.NewClient(natsserver.ConnectTB(b, env.srv))
	if err != nil {
		b.Fatal(err)
	}

	// The raw floor: a plain nats.go echo on a connection of its own (as a
	// provider process has), requests from another connection.
	rawProvider := natsserver.ConnectTB(b, env.srv)
	if _, err := rawProvider.QueueSubscribe("_bench.raw.echo", "bench-raw", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	if err := rawProvider.Flush(); err != nil {
		b.Fatal(err)
	}
	rawConn := natsserver.ConnectTB(b, env.srv)
	rawRun := func() error {
		for g := 1; g <= 3; g++ {
			if err := inParallel(8, func(ctx context.Context, c int) error {
				_, err := rawConn.RequestWithContext(ctx, "_bench.raw.echo", fmt.Appendf(nil, `{"g":%d,"c":%d}`, g, c+1))
				return err
			}); err != nil {
				return err
			}
		}
		return nil
	}
	floorRun := func() error {
		for g := 1; g <= 3; g++ {
			if err := inParallel(8, func(ctx context.Context, c int) error {
				_, err := client.Call(ctx, "bench.echo", json.RawMessage(fmt.Sprintf(`{"g":%d,"c":%d}`, g, c+1)))
				return err
			}); err != nil {
				return err
			}
		}
		return nil
	}

	// The durable floor: the same rounds made durable with JetStream alone
	// (internal/bench.DurableFloor: a work-queue stream, a durable pull
	// consumer, a KV compare-and-set checkpoint per round, a core
	// "finished" message): the least a durable run does.
	durable, err := bench.StartDurableFloor(context.Background(), natsserver.ConnectTB(b, env.srv), rawProvider, "sw"+nuid.Next()[16:], "_bench.raw.echo", 3, 8,
		func(g, c int) []byte { return fmt.Appendf(nil, `{"g":%d,"c":%d}`, g, c) })
	if err != nil {
		b.Fatal(err)
	}
	defer durable.Close()
	durableRun := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := durable.Run(ctx)
		return err
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

	// Raw's and the durable floor's measurements so far, by mode: the
	// ratios divide by their median.
	var rawP50, rawRate, durP50, durRate []float64
	for _, mode := range []string{"latency", "throughput"} {
		for _, path := range []struct {
			name string
			run  func() error
		}{{"raw", rawRun}, {"durable", durableRun}, {"floor", floorRun}, {"engine", engineRun}, {"worker", workerRun}, {"seqrun", seqrunRun}} {
			b.Run(mode+"/"+path.name, func(b *testing.B) {
				cpu0 := processCPU()
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
					reportCPU(b, cpu0)
					slices.Sort(took)
					p50 := float64(took[len(took)/2].Nanoseconds())
					b.ReportMetric(p50, "p50-ns")
					switch path.name {
					case "raw":
						rawP50 = append(rawP50, p50)
					case "durable":
						durP50 = append(durP50, p50)
					}
					b.ReportMetric(p50/median(rawP50), "x-raw-p50")
					if len(durP50) > 0 {
						b.ReportMetric(p50/median(durP50), "x-durable-p50")
					}
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
				reportCPU(b, cpu0)
				rate := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(rate, "runs/s")
				if path.name == "raw" && b.N > 1 {
					rawRate = append(rawRate, rate)
				}
				if path.name == "durable" && b.N > 1 {
					durRate = append(durRate, rate)
				}
				if len(rawRate) > 0 {
					b.ReportMetric(rate/median(rawRate), "x-raw-runs/s")
				}
				if len(durRate) > 0 {
					b.ReportMetric(rate/median(durRate), "x-durable-runs/s")
				}
			})
		}
	}
}

// median returns the median of xs (NaN for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// reportCPU reports the process CPU time (server, worker, tool and client
// together) per run since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if cpu0 == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
}

// inParallel makes n calls of call at once, each under a 10 s deadline,
// and returns the first error: one round of a benchmark's floor.
func inParallel(n int, call func(ctx context.Context, i int) error) error {
	errs := make(chan error, n)
	for i := range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs <- call(ctx, i)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
