// Package bench is the load generator behind `skillbus bench`: it stores a
// generated sequence of G groups × C calls, serves an echo tool (or uses a
// named one), runs N runs through the skillbus.seq.run endpoint at a given
// concurrency, and measures the raw NATS request/reply floor the same way
// on the same connection — G rounds of C parallel requests to a plain
// nats.go echo responder — and the durable floor, the same rounds made
// durable with JetStream alone (durable.go), so the three can be compared
// as ratios (BENCHMARKS.md). It needs a cluster where a registry and a
// seqworker run.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// EchoTool is the tool Run serves when Config.Tool is empty: it returns
// its arguments.
const EchoTool = "skillbus.bench.echo"

// Defaults of Config.
const (
	DefaultGroups      = 3
	DefaultCalls       = 8
	DefaultRuns        = 1000
	DefaultConcurrency = 16
	DefaultTimeout     = time.Minute
)

// NoWarmup as Config.Warmup asks for no warm-up runs.
const NoWarmup = -1

// ErrConfig is returned (wrapped) for an invalid Config; the message names
// the field.
var ErrConfig = errors.New("bench: invalid configuration")

// Config says what to run. Zero fields take the defaults.
type Config struct {
	// Groups (G) and Calls (C): the sequence has G groups of C parallel
	// calls. Defaults 3 and 8; at most 100 and 1,000.
	Groups, Calls int
	// Runs (N) is how many runs are measured (and as many floor rounds);
	// default 1,000. Concurrency is how many are in flight at once;
	// default 16, at most Runs.
	Runs, Concurrency int
	// Warmup runs are made (and not measured) before each measurement;
	// 0 means the default, Runs/20 but at most 50; NoWarmup means none.
	Warmup int
	// Tool is the tool every call calls; "" serves EchoTool on the
	// provider connection for the time of the bench.
	Tool string
	// Args is each call's arguments, a JSON object; nil gives
	// {"g": GROUP, "c": CALL}.
	Args json.RawMessage
	// Timeout bounds one run (and one floor round); default 1 minute.
	Timeout time.Duration
	// OnDone, when set, is called after each measured run or floor round
	// with the phase ("floor", "durable" or "runs") and how many of that phase are
	// done; from many goroutines at once, so it must be quick and safe.
	OnDone func(phase string, done int)
}

func (c Config) withDefaults() Config {
	if c.Groups == 0 {
		c.Groups = DefaultGroups
	}
	if c.Calls == 0 {
		c.Calls = DefaultCalls
	}
	if c.Runs == 0 {
		c.Runs = DefaultRuns
	}
	if c.Concurrency == 0 {
		c.Concurrency = min(DefaultConcurrency, c.Runs)
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = min(c.Runs/20, 50)
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Validate reports the first invalid field. Errors: ErrConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Groups < 1 || c.Groups > 100:
		return fmt.Errorf("%w: groups %d: want 1 to 100", ErrConfig, c.Groups)
	case c.Calls < 1 || c.Calls > 1000:
		return fmt.Errorf("%w: calls %d: want 1 to 1000 per group", ErrConfig, c.Calls)
	case c.Runs < 1:
		return fmt.Errorf("%w: runs %d: want 1 or more", ErrConfig, c.Runs)
	case c.Concurrency < 1 || c.Concurrency > c.Runs:
		return fmt.Errorf("%w: concurrency %d: want 1 to the number of runs (%d)", ErrConfig, c.Concurrency, c.Runs)
	case c.Timeout < 0:
		return fmt.Errorf("%w: timeout %s: want a positive duration", ErrConfig, c.Timeout)
	}
	if c.Args != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(c.Args, &obj); err != nil || obj == nil {
			return fmt.Errorf("%w: args %s: want a JSON object, such as {\"path\": \"README.md\"}", ErrConfig, preview(c.Args))
		}
	}
	return nil
}

