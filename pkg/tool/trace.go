package tool

import (
	"context"
	"reflect"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/skillbus/skillbus/pkg/events"
)

// tracing is what a Client or Server needs to trace calls, looked up once
// when it is created rather than on every call:
//   - the tracer of the global TracerProvider, which follows a provider
//     installed later (OpenTelemetry's global delegation);
//   - the propagator: the global one, or W3C trace context + baggage when
//     none is installed (traceparent travels on every message, as
//     pkg/events does it).
//
// Without an exporter (internal/telemetry not set up) the global tracer is
// a no-op: its spans do not record, so no attribute is built and nothing is
// recorded on them; only the caller's trace context, when there is one, is
// passed on.
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// idle is the global TracerProvider when it was OpenTelemetry's
	// default (nothing installed) or a no-op one; nil otherwise.
	idle trace.TracerProvider
}

func newTracing() tracing {
	p := otel.GetTextMapPropagator()
	if len(p.Fields()) == 0 {
		p = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	tr := tracing{tracer: otel.Tracer(events.TracerName), prop: p}
	switch tp := otel.GetTracerProvider(); tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		tr.idle = tp
	default:
		// The global default is an unexported type of OpenTelemetry's
		// internal/global; until a provider is installed, every span it
		// starts is a no-op.
		if reflect.TypeOf(tp).String() == "*global.tracerProvider" {
			tr.idle = tp
		}
	}
	return tr
}

// off reports whether no span would record: the global TracerProvider is
// still the one that was a no-op when tr was made (an exporter installed
// since, with internal/telemetry, replaces it). Then no span is started at
// all; the caller's trace context is still passed on.
func (tr tracing) off() bool {
	return tr.idle != nil && otel.GetTracerProvider() == tr.idle
}

// noSpan is what start returns when tracing is off.
var noSpan trace.Span = noop.Span{}

// start starts a span of kind with the NATS messaging attributes (set only
// when the span records). name is computed only when the span records.
// When tracing is off it returns ctx and a no-op span.
func (tr tracing) start(ctx context.Context, name func() string, kind trace.SpanKind, op, subject string, size int) (context.Context, trace.Span) {
	if tr.off() {
		return ctx, noSpan
	}
	ctx, span := tr.tracer.Start(ctx, "tool call", trace.WithSpanKind(kind))
	if span.IsRecording() {
		span.SetName(name())
		span.SetAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.name", op),
			attribute.String("messaging.destination.name", subject),
			attribute.Int("messaging.message.body.size", size),
		)
	}
	return ctx, span
}

// end records err on span (when it records) and ends it.
func end(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// inject writes ctx's trace context into h.
func (tr tracing) inject(ctx context.Context, h nats.Header) {
	tr.prop.Inject(ctx, events.HeaderCarrier(h))
}

// extract returns ctx with the trace context found in h (nil: none). A
// header holding only the deadline carries none.
func (tr tracing) extract(ctx context.Context, h nats.Header) context.Context {
	if len(h) == 0 || len(h) == 1 && h[DeadlineHeader] != nil {
		return ctx
	}
	return tr.prop.Extract(ctx, events.HeaderCarrier(h))
}
