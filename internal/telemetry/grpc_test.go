package telemetry_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/skillbus/skillbus/internal/telemetry"
)

// grpcCollector is an OTLP/gRPC receiver (the collector services of
// go.opentelemetry.io/proto/otlp) that records what it is sent: span and
// metric names, the resources' service.name and the x-team header.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	colmetricpb.UnimplementedMetricsServiceServer

	mu      sync.Mutex // mu guards the fields below
	spans   []string
	metrics []string
	svc     []string
	teams   []string
}

func (c *grpcCollector) header(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	c.teams = append(c.teams, md.Get("x-team")...)
}

func (c *grpcCollector) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.header(ctx)
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				c.svc = append(c.svc, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsService adapts the collector to MetricsServiceServer, whose
// Export has the same name as the trace service's.
type metricsService struct{ *grpcCollector }

func (m metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	c := m.grpcCollector
	c.mu.Lock()
	defer c.mu.Unlock()
	c.header(ctx)
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, x := range sm.Metrics {
				c.metrics = append(c.metrics, x.Name)
			}
		}
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// startGRPCCollector serves a grpcCollector on a random loopback port and
// returns it with its endpoint URL (http://: plaintext, as the exporters
// read the scheme).
func startGRPCCollector(t *testing.T) (*grpcCollector, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &grpcCollector{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, col)
	colmetricpb.RegisterMetricsServiceServer(srv, metricsService{col})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return col, "http://" + ln.Addr().String()
}

// TestOTLPGRPC: with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, spans and metrics
// reach an OTLP/gRPC collector at OTEL_EXPORTER_OTLP_ENDPOINT, with the
// headers of OTEL_EXPORTER_OTLP_HEADERS.
func TestOTLPGRPC(t *testing.T) {
	resetGlobal(t)
	resetMeter(t)
	col, endpoint := startGRPCCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=bus")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	on, shutdown, err := telemetry.Setup(ctx, "grpcdemo")
	if err != nil || !on {
		t.Fatalf("Setup = %v, %v; want export on", on, err)
	}
	m, err := telemetry.SetupMetrics(ctx, "grpcdemo")
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(ctx, "over-grpc")
	span.End()
	c, err := m.Meter("test").Int64Counter("demo.grpc")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 2)
	// Shutdown flushes: both arrive by the time it returns.
	if err := shutdown(ctx); err != nil {
		t.Fatalf("trace shutdown: %v", err)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("metrics shutdown: %v", err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	if !slices.Contains(col.spans, "over-grpc") {
		t.Errorf("collector got spans %q; want over-grpc", col.spans)
	}
	if !slices.Contains(col.metrics, "demo.grpc") || !slices.Contains(col.metrics, "go.goroutine.count") {
		t.Errorf("collector got metrics %q; want demo.grpc and the runtime metrics", col.metrics)
	}
	if len(col.svc) == 0 || col.svc[0] != "skillbus-grpcdemo" {
		t.Errorf("service.name = %q; want skillbus-grpcdemo", col.svc)
	}
	if len(col.teams) < 2 || slices.ContainsFunc(col.teams, func(s string) bool { return s != "bus" }) {
		t.Errorf("x-team headers = %q; want bus on every export (OTEL_EXPORTER_OTLP_HEADERS)", col.teams)
	}
}

// TestOTLPSignalProtocol: a signal's own protocol variable wins over
// OTEL_EXPORTER_OTLP_PROTOCOL: traces over gRPC while the general setting
// says http/protobuf.
func TestOTLPSignalProtocol(t *testing.T) {
	resetGlobal(t)
	col, endpoint := startGRPCCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	on, shutdown, err := telemetry.Setup(ctx, "x")
	if err != nil || !on {
		t.Fatalf("Setup = %v, %v; want export on", on, err)
	}
	_, span := otel.Tracer("test").Start(ctx, "traces-own-protocol")
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if !slices.Contains(col.spans, "traces-own-protocol") {
		t.Errorf("collector got spans %q; want traces-own-protocol over gRPC", col.spans)
	}
}
