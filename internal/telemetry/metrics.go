package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Metrics is a process's metric pipeline: an OpenTelemetry SDK meter
// provider (installed as the global one) with the exporters the
// environment asks for. The zero value is not usable; call SetupMetrics.
type Metrics struct {
	provider  *sdkmetric.MeterProvider
	handler   http.Handler // Prometheus text format; nil without the prometheus exporter
	exporters []string
}

// SetupMetrics builds the metric pipeline of the component named component
// (for example "registry") from the environment and installs it as the
// global meter provider (otel.GetMeterProvider), so a library that records
// through the OTel API is exported too:
//
//   - OTEL_METRICS_EXPORTER unset: "prometheus" — /metrics serves the
//     Prometheus text format (Handler) — plus "otlp" when
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is
//     set.
//   - OTEL_METRICS_EXPORTER set: a comma-separated list of "prometheus" and
//     "otlp" (OTLP every OTEL_METRIC_EXPORT_INTERVAL, default 60 s, over
//     HTTP or gRPC as OTEL_EXPORTER_OTLP_METRICS_PROTOCOL or
//     OTEL_EXPORTER_OTLP_PROTOCOL say: "http/protobuf", the default, or
//     "grpc"), or "none" alone. Any other value is an error (ErrConfig),
//     never ignored.
//
// It also starts the Go runtime metrics (go.memory.used, go.goroutine.count,
// ... from go.opentelemetry.io/contrib/instrumentation/runtime) and, on the
// Prometheus endpoint, the process collector (process_cpu_seconds_total,
// process_resident_memory_bytes, process_open_fds,
// process_start_time_seconds). Errors: ErrConfig; an exporter's or the
// resource's construction error, wrapped.
func SetupMetrics(ctx context.Context, component string) (*Metrics, error) {
	exporters, err := metricExporters()
	if err != nil {
		return nil, err
	}
	m := &Metrics{exporters: exporters}
	res, err := newResource(ctx, component)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	for _, e := range exporters {
		switch e {
		case "prometheus":
			reg := prometheus.NewRegistry()
			if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
				return nil, fmt.Errorf("telemetry: process collector: %w", err)
			}
			exp, err := otelprom.New(otelprom.WithRegisterer(reg))
			if err != nil {
				return nil, fmt.Errorf("telemetry: Prometheus exporter: %w", err)
			}
			opts = append(opts, sdkmetric.WithReader(exp))
			m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
		case "otlp":
			protocol, err := otlpProtocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
			if err != nil {
				return nil, err
			}
			var exp sdkmetric.Exporter
			if protocol == "grpc" {
				exp, err = otlpmetricgrpc.New(ctx)
			} else {
				exp, err = otlpmetrichttp.New(ctx)
			}
			if err != nil {
				return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
			}
			opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		}
	}
	m.provider = sdkmetric.NewMeterProvider(opts...)
	otel.SetMeterProvider(m.provider)
	if len(exporters) > 0 {
		if err := runtime.Start(runtime.WithMeterProvider(m.provider), runtime.WithMinimumReadMemStatsInterval(5*time.Second)); err != nil {
			_ = m.provider.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: runtime metrics: %w", err)
		}
	}
	return m, nil
}

// metricExporters reads OTEL_METRICS_EXPORTER as SetupMetrics documents.
func metricExporters() ([]string, error) {
	v := strings.TrimSpace(strings.ToLower(os.Getenv("OTEL_METRICS_EXPORTER")))
	if v == "" {
		out := []string{"prometheus"}
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" {
			out = append(out, "otlp")
		}
		return out, nil
	}
	var out []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		switch e {
		case "prometheus", "otlp":
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		case "none":
			if v != "none" {
				return nil, fmt.Errorf("%w: OTEL_METRICS_EXPORTER=%q: none cannot be combined with other exporters", ErrConfig, v)
			}
			return nil, nil
		default:
			return nil, fmt.Errorf("%w: OTEL_METRICS_EXPORTER=%q: skillbus exports metrics with prometheus (the /metrics endpoint of --health-addr), otlp (OTLP over HTTP or gRPC) or none, "+
				"or a comma-separated list of prometheus and otlp; unset it for the default (prometheus, plus otlp when OTEL_EXPORTER_OTLP_ENDPOINT is set)", ErrConfig, v)
		}
	}
	return out, nil
}

// Exporters returns the metric exporters in use ("prometheus", "otlp"),
// empty when metrics are off.
func (m *Metrics) Exporters() []string { return slices.Clone(m.exporters) }

// Handler returns the Prometheus text-format handler for /metrics, or nil
// when the prometheus exporter is off.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Meter returns a meter of the pipeline; name is the instrumentation scope
// (an import path, such as "github.com/skillbus/skillbus/internal/seqworker").
func (m *Metrics) Meter(name string) metric.Meter { return m.provider.Meter(name) }

// Provider returns the meter provider.
func (m *Metrics) Provider() metric.MeterProvider { return m.provider }

// Shutdown exports what OTLP has not sent yet and stops the pipeline,
// within ctx's deadline. Safe to call more than once.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if err := m.provider.Shutdown(ctx); err != nil && !errors.Is(err, sdkmetric.ErrReaderShutdown) {
		return err
	}
	return nil
}
