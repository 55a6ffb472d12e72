package registry

import (
	"go.opentelemetry.io/otel"

	"github.com/skillbus/skillbus/internal/metrics"
)

// The registry's metrics (docs/operations.md, "Metrics"):
// skillbus.registry.entries, the skills and sequences it holds (its
// resolved view, what skill.list and seq.list return), and
// skillbus.registry.invalid_files, the files that do not validate now (the
// last good version of each stays stored), both by kind ("skill",
// "sequence", and "tree" for a refused directory);
// skillbus.registry.leader, 1 while this replica holds the lease (lease.go),
// and skillbus.registry.tree_differs, 1 while its tree differs from the
// leader's. They are gauges read
// at collection time from a snapshot taken after every apply, so a scrape
// never waits for the registry's lock.

// initMetrics registers the gauges on Config.Meters (the global provider
// when nil). A failure (a bug) is logged: metrics never keep the registry
// from serving.
func (r *Registry) initMetrics() {
	mp := r.cfg.Meters
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := metrics.NewRegistry(mp, func() metrics.RegistryCounts {
		var c metrics.RegistryCounts
		if p := r.counts.Load(); p != nil {
			c = *p
		}
		c.Leader, c.TreeDiffers = r.leading.Load(), r.treeDiffers.Load()
		return c
	})
	if err != nil {
		r.log.Warn("metrics unavailable", "err", err)
		return
	}
	r.met = m
}

// noteCountsLocked takes the snapshot the gauges report: skills and
// sequences resolved by the apply that just ran, and the files that are
// invalid now. The caller holds r.mu.
func (r *Registry) noteCountsLocked(skills, seqs int) {
	c := metrics.RegistryCounts{
		Entries: map[string]int64{kindSkill: int64(skills), kindSequence: int64(seqs)},
		Invalid: map[string]int64{kindSkill: 0, kindSequence: 0},
	}
	for _, st := range r.files {
		if st.problems != nil {
			c.Invalid[st.kind]++
		}
	}
	r.counts.Store(&c)
}

// stopMetrics stops the gauges.
func (r *Registry) stopMetrics() {
	if r.met != nil {
		_ = r.met.Unregister()
	}
}
