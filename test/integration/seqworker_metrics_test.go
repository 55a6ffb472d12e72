package integration

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// swMeters is a worker's meter provider and a way to read its sums (by
// instrument name and attribute values) and gauges.
type swMeters struct {
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
}

func newSWMeters(t *testing.T) swMeters {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return swMeters{mp: mp, reader: r}
}

// value sums the data points of instrument name whose attributes include
// attrs (a histogram's count); ok is false when none matches.
func (m swMeters) value(t *testing.T, name string, attrs ...attribute.KeyValue) (v float64, ok bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	match := func(set attribute.Set) bool {
		for _, a := range attrs {
			if got, found := set.Value(a.Key); !found || got != a.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != name {
				continue
			}
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						v, ok = v+float64(dp.Value), true
					}
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						v, ok = v+float64(dp.Value), true
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						v, ok = v+float64(dp.Count), true
					}
				}
			}
		}
	}
	return v, ok
}

// TestSeqworkerMetricsHandBack: a worker stopped in the middle of a run
// counts the run started but not finished and hands it back; the worker
// that resumes it counts one redelivery, the run started again (logged
// with the group it resumes after) and finished; runs in flight go back
// to 0 on both.
func TestSeqworkerMetricsHandBack(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var calls swCounter
	swServe(t, env,
		swEcho("mh.first", &calls),
		tool.Tool{Name: "mh.hold", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if calls.add("mh.hold") == 1 {
				started <- struct{}{}
				select { // the first call holds until its worker has stopped
				case <-release:
				case <-ctx.Done():
				}
				return nil, tool.Errorf("503", "interrupted")
			}
			return args, nil
		}},
	)
	swStore(t, env, `
name: sw-metrics-handback
groups:
  - name: sw-mh-first
    tools: [{tool: mh.first}]
  - name: sw-mh-hold
    tools: [{tool: mh.hold}]
`)
	seqAttr := metrics.AttrSequence.String("sw-metrics-handback")

	ma := newSWMeters(t)
	a := swWorker(t, env, seqworker.Config{Meters: ma.mp, WorkerID: "worker-a"})
	swRequest(t, env, "r-metrics-hb", "sw-metrics-handback", nil)
	<-started
	if n, _ := ma.value(t, metrics.RunsInFlight); n != 1 {
		t.Errorf("worker a: runs in flight %v while the run holds; want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_ = a.Stop(ctx) // interrupts the run: handed back after group 1
	cancel()
	close(release)

	var logs servicecmdtest.Buffer
	mb := newSWMeters(t)
	swWorker(t, env, seqworker.Config{Meters: mb.mp, WorkerID: "worker-b", Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	st := swWait(t, env, "r-metrics-hb", 10*time.Second)
	if st.Status != events.StatusSucceeded {
		t.Fatalf("run %s (%s); want succeeded", st.Status, st.Error)
	}

	for _, c := range []struct {
		who   string
		m     swMeters
		name  string
		attrs []attribute.KeyValue
		want  float64
	}{
		{"a", ma, metrics.RunsStarted, []attribute.KeyValue{seqAttr, metrics.AttrTrigger.String("manual")}, 1},
		{"a", ma, metrics.RunsFinished, nil, 0},
		{"a", ma, metrics.RunRedeliveries, nil, 0},
		{"a", ma, metrics.GroupDuration, []attribute.KeyValue{seqAttr, metrics.AttrGroup.String("sw-mh-first"), metrics.AttrStatus.String("succeeded")}, 1},
		{"b", mb, metrics.RunRedeliveries, []attribute.KeyValue{seqAttr}, 1},
		{"b", mb, metrics.RunsStarted, []attribute.KeyValue{seqAttr, metrics.AttrTrigger.String("manual")}, 1},
		{"b", mb, metrics.RunsFinished, []attribute.KeyValue{seqAttr, metrics.AttrStatus.String("succeeded")}, 1},
		{"b", mb, metrics.RunDuration, []attribute.KeyValue{seqAttr, metrics.AttrStatus.String("succeeded")}, 1},
		{"b", mb, metrics.GroupDuration, []attribute.KeyValue{seqAttr, metrics.AttrGroup.String("sw-mh-first")}, 0}, // not run again
		{"b", mb, metrics.GroupDuration, []attribute.KeyValue{seqAttr, metrics.AttrGroup.String("sw-mh-hold"), metrics.AttrStatus.String("succeeded")}, 1},
		{"b", mb, metrics.RunsInFlight, nil, 0},
	} {
		if got, _ := c.m.value(t, c.name, c.attrs...); got != c.want {
			t.Errorf("worker %s: %s%v = %v; want %v", c.who, c.name, c.attrs, got, c.want)
		}
	}

	var startLine, finishLine map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["run"] != "r-metrics-hb" {
			continue
		}
		switch rec["msg"] {
		case "run started":
			startLine = rec
		case "run finished":
			finishLine = rec
		}
	}
	if startLine == nil || startLine["resumed_after_group"] != 1.0 || startLine["attempt"] != 2.0 || startLine["worker"] != "worker-b" {
		t.Errorf("worker b's run started line: %v; want resumed_after_group 1, attempt 2, worker worker-b\n%s", startLine, logs.String())
	}
	if finishLine == nil || finishLine["status"] != "succeeded" || finishLine["groups_finished"] != 2.0 {
		t.Errorf("worker b's run finished line: %v; want status succeeded, groups_finished 2\n%s", finishLine, logs.String())
	}
}
