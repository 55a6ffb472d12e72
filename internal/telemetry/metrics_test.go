package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/skillbus/skillbus/internal/telemetry"
)

func resetMeter(t *testing.T) {
	prev := otel.GetMeterProvider()
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
}

func TestSetupMetricsExporters(t *testing.T) {
	tests := []struct {
		name, exporter, endpoint string
		want                     []string
		wantErr                  error
	}{
		{"default", "", "", []string{"prometheus"}, nil},
		{"default with an OTLP endpoint", "", "http://127.0.0.1:1", []string{"prometheus", "otlp"}, nil},
		{"otlp only", "otlp", "http://127.0.0.1:1", []string{"otlp"}, nil},
		{"both, spaced and repeated", "prometheus, otlp,otlp", "", []string{"prometheus", "otlp"}, nil},
		{"none", "none", "http://127.0.0.1:1", nil, nil},
		{"typo", "prometheous", "", nil, telemetry.ErrConfig},
		{"console unsupported", "console", "", nil, telemetry.ErrConfig},
		{"none with another", "none,otlp", "", nil, telemetry.ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resetMeter(t)
			t.Setenv("OTEL_METRICS_EXPORTER", tc.exporter)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
			m, err := telemetry.SetupMetrics(context.Background(), "x")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("SetupMetrics() error = %v; want %v", err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "OTEL_METRICS_EXPORTER") {
					t.Errorf("error %q does not name OTEL_METRICS_EXPORTER", err)
				}
				return
			}
			defer m.Shutdown(context.Background())
			if got := m.Exporters(); !slices.Equal(got, tc.want) {
				t.Errorf("Exporters() = %q; want %q", got, tc.want)
			}
			if (m.Handler() != nil) != slices.Contains(tc.want, "prometheus") {
				t.Errorf("Handler() = %v with exporters %q", m.Handler(), tc.want)
			}
		})
	}
}

// TestPrometheusHandler: the /metrics handler shows what a meter records,
// the Go runtime and process metrics, and the resource (service name and
// version) in target_info.
func TestPrometheusHandler(t *testing.T) {
	resetMeter(t)
	t.Setenv("OTEL_METRICS_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	m, err := telemetry.SetupMetrics(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	c, err := otel.Meter("test").Int64Counter("demo.things", metric.WithUnit("{thing}")) // through the global provider
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 3)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`demo_things_total{`, `} 3`,
		"go_goroutine_count", "go_memory_used_bytes",
		"process_resident_memory_bytes", "process_cpu_seconds_total",
		`target_info{service_name="skillbus-demo",service_version="`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// TestMetricsOTLP: with OTEL_METRICS_EXPORTER=otlp, recorded metrics reach
// an OTLP/HTTP collector (at the latest when the pipeline shuts down).
func TestMetricsOTLP(t *testing.T) {
	resetMeter(t)
	var mu sync.Mutex
	var names []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req colmetricpb.ExportMetricsServiceRequest
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request to "+r.URL.Path, http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names = append(names, m.Name)
				}
			}
		}
		mu.Unlock()
		b, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	defer ts.Close()
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ts.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	m, err := telemetry.SetupMetrics(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if m.Handler() != nil {
		t.Errorf("Handler() set with OTEL_METRICS_EXPORTER=otlp only")
	}
	c, _ := m.Meter("test").Int64Counter("demo.exported")
	c.Add(context.Background(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(names, "demo.exported") || !slices.Contains(names, "go.goroutine.count") {
		t.Errorf("collector got %q; want demo.exported and the runtime metrics", names)
	}
}

func TestMetricsBadProtocol(t *testing.T) {
	resetMeter(t)
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json") // the signal's own variable wins, and is checked
	_, err := telemetry.SetupMetrics(context.Background(), "x")
	if !errors.Is(err, telemetry.ErrConfig) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") {
		t.Fatalf("SetupMetrics with http/json = %v; want ErrConfig naming OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", err)
	}
}

// TestLogHandler: a record logged with a span in its context carries the
// span's trace_id and span_id; one without a span carries neither.
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("svc", "demo")
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	log.InfoContext(ctx, "inside")
	span.End()
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines; want 2:\n%s", len(lines), buf.String())
	}
	var in, out map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &out); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if in["trace_id"] != sc.TraceID().String() || in["span_id"] != sc.SpanID().String() || in["svc"] != "demo" {
		t.Errorf("line with a span = %v; want trace_id %s, span_id %s and svc", in, sc.TraceID(), sc.SpanID())
	}
	if _, ok := out["trace_id"]; ok {
		t.Errorf("line without a span has a trace_id: %v", out)
	}
}
