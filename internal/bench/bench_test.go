package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/bench"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/pkg/client"
)

// stack starts an embedded skillbus (server, registry, seqworker) and two
// connections to it: the bench's and the provider's.
func stack(t *testing.T) (nc, provider *nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := devstack.Start(ctx, devstack.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = st.Stop(sctx)
	})
	for _, c := range []**nats.Conn{&nc, &provider} {
		if *c, err = nats.Connect(st.URL()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup((*c).Close)
	}
	return nc, provider
}

// TestRun: a small bench on an embedded server makes every run and floor
// round, reports consistent statistics, and leaves neither its sequence
// nor its echo tool behind.
func TestRun(t *testing.T) {
	nc, provider := stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	done := map[string]int{}
	res, err := bench.Run(ctx, nc, provider, bench.Config{Groups: 2, Calls: 3, Runs: 20, Concurrency: 4, Warmup: 2,
		OnDone: func(phase string, n int) { // called from many goroutines
			mu.Lock()
			done[phase] = max(done[phase], n)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if done["floor"] != 20 || done["durable"] != 20 || done["runs"] != 20 || len(done) != 3 {
		t.Errorf("OnDone saw %v; want floor, durable and runs up to 20", done)
	}
	if res.DurableFloor == nil {
		t.Fatalf("no durable floor measured: %s", res.DurableSkipped)
	}
	for name, s := range map[string]bench.Stats{"skillbus": res.Skillbus, "floor": res.Floor, "durable": *res.DurableFloor} {
		if s.Runs != 20 || s.Failed != 0 || s.Calls != 20*6 {
			t.Errorf("%s: %d runs, %d failed, %d calls; want 20, 0, 120", name, s.Runs, s.Failed, s.Calls)
		}
		if !(0 < s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max && s.Mean > 0) {
			t.Errorf("%s: percentiles out of order: %+v", name, s)
		}
		if s.RunsPerSec <= 0 || math.Abs(s.CallsPerSec-s.RunsPerSec*6) > 1e-6*s.CallsPerSec {
			t.Errorf("%s: %.1f runs/s, %.1f calls/s; want calls/s = 6 × runs/s", name, s.RunsPerSec, s.CallsPerSec)
		}
	}
	if res.LatencyRatio <= 0 || res.ThroughputRatio <= 0 || res.DurableLatencyRatio <= 0 || res.DurableThroughputRatio <= 0 || res.Tool != bench.EchoTool {
		t.Errorf("result %+v: want positive ratios and the echo tool", res)
	}
	t.Logf("p50 %s vs floor %s (%.1fx); %.0f vs %.0f runs/s", res.Skillbus.P50, res.Floor.P50, res.LatencyRatio, res.Skillbus.RunsPerSec, res.Floor.RunsPerSec)

	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SeqGet(ctx, res.Sequence); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("sequence %s after the bench: %v; want it deleted (not found)", res.Sequence, err)
	}
	if _, err := nc.Request("tool."+bench.EchoTool, []byte(`{}`), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("echo tool after the bench: %v; want no responders", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(ctx).Name() {
		if strings.HasPrefix(name, "SKILLBUS_BENCH_") || strings.HasPrefix(name, "KV_skillbus_bench_") {
			t.Errorf("stream %s is left after the bench; want the durable floor's stream and bucket deleted", name)
		}
	}
}

// TestRunMissingTool: a bench of a tool nobody serves stops after the
// warm-up with the run's error, instead of timing out run after run.
func TestRunMissingTool(t *testing.T) {
	nc, provider := stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := bench.Run(ctx, nc, provider, bench.Config{Tool: "nobody.serves.this", Runs: 10, Concurrency: 2, Warmup: 1})
	if err == nil || !strings.Contains(err.Error(), "warm-up") || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("err = %v; want the warm-up runs reported failed", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  bench.Config
		want string
	}{
		{bench.Config{Groups: 101}, "groups 101"},
		{bench.Config{Calls: -1}, "calls -1"},
		{bench.Config{Runs: 5, Concurrency: 6}, "concurrency 6"},
		{bench.Config{Args: json.RawMessage(`[1]`)}, "want a JSON object"},
		{bench.Config{Args: json.RawMessage(`{`)}, "want a JSON object"},
		{bench.Config{Timeout: -time.Second}, "timeout"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, bench.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v; want ErrConfig saying %q", tc.cfg, err, tc.want)
		}
	}
	if err := (bench.Config{}).Validate(); err != nil {
		t.Errorf("the zero Config: %v", err)
	}
}
