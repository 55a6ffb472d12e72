package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/telemetry"
	"github.com/skillbus/skillbus/pkg/tool"
)

// collector is a minimal OTLP/HTTP trace receiver: it decodes every export
// request and keeps the spans.
type collector struct {
	mu    sync.Mutex        // mu guards the fields below
	spans map[string][]byte // span name -> trace id
	names []string          // span names in arrival order
	svc   []string          // service.name of each resource
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/traces" {
		http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				c.svc = append(c.svc, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[s.Name] = s.TraceId
				c.names = append(c.names, s.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

// resetGlobal restores the OTel globals that Setup replaces.
func resetGlobal(t *testing.T) {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
}

// TestExportAcrossNATS checks the whole path a platform team relies on:
// with OTEL_EXPORTER_OTLP_ENDPOINT set, a tool call over a real NATS server
// produces a client span and a server span in the same trace (the context
// crossed in the message headers) and both reach the collector.
func TestExportAcrossNATS(t *testing.T) {
	resetGlobal(t)
	col := &collector{spans: map[string][]byte{}}
	ts := httptest.NewServer(col)
	defer ts.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ts.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")

	ctx := context.Background()
	on, shutdown, err := telemetry.Setup(ctx, "test")
	if err != nil || !on {
		t.Fatalf("Setup = %v, %v; want export on", on, err)
	}

	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	p, err := tool.Serve(nc, tool.ServerConfig{}, tool.Tool{Name: "echo", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		return args, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(ctx) }()
	client, err := tool.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	cctx, span := otel.Tracer("test").Start(ctx, "root")
	if _, err := client.Call(cctx, "echo", json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	span.End()
	// The provider ends its span after it has sent the reply: stopping it
	// waits for its handlers, so that span has ended before the export.
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("stop the provider: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	root, ok := col.spans["root"]
	if !ok {
		t.Fatalf("collector got spans %q; want a span named root", col.names)
	}
	var server string
	for name, id := range col.spans {
		if name == "tool echo" {
			server = name
			if string(id) != string(root) {
				t.Errorf("span %q trace id %x; want the caller's trace %x (context must cross NATS headers)", name, id, root)
			}
		}
	}
	if server == "" {
		t.Errorf("collector got spans %q; want the provider's span \"tool echo\"", col.names)
	}
	if len(col.names) < 3 {
		t.Errorf("collector got spans %q; want root, the client call and the server span", col.names)
	}
	if len(col.svc) == 0 || col.svc[0] != "skillbus-test" {
		t.Errorf("service.name = %q; want skillbus-test", col.svc)
	}
}

func TestSetupOffAndErrors(t *testing.T) {
	tests := []struct {
		name     string
		exporter string
		endpoint string
		protocol string
		wantOn   bool
		wantErr  error
	}{
		{"nothing set", "", "", "", false, nil},
		{"explicit none", "none", "http://127.0.0.1:1", "", false, nil},
		{"typo in exporter", "otpl", "", "", false, telemetry.ErrConfig},
		{"http/json protocol", "otlp", "http://127.0.0.1:1", "http/json", false, telemetry.ErrConfig},
		{"typo in protocol", "otlp", "http://127.0.0.1:1", "gprc", false, telemetry.ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resetGlobal(t)
			otel.SetTracerProvider(tracenoop.NewTracerProvider())
			t.Setenv("OTEL_TRACES_EXPORTER", tc.exporter)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
			on, shutdown, err := telemetry.Setup(context.Background(), "x")
			if on != tc.wantOn || !errors.Is(err, tc.wantErr) {
				t.Fatalf("Setup() = %v, %v; want %v, %v", on, err, tc.wantOn, tc.wantErr)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown of disabled export: %v", err)
			}
			if _, ok := otel.GetTracerProvider().(tracenoop.TracerProvider); !ok {
				t.Fatalf("tracer provider replaced although export is off")
			}
		})
	}
}
