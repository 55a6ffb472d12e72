package tool

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// BenchmarkRecord measures what counting and timing one call costs on the
// call path (endpointMetrics.record), with the OpenTelemetry SDK and with
// the API's no-op provider: compare it with a whole call (BenchmarkCall,
// tens of µs).
func BenchmarkRecord(b *testing.B) {
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	for _, p := range []struct {
		name string
		em   *endpointMetrics
	}{
		{"sdk", newEndpointMetrics(newServerMetrics(sdk), "bench.echo", "tool.bench.echo")},
		{"noop", newEndpointMetrics(newServerMetrics(noop.NewMeterProvider()), "bench.echo", "tool.bench.echo")},
		{"global", newEndpointMetrics(newServerMetrics(nil), "bench.echo", "tool.bench.echo")},
	} {
		b.Run(p.name+"/ok", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				p.em.record(30*time.Microsecond, "")
			}
		})
		b.Run(p.name+"/error", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				p.em.record(30*time.Microsecond, "404")
			}
		})
		b.Run(p.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p.em.record(30*time.Microsecond, "")
				}
			})
		})
	}
}
