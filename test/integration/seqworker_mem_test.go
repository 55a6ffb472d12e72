package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// The seqworker's memory, measured in a process of its own (the test
// binary run again, as TestSeqworkerKilledMidRun does) so that nothing
// else — the server, the tool, the client — is counted: runs of 3 groups ×
// 8 echo calls go through skillbus.seq.run, 64 in flight, to a worker with
// 64 slots. The worker answers a stats request with its allocation
// counters, its live heap after a GC, its RSS and its goroutines.

const (
	memChildURL   = "SKILLBUS_MEMBENCH_CHILD_URL"
	memChildStats = "SKILLBUS_MEMBENCH_STATS"
	memInFlight   = 64
)

// memStats is what the worker process reports.
type memStats struct {
	Mallocs    uint64 `json:"mallocs"`     // heap objects allocated, ever
	TotalAlloc uint64 `json:"total_alloc"` // bytes allocated, ever
	LiveHeap   uint64 `json:"live_heap"`   // heap in use right after a GC
	RSS        uint64 `json:"rss"`         // resident set size (Linux; 0 elsewhere)
	Goroutines int    `json:"goroutines"`
	NumGC      uint32 `json:"num_gc"`
}

// TestSeqworkerMemChild is not a test on its own: it is the worker process
// of the memory measurements, run until killed.
func TestSeqworkerMemChild(t *testing.T) {
	url := os.Getenv(memChildURL)
	if url == "" {
		t.Skip("helper process for BenchmarkSeqworkerMemory and TestSeqworkerMemorySteady")
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(os.Getenv(memChildStats), func(m *nats.Msg) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b, _ := json.Marshal(memStats{Mallocs: ms.Mallocs, TotalAlloc: ms.TotalAlloc, LiveHeap: ms.HeapAlloc,
			RSS: selfRSS(), Goroutines: runtime.NumGoroutine(), NumGC: ms.NumGC})
		_ = m.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	w, err := seqworker.New(nc, seqworker.Config{Concurrency: memInFlight, Logger: swLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); err != nil { // until killed
		t.Fatal(err)
	}
}

// selfRSS returns this process's resident set size in bytes, from
// /proc/self/status (0 where there is none).
func selfRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// memEnv is a server, the echo tool, the stored sequence and a worker
// process.
type memEnv struct {
	nc      *nats.Conn
	c       *client.Client
	subject string // the worker's stats subject
	seqName string
	runNo   atomic.Int64

	mu      sync.Mutex
	waiters map[string]chan *events.RunEvent
}

func startMemEnv(tb testing.TB) *memEnv {
	tb.Helper()
	env := swStart(tb, natsserver.Options{}, events.Options{})
	swServe(tb, env, tool.Tool{Name: "mem.echo", Func: func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }})
	var b strings.Builder
	b.WriteString("name: mem-bench\ngroups:\n")
	for g := 1; g <= 3; g++ {
		fmt.Fprintf(&b, "  - name: mem-bench-g%d\n    tools:\n", g)
		for c := 1; c <= 8; c++ {
			fmt.Fprintf(&b, "      - {tool: mem.echo, args: {g: %d, c: %d}}\n", g, c)
		}
	}
	swStore(tb, env, b.String())

	m := &memEnv{nc: natsserver.ConnectTB(tb, env.srv), subject: "_membench.stats." + nuid.Next(), seqName: "mem-bench",
		waiters: map[string]chan *events.RunEvent{}}
	var err error
	if m.c, err = client.New(m.nc); err != nil {
		tb.Fatal(err)
	}
	if _, err := m.nc.Subscribe("events.run.*.finished", func(msg *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(msg.Data, &ev) != nil {
			return
		}
		m.mu.Lock()
		ch := m.waiters[ev.RunID]
		delete(m.waiters, ev.RunID)
		m.mu.Unlock()
		if ch != nil {
			ch <- &ev
		}
	}); err != nil {
		tb.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestSeqworkerMemChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), memChildURL+"="+env.srv.ClientURL(), memChildStats+"="+m.subject)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for { // the worker is up when it answers stats and seq.run is served
		if _, err := m.nc.Request(m.subject, nil, time.Second); err == nil {
			if _, err := m.nc.Request(events.SeqStatusSubject, []byte(`{"run_id":"none"}`), time.Second); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the worker process did not start; its output:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return m
}

// stats asks the worker process for its memory.
func (m *memEnv) stats(tb testing.TB) memStats {
	tb.Helper()
	msg, err := m.nc.Request(m.subject, nil, 30*time.Second)
	if err != nil {
		tb.Fatalf("worker stats: %v", err)
	}
	var s memStats
	if err := json.Unmarshal(msg.Data, &s); err != nil {
		tb.Fatal(err)
	}
	return s
}

// runs makes n runs through skillbus.seq.run, memInFlight at a time, and
// calls every (when > 0) after each every-th run with the count so far.
func (m *memEnv) runs(tb testing.TB, n int, every int, at func(done int)) {
	tb.Helper()
	var next, done atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[string]
	for range min(memInFlight, n) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && failed.Load() == nil {
				if err := m.run(); err != nil {
					msg := err.Error()
					failed.CompareAndSwap(nil, &msg)
					return
				}
				if d := done.Add(1); every > 0 && d%int64(every) == 0 {
					at(int(d))
				}
			}
		})
	}
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		tb.Fatal(*msg)
	}
}

