package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// The worker's metrics and its run log lines (docs/operations.md,
// "Metrics" and "Logs"). The rest of the package calls the hooks below at
// the moments they describe; all of them are cheap and never fail.
//
// Label values are bounded by what the cluster stores and serves, never a
// run id: a stored sequence's name (a run of a sequence sent inline, such
// as `skillbus run FILE`, is labelled "(inline)", and a run naming no
// stored sequence "(unknown)"); its group names (those of an inline
// sequence "(inline)"); a tool's name once a provider answered a call (a
// call nobody serves is labelled "(missing)"); statuses and triggers from
// their fixed sets (docs/runs.md), and tool error codes of three digits.

// Label values that stand for names outside the stored set.
const (
	labelInline  = "(inline)"
	labelUnknown = "(unknown)"
	labelMissing = "(missing)"
)

// initMetrics creates the worker's instruments on cfg.Meters (the global
// provider when nil) and wraps its caller so that each tool call attempt
// is timed. A failure to create them (a bug) is logged and leaves no-op
// instruments: metrics never keep a worker from running.
func (w *Worker) initMetrics() {
	mp := w.cfg.Meters
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	obs := metrics.SeqworkerObservers{InFlight: w.runsHeld, Pending: w.seqRunsPending}
	m, err := metrics.NewSeqworker(mp, obs)
	if err != nil {
		w.log.Warn("metrics unavailable", "err", err)
		m, _ = metrics.NewSeqworker(noop.NewMeterProvider(), metrics.SeqworkerObservers{})
	}
	w.met = m
	w.initWaitMetrics(mp) // wait.go
	w.caller = meteredCaller{next: w.caller, dur: m.ToolCallDuration, attrs: &w.attrs}
}

// attrCache keeps the attribute sets of the worker's measurements by their
// label values: building a set (attribute.NewSet sorts and hashes it) was
// 8% of the worker's CPU when done for every tool call (BENCHMARKS.md,
// the seqworker profile). Label values are bounded (see above), and so is
// the cache: past maxAttrSets sets, a set is built for each measurement.
type attrCache struct {
	sets sync.Map // string (the label values joined by NUL) → metric.MeasurementOption
	n    atomic.Int32
}

// maxAttrSets bounds attrCache.
const maxAttrSets = 4096

// get returns the measurement option of the labels kvs, cached under key
// (which must tell every label set apart: the keys and values joined by
// NUL, which no label value contains).
func (c *attrCache) get(key string, kvs ...attribute.KeyValue) metric.MeasurementOption {
	if o, ok := c.sets.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(kvs...))
	if c.n.Add(1) <= maxAttrSets {
		c.sets.Store(key, o)
	}
	return o
}

// two returns the cached option of the labels k1 = v1, k2 = v2.
func (c *attrCache) two(k1 attribute.Key, v1 string, k2 attribute.Key, v2 string) metric.MeasurementOption {
	if c == nil {
		return metric.WithAttributes(k1.String(v1), k2.String(v2))
	}
	return c.get(string(k1)+"\x00"+v1+"\x00"+string(k2)+"\x00"+v2, k1.String(v1), k2.String(v2))
}

// runsHeld is skillbus.runs.in_flight: the runs this worker executes now.
func (w *Worker) runsHeld() int64 {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	return int64(len(w.held))
}

// seqRunsPending is skillbus.seq_runs.pending: the SEQ_RUNS consumer's
// count of requests not yet delivered, from one consumer info request
// (internal/metrics caches it, so scrapes cannot hammer JetStream).
func (w *Worker) seqRunsPending(ctx context.Context) (int64, error) {
	c, err := w.js.Consumer(ctx, events.StreamSeqRuns, events.ConsumerSeqworker)
	if err != nil {
		return 0, err
	}
	return int64(c.CachedInfo().NumPending), nil
}

// seqLabel is the sequence label of a run of the sequence called name.
func (w *Worker) seqLabel(name string, inline bool) string {
	switch {
	case inline:
		return labelInline
	case w.cat == nil:
		return labelUnknown
	}
	w.cat.mu.Lock()
	_, ok := w.cat.byName[name]
	w.cat.mu.Unlock()
	if !ok {
		return labelUnknown
	}
	return name
}

// noteDelivery counts a run request delivered again (attempt > 1).
func (w *Worker) noteDelivery(ctx context.Context, req *events.RunRequest, attempt int) {
	if attempt > 1 {
		w.met.Redeliveries.Add(ctx, 1, metric.WithAttributes(metrics.AttrSequence.String(w.seqLabel(req.Sequence, len(req.Inline) > 0))))
	}
}

// runStarted counts the start of a claimed run on this worker and logs it.
// resumedAfter is the number of groups already finished when the run
// resumes from a checkpoint (0 for a fresh start). ctx holds the run's
// span, so the line carries its trace_id and span_id.
func (r *run) runStarted(ctx context.Context, resumedAfter int) {
	r.mu.Lock()
	st := *r.st
	r.mu.Unlock()
	w := r.w
	w.met.RunsStarted.Add(ctx, 1, w.attrs.two(metrics.AttrSequence, w.seqLabel(st.Sequence, len(r.req.Inline) > 0), metrics.AttrTrigger, st.Trigger))
	attrs := []any{"run", st.RunID, "sequence", st.Sequence, "trigger", st.Trigger, "worker", st.Worker, "attempt", r.attempt, "groups", st.Groups}
	if resumedAfter > 0 {
		attrs = append(attrs, "resumed_after_group", resumedAfter)
	}
	w.log.InfoContext(ctx, "run started", attrs...)
}

