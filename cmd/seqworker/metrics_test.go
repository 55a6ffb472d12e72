package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// metricsDemo uses every kind of call the metrics tell apart: built-in
// tools that succeed, a tool that fails twice with 503 and is retried, a
// tool nobody serves (missing: skip).
const metricsDemo = `
name: metrics-demo
groups:
  - name: metrics-list
    out: {listing: object}
    tools: [{tool: fs.list, as: listing}]
  - name: metrics-flaky
    out: {flaky: object}
    on_error: retry
    retries: 3
    tools: [{tool: mt.flaky, as: flaky}]
  - name: metrics-missing
    missing: skip
    tools: [{tool: mt.nobody}]
  - name: metrics-report
    in: {listing: object}
    out: {report: string}
    tools: [{tool: text.render, args: {template: "{{len .listing.entries}} entries", data: {listing: $args.listing}}, as: report}]
`

// metricsFail fails: fs.read answers 404 (not retried).
const metricsFail = `
name: metrics-fail
groups:
  - name: metrics-read
    out: {text: object}
    tools: [{tool: fs.read, args: {path: no-such-file}, as: text}]
`

// TestMetricsAndRunLogs runs the seqworker command (this main, with
// --health-addr and --log-json) and `skillbus tools serve` as services on
// an embedded server, runs a sequence that succeeds, one that fails and
// one seq_call, then scrapes both /metrics endpoints and finds each run,
// group and call counted with its labels, and reads the worker's JSON log
// lines: one at each run's start and finish, in the trace of the request
// that started it.
func TestMetricsAndRunLogs(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK) // an OTLP/HTTP collector that accepts everything
	}))
	defer collector.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	srv := natsserver.StartTB(t, natsserver.Options{})
	t.Setenv("NATS_URL", srv.ClientURL())
	root := t.TempDir()
	for _, f := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	toolsLog, _ := servicecmdtest.Background(t, func(ctx context.Context, stderr io.Writer) int {
		return cli.Main(ctx, []string{"tools", "serve", "--root", root, "--health-addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, stderr)
	}, "msg=ready")
	toolsAddr := servicecmdtest.HealthAddr(t, toolsLog.String())
	workerLog, stopWorker := servicecmdtest.Background(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, []string{"--memory", "--health-addr", "127.0.0.1:0", "--log-json", "--shutdown-budget", "5s", "--worker-id", "metrics-worker"}, io.Discard, stderr)
	}, `"msg":"ready"`)
	workerAddr := servicecmdtest.HealthAddr(t, workerLog.String())

	nc := natsserver.ConnectTB(t, srv)
	var flakyCalls atomic.Int64
	flaky, err := tool.Serve(nc, tool.ServerConfig{Name: "metrics-test", Meters: noop.NewMeterProvider()}, tool.Tool{Name: "mt.flaky",
		Func: func(context.Context, json.RawMessage) (any, error) {
			if flakyCalls.Add(1)%3 != 0 {
				return nil, tool.Errorf("503", "not yet")
			}
			return map[string]bool{"ok": true}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer flaky.Stop(context.Background())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kv, err := js.KeyValue(ctx, events.BucketSequences)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{metricsDemo, metricsFail} {
		s, err := seq.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := seq.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, events.KeyFor(s.Name), b); err != nil {
			t.Fatal(err)
		}
	}

	// The runs, in a trace of the test's own (the services installed an
	// SDK tracer provider, as OTEL_TRACES_EXPORTER asks).
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	tctx, span := otel.Tracer("skillbus-test").Start(ctx, "metrics test")
	traceID := span.SpanContext().TraceID().String()
	runs := map[string]string{} // sequence → run id
	for _, name := range []string{"metrics-demo", "metrics-fail"} {
		id, err := c.Start(tctx, events.SeqRunRequest{Sequence: name})
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		st, err := c.Wait(ctx, id, client.WaitOptions{Poll: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("wait for %s: %v", name, err)
		}
		want := events.StatusSucceeded
		if name == "metrics-fail" {
			want = events.StatusFailed
		}
		if st.Status != want {
			t.Fatalf("%s: status %s (%s); want %s", name, st.Status, st.Error, want)
		}
		runs[name] = id
	}
	if _, err := c.Call(tctx, "metrics-list", nil); err != nil {
		t.Fatalf("seq_call metrics-list: %v", err)
	}
	span.End()

	type check struct {
		name   string
		labels map[string]string
		want   float64
	}
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	worker := []check{
		{"skillbus_runs_started_total", l("skillbus_sequence", "metrics-demo", "skillbus_trigger", "manual"), 1},
		{"skillbus_runs_started_total", l("skillbus_sequence", "metrics-demo", "skillbus_trigger", "seq_call"), 1},
		{"skillbus_runs_started_total", l("skillbus_sequence", "metrics-fail", "skillbus_trigger", "manual"), 1},
		{"skillbus_runs_finished_total", l("skillbus_sequence", "metrics-demo", "skillbus_status", "succeeded"), 2},
		{"skillbus_runs_finished_total", l("skillbus_sequence", "metrics-fail", "skillbus_status", "failed"), 1},
		{"skillbus_run_duration_seconds", l("skillbus_sequence", "metrics-demo", "skillbus_status", "succeeded"), 2},
		{"skillbus_run_duration_seconds", l("skillbus_sequence", "metrics-fail", "skillbus_status", "failed"), 1},
		{"skillbus_group_duration_seconds", l("skillbus_sequence", "metrics-demo", "skillbus_group", "metrics-list", "skillbus_status", "succeeded"), 2},
		{"skillbus_group_duration_seconds", l("skillbus_sequence", "metrics-demo", "skillbus_group", "metrics-flaky", "skillbus_status", "succeeded"), 1},
		{"skillbus_group_duration_seconds", l("skillbus_sequence", "metrics-demo"), 5},
		{"skillbus_group_duration_seconds", l("skillbus_sequence", "metrics-fail", "skillbus_group", "metrics-read", "skillbus_status", "failed"), 1},
		{"skillbus_tool_call_duration_seconds", l("skillbus_tool", "fs.list", "skillbus_status", "ok"), 2},
		{"skillbus_tool_call_duration_seconds", l("skillbus_tool", "mt.flaky", "skillbus_status", "503"), 2},
		{"skillbus_tool_call_duration_seconds", l("skillbus_tool", "mt.flaky", "skillbus_status", "ok"), 1},
		{"skillbus_tool_call_duration_seconds", l("skillbus_tool", "(missing)", "skillbus_status", "missing"), 1},
		{"skillbus_tool_call_duration_seconds", l("skillbus_tool", "text.render", "skillbus_status", "ok"), 1},
		{"skillbus_tool_call_duration_seconds", l("skillbus_tool", "fs.read", "skillbus_status", "404"), 1},
		{"skillbus_tool_call_retries_total", l("skillbus_tool", "mt.flaky"), 2},
		{"skillbus_runs_in_flight", nil, 0},
		{"skillbus_seq_runs_pending", nil, 0},
		{"messaging_client_sent_messages_total", l("messaging_system", "nats"), -1}, // present
	}
	provider := []check{
		{"skillbus_tool_calls_total", l("skillbus_tool", "fs.list", "skillbus_status", "ok"), 2},
		{"skillbus_tool_calls_total", l("skillbus_tool", "text.render", "skillbus_status", "ok"), 1},
		{"skillbus_tool_calls_total", l("skillbus_tool", "fs.read", "skillbus_status", "404"), 1},
		{"messaging_process_duration_seconds", l("messaging_system", "nats", "messaging_operation_name", "process", "messaging_destination_name", "tool.fs.read", "error_type", "404"), 1},
		{"messaging_process_duration_seconds", l("messaging_destination_name", "tool.fs.list"), 2},
	}
	// A call is counted just after its reply: scrape until the last ones
	// are in.
	for _, ep := range []struct {
		what, addr string
		checks     []check
	}{{"seqworker", workerAddr, worker}, {"tools serve", toolsAddr, provider}} {
		var failed []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			m := servicecmdtest.Scrape(t, ep.addr)
			failed = failed[:0]
			for _, c := range ep.checks {
				got, ok := m.Value(c.name, c.labels)
				if !ok || (c.want >= 0 && got != c.want) {
					failed = append(failed, fmt.Sprintf("%s%v = %v (found: %v); want %v\n%s", c.name, c.labels, got, ok, c.want, m.Describe(c.name)))
				}
			}
			if len(failed) == 0 || time.Now().After(deadline) {
				break
			}
		}
		for _, f := range failed {
			t.Errorf("%s /metrics: %s", ep.what, f)
		}
	}

	// The log: one line at each run's start and one at its finish, with
	// the run's trace.
	hex := regexp.MustCompile(`^[0-9a-f]{16}$`)
	lines := map[string]map[string]any{} // "run started "+id → line
	for _, line := range strings.Split(workerLog.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		msg, _ := rec["msg"].(string)
		id, _ := rec["run"].(string)
		if msg == "run started" || msg == "run finished" {
			if lines[msg+" "+id] != nil {
				t.Errorf("two %q lines for run %s", msg, id)
			}
			lines[msg+" "+id] = rec
		}
	}
	for name, id := range runs {
		for _, msg := range []string{"run started", "run finished"} {
			rec := lines[msg+" "+id]
			if rec == nil {
				t.Errorf("no %q line for run %s of %s in the log:\n%s", msg, id, name, workerLog.String())
				continue
			}
			if rec["level"] != "INFO" || rec["sequence"] != name || rec["trigger"] != "manual" || rec["worker"] != "metrics-worker" {
				t.Errorf("%q line of %s: %v; want level INFO, sequence %s, trigger manual, worker metrics-worker", msg, name, rec, name)
			}
			if rec["trace_id"] != traceID || !hex.MatchString(fmt.Sprint(rec["span_id"])) {
				t.Errorf("%q line of %s: trace_id %v, span_id %v; want the trace of the request (%s) and a span id", msg, name, rec["trace_id"], rec["span_id"], traceID)
			}
			if msg == "run finished" {
				want := map[string]string{"metrics-demo": events.StatusSucceeded, "metrics-fail": events.StatusFailed}[name]
				if d, _ := rec["duration"].(float64); rec["status"] != want || d <= 0 {
					t.Errorf("run finished line of %s: status %v, duration %v; want %s and the run's duration", name, rec["status"], rec["duration"], want)
				}
				if name == "metrics-fail" && !strings.Contains(fmt.Sprint(rec["error"]), "404") {
					t.Errorf("run finished line of metrics-fail: error %v; want the tool's 404", rec["error"])
				}
			}
		}
	}
	if code := stopWorker(); code != 0 {
		t.Errorf("seqworker exit code %d; want 0", code)
	}
}
