package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// TestMetrics runs the skillface command with --health-addr and small
// listing budgets over three skills (loaded by a registry), sends one
// assemble request that mounts a skill and one that is malformed, and
// finds on /metrics: the assemble durations by reply status, the
// activation by skill, and the listing entries cut or left out.
func TestMetrics(t *testing.T) {
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	srv := natsserver.StartTB(t, natsserver.Options{})
	dir := t.TempDir()
	for name, desc := range map[string]string{
		"alpha": "A skill whose description is long enough to be cut by a small entry budget, " + strings.Repeat("more words ", 20),
		"beta":  "The skill the test mounts.",
		"gamma": "A third skill, left out of a two-entry listing.",
	} {
		p := filepath.Join(dir, name, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\nBody of "+name+".\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := registry.New(natsserver.ConnectTB(t, srv), registry.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer reg.Stop(context.Background())

	out, _ := servicecmdtest.Background(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, []string{"--nats", srv.ClientURL(), "--health-addr", "127.0.0.1:0", "--entry-chars", "80", "--listing-entries", "2"}, io.Discard, stderr)
	}, "msg=ready")
	addr := servicecmdtest.HealthAddr(t, out.String())

	nc := natsserver.ConnectTB(t, srv)
	req, _ := json.Marshal(skillface.Request{SessionID: "metrics-session", Round: 1, Mounts: []string{"beta"},
		Messages: []skillface.Message{{Role: "user", Content: "hello"}}})
	reply, err := nc.RequestWithContext(ctx, events.SkillfaceAssembleSubject, req)
	if err != nil {
		t.Fatal(err)
	}
	var resp skillface.Response
	if err := json.Unmarshal(reply.Data, &resp); err != nil || reply.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("assemble: %s %v (%v)", reply.Data, reply.Header, err)
	}
	cut := resp.Counts.EntriesTruncated + resp.Counts.EntriesDropped
	if cut < 2 || len(resp.Triggered) != 1 {
		t.Fatalf("assemble: counts %+v, triggered %v; want an entry cut and one left out, beta triggered", resp.Counts, resp.Triggered)
	}
	bad, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: events.SkillfaceAssembleSubject, Data: []byte(`{"session_id":"x","round":1,"bogus":1}`)})
	if err != nil || bad.Header.Get("Nats-Service-Error-Code") != "400" {
		t.Fatalf("malformed assemble: %v %v; want code 400", bad, err)
	}

	want := []struct {
		name   string
		labels map[string]string
		v      float64
	}{
		{"skillbus_skillface_assemble_duration_seconds", map[string]string{"skillbus_status": "ok"}, 1},
		{"skillbus_skillface_assemble_duration_seconds", map[string]string{"skillbus_status": "400"}, 1},
		{"skillbus_skillface_activations_total", map[string]string{"skillbus_skill": "beta"}, 1},
		{"skillbus_skillface_listing_truncations_total", nil, float64(cut)},
	}
	var m servicecmdtest.Metrics
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m = servicecmdtest.Scrape(t, addr)
		missing := 0
		for _, w := range want {
			if got, ok := m.Value(w.name, w.labels); !ok || got != w.v {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	for _, w := range want {
		if got, ok := m.Value(w.name, w.labels); !ok || got != w.v {
			t.Errorf("%s%v = %v (found: %v); want %v\n%s", w.name, w.labels, got, ok, w.v, m.Describe(w.name))
		}
	}
}
