package tool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The metrics a Server records (docs/operations.md, "Metrics"), on
// ServerConfig.Meters under the instrumentation scope MeterScope. The
// names are those skillbus's services define (internal/metrics checks that
// they agree); Prometheus shows them as skillbus_tool_calls_total and
// messaging_process_duration_seconds.
const (
	// MeterScope is the instrumentation scope of the provider's
	// instruments: skillbus's own.
	MeterScope = "github.com/skillbus/skillbus"
	// MetricCalls counts the calls a provider answered, by tool
	// (skillbus.tool) and status (skillbus.status: "ok", or the error
	// code sent back, such as "400" or "503"; a code that is not three
	// digits counts as "error"; StatusDropped counts the messages dropped
	// unanswered). Unit {call}.
	MetricCalls = "skillbus.tool.calls"
	// MetricProcessDuration is the OpenTelemetry messaging convention's
	// messaging.process.duration: seconds from the call's delivery to its
	// reply, queueing for a worker included, by messaging.system ("nats"),
	// messaging.operation.name ("process"), messaging.destination.name
	// (the tool's subject, tool.<name>) and, for a failed call, error.type
	// (its code, as in MetricCalls).
	MetricProcessDuration = "messaging.process.duration"
)

// StatusDropped is the skillbus.status of MetricCalls that counts the
// messages a tool dropped unanswered: a stored message the NATS server
// relayed onto it, or a reply subject that is not an inbox
// (events.Relayed; docs/security.md, "Reply subjects are not
// permissions").
const StatusDropped = "dropped"

// durationBuckets are the histogram boundaries in seconds: those of
// skillbus's other durations (internal/metrics), from 5 ms to 10 min, with
// finer steps below 5 ms, where a quick tool's calls fall.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// serverMetrics are a Server's instruments; recording on them never
// fails (an instrument the provider could not create is a no-op one).
// The calls counter is observed: each status of each tool has its own
// atomic count, read at collection time, so counting a call costs an
// atomic add; the duration is an ordinary histogram (about 0.2 µs per
// call with the SDK, BenchmarkRecord).
type serverMetrics struct {
	meter    metric.Meter
	calls    metric.Int64ObservableCounter
	duration metric.Float64Histogram
}

func newServerMetrics(mp metric.MeterProvider) serverMetrics {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	sm := serverMetrics{meter: mp.Meter(MeterScope)}
	var err error
	// An error still returns a usable (no-op) instrument: metrics must
	// never keep a provider from serving.
	sm.calls, err = sm.meter.Int64ObservableCounter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls served, by tool and status"))
	if err != nil {
		otel.Handle(err)
	}
	sm.duration, err = sm.meter.Float64Histogram(MetricProcessDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of handling one NATS message (a tool call), from its delivery to the reply"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	return sm
}

// observe reports the calls counted by eps at each collection until the
// registration is unregistered; nil when it cannot be registered (then
// the calls are not reported, and the error goes to otel.Handle).
func (sm serverMetrics) observe(eps []*endpointMetrics) metric.Registration {
	reg, err := sm.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, em := range eps {
			em.byStatus.Range(func(_, v any) bool {
				so := v.(*statusOpts)
				o.ObserveInt64(sm.calls, so.n.Load(), so.calls) // "ok" from 0: rate() works from the start
				return true
			})
		}
		return nil
	}, sm.calls)
	if err != nil {
		otel.Handle(err)
		return nil
	}
	return reg
}

// endpointMetrics records one tool's calls. The attribute sets are built
// once per tool and status, so recording a call allocates nothing: an
// atomic add and one histogram record on prepared options.
type endpointMetrics struct {
	m        serverMetrics
	tool     string
	subject  string
	ok       *statusOpts
	byStatus sync.Map // status label → *statusOpts
}

// statusOpts are the count and the options of one status, the options as
// a slice so that passing them allocates nothing.
type statusOpts struct {
	n     atomic.Int64
	calls metric.ObserveOption
	dur   []metric.RecordOption
}

func newEndpointMetrics(m serverMetrics, tool, subject string) *endpointMetrics {
	em := &endpointMetrics{m: m, tool: tool, subject: subject}
	em.ok = em.opts("")
	em.byStatus.Store("ok", em.ok)
	return em
}

// opts builds the options of status ("" is ok).
func (em *endpointMetrics) opts(status string) *statusOpts {
	label := status
	if label == "" {
		label = "ok"
	}
	dattrs := []attribute.KeyValue{
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.operation.name", "process"),
		attribute.String("messaging.destination.name", em.subject),
	}
	if status != "" {
		dattrs = append(dattrs, attribute.String("error.type", label))
	}
	return &statusOpts{
		calls: metric.WithAttributeSet(attribute.NewSet(attribute.String("skillbus.tool", em.tool), attribute.String("skillbus.status", label))),
		dur:   []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(dattrs...))},
	}
}

// record counts one call that took d and ended with code ("" for a
// result). A code that is not three digits is recorded as "error", so a
// provider's odd codes cannot grow the number of series without bound.
func (em *endpointMetrics) record(d time.Duration, code string) {
	so := em.ok
	if code != "" {
		if !threeDigits(code) && code != StatusDropped {
			code = "error"
		}
		o, ok := em.byStatus.Load(code)
		if !ok {
			o, _ = em.byStatus.LoadOrStore(code, em.opts(code))
		}
		so = o.(*statusOpts)
	}
	so.n.Add(1)
	// No exemplars (context.Background()): keep the call path cheap.
	em.m.duration.Record(context.Background(), d.Seconds(), so.dur...)
}

func threeDigits(s string) bool {
	return len(s) == 3 && s[0] >= '1' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9'
}
