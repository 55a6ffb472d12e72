// Package telemetry turns on OpenTelemetry for a skillbus process — trace
// export (Setup), metrics (SetupMetrics: Prometheus text on /metrics, or
// OTLP) and trace-aware logs (LogHandler) — configured the standard way: by
// the OTEL_* environment variables of the OpenTelemetry specification, so a
// platform team points every service at its collector without
// skillbus-specific settings. docs/operations.md lists the variables and
// the metrics.
//
// pkg/events starts the spans and carries the W3C trace context in NATS
// headers on every message skillbus sends (docs/operations.md); without Setup
// those spans go nowhere (the OTel API's no-op provider). Setup installs an
// SDK tracer provider with an OTLP exporter when export is asked for:
//
//   - OTEL_TRACES_EXPORTER=otlp, or OTEL_TRACES_EXPORTER unset and
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set:
//     export with OTLP, over HTTP (protobuf) or gRPC as
//     OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL say
//     ("http/protobuf", the default, or "grpc"). The exporter itself reads
//     the endpoint, headers, timeout, compression and TLS variables.
//   - OTEL_TRACES_EXPORTER=none, or nothing set: no export (the default).
//   - Any other OTEL_TRACES_EXPORTER value, or another protocol
//     ("http/json", which the Go SDK has no exporter for), is an error
//     (ErrConfig), never silently ignored.
//
// The protocol is chosen here, with the SDK's otlp*grpc and otlp*http
// exporters, rather than by go.opentelemetry.io/contrib/exporters/autoexport:
// autoexport reads OTEL_METRICS_EXPORTER=prometheus as "start a Prometheus
// server of its own" (skillbus serves /metrics on --health-addr) and accepts
// exporters (console) that skillbus reports as a typo.
//
// The resource's service.name is "skillbus-<component>" unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/skillbus/skillbus/internal/version"
)

// ErrConfig reports an OTEL_* variable with a value Setup does not support;
// the message names the variable, the value and the legal values.
var ErrConfig = errors.New("telemetry: unsupported configuration")

// Shutdown flushes the spans still buffered and stops the exporter; it
// honours ctx's deadline. It is safe to call when export is off.
type Shutdown func(ctx context.Context) error

// Setup configures trace export for the component named component (for
// example "registry") from the environment, as the package documentation
// describes, and installs the W3C trace-context and baggage propagators as
// the global ones. It returns whether export is on and the Shutdown to call
// at exit (after the NATS connection is drained, so the last spans are
// included). Errors: ErrConfig for an unsupported OTEL_TRACES_EXPORTER or
// OTLP protocol; the exporter's or resource's own construction errors,
// wrapped.
func Setup(ctx context.Context, component string) (bool, Shutdown, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	noop := func(context.Context) error { return nil }

	exporter := strings.TrimSpace(strings.ToLower(os.Getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "":
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, noop, nil
		}
	case "none":
		return false, noop, nil
	case "otlp":
	default:
		return false, noop, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: skillbus exports traces with otlp (OTLP over HTTP or gRPC) or none; "+
			"set OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT to your collector, or unset it", ErrConfig, exporter)
	}
	protocol, err := otlpProtocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if err != nil {
		return false, noop, err
	}
	var exp *otlptrace.Exporter
	if protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return false, noop, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
	}
	res, err := newResource(ctx, component)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return false, noop, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return true, tp.Shutdown, nil
}

// otlpProtocol returns the OTLP protocol of a signal: the value of specific
// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL)
// or else of OTEL_EXPORTER_OTLP_PROTOCOL, "http/protobuf" when neither is
// set, as the OpenTelemetry specification says. Errors: ErrConfig for any
// value but "http/protobuf" and "grpc", naming the variable.
func otlpProtocol(specific string) (string, error) {
	for _, name := range []string{specific, "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := strings.TrimSpace(os.Getenv(name)); p {
		case "":
			continue
		case "http/protobuf", "grpc":
			return p, nil
		default:
			return "", fmt.Errorf("%w: %s=%q: skillbus exports OTLP with http/protobuf (the collector's port 4318, the default) or grpc (port 4317); "+
				"set one of them or unset the variable", ErrConfig, name, p)
		}
	}
	return "http/protobuf", nil
}

// newResource describes the process: service.name "skillbus-<component>"
// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise, and
// service.version from internal/version.
func newResource(ctx context.Context, component string) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", "skillbus-"+component),
			attribute.String("service.version", version.String()),
		),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
}
