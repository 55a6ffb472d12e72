package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestServerMetrics: every call a provider answers is counted by tool and
// status (the code it replied, "ok" for a result, "error" for a code that
// is not three digits) and timed under the messaging conventions'
// messaging.process.duration, on the meter provider of ServerConfig.Meters.
func TestServerMetrics(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "metered", Meters: mp},
		tool.Tool{Name: "m.echo", Schema: schema, Func: func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }},
		tool.Tool{Name: "m.fail", Func: func(_ context.Context, args json.RawMessage) (any, error) {
			var in struct{ Code string }
			_ = json.Unmarshal(args, &in)
			if in.Code == "panic" {
				panic("boom")
			}
			return nil, tool.Errorf(in.Code, "failing with %q", in.Code)
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	c, err := tool.NewClient(natsserver.ConnectTB(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(name, args string, wantCode string) {
		t.Helper()
		_, err := c.Call(ctx, name, json.RawMessage(args))
		var te *tool.Error
		switch {
		case wantCode == "" && err != nil:
			t.Fatalf("%s %s: %v", name, args, err)
		case wantCode != "" && (!errors.As(err, &te) || te.CodeOrDefault() != wantCode):
			t.Fatalf("%s %s: %v; want code %s", name, args, err, wantCode)
		}
	}
	for range 3 {
		call("m.echo", `{"n":1}`, "")
	}
	call("m.echo", `{"n":"one"}`, "400") // the schema refuses it
	call("m.fail", `{"Code":"404"}`, "404")
	call("m.fail", `{"Code":"404"}`, "404")
	call("m.fail", `{"Code":"teapot"}`, "teapot")
	call("m.fail", `{"Code":"panic"}`, "500")

	wantCalls := map[[2]string]int64{
		{"m.echo", "ok"}: 3, {"m.echo", "400"}: 1,
		{"m.fail", "404"}: 2, {"m.fail", "error"}: 1, {"m.fail", "500"}: 1,
		{"m.fail", "ok"}: 0, // reported from the start
	}
	wantDur := map[[2]string]uint64{
		{"tool.m.echo", ""}: 3, {"tool.m.echo", "400"}: 1,
		{"tool.m.fail", "404"}: 2, {"tool.m.fail", "error"}: 1, {"tool.m.fail", "500"}: 1,
	}
	// A call is counted just after its reply is sent: collect until the
	// last ones are in.
	var calls map[[2]string]int64
	var durations map[[2]string]uint64
	var zeroSums []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) { // a reader has no event for a recording
		calls, durations, zeroSums = collect(ctx, t, reader)
		if equalMaps(calls, wantCalls) && equalMaps(durations, wantDur) && len(zeroSums) == 0 || time.Now().After(deadline) {
			break
		}
	}
	// Checked on the last collection only: a collection that meets a
	// recording half done may see its count before its sum.
	for _, z := range zeroSums {
		t.Errorf("%s %s: sum 0; want the time the calls took", tool.MetricProcessDuration, z)
	}
	if !equalMaps(calls, wantCalls) {
		t.Errorf("%s = %v; want %v", tool.MetricCalls, calls, wantCalls)
	}
	if !equalMaps(durations, wantDur) {
		t.Errorf("%s counts = %v; want %v", tool.MetricProcessDuration, durations, wantDur)
	}
}

func str(set attribute.Set, key string) string {
	v, _ := set.Value(attribute.Key(key))
	return v.AsString()
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// collect reads the provider's calls by (tool, status) and its duration
// counts by (subject, error.type).
func collect(ctx context.Context, t *testing.T, reader *sdkmetric.ManualReader) (map[[2]string]int64, map[[2]string]uint64, []string) {
	t.Helper()
	calls := map[[2]string]int64{}
	durations := map[[2]string]uint64{}
	var zeroSums []string
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tool.MeterScope {
			t.Errorf("scope %q; want %q", sm.Scope.Name, tool.MeterScope)
		}
		for _, m := range sm.Metrics {
			switch m.Name {
			case tool.MetricCalls:
				if m.Unit != "{call}" {
					t.Errorf("%s unit %q", m.Name, m.Unit)
				}
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					calls[[2]string{str(dp.Attributes, "skillbus.tool"), str(dp.Attributes, "skillbus.status")}] += dp.Value
				}
			case tool.MetricProcessDuration:
				if m.Unit != "s" {
					t.Errorf("%s unit %q", m.Name, m.Unit)
				}
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					if str(dp.Attributes, "messaging.system") != "nats" || str(dp.Attributes, "messaging.operation.name") != "process" {
						t.Errorf("%s attributes %v", m.Name, dp.Attributes.ToSlice())
					}
					if dp.Sum <= 0 {
						zeroSums = append(zeroSums, fmt.Sprint(dp.Attributes.ToSlice()))
					}
					durations[[2]string{str(dp.Attributes, "messaging.destination.name"), str(dp.Attributes, "error.type")}] += dp.Count
				}
			}
		}
	}
	return calls, durations, zeroSums
}