// Stats describe one measured path.
type Stats struct {
	Runs   int `json:"runs"`   // measured runs (or floor rounds) that succeeded
	Failed int `json:"failed"` // measured runs that failed or timed out
	Calls  int `json:"calls"`  // tool calls (or raw requests) of the successful ones
	// Elapsed is the wall time of the whole measurement.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Latency percentiles of one run, from the start request sent to the
	// finished event received (floor: the G rounds of C requests).
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Mean time.Duration `json:"mean_ns"`
	Max  time.Duration `json:"max_ns"`
	// RunsPerSec and CallsPerSec: throughput over Elapsed.
	RunsPerSec  float64 `json:"runs_per_sec"`
	CallsPerSec float64 `json:"calls_per_sec"`
}

// Result is what Run measured.
type Result struct {
	Sequence    string `json:"sequence"`
	Tool        string `json:"tool"`
	Groups      int    `json:"groups"`
	Calls       int    `json:"calls_per_group"`
	Runs        int    `json:"runs"`
	Concurrency int    `json:"concurrency"`
	// Skillbus: runs started through skillbus.seq.run; Floor: the same
	// shape of raw request/reply on the same connection.
	Skillbus Stats `json:"skillbus"`
	Floor    Stats `json:"floor"`
	// DurableFloor is the same shape made durable with JetStream alone
	// (durable.go: a work-queue stream, a durable pull consumer, a KV
	// checkpoint per round): what durability costs on this cluster. nil
	// when it could not be measured; DurableSkipped then says why (the
	// credentials may not make streams).
	DurableFloor   *Stats `json:"durable_floor,omitempty"`
	DurableSkipped string `json:"durable_skipped,omitempty"`
	// LatencyRatio is Skillbus.P50 / Floor.P50 (lower is better);
	// ThroughputRatio is Skillbus.RunsPerSec / Floor.RunsPerSec (higher
	// is better).
	LatencyRatio    float64 `json:"latency_ratio"`
	ThroughputRatio float64 `json:"throughput_ratio"`
	// DurableLatencyRatio and DurableThroughputRatio are the same ratios
	// against DurableFloor: what skillbus adds over the least a durable
	// run does (BENCHMARKS.md's goals: ≤ 1.25× and ≥ 0.9×).
	DurableLatencyRatio    float64 `json:"durable_latency_ratio,omitempty"`
	DurableThroughputRatio float64 `json:"durable_throughput_ratio,omitempty"`
}

