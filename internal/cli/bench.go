package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/bench"
	"github.com/skillbus/skillbus/internal/devstack"
)

func benchCommand() command {
	return command{
		summary: "measure runs on this cluster beside the raw NATS request/reply floor",
		usage: `Usage: skillbus bench [--groups G] [--calls C] [--runs N] [--concurrency K] [--tool NAME] [-o json|yaml] [flags]

Measures what a skillbus cluster does, like ` + "`nats bench`" + ` does for NATS: it stores a
generated sequence of G groups of C parallel calls, serves an echo tool (or
calls the tool --tool names), makes N runs through skillbus.seq.run (the path
` + "`skillbus run`" + ` takes) with K in flight, and prints the run latency (p50, p90,
p99), runs/s and calls/s beside two floors measured the same way on the same
connection — the raw NATS request/reply floor (G rounds of C parallel
requests to a plain echo responder) and the durable floor (the same rounds
made durable with JetStream alone: a work-queue stream, a durable consumer,
a KV checkpoint per round; BENCHMARKS.md) — with skillbus's ratios to both. A run is timed from its start request to
its finished event. Absolute numbers depend on the machine and its load;
compare the ratios. BENCHMARKS.md has reference numbers.

Without NATS_URL, an embedded skillbus (NATS server, registry, seqworker)
runs in this process for the bench. With NATS_URL, a registry and a seqworker
must serve that cluster; the sequence (bench-ID) is deleted at the end. On a
terminal a progress bar is shown on stderr. On a cluster with authentication
(docs/security.md) no role of ` + "`skillbus auth`" + ` may do all it does — store a
sequence, start runs, serve the echo tool (tool.skillbus.bench.echo) and
answer the floor's requests (_skillbus_bench.>), make the durable floor's
stream SKILLBUS_BENCH_* and bucket skillbus_bench_* — so give it credentials of a
user allowed those, or measure a stack without authentication.

Flags:
  --groups G         groups in the sequence (default 3, at most 100)
  --calls C          parallel calls per group (default 8, at most 1000)
  --runs N           runs to measure, and as many floor rounds (default 1000)
  --concurrency K    runs in flight at once (default 16, at most N)
  --warmup W         unmeasured runs before each measurement (default N/20,
                     at most 50)
  --tool NAME        call this tool instead of the built-in echo; it must be
                     served and accept --args
  --args JSON        each call's arguments, a JSON object (default
                     {"g": GROUP, "c": CALL})
  --timeout D        bound of one run (default 1m)
  -o json|yaml       print the result as one JSON object (durations in ns),
                     or the same as YAML (--json: -o json)

Examples:
  skillbus bench
  skillbus bench --runs 5000 --concurrency 64
  skillbus bench --groups 1 --calls 1 --runs 200 --json
  NATS_URL=nats://10.0.0.5:4222 skillbus bench --tool fs.stat --args '{"path": "README.md"}'

Exit codes: 0 every run succeeded, 1 a run failed or the bench could not run
(no registry or seqworker at NATS_URL, the tool not served), 2 bad command
line.
`,
		run: runBench,
	}
}

