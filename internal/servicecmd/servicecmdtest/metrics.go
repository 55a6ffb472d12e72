package servicecmdtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Background runs run in a goroutine with a fresh context and a Buffer as
// its output, waits until the output contains ready, and returns the
// output and a stop function that cancels the context (as SIGTERM does)
// and returns run's exit code. It fails tb when ready does not appear or
// run does not return within Timeout of stop; tb's cleanup stops it too.
func Background(tb testing.TB, run func(ctx context.Context, stderr io.Writer) int, ready string) (out *Buffer, stop func() int) {
	tb.Helper()
	out = &Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, out) }()
	code, stopped := 0, false
	stop = func() int {
		if stopped {
			return code
		}
		stopped = true
		cancel()
		select {
		case code = <-done:
		case <-time.After(Timeout):
			tb.Errorf("no exit %v after the context ended; output:\n%s", Timeout, out.String())
		}
		return code
	}
	tb.Cleanup(func() { stop() })
	timeout := time.NewTimer(Timeout)
	defer timeout.Stop()
	for text, next := out.Changed(); !strings.Contains(text, ready); text, next = out.Changed() {
		select {
		case <-next:
		case code := <-done:
			stopped = true
			tb.Fatalf("exited %d before logging %q; output:\n%s", code, ready, out.String())
		case <-timeout.C:
			tb.Fatalf("no %q in %v; output:\n%s", ready, Timeout, out.String())
		}
	}
	return out, stop
}

var healthAddr = regexp.MustCompile(`health endpoint listening"?[^\n]*?\baddr"?[=:]"?([0-9.]+:[0-9]+|\[[0-9a-f:]+\]:[0-9]+)`)

// HealthAddr returns the address of the health endpoint a service logged
// ("health endpoint listening" with addr, in text or JSON lines), for a
// service started with --health-addr 127.0.0.1:0. It fails tb when the
// log has none.
func HealthAddr(tb testing.TB, log string) string {
	tb.Helper()
	m := healthAddr.FindStringSubmatch(log)
	if m == nil {
		tb.Fatalf("no \"health endpoint listening\" line with addr in the log:\n%s", log)
	}
	return m[1]
}

// Metrics is one scrape of a /metrics endpoint, by metric family name.
type Metrics map[string]*dto.MetricFamily

// Scrape gets http://addr/metrics and parses it (the Prometheus text
// format). It fails tb on any error.
func Scrape(tb testing.TB, addr string) Metrics {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET http://%s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		tb.Fatalf("GET http://%s/metrics: not the Prometheus text format: %v", addr, err)
	}
	return fams
}

// Value returns the value of the sample of family name whose labels
// include labels (the others are ignored): a counter's or gauge's value, a
// histogram's count. Samples matching labels are summed; ok is false when
// none does.
func (m Metrics) Value(name string, labels map[string]string) (v float64, ok bool) {
	f := m[name]
	if f == nil {
		return 0, false
	}
next:
	for _, s := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, want := range labels {
			if got, found := have[k]; !found || got != want {
				continue next
			}
		}
		ok = true
		switch {
		case s.Counter != nil:
			v += s.Counter.GetValue()
		case s.Gauge != nil:
			v += s.Gauge.GetValue()
		case s.Histogram != nil:
			v += float64(s.Histogram.GetSampleCount())
		case s.Untyped != nil:
			v += s.Untyped.GetValue()
		}
	}
	return v, ok
}

// Describe lists the samples of family name with their labels, for a
// failure message.
func (m Metrics) Describe(name string) string {
	f := m[name]
	if f == nil {
		return name + ": absent"
	}
	var lines []string
	for _, s := range f.GetMetric() {
		var ls []string
		for _, l := range s.GetLabel() {
			if strings.HasPrefix(l.GetName(), "otel_scope_") {
				continue
			}
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		v := 0.0
		switch {
		case s.Counter != nil:
			v = s.Counter.GetValue()
		case s.Gauge != nil:
			v = s.Gauge.GetValue()
		case s.Histogram != nil:
			v = float64(s.Histogram.GetSampleCount())
		}
		lines = append(lines, fmt.Sprintf("  %s{%s} %g", name, strings.Join(ls, ","), v))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