// Run runs the bench: runs are started on nc (as a client), the echo tool
// and the floor's raw responder are served on provider (a connection of
// their own, as a tool provider process has). Errors: ErrConfig; a
// registry or seqworker error (no responders: nothing serves the
// cluster); ctx's error. Failed runs are counted in the result, not
// returned as an error.
func Run(ctx context.Context, nc, provider *nats.Conn, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	id := nuid.Next()[12:] // short, and unique enough for one bench
	name := "bench-" + id
	res := &Result{Sequence: name, Tool: cfg.Tool, Groups: cfg.Groups, Calls: cfg.Calls, Runs: cfg.Runs, Concurrency: cfg.Concurrency}

	// The responders: the echo tool (unless a tool is named) and the raw
	// floor's plain echo.
	if cfg.Tool == "" {
		res.Tool = EchoTool
		srv, err := tool.Serve(provider, tool.ServerConfig{Name: "skillbus-bench", Description: "skillbus bench: an echo tool"},
			tool.Tool{Name: EchoTool, Description: "Returns its arguments (skillbus bench).",
				Func: func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }})
		if err != nil {
			return nil, fmt.Errorf("bench: serve %s: %w", EchoTool, err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Stop(sctx)
		}()
	}
	rawSubject := "_skillbus_bench.raw." + id
	rawSub, err := provider.QueueSubscribe(rawSubject, "skillbus-bench", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("bench: raw echo responder: %w", err)
	}
	defer func() { _ = rawSub.Unsubscribe() }()
	if err := provider.Flush(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}

	// The sequence.
	c, err := client.New(nc)
	if err != nil {
		return nil, err
	}
	form, argsOf := sequenceJSON(name, res.Tool, cfg)
	if _, err := c.SeqCreate(ctx, form); err != nil {
		return nil, fmt.Errorf("bench: store the sequence %s: %w", name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.SeqDelete(dctx, name)
	}()

	floorRound := func(ctx context.Context) (int, error) {
		for g := 1; g <= cfg.Groups; g++ {
			errs := make(chan error, cfg.Calls)
			for k := 1; k <= cfg.Calls; k++ {
				go func() {
					_, err := nc.RequestWithContext(ctx, rawSubject, argsOf(g, k))
					errs <- err
				}()
			}
			for range cfg.Calls {
				if err := <-errs; err != nil {
					return 0, err
				}
			}
		}
		return cfg.Groups * cfg.Calls, nil
	}

	runs, err := newRunner(nc, c, name, id, cfg)
	if err != nil {
		return nil, err
	}
	defer runs.close()

	durable, err := StartDurableFloor(ctx, nc, provider, id, rawSubject, cfg.Groups, cfg.Calls, argsOf)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res.DurableSkipped = "the durable floor was not measured: " + err.Error()
	} else {
		defer durable.Close()
	}

	// Warm both paths up, then measure the floor, then the runs.
	if _, err := measure(ctx, cfg, cfg.Warmup, "", floorRound); err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	warm, err := measure(ctx, cfg, cfg.Warmup, "", runs.run)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if warm.Runs == 0 && warm.Failed > 0 {
		return nil, fmt.Errorf("bench: the warm-up runs failed: %w", runs.firstErr())
	}
	if res.Floor, err = measure(ctx, cfg, cfg.Runs, "floor", floorRound); err != nil {
		return nil, err
	}
	if durable != nil {
		if _, err := measure(ctx, cfg, cfg.Warmup, "", durable.Run); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		st, err := measure(ctx, cfg, cfg.Runs, "durable", durable.Run)
		if err != nil {
			return nil, err
		}
		res.DurableFloor = &st
	}
	if res.Skillbus, err = measure(ctx, cfg, cfg.Runs, "runs", runs.run); err != nil {
		return nil, err
	}
	if res.Floor.P50 > 0 {
		res.LatencyRatio = float64(res.Skillbus.P50) / float64(res.Floor.P50)
	}
	if res.Floor.RunsPerSec > 0 {
		res.ThroughputRatio = res.Skillbus.RunsPerSec / res.Floor.RunsPerSec
	}
	if d := res.DurableFloor; d != nil && d.P50 > 0 && d.RunsPerSec > 0 {
		res.DurableLatencyRatio = float64(res.Skillbus.P50) / float64(d.P50)
		res.DurableThroughputRatio = res.Skillbus.RunsPerSec / d.RunsPerSec
	}
	if res.Skillbus.Runs == 0 && res.Skillbus.Failed > 0 {
		return res, fmt.Errorf("bench: every run failed (%s)", runs.firstErr())
	}
	return res, nil
}

// sequenceJSON returns the JSON form of the bench sequence (docs/sequences.md)
// and the arguments of call k of group g.
func sequenceJSON(name, toolName string, cfg Config) ([]byte, func(g, k int) []byte) {
	argsOf := func(g, k int) []byte {
		if cfg.Args != nil {
			return cfg.Args
		}
		return fmt.Appendf(nil, `{"g":%d,"c":%d}`, g, k)
	}
	type group struct {
		Name  string `json:"name"`
		Tools string `json:"tools"`
	}
	seq := struct {
		Name        string  `json:"name"`
		Description string  `json:"description"`
		Groups      []group `json:"groups"`
	}{Name: name, Description: fmt.Sprintf("skillbus bench: %d groups of %d calls of %s (deleted when the bench ends)", cfg.Groups, cfg.Calls, toolName)}
	for g := 1; g <= cfg.Groups; g++ {
		var b strings.Builder
		for k := 1; k <= cfg.Calls; k++ {
			call, _ := json.Marshal(struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			}{toolName, argsOf(g, k)})
			b.Write(call)
			b.WriteByte(';')
		}
		seq.Groups = append(seq.Groups, group{Name: fmt.Sprintf("%s-g%d", name, g), Tools: b.String()})
	}
	out, _ := json.Marshal(seq)
	return out, argsOf
}

