package skillfacesvc

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// The service's metrics (docs/operations.md, "Metrics"): assemble
// requests timed by reply status, skills activated by name (names of
// loaded skills: bounded by the SKILLS bucket), listing entries cut or left
// out. The rest of the package calls the hooks below.

// newMetrics creates the instruments on cfg.Meters (the global provider
// when nil); a failure (a bug) leaves no-op ones, so metrics never keep
// the service from serving.
func newMetrics(cfg Config) *metrics.Skillface {
	mp := cfg.Meters
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := metrics.NewSkillface(mp)
	if err != nil {
		cfg.Logger.Warn("metrics unavailable", "err", err)
		m, _ = metrics.NewSkillface(noop.NewMeterProvider())
	}
	return m
}

// noteRequest records a request to subject that started at start and was
// answered with code ("" for a reply with a result). Only assemble
// requests are timed.
func (s *Service) noteRequest(ctx context.Context, subject string, start time.Time, code string) {
	if subject != SubjectAssemble {
		return
	}
	if code == "" {
		code = "ok"
	}
	s.met.AssembleDuration.Record(ctx, time.Since(start).Seconds(), statusOption(code)...)
}

// statusOpts holds the record options of each reply status (a handful of
// codes), built once so that timing a request allocates nothing.
var statusOpts sync.Map // code → []metric.RecordOption

func statusOption(code string) []metric.RecordOption {
	if o, ok := statusOpts.Load(code); ok {
		return o.([]metric.RecordOption)
	}
	o, _ := statusOpts.LoadOrStore(code, []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(metrics.AttrStatus.String(code)))})
	return o.([]metric.RecordOption)
}

// noteAssembled counts what one assembled response did: the skills that
// activated or triggered again, and the listing entries cut to the entry
// budget or left out by the listing budget.
func (s *Service) noteAssembled(ctx context.Context, resp *skillface.Response) {
	for _, name := range resp.Triggered {
		s.met.Activations.Add(ctx, 1, metric.WithAttributes(metrics.AttrSkill.String(name)))
	}
	if n := resp.Counts.EntriesTruncated + resp.Counts.EntriesDropped; n > 0 {
		s.met.ListingTruncations.Add(ctx, int64(n))
	}
}
