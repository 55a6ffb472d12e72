package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

// TestMetrics runs the registry command with --health-addr over a tree with
// a valid and an invalid file of each kind, and finds them on /metrics:
// skillbus_registry_entries and skillbus_registry_invalid_files by kind.
// After the invalid sequence is fixed, the gauges follow.
func TestMetrics(t *testing.T) {
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	srv := natsserver.StartTB(t, natsserver.Options{})
	dir := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("skills/good/SKILL.md", "---\nname: good\ndescription: A valid skill.\n---\nBody.\n")
	write("skills/bad/SKILL.md", "---\nname: bad\n---\nNo description.\n")
	write("seqs/one.seq.yaml", "name: m-one\ngroups:\n  - name: m-one-g\n    tools: [{tool: fs.list}]\n")
	write("seqs/two.seq.yaml", "name: m-two\ngroups:\n  - name: m-two-g\n    tools: [{tool: fs.list}]\n    bogus: true\n")

	out, _ := servicecmdtest.Background(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, []string{"--nats", srv.ClientURL(), "--memory", "--health-addr", "127.0.0.1:0", "--debounce", "5ms", dir}, io.Discard, stderr)
	}, "msg=ready")
	addr := servicecmdtest.HealthAddr(t, out.String())

	expect := func(when string, want map[[2]string]float64) {
		t.Helper()
		var m servicecmdtest.Metrics
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			m = servicecmdtest.Scrape(t, addr)
			ok := true
			for k, v := range want {
				if got, found := m.Value(k[0], map[string]string{"skillbus_kind": k[1]}); !found || got != v {
					ok = false
				}
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				break
			}
		}
		t.Errorf("%s: want %v; /metrics has\n%s\n%s", when, want, m.Describe("skillbus_registry_entries"), m.Describe("skillbus_registry_invalid_files"))
	}
	expect("at start", map[[2]string]float64{
		{"skillbus_registry_entries", "skill"}: 1, {"skillbus_registry_entries", "sequence"}: 1,
		{"skillbus_registry_invalid_files", "skill"}: 1, {"skillbus_registry_invalid_files", "sequence"}: 1,
	})
	write("seqs/two.seq.yaml", "name: m-two\ngroups:\n  - name: m-two-g\n    tools: [{tool: fs.list}]\n")
	expect("after the sequence was fixed", map[[2]string]float64{
		{"skillbus_registry_entries", "skill"}: 1, {"skillbus_registry_entries", "sequence"}: 2,
		{"skillbus_registry_invalid_files", "skill"}: 1, {"skillbus_registry_invalid_files", "sequence"}: 0,
	})
}
