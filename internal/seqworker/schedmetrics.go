package seqworker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/skillbus/skillbus/internal/metrics"
)

// The schedule entries' metrics (docs/operations.md, "Metrics"): ticks by
// outcome and the lag from a tick's time to its run's admission.
const (
	// metricScheduleTicks counts ticks by sequence and outcome: started,
	// skipped, buffered, cancelled (cancel_other), paused, dropped,
	// buffered_started (a buffered tick's run queued), paused_on_failure
	// (an entry paused itself).
	metricScheduleTicks = "skillbus.schedule.ticks"
	// metricScheduleLag is the seconds from a server tick's own time to
	// its admission (the run starts after it, plus any jitter).
	metricScheduleLag = "skillbus.schedule.tick_lag"
)

// attrOutcome labels a tick's outcome.
const attrOutcome = attribute.Key("skillbus.outcome")

// schedInstruments are created at first use on Config.Meters.
type schedInstruments struct {
	ticks metric.Int64Counter
	lag   metric.Float64Histogram
}

func (w *Worker) schedMetrics() *schedInstruments {
	w.schedMetOnce.Do(func() {
		mp := w.cfg.Meters
		if mp == nil {
			mp = otel.GetMeterProvider()
		}
		m := mp.Meter(metrics.Scope)
		in := &schedInstruments{}
		in.ticks, _ = m.Int64Counter(metricScheduleTicks, metric.WithUnit("{tick}"), metric.WithDescription("Schedule ticks by sequence and outcome (started, skipped, buffered, cancelled, paused, dropped, buffered_started, paused_on_failure)"))
		in.lag, _ = m.Float64Histogram(metricScheduleLag, metric.WithUnit("s"), metric.WithDescription("Seconds from a schedule tick's own time to its admission by a seqworker"),
			metric.WithExplicitBucketBoundaries(metrics.DurationBuckets()...))
		w.schedMet = in
	})
	return w.schedMet
}

// countTick counts one tick outcome of a sequence's schedule.
func (w *Worker) countTick(ctx context.Context, sequence, outcome string) {
	if m := w.schedMetrics(); m.ticks != nil {
		m.ticks.Add(ctx, 1, w.attrs.two(metrics.AttrSequence, w.seqLabel(sequence, false), attrOutcome, outcome))
	}
}

// tickLag records the lag of a started tick.
func (w *Worker) tickLag(ctx context.Context, sequence string, d time.Duration) {
	if m := w.schedMetrics(); m.lag != nil && d >= 0 {
		m.lag.Record(ctx, d.Seconds(), metric.WithAttributes(metrics.AttrSequence.String(w.seqLabel(sequence, false))))
	}
}
