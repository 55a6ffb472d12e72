package events

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the spans this package starts.
const TracerName = "github.com/skillbus/skillbus/pkg/events"

// HeaderCarrier adapts a NATS message header to OpenTelemetry's
// propagation.TextMapCarrier, so a propagator can write and read the W3C
// traceparent/tracestate (and baggage) headers. Get matches keys exactly
// first, then case-insensitively (NATS headers keep the case they were sent
// with). A nil HeaderCarrier reads as empty; Set on it panics, like a nil
// map.
type HeaderCarrier nats.Header

var _ propagation.TextMapCarrier = HeaderCarrier(nil)

// Get returns the first value of key, or "".
func (c HeaderCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set replaces the values of key with value.
func (c HeaderCarrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the header keys (in no particular order).
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// propagator returns the global OpenTelemetry propagator, or W3C trace
// context + baggage when none was installed (the global default propagates
// nothing, and docs/architecture.md promises traceparent on every message).
func propagator() propagation.TextMapPropagator {
	p := otel.GetTextMapPropagator()
	if len(p.Fields()) == 0 {
		return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return p
}

// Inject writes ctx's trace context into h (creating entries as needed).
// h must not be nil.
func Inject(ctx context.Context, h nats.Header) {
	propagator().Inject(ctx, HeaderCarrier(h))
}

// Extract returns ctx extended with the trace context found in h (h may
// be nil).
func Extract(ctx context.Context, h nats.Header) context.Context {
	return propagator().Extract(ctx, HeaderCarrier(h))
}

func tracer() trace.Tracer { return otel.Tracer(TracerName) }

func msgAttrs(op, subject string, size int) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.operation.name", op),
		attribute.String("messaging.destination.name", subject),
		attribute.Int("messaging.message.body.size", size),
	}
}

// endSpan records err on span (if any) and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// StartSpan starts a span named name of the given kind with the NATS
// messaging attributes for subject. Callers that build their own message
// flow (pkg/tool) use it with Inject to keep the span-per-message rule.
func StartSpan(ctx context.Context, name string, kind trace.SpanKind, subject string, size int) (context.Context, trace.Span) {
	op := "publish"
	switch kind {
	case trace.SpanKindClient:
		op = "request"
	case trace.SpanKindConsumer, trace.SpanKindServer:
		op = "process"
	}
	return tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(msgAttrs(op, subject, size)...))
}

// EndSpan records err on span (when non-nil) and ends it.
func EndSpan(span trace.Span, err error) { endSpan(span, err) }

// Publisher is what Publish needs: jetstream.JetStream implements it.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// Publish publishes msg to JetStream and waits for the stream's ack, in a
// producer span "publish <subject>", with the trace context injected into
// msg.Header (created when nil). Errors are the jetstream client's (for
// example jetstream.ErrNoStreamResponse when no stream holds the subject).
func Publish(ctx context.Context, js Publisher, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ctx, span := StartSpan(ctx, "publish "+msg.Subject, trace.SpanKindProducer, msg.Subject, len(msg.Data))
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	Inject(ctx, msg.Header)
	ack, err := js.PublishMsg(ctx, msg, opts...)
	endSpan(span, err)
	return ack, err
}

// PublishMessage encodes m (Encode) and publishes it on subject to
// JetStream with Publish. Errors: those of Encode and Publish.
func PublishMessage(ctx context.Context, js Publisher, subject string, m Message, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	data, err := Encode(m)
	if err != nil {
		return nil, err
	}
	return Publish(ctx, js, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}, opts...)
}

// PublishCore publishes msg with core NATS (no stream ack) in a producer
// span, with the trace context injected. Errors: nats.ErrMaxPayload,
// nats.ErrConnectionClosed and the like.
func PublishCore(ctx context.Context, nc *nats.Conn, msg *nats.Msg) error {
	_, span := StartSpan(ctx, "publish "+msg.Subject, trace.SpanKindProducer, msg.Subject, len(msg.Data))
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	Inject(trace.ContextWithSpan(ctx, span), msg.Header)
	err := nc.PublishMsg(msg)
	endSpan(span, err)
	return err
}

// Request sends msg as a request and waits for one reply until ctx is done,
// in a client span "request <subject>", with the trace context injected.
// Errors: nats.ErrNoResponders when nobody listens, context errors,
// nats.ErrMaxPayload. A reply carrying micro error headers is returned as a
// reply, not an error: the caller decides.
func Request(ctx context.Context, nc *nats.Conn, msg *nats.Msg) (*nats.Msg, error) {
	ctx, span := StartSpan(ctx, "request "+msg.Subject, trace.SpanKindClient, msg.Subject, len(msg.Data))
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	Inject(ctx, msg.Header)
	reply, err := nc.RequestMsgWithContext(ctx, msg)
	endSpan(span, err)
	return reply, err
}

// StartReceiveSpan continues the trace carried in h: it extracts the trace
// context and starts a consumer span "process <subject>" under it. The
// caller ends the span with EndSpan.
func StartReceiveSpan(ctx context.Context, h nats.Header, subject string, size int) (context.Context, trace.Span) {
	return StartSpan(Extract(ctx, h), "process "+subject, trace.SpanKindConsumer, subject, size)
}
