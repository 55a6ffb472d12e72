package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchEmbedded: `skillbus bench` without NATS_URL runs on an embedded
// server and prints the result as JSON (flags before and after nothing
// positional), or as a table.
func TestBenchEmbedded(t *testing.T) {
	t.Setenv("NATS_URL", "")
	code, out, errs := runCLI(t, "bench", "--runs", "8", "--json", "--groups", "2", "--calls", "2", "--concurrency", "2")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	var res struct {
		Server   string `json:"server"`
		Runs     int    `json:"runs"`
		Groups   int    `json:"groups"`
		Skillbus struct {
			Runs   int   `json:"runs"`
			Calls  int   `json:"calls"`
			P50    int64 `json:"p50_ns"`
			Failed int   `json:"failed"`
		} `json:"skillbus"`
		Floor struct {
			Runs int   `json:"runs"`
			P50  int64 `json:"p50_ns"`
		} `json:"floor"`
		LatencyRatio float64 `json:"latency_ratio"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if res.Runs != 8 || res.Groups != 2 || res.Skillbus.Runs != 8 || res.Skillbus.Calls != 32 || res.Skillbus.Failed != 0 ||
		res.Floor.Runs != 8 || res.Skillbus.P50 <= 0 || res.Floor.P50 <= 0 || res.LatencyRatio <= 0 || !strings.Contains(res.Server, "embedded") {
		t.Errorf("result = %+v", res)
	}

	code, out, errs = runCLI(t, "bench", "--runs=4", "--warmup", "0")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	for _, want := range []string{"4 runs of bench-", "skillbus.seq.run", "raw request/reply", "ratio", "compare the ratios"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchCommandLine(t *testing.T) {
	t.Setenv("NATS_URL", "")
	code, out, _ := runCLI(t, "bench", "--help")
	if code != ExitOK || !strings.Contains(out, "Examples:") || !strings.Contains(out, "Exit codes:") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"bench", "--nope"},
		{"bench", "extra"},
		{"bench", "--groups", "0"},
		{"bench", "--runs", "5", "--concurrency", "9"},
		{"bench", "--args", "[1,2]"},
	} {
		if code, _, errs := runCLI(t, args...); code != ExitUsage {
			t.Errorf("%q: exit %d; want %d (stderr %q)", args, code, ExitUsage, errs)
		}
	}
}
