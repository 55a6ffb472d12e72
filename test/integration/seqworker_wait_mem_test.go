package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestSeqworkerWaitingCost measures what waiting runs cost a worker (a
// process of its own, as in the memory benchmarks): its RSS, live heap
// and goroutines before N runs wait at a wait_for group and while they
// all wait, and the time from each signal's reply to its run's finished
// event. N is SKILLBUS_WAITING_RUNS (default 1000). A waiting run is held
// by no worker, so the worker's goroutines must not grow with N.
func TestSeqworkerWaitingCost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process and parks many runs")
	}
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SKILLBUS_WAITING_RUNS")); err == nil && v > 0 {
		n = v
	}
	m := startMemEnv(t)
	js, err := jetstream.New(m.nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := seq.ParseYAML([]byte("name: wait-cost\ngroups:\n  - name: wait-cost-approve\n    out: {ok: bool}\n    wait_for: {signal: approve, timeout: 1h}\n  - name: wait-cost-after\n    in: {ok: bool}\n    tools: [{tool: mem.echo, args: {ok: $args.ok}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := seq.Encode(s)
	kv, err := js.KeyValue(context.Background(), events.BucketSequences)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), events.KeyFor(s.Name), b); err != nil {
		t.Fatal(err)
	}
	var waiting atomic.Int64
	var mu sync.Mutex
	finished := map[string]time.Time{}
	fin := make(chan string, n+16)
	sub1, _ := m.nc.Subscribe("events.run.*.waiting", func(*nats.Msg) { waiting.Add(1) })
	sub2, _ := m.nc.Subscribe("events.run.*.finished", func(msg *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(msg.Data, &ev) == nil {
			mu.Lock()
			finished[ev.RunID] = time.Now()
			mu.Unlock()
			fin <- ev.RunID
		}
	})
	defer sub1.Unsubscribe()
	defer sub2.Unsubscribe()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("wc-%05d", i)
	}
	parallel := func(f func(id string)) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
					f(ids[i])
				}
			})
		}
		wg.Wait()
	}
	time.Sleep(500 * time.Millisecond) // the worker's catalog sees the sequence
	before := m.stats(t)
	start := time.Now()
	parallel(func(id string) {
		if _, err := m.c.Start(ctx, events.SeqRunRequest{RunID: id, Sequence: s.Name}); err != nil {
			t.Errorf("start %s: %v", id, err)
		}
	})
	for waiting.Load() < int64(n) {
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("%d of %d runs waiting after 5 min", waiting.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	parked := time.Since(start)
	during := m.stats(t)
	sent := make([]time.Time, n)
	idx := map[string]int{}
	for i, id := range ids {
		idx[id] = i
	}
	start = time.Now()
	parallel(func(id string) {
		if _, err := m.c.Signal(ctx, id, "approve", raw("ok", "true")); err != nil {
			t.Errorf("signal %s: %v", id, err)
		}
		sent[idx[id]] = time.Now()
	})
	for range n {
		select {
		case <-fin:
		case <-time.After(2 * time.Minute):
			t.Fatalf("runs did not finish after their signals")
		}
	}
	resumed := time.Since(start)
	after := m.stats(t)
	lat := make([]time.Duration, 0, n)
	mu.Lock()
	for i, id := range ids {
		if f, ok := finished[id]; ok && !sent[i].IsZero() {
			lat = append(lat, max(f.Sub(sent[i]), 0))
		}
	}
	mu.Unlock()
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Millisecond) }
	mb := func(v uint64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
	t.Logf("%d runs parked in %s; worker before: RSS %s, live heap %s, %d goroutines; all waiting: RSS %s, live heap %s, %d goroutines; after: RSS %s, %d goroutines",
		n, parked.Round(time.Millisecond), mb(before.RSS), mb(before.LiveHeap), before.Goroutines, mb(during.RSS), mb(during.LiveHeap), during.Goroutines, mb(after.RSS), after.Goroutines)
	t.Logf("signal reply to finished event: p50 %s, p90 %s, p99 %s, max %s; %d signals and resumes in %s", q(0.5), q(0.9), q(0.99), lat[len(lat)-1].Round(time.Millisecond), n, resumed.Round(time.Millisecond))
	if during.Goroutines > before.Goroutines+20 {
		t.Errorf("the worker has %d goroutines while %d runs wait, %d before; a waiting run must hold none", during.Goroutines, n, before.Goroutines)
	}
}