func (m *memEnv) run() error {
	id := fmt.Sprintf("mem-%d", m.runNo.Add(1))
	ch := make(chan *events.RunEvent, 1)
	m.mu.Lock()
	m.waiters[id] = ch
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := m.c.Start(ctx, events.SeqRunRequest{RunID: id, Sequence: m.seqName}); err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	select {
	case ev := <-ch:
		if ev.Status != events.StatusSucceeded {
			return fmt.Errorf("run %s: %s %s", id, ev.Status, ev.Error)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("run %s: no finished event within 2 minutes", id)
	}
}

// BenchmarkSeqworkerMemory reports the worker process's allocations per run
// (worker-allocs/run, worker-B/run), and its live heap after a GC, RSS and
// goroutines once the b.N runs (64 in flight) are over, to compare with
// the same before them (logged); it also samples them while runs are in
// flight, every tenth of the way (logged on one line each; peak RSS in
// worker-peak-RSS-MiB), which shows whether they grow. The reference
// measurement is 100,000 runs (BENCHMARKS.md):
//
//	go test -run '^$' -bench BenchmarkSeqworkerMemory -benchtime 100000x -timeout 2h ./test/integration/
func BenchmarkSeqworkerMemory(b *testing.B) {
	m := startMemEnv(b)
	m.runs(b, 2000, 0, nil) // warm: connections, pools, the sequence cache
	s0 := m.stats(b)
	every := max(b.N/10, 1)
	var mu sync.Mutex
	var heap, rss, gor []string
	var peak uint64
	b.ResetTimer()
	m.runs(b, b.N, every, func(done int) {
		s := m.stats(b)
		mu.Lock()
		heap = append(heap, fmt.Sprintf("%.1f", mib(s.LiveHeap)))
		rss = append(rss, fmt.Sprintf("%.1f", mib(s.RSS)))
		gor = append(gor, strconv.Itoa(s.Goroutines))
		peak = max(peak, s.RSS)
		mu.Unlock()
	})
	b.StopTimer()
	s1 := m.stats(b)
	if b.N < 1000 {
		return // the framework's first, one-run call: not worth a report
	}
	b.Logf("idle, after 2,000 warm-up runs: live heap %.1f MiB, RSS %.1f MiB, %d goroutines", mib(s0.LiveHeap), mib(s0.RSS), s0.Goroutines)
	b.Logf("idle, after %d more runs:      live heap %.1f MiB, RSS %.1f MiB, %d goroutines", b.N, mib(s1.LiveHeap), mib(s1.RSS), s1.Goroutines)
	if len(heap) > 0 {
		b.Logf("in flight, every %d runs: live heap MiB %s", every, strings.Join(heap, " "))
		b.Logf("in flight, every %d runs: RSS MiB %s", every, strings.Join(rss, " "))
		b.Logf("in flight, every %d runs: goroutines %s", every, strings.Join(gor, " "))
	}
	b.ReportMetric(float64(s1.Mallocs-s0.Mallocs)/float64(b.N), "worker-allocs/run")
	b.ReportMetric(float64(s1.TotalAlloc-s0.TotalAlloc)/float64(b.N), "worker-B/run")
	b.ReportMetric(mib(s1.LiveHeap), "worker-live-MiB")
	b.ReportMetric(mib(s1.RSS), "worker-RSS-MiB")
	b.ReportMetric(mib(max(peak, s1.RSS)), "worker-peak-RSS-MiB")
	b.ReportMetric(float64(s1.Goroutines), "worker-goroutines")
}

// TestSeqworkerMemorySteady is the short form of BenchmarkSeqworkerMemory
// for CI: after a warm-up, 1,000 more runs with 64 in flight leave the
// worker with as many goroutines (give or take a few) and no more than a
// little more live heap.
func TestSeqworkerMemorySteady(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 1,300 runs in a worker process")
	}
	m := startMemEnv(t)
	m.runs(t, 300, 0, nil)
	s0 := m.stats(t)
	m.runs(t, 1000, 0, nil)
	s1 := m.stats(t)
	t.Logf("1,000 runs, 64 in flight: %.0f allocs/run, %.0f B/run; live heap %.1f -> %.1f MiB, RSS %.1f -> %.1f MiB, goroutines %d -> %d",
		float64(s1.Mallocs-s0.Mallocs)/1000, float64(s1.TotalAlloc-s0.TotalAlloc)/1000,
		mib(s0.LiveHeap), mib(s1.LiveHeap), mib(s0.RSS), mib(s1.RSS), s0.Goroutines, s1.Goroutines)
	if s1.Goroutines > s0.Goroutines+16 {
		t.Errorf("goroutines grew from %d to %d over 1,000 runs: a leak", s0.Goroutines, s1.Goroutines)
	}
	if s1.LiveHeap > s0.LiveHeap+16<<20 {
		t.Errorf("live heap grew from %.1f to %.1f MiB over 1,000 runs: a leak", mib(s0.LiveHeap), mib(s1.LiveHeap))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
