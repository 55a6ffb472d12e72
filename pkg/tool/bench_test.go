package tool_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// benchArgs is the payload of every benchmarked call: a small JSON object,
// like the arguments of a typical file tool.
var benchArgs = json.RawMessage(`{"path":"internal/builtin/fs.go","max_bytes":4096,"hidden":false,"note":"a benchmark payload"}`)

// benchPath is one way of doing a request/reply: raw nats.go or pkg/tool.
type benchPath struct {
	name string
	call func(ctx context.Context) error
}

// benchPaths starts one server and, on it, the two paths side by side:
//   - raw: a plain QueueSubscribe echo answered with Respond, called with
//     RequestWithContext — what NATS itself costs;
//   - tool: a pkg/tool echo tool called through tool.Client, with no
//     metrics SDK installed (the OpenTelemetry API's no-op);
//   - tool-metrics: the same with an OpenTelemetry SDK meter provider
//     (ServerConfig.Meters), so every call is counted and timed as in a
//     skillbus service (skillbus.tool.calls, messaging.process.duration).
//
// Each has its own provider connection and its own client connection, so
// the paths differ only in the code they run.
func benchPaths(b *testing.B) []benchPath {
	b.Helper()
	s := natsserver.StartTB(b, natsserver.Options{})

	rawProvider := natsserver.ConnectTB(b, s)
	if _, err := rawProvider.QueueSubscribe("bench.raw", "raw", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	if err := rawProvider.Flush(); err != nil {
		b.Fatal(err)
	}
	rawClient := natsserver.ConnectTB(b, s)

	srv, err := tool.Serve(natsserver.ConnectTB(b, s), tool.ServerConfig{Name: "bench"}, tool.Tool{
		Name: "bench.echo",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop(context.Background()) })
	client, err := tool.NewClient(natsserver.ConnectTB(b, s))
	if err != nil {
		b.Fatal(err)
	}

	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	msrv, err := tool.Serve(natsserver.ConnectTB(b, s), tool.ServerConfig{Name: "bench-metrics", Meters: mp}, tool.Tool{
		Name: "bench.metered",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = msrv.Stop(context.Background()) })
	mclient, err := tool.NewClient(natsserver.ConnectTB(b, s))
	if err != nil {
		b.Fatal(err)
	}
	return []benchPath{
		{"raw", func(ctx context.Context) error {
			_, err := rawClient.RequestWithContext(ctx, "bench.raw", benchArgs)
			return err
		}},
		{"tool", func(ctx context.Context) error {
			_, err := client.Call(ctx, "bench.echo", benchArgs)
			return err
		}},
		{"tool-metrics", func(ctx context.Context) error {
			_, err := mclient.Call(ctx, "bench.metered", benchArgs)
			return err
		}},
	}
}

// BenchmarkCall compares a tool call through pkg/tool with a raw nats.go
// request/reply on the same server with the same payload, in the same run:
//
//   - Call/latency/{raw,tool,tool-metrics}: one call at a time; ns/op and the p50 (µs)
//     of each call;
//   - Call/inflight16/{raw,tool,tool-metrics}: 16 calls in flight; ns/op is the wall
//     time per call (1/throughput) and calls/s the throughput.
//
// Both report cpu-µs/op, the CPU time of the whole process (client, NATS
// server and provider) per call: on a busy machine it varies less than the
// wall-clock figures.
//
// Compare the pairs with benchstat (docs/tools.md, "Speed"):
//
//	go test -run '^$' -bench BenchmarkCall -count 6 ./pkg/tool | tee new.txt
func BenchmarkCall(b *testing.B) {
	paths := benchPaths(b)
	for _, p := range paths {
		b.Run("latency/"+p.name, func(b *testing.B) {
			ctx := context.Background()
			for range 200 { // warm up connections and buffers
				if err := p.call(ctx); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for range b.N {
				start := time.Now()
				if err := p.call(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportCPU(b, cpu)
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
	for _, p := range paths {
		b.Run("inflight16/"+p.name, func(b *testing.B) {
			const inflight = 16
			ctx := context.Background()
			var next sync.Mutex
			left := b.N
			take := func() bool {
				next.Lock()
				defer next.Unlock()
				if left == 0 {
					return false
				}
				left--
				return true
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, inflight)
			for range inflight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for take() {
						if err := p.call(ctx); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			reportCPU(b, cpu)
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

// reportCPU reports the process's CPU time per op since start (see
// processCPU); nothing where the system cannot tell.
func reportCPU(b *testing.B, start time.Duration) {
	if end := processCPU(); end > 0 && b.N > 0 {
		b.ReportMetric(float64((end-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
	}
}