// runner starts runs through skillbus.seq.run and waits for their
// finished events, all received on one subscription.
type runner struct {
	c     *client.Client
	name  string
	id    string
	calls int
	n     atomic.Int64
	sub   *nats.Subscription

	waiters waiters[*events.RunEvent]

	mu  sync.Mutex // mu guards err
	err error      // the first failure, for the message when all fail
}

func newRunner(nc *nats.Conn, c *client.Client, name, id string, cfg Config) (*runner, error) {
	r := &runner{c: c, name: name, id: id, calls: cfg.Groups * cfg.Calls}
	subj, _ := events.RunEventSubject("x", events.RunFinished) // events.run.x.finished
	subj = strings.Replace(subj, ".x.", ".*.", 1)
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) != nil {
			return
		}
		r.waiters.deliver(ev.RunID, &ev)
	})
	if err != nil {
		return nil, fmt.Errorf("bench: subscribe to run events: %w", err)
	}
	if err := nc.Flush(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r.sub = sub
	return r, nil
}

func (r *runner) close() { _ = r.sub.Unsubscribe() }

func (r *runner) fail(err error) error {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	return err
}

func (r *runner) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// run starts one run and waits for its end; it returns the number of tool
// calls it made.
func (r *runner) run(ctx context.Context) (int, error) {
	id := fmt.Sprintf("bench-%s-%d", r.id, r.n.Add(1))
	ch, done := r.waiters.add(id)
	defer done()
	if _, err := r.c.Start(ctx, events.SeqRunRequest{RunID: id, Sequence: r.name}); err != nil {
		return 0, r.fail(fmt.Errorf("start run %s: %w", id, err))
	}
	select {
	case ev := <-ch:
		if ev.Status != events.StatusSucceeded {
			return 0, r.fail(fmt.Errorf("run %s %s: %s", id, ev.Status, ev.Error))
		}
		return r.calls, nil
	case <-ctx.Done():
		// The finished event may have been missed: ask for the state.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if st, err := r.c.Status(sctx, id); err == nil && st.Status == events.StatusSucceeded {
			return r.calls, nil
		}
		return 0, r.fail(fmt.Errorf("run %s did not finish within the timeout: %w", id, ctx.Err()))
	}
}

// measure makes n runs of do, concurrency at a time, and returns their
// statistics; phase names them for Config.OnDone ("" for a warm-up). It
// returns an error only when ctx ended.
func measure(ctx context.Context, cfg Config, n int, phase string, do func(context.Context) (int, error)) (Stats, error) {
	var st Stats
	if n == 0 {
		return st, nil
	}
	lat := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var next, done atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range min(cfg.Concurrency, n) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				s := time.Now()
				calls, err := do(rctx)
				d := time.Since(s)
				cancel()
				mu.Lock()
				if err != nil {
					st.Failed++
				} else {
					st.Runs++
					st.Calls += calls
					lat = append(lat, d)
				}
				mu.Unlock()
				if k := done.Add(1); phase != "" && cfg.OnDone != nil {
					cfg.OnDone(phase, int(k))
				}
			}
		})
	}
	wg.Wait()
	st.Elapsed = time.Since(t0)
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		var sum time.Duration
		for _, d := range lat {
			sum += d
		}
		st.P50, st.P90, st.P99 = percentile(lat, 0.50), percentile(lat, 0.90), percentile(lat, 0.99)
		st.Mean, st.Max = sum/time.Duration(len(lat)), lat[len(lat)-1]
	}
	if sec := st.Elapsed.Seconds(); sec > 0 {
		st.RunsPerSec = float64(st.Runs) / sec
		st.CallsPerSec = float64(st.Calls) / sec
	}
	return st, nil
}

// percentile returns the p-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func preview(b []byte) string {
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}