// runFinished counts a run whose final state (succeeded, failed or
// cancelled) is stored, records its duration (from its first start to its
// end) and logs it.
func (w *Worker) runFinished(ctx context.Context, st *events.RunState) {
	status := st.Status
	labels := w.attrs.two(metrics.AttrSequence, w.seqLabel(st.Sequence, len(st.Inline) > 0), metrics.AttrStatus, status)
	w.met.RunsFinished.Add(ctx, 1, labels)
	var d time.Duration
	if !st.StartedAt.IsZero() && !st.FinishedAt.IsZero() {
		d = st.FinishedAt.Sub(st.StartedAt)
		w.met.RunDuration.Record(ctx, d.Seconds(), labels)
	}
	attrs := []any{"run", st.RunID, "sequence", st.Sequence, "trigger", st.Trigger, "status", status,
		"duration", d.Round(time.Millisecond), "worker", w.cfg.WorkerID, "attempt", st.Attempt, "groups_finished", st.FinishedGroups}
	if st.Groups > 0 {
		attrs = append(attrs, "groups", st.Groups)
	}
	if st.Error != "" {
		attrs = append(attrs, "error", st.Error)
	}
	w.log.InfoContext(ctx, "run finished", attrs...)
}

// groupDone records a finished group of a run of s: its duration and the
// retries of its calls. inline says s was sent with the request.
func (w *Worker) groupDone(ctx context.Context, s *seq.Sequence, inline bool, gr *seq.GroupResult) {
	seqName, group := w.seqLabel(s.Name, inline), gr.Name
	if seqName == labelInline || seqName == labelUnknown {
		group = seqName
	}
	w.met.GroupDuration.Record(ctx, time.Duration(gr.Duration).Seconds(), w.attrs.get("group\x00"+seqName+"\x00"+group+"\x00"+string(gr.Status),
		metrics.AttrSequence.String(seqName), metrics.AttrGroup.String(group), metrics.AttrStatus.String(string(gr.Status))))
	for _, c := range gr.Calls {
		if c.Attempts > 1 {
			w.met.ToolCallRetries.Add(ctx, int64(c.Attempts-1), w.attrs.get("retries\x00"+c.Tool, metrics.AttrTool.String(c.Tool)))
		}
	}
}

// callDone records a seq_call request (one group of a stored sequence, run
// on request and stored in RUNS as a run with trigger seq_call): the run
// started and finished, its group and a log line. runID is its RUNS key
// ("" when it could not be stored).
func (w *Worker) callDone(ctx context.Context, s *seq.Sequence, gr *seq.GroupResult, callErr error, started time.Time, runID string) {
	seqName := w.seqLabel(s.Name, false)
	w.met.RunsStarted.Add(ctx, 1, w.attrs.two(metrics.AttrSequence, seqName, metrics.AttrTrigger, events.TriggerSeqCall))
	st := &events.RunState{RunID: runID, Sequence: s.Name, Trigger: events.TriggerSeqCall, Status: events.StatusSucceeded,
		Attempt: 1, Groups: 1, StartedAt: started, FinishedAt: time.Now().UTC()}
	if callErr != nil {
		st.Status, st.Error = events.StatusFailed, callErr.Error()
	}
	if gr != nil {
		w.groupDone(ctx, s, false, gr)
		if gr.Status.Finished() {
			st.FinishedGroups = 1
		}
	}
	w.runFinished(ctx, st)
}

// meteredCaller times each tool call attempt as the caller sees it
// (skillbus.tool_call.duration, by tool and status).
type meteredCaller struct {
	next  seq.Caller
	dur   metric.Float64Histogram
	attrs *attrCache
}

// Call calls the tool and records the attempt.
func (c meteredCaller) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	res, err := c.next.Call(ctx, tool, args)
	status := callStatus(err)
	if status == "missing" {
		tool = labelMissing
	}
	c.dur.Record(ctx, time.Since(start).Seconds(), c.attrs.two(metrics.AttrTool, tool, metrics.AttrStatus, status))
	return res, err
}

// callStatus is the status label of a call attempt's outcome: "ok",
// "missing" (no provider), the provider's error code when it has three
// digits, "timeout" (the deadline passed), "canceled", else "error".
func callStatus(err error) string {
	var te *toolcall.Error
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, toolcall.ErrMissing):
		return "missing"
	case errors.As(err, &te):
		if code := te.CodeOrDefault(); len(code) == 3 && code[0] >= '1' && code[0] <= '9' && code[1] >= '0' && code[1] <= '9' && code[2] >= '0' && code[2] <= '9' {
			return code
		}
		return "error"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}

// resumedAfter is the number of groups a run had finished when this
// delivery took it over from an earlier one (cur: the state found at the
// claim); 0 for a fresh start.
func resumedAfter(cur *events.RunState) int {
	if cur == nil || cur.Attempt == 0 {
		return 0
	}
	return cur.FinishedGroups
}