func runBench(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "bench", benchCommand)
	var cfg bench.Config
	fs.IntVar(&cfg.Groups, "groups", bench.DefaultGroups, "groups in the sequence")
	fs.IntVar(&cfg.Calls, "calls", bench.DefaultCalls, "parallel calls per group")
	fs.IntVar(&cfg.Runs, "runs", bench.DefaultRuns, "runs to measure")
	fs.IntVar(&cfg.Concurrency, "concurrency", bench.DefaultConcurrency, "runs in flight")
	warmup := fs.Int("warmup", -1, "unmeasured runs before each measurement")
	fs.StringVar(&cfg.Tool, "tool", "", "tool to call instead of the echo")
	argsJSON := fs.String("args", "", "each call's arguments (JSON object)")
	fs.DurationVar(&cfg.Timeout, "timeout", bench.DefaultTimeout, "bound of one run")
	out := outputFlags(fs, "json", "yaml")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := connFlagsUnused(env, "bench", fs, "the bench would run on an embedded skillbus in this process"); code >= 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "skillbus bench: unexpected argument %q: bench takes flags only\n%s\n", pos[0], helpHint("bench"))
		return ExitUsage
	}
	if *warmup == 0 {
		cfg.Warmup = bench.NoWarmup
	} else if *warmup > 0 {
		cfg.Warmup = *warmup
	}
	if *argsJSON != "" {
		cfg.Args = json.RawMessage(*argsJSON)
	}
	// 0 means "the default" in bench.Config; on the command line it is a
	// mistake.
	for _, f := range []struct {
		name string
		v    int
	}{{"groups", cfg.Groups}, {"calls", cfg.Calls}, {"runs", cfg.Runs}, {"concurrency", cfg.Concurrency}} {
		if f.v < 1 {
			fmt.Fprintf(env.Stderr, "skillbus bench: --%s %d: want 1 or more\n", f.name, f.v)
			return ExitUsage
		}
	}
	if cfg.Timeout <= 0 {
		fmt.Fprintf(env.Stderr, "skillbus bench: --timeout %s: want a positive duration such as 30s\n", cfg.Timeout)
		return ExitUsage
	}
	concurrencySet := false
	fs.Visit(func(f *flag.Flag) { concurrencySet = concurrencySet || f.Name == "concurrency" })
	if !concurrencySet && cfg.Runs > 0 {
		cfg.Concurrency = min(cfg.Concurrency, cfg.Runs)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus bench: %s\n", strings.TrimPrefix(err.Error(), bench.ErrConfig.Error()+": "))
		return ExitUsage
	}

	// The connections: the bench's own (runs, floor requests) and the
	// provider's (echo tool, raw responder), as separate processes would.
	var nc, provider *nats.Conn
	where := ""
	if remote(env) {
		if nc, err = connect(env, "bench"); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus bench: %v\n", err)
			return connectExit(err)
		}
		defer drainWait(nc, 10*time.Second)
		if provider, err = connect(env, "bench"); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus bench: %v\n", err)
			return connectExit(err)
		}
		defer drainWait(provider, 10*time.Second)
		where = nc.ConnectedUrlRedacted()
	} else {
		stack, err := devstack.Start(ctx, devstack.Config{})
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus bench: start the embedded stack: %v\n", err)
			return ExitFailure
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = stack.Stop(sctx)
		}()
		for _, c := range []**nats.Conn{&nc, &provider} {
			if *c, err = nats.Connect(stack.URL(), nats.Name("skillbus bench")); err != nil {
				fmt.Fprintf(env.Stderr, "skillbus bench: %v\n", err)
				return ExitFailure
			}
			defer (*c).Close()
		}
		where = "an embedded server (set NATS_URL to measure a cluster)"
	}

	bar := newBenchBar(env.Stderr, cfg.Runs)
	cfg.OnDone = bar.done
	bar.start()
	res, err := bench.Run(ctx, nc, provider, cfg)
	bar.stop()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			fmt.Fprintf(env.Stderr, "skillbus bench: interrupted\n")
		case errors.Is(err, bench.ErrConfig):
			fmt.Fprintf(env.Stderr, "skillbus bench: %v\n", err)
			return ExitUsage
		default:
			fmt.Fprintf(env.Stderr, "skillbus bench: %v\n", describeClient(err, ""))
		}
		if res == nil {
			return ExitFailure
		}
	}
	if !out.Structured(env.Stdout, struct {
		Server string `json:"server"`
		*bench.Result
	}{where, res}) {
		printBench(env.Stdout, res, where)
	}
	durableFailed := 0
	if res.DurableFloor != nil {
		durableFailed = res.DurableFloor.Failed
	}
	if res.Skillbus.Failed > 0 || res.Floor.Failed > 0 || durableFailed > 0 {
		fmt.Fprintf(env.Stderr, "skillbus bench: %d run(s), %d floor round(s) and %d durable floor run(s) failed\n", res.Skillbus.Failed, res.Floor.Failed, durableFailed)
		return ExitFailure
	}
	if err != nil {
		return ExitFailure
	}
	return ExitOK
}

