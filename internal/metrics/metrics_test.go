package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// scrape returns a provider exporting to a fresh Prometheus registry and a
// function returning the registry's text exposition.
func scrape(t *testing.T) (*sdkmetric.MeterProvider, func() string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return mp, func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		b, _ := io.ReadAll(rec.Body)
		return string(b)
	}
}

func wantLines(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("exposition lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", text)
	}
}

// TestInstrumentNames records on every instrument and checks the names a
// Prometheus user sees (docs/operations.md lists these).
func TestInstrumentNames(t *testing.T) {
	mp, get := scrape(t)
	ctx := context.Background()
	sw, err := metrics.NewSeqworker(mp, metrics.SeqworkerObservers{
		InFlight: func() int64 { return 2 },
		Pending:  func(context.Context) (int64, error) { return 42, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Unregister()
	seqAttr := metric.WithAttributes(metrics.AttrSequence.String("survey"), metrics.AttrStatus.String("succeeded"))
	sw.RunsStarted.Add(ctx, 1, metric.WithAttributes(metrics.AttrSequence.String("survey"), metrics.AttrTrigger.String("manual")))
	sw.RunsFinished.Add(ctx, 1, seqAttr)
	sw.RunDuration.Record(ctx, 1.5, seqAttr)
	sw.GroupDuration.Record(ctx, 0.2, seqAttr)
	sw.ToolCallDuration.Record(ctx, 0.01, metric.WithAttributes(metrics.AttrTool.String("fs.list")))
	sw.ToolCallRetries.Add(ctx, 3)
	sw.Redeliveries.Add(ctx, 1)
	sf, err := metrics.NewSkillface(mp)
	if err != nil {
		t.Fatal(err)
	}
	sf.AssembleDuration.Record(ctx, 0.003)
	sf.Activations.Add(ctx, 1, metric.WithAttributes(metrics.AttrSkill.String("pdf")))
	sf.ListingTruncations.Add(ctx, 4)
	reg, err := metrics.NewRegistry(mp, func() metrics.RegistryCounts {
		return metrics.RegistryCounts{Entries: map[string]int64{"skill": 7, "sequence": 3}, Invalid: map[string]int64{"sequence": 1}, Leader: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	wantLines(t, get(),
		`skillbus_runs_started_total{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version="",skillbus_sequence="survey",skillbus_trigger="manual"} 1`,
		`skillbus_runs_finished_total{`,
		`skillbus_runs_in_flight{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 2`,
		`skillbus_run_duration_seconds_bucket{`,
		`skillbus_group_duration_seconds_count{`,
		`skillbus_tool_call_duration_seconds_sum{`,
		`skillbus_tool_call_retries_total{`,
		`skillbus_runs_redeliveries_total{`,
		`skillbus_skillface_assemble_duration_seconds_bucket{`,
		`skillbus_skillface_activations_total{`,
		`skillbus_skillface_listing_truncations_total{`,
		`skillbus_registry_entries{`, `skillbus_kind="skill"} 7`,
		`skillbus_registry_invalid_files{`,
		`skillbus_registry_leader{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 1`,
		`skillbus_registry_tree_differs{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 0`,
		`skillbus_seq_runs_pending{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 42`,
		`le="600"`,
	)
}

// TestPendingIsCached: however often /metrics is scraped, the SEQ_RUNS
// consumer is asked at most once per PendingMaxAge; a failed read is not
// retried before then either, and reports nothing. The scrapes go through
// an httptest recorder, so the test runs in a synctest bubble and
// PendingMaxAge passes on its fake clock, not the wall clock.
func TestPendingIsCached(t *testing.T) {
	synctest.Test(t, testPendingIsCached)
}

func testPendingIsCached(t *testing.T) {
	mp, get := scrape(t)
	var reads atomic.Int64
	fail := atomic.Bool{}
	sw, err := metrics.NewSeqworker(mp, metrics.SeqworkerObservers{Pending: func(ctx context.Context) (int64, error) {
		n := reads.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Pending called without a deadline")
		}
		if fail.Load() {
			return 0, errors.New("JetStream unavailable")
		}
		return 10 * n, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Unregister()
	for range 20 {
		wantLines(t, get(), `skillbus_seq_runs_pending{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 10`)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("20 scrapes read the consumer %d times; want 1 (cached for %v)", n, metrics.PendingMaxAge)
	}
	fail.Store(true)
	time.Sleep(metrics.PendingMaxAge - time.Millisecond)
	wantLines(t, get(), `skillbus_seq_runs_pending{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 10`)
	if n := reads.Load(); n != 1 {
		t.Errorf("a scrape 1 ms before PendingMaxAge read the consumer again (%d reads); want the cached value", n)
	}
	time.Sleep(time.Millisecond)
	for range 5 {
		if text := get(); strings.Contains(text, "skillbus_seq_runs_pending{") {
			t.Errorf("a failed read still reports a pending count:\n%s", text)
		}
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("after the cache expired, 5 scrapes read the consumer %d more times; want 1", n-1)
	}
}

// TestToolNamesAgree: pkg/tool, which cannot import this package, records
// the tool provider's instruments under the names and scope defined here.
func TestToolNamesAgree(t *testing.T) {
	if tool.MetricCalls != metrics.ToolCallsServed || tool.MetricProcessDuration != metrics.MessagingProcess || tool.MeterScope != metrics.Scope {
		t.Errorf("pkg/tool records %q, %q in scope %q; internal/metrics defines %q, %q in scope %q",
			tool.MetricCalls, tool.MetricProcessDuration, tool.MeterScope, metrics.ToolCallsServed, metrics.MessagingProcess, metrics.Scope)
	}
}

// TestObserveConn reads a real connection's counters and state.
func TestObserveConn(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	mp, get := scrape(t)
	reg, err := metrics.ObserveConn(mp, nc)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	sub, err := nc.SubscribeSync("x")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := nc.Publish("x", []byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := sub.NextMsg(5e9); err != nil {
			t.Fatal(err)
		}
	}
	text := get()
	wantLines(t, text,
		`messaging_client_sent_messages_total{messaging_system="nats",`,
		`messaging_client_consumed_messages_total{messaging_system="nats",`,
		`skillbus_nats_sent_bytes_total{`,
		`skillbus_nats_reconnects_total{`,
		`skillbus_nats_connection_up{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 1`,
	)
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "messaging_client_sent_messages_total{") && strings.HasSuffix(l, " 0") {
			t.Errorf("sent messages = 0 after 5 publishes: %s", l)
		}
	}
	nc.Close()
	wantLines(t, get(), `skillbus_nats_connection_up{otel_scope_name="github.com/skillbus/skillbus",otel_scope_schema_url="",otel_scope_version=""} 0`)
}