// printBench prints the result as a table.
func printBench(w io.Writer, r *bench.Result, where string) {
	fmt.Fprintf(w, "skillbus bench: %d runs of %s (%d groups × %d calls of %s), %d in flight, on %s\n\n",
		r.Runs, r.Sequence, r.Groups, r.Calls, r.Tool, r.Concurrency, where)
	fmt.Fprintf(w, "%-20s %10s %10s %10s %10s %11s\n", "", "p50", "p90", "p99", "runs/s", "calls/s")
	row := func(name string, s bench.Stats) {
		fmt.Fprintf(w, "%-20s %10s %10s %10s %10s %11s\n", name, ms(s.P50), ms(s.P90), ms(s.P99), thousands(s.RunsPerSec), thousands(s.CallsPerSec))
	}
	row("raw request/reply", r.Floor)
	if r.DurableFloor != nil {
		row("durable floor", *r.DurableFloor)
	}
	row("skillbus.seq.run", r.Skillbus)
	ratio := func(name string, lat, tput float64) {
		fmt.Fprintf(w, "%-20s %10s %10s %10s %10s\n", name, fmt.Sprintf("%.2f×", lat), "", "", fmt.Sprintf("%.2f×", tput))
	}
	ratio("skillbus / raw", r.LatencyRatio, r.ThroughputRatio)
	if r.DurableFloor != nil {
		ratio("skillbus / durable", r.DurableLatencyRatio, r.DurableThroughputRatio)
	}
	fmt.Fprintf(w, "\nA run is timed from its start request to its finished event. The raw floor makes the same\n"+
		"%d rounds of %d parallel requests to a plain NATS echo on the same connection; the durable\n"+
		"floor makes them durable with JetStream alone (a work-queue stream, a durable consumer, a KV\n"+
		"checkpoint per round): the least a durable run does. durable / raw is what durability costs\n"+
		"here, skillbus / durable what skillbus adds. Absolute numbers depend on the machine and its\n"+
		"load: compare the ratios.\n", r.Groups, r.Calls)
	if r.DurableSkipped != "" {
		fmt.Fprintf(w, "\n%s\n", r.DurableSkipped)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// thousands formats a rate with a thousands separator and no decimals.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// benchBar draws a progress bar on a terminal: the phase (raw floor,
// durable floor, then runs), a bar and a count, redrawn ten times a second.
type benchBar struct {
	w     io.Writer
	tty   bool
	total int

	floor, durable, runs atomic.Int64
	stopc                chan struct{}
	wg                   sync.WaitGroup
}

func newBenchBar(w io.Writer, total int) *benchBar {
	return &benchBar{w: w, tty: isTerminal(w), total: total, stopc: make(chan struct{})}
}

func (b *benchBar) done(phase string, n int) {
	switch phase {
	case "floor":
		b.floor.Store(int64(n))
	case "durable":
		b.durable.Store(int64(n))
	default:
		b.runs.Store(int64(n))
	}
}

func (b *benchBar) start() {
	if !b.tty {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		t0 := time.Now()
		for {
			select {
			case <-b.stopc:
				fmt.Fprint(rawWriter(b.w), "\r\033[K")
				return
			case <-t.C:
			}
			phase, n := "raw floor    ", b.floor.Load()
			if d := b.durable.Load(); d > 0 || n >= int64(b.total) {
				phase, n = "durable floor", d
			}
			if r := b.runs.Load(); r > 0 {
				phase, n = "runs         ", r
			}
			const width = 30
			fill := int(int64(width) * n / int64(b.total))
			fmt.Fprint(rawWriter(b.w), "\r\033[K")
			fmt.Fprintf(b.w, "%s [%s%s] %d/%d  %s", phase, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), n, b.total, time.Since(t0).Round(100*time.Millisecond))
		}
	}()
}

func (b *benchBar) stop() {
	select {
	case <-b.stopc:
	default:
		close(b.stopc)
	}
	b.wg.Wait()
}
