package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// Environment of TestNATSServerChildProcess: a NATS server process with
// JetStream on a fixed port and store, which the test SIGKILLs and starts
// again.
const (
	natsChildPort  = "SKILLBUS_NATS_CHILD_PORT"
	natsChildStore = "SKILLBUS_NATS_CHILD_STORE"
	// natsChildCluster, when set, clusters the child:
	// "SERVER_NAME CLUSTER_NAME CLUSTER_PORT ROUTE,ROUTE,...".
	natsChildCluster = "SKILLBUS_NATS_CHILD_CLUSTER"
)

// TestNATSServerChildProcess is not a test on its own: it is the NATS
// server process of TestSeqworkerNATSRestarts (this test binary run
// again), serving until it is killed.
func TestNATSServerChildProcess(t *testing.T) {
	port := os.Getenv(natsChildPort)
	if port == "" {
		t.Skip("helper process for TestSeqworkerNATSRestarts")
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	opts := natsserver.Options{Port: p, StoreDir: os.Getenv(natsChildStore), ReadyTimeout: 30 * time.Second}
	if c := strings.Fields(os.Getenv(natsChildCluster)); len(c) == 4 {
		cport, _ := strconv.Atoi(c[2])
		opts.Name = c[0]
		opts.Cluster = natsserver.ClusterOptions{Name: c[1], Port: cport, Routes: strings.Split(c[3], ",")}
	}
	var srv *natsserver.Server
	for i := 0; ; i++ { // the port (or the store lock) may take a moment to be free
		if srv, err = natsserver.Start(opts); err == nil {
			break
		}
		if i == 100 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "nats child ready on", srv.ClientURL())
	<-ctx.Done()
	srv.Shutdown()
}

// natsChild is a NATS server process on a fixed port and store.
type natsChild struct {
	t       *testing.T
	port    int
	store   string
	cluster string // natsChildCluster's value, "" for a single server
	cmd     *exec.Cmd
	out     cliBuf // both output pipes; waited on for the ready line
}

func (c *natsChild) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", c.port) }

func (c *natsChild) start() {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNATSServerChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), natsChildPort+"="+strconv.Itoa(c.port), natsChildStore+"="+c.store, natsChildCluster+"="+c.cluster)
	cmd.Stdout, cmd.Stderr = &c.out, &c.out
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd = cmd
	// Ready once it says so (after natsserver.Start returned: listening,
	// JetStream up): one more ready line than before this start.
	before := strings.Count(c.out.String(), "nats child ready on")
	c.out.waitUntil(c.t, "the NATS child to be ready", func(text string) bool {
		return strings.Count(text, "nats child ready on") > before
	})
}

func (c *natsChild) kill() {
	if c.cmd != nil {
		_ = c.cmd.Process.Kill() // SIGKILL
		_ = c.cmd.Wait()
		c.cmd = nil
	}
}

// reconnectingConn connects as a skillbus service does (natsconn.Dial):
// reconnecting for ever, with a short wait.
func reconnectingConn(t *testing.T, url, name string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startNATSChild starts a NATS server process on a free port with its
// JetStream store in a temporary directory, killed when t ends.
func startNATSChild(t *testing.T) *natsChild {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := &natsChild{t: t, port: port, store: t.TempDir()}
	srv.start()
	t.Cleanup(srv.kill)
	return srv
}

// TestSeqworkerNATSRestarts: the NATS server — a real process, with its
// JetStream store on disk — is SIGKILLed and started again on the same
// store three times while a worker runs a steady load of three-group runs.
// Calls whose connection dropped, and replies lost across a reconnect, are
// interruptions, not tool failures: every run succeeds, none is lost, no
// finished group runs again, and no run burns a delivery on the outages.
func TestSeqworkerNATSRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a NATS server process for about 20 seconds")
	}
	t.Parallel()
	srv := startNATSChild(t)

	driver := reconnectingConn(t, srv.url(), "driver")
	js, err := jetstream.New(driver)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	opts := events.Options{DuplicateWindow: time.Minute} // the default ack wait (10 s) and deliveries (10)
	if err := events.Provision(ctx, js, opts); err != nil {
		t.Fatal(err)
	}
	env := &swEnv{nc: driver, js: js, opts: opts}

	// The provider logs every call it gets (in order) before it works.
	type call struct {
		run         string
		group, call int
	}
	var logMu sync.Mutex
	var calls []call
	prov := reconnectingConn(t, srv.url(), "provider")
	provider, err := tool.Serve(prov, tool.ServerConfig{Name: "restart-tools", MaxConcurrent: 256}, tool.Tool{
		Name: "nr.step",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct {
				Run         string
				Group, Call int
			}
			_ = json.Unmarshal(args, &a)
			logMu.Lock()
			calls = append(calls, call{a.Run, a.Group, a.Call})
			logMu.Unlock()
			select {
			case <-time.After(time.Duration(30+rand.IntN(120)) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return map[string]any{"g": a.Group, "c": a.Call}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = provider.Stop(context.Background()) })
	swStore(t, env, `
name: nr
groups:
  - name: nr-one
    in: {run: string}
    out: {one: array}
    tools:
      - {tool: nr.step, args: {run: $args.run, group: 1, call: 1}, as: one}
      - {tool: nr.step, args: {run: $args.run, group: 1, call: 2}, as: one}
  - name: nr-two
    in: {run: string, one: array}
    out: {two: array}
    tools:
      - {tool: nr.step, args: {run: $args.run, group: 2, call: 1, prev: $args.one}, as: two}
      - {tool: nr.step, args: {run: $args.run, group: 2, call: 2}, as: two}
  - name: nr-three
    in: {run: string, two: array}
    tools:
      - {tool: nr.step, args: {run: $args.run, group: 3, call: 1, prev: $args.two}}
      - {tool: nr.step, args: {run: $args.run, group: 3, call: 2}}
`)
	w, err := seqworker.New(reconnectingConn(t, srv.url(), "worker"), seqworker.Config{Provision: opts, WorkerID: "nr-worker", Logger: swLogger(t), FetchWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = w.Stop(sctx)
	})

	// Load: a run every 100 ms for 12 s; three outages meanwhile.
	var ids []string
	var wg sync.WaitGroup
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; i < 120; i++ {
			id := fmt.Sprintf("r-nr-%03d", i)
			ids = append(ids, id)
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := &events.RunRequest{RunID: id, Sequence: "nr", Args: json.RawMessage(`{"run":"` + id + `"}`)}
				subj, _ := events.RunSubject("nr")
				for ctx.Err() == nil { // published again until the server has it (deduplicated by id)
					pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := events.PublishMessage(pctx, js, subj, req, jetstream.WithMsgID(id))
					pcancel()
					if err == nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for i := range 3 {
		time.Sleep(time.Duration(2500+rand.IntN(1000)) * time.Millisecond)
		srv.kill()
		down := time.Duration(500+rand.IntN(1500)) * time.Millisecond
		t.Logf("outage %d: NATS SIGKILLed, restarted on its store after %v", i+1, down)
		time.Sleep(down)
		srv.start()
	}
	<-loadDone
	wg.Wait()

	// Every run finishes, and succeeds.
	kv, err := js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]events.RunState{}
	for len(states) < len(ids) && ctx.Err() == nil {
		for _, id := range ids {
			if _, ok := states[id]; ok {
				continue
			}
			e, err := kv.Get(ctx, id)
			if err != nil {
				continue
			}
			var st events.RunState
			if events.Decode(e.Value(), &st) == nil && events.Finished(st.Status) {
				states[id] = st
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	deliveries := map[int]int{}
	var failed, lost []string
	for _, id := range ids {
		st, ok := states[id]
		switch {
		case !ok:
			lost = append(lost, id)
			continue
		case st.Status != events.StatusSucceeded:
			failed = append(failed, fmt.Sprintf("%s %s (attempt %d): %s", id, st.Status, st.Attempt, st.Error))
		}
		deliveries[st.Attempt]++
	}
	// No finished group ran again: no call of a group after a call of the
	// next group of the same run.
	logMu.Lock()
	firstOfNext := map[string]int{}
	for i, c := range calls {
		if k := fmt.Sprintf("%s/%d", c.run, c.group-1); c.group > 1 {
			if _, ok := firstOfNext[k]; !ok {
				firstOfNext[k] = i
			}
		}
	}
	var rerun []string
	for i, c := range calls {
		if first, ok := firstOfNext[fmt.Sprintf("%s/%d", c.run, c.group)]; ok && i > first {
			rerun = append(rerun, fmt.Sprintf("%s group %d call %d", c.run, c.group, c.call))
		}
	}
	ncalls := len(calls)
	logMu.Unlock()
	var ks []int
	for k := range deliveries {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var dist []string
	for _, k := range ks {
		dist = append(dist, fmt.Sprintf("%d deliveries: %d runs", k, deliveries[k]))
	}
	t.Logf("%d runs across 3 NATS restarts: %d succeeded, %d failed, %d lost; %d tool calls for %d planned (%d more: calls sent again after a reconnect); %s",
		len(ids), len(ids)-len(failed)-len(lost), len(failed), len(lost), ncalls, 6*len(ids), ncalls-6*len(ids), strings.Join(dist, ", "))
	if len(failed) > 0 || len(lost) > 0 {
		t.Errorf("failed: %v; lost: %v; want none", failed, lost)
	}
	if len(rerun) > 0 {
		t.Errorf("calls of finished groups made again: %v; want none", rerun)
	}
	for k := range deliveries {
		if k > 2 {
			t.Errorf("a run used %d deliveries; want at most 2 (an outage longer than the ack wait may cost one)", k)
		}
	}
}

// TestSeqworkerRunsLeaderKilled: on a 3-node cluster of NATS server
// processes with replicas 3, the node leading the RUNS bucket is SIGKILLed
// while a worker runs a steady load, and started again on its store 4 s
// later. Writes to RUNS stall until a new leader is elected; the worker
// waits the stall out on the runs it holds (state writes retried,
// in-progress acks meanwhile) instead of handing them back: every run
// succeeds on its first delivery, and no group runs twice.
func TestSeqworkerRunsLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster of NATS processes and kills one")
	}
	t.Parallel()
	free := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	nodes := make([]*natsChild, 3)
	var routes []string
	cports := make([]int, 3)
	for i := range nodes {
		cports[i] = free()
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", cports[i]))
	}
	var urls []string
	for i := range nodes {
		nodes[i] = &natsChild{t: t, port: free(), store: t.TempDir(),
			cluster: fmt.Sprintf("rl-%d rl %d %s", i+1, cports[i], strings.Join(routes, ","))}
		urls = append(urls, nodes[i].url())
	}
	for _, n := range nodes {
		n.start()
		t.Cleanup(n.kill)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	driver := reconnectingConn(t, strings.Join(urls, ","), "driver")
	js, err := jetstream.New(driver)
	if err != nil {
		t.Fatal(err)
	}
	opts := events.Options{Replicas: 3, DuplicateWindow: time.Minute}
	for {
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		err := events.Provision(pctx, js, opts)
		pcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var si *jetstream.StreamInfo
	for {
		if st, err := js.Stream(ctx, "KV_"+events.BucketRuns); err == nil {
			if si, err = st.Info(ctx); err == nil && si.Cluster != nil && si.Cluster.Leader != "" {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal("KV_RUNS has no leader")
		}
		time.Sleep(200 * time.Millisecond)
	}
	leader := -1
	var others []string
	for i, n := range nodes {
		if fmt.Sprintf("rl-%d", i+1) == si.Cluster.Leader {
			leader = i
		} else {
			others = append(others, n.url())
		}
	}
	if leader < 0 {
		t.Fatalf("no node leads KV_RUNS (leader %q)", si.Cluster.Leader)
	}
	// The worker and the provider use the other nodes: only RUNS (and
	// whatever else the node led) loses its leader, not their connections.
	rest := strings.Join(others, ",")
	env := &swEnv{nc: driver, js: js, opts: opts}
	var ncalls sync.Map
	prov := reconnectingConn(t, rest, "provider")
	provider, err := tool.Serve(prov, tool.ServerConfig{Name: "rl-tools", MaxConcurrent: 256}, tool.Tool{
		Name: "rl.step",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct {
				Run   string
				Group int
			}
			_ = json.Unmarshal(args, &a)
			n, _ := ncalls.LoadOrStore(fmt.Sprintf("%s/%d", a.Run, a.Group), new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
			return map[string]int{"g": a.Group}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = provider.Stop(context.Background()) })
	swStore(t, env, `
name: rl
groups:
  - name: rl-one
    in: {run: string}
    out: {one: object}
    tools: [{tool: rl.step, args: {run: $args.run, group: 1}, as: one}]
  - name: rl-two
    in: {run: string, one: object}
    out: {two: object}
    tools: [{tool: rl.step, args: {run: $args.run, group: 2, prev: $args.one}, as: two}]
  - name: rl-three
    in: {run: string, two: object}
    tools: [{tool: rl.step, args: {run: $args.run, group: 3, prev: $args.two}}]
`)
	w, err := seqworker.New(reconnectingConn(t, rest, "worker"), seqworker.Config{Provision: opts, WorkerID: "rl-worker", Logger: swLogger(t), FetchWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = w.Stop(sctx)
	})

	// A probe writes to RUNS every 100 ms (tries of 1 s until one
	// succeeds): its slowest write is the stall the election causes.
	var stall atomic.Int64
	probeDone := make(chan struct{})
	probeStop := make(chan struct{})
	go func() {
		defer close(probeDone)
		pkv, err := js.KeyValue(ctx, events.BucketRuns)
		if err != nil {
			return
		}
		for {
			select {
			case <-probeStop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			start := time.Now()
			for ctx.Err() == nil { // tries of 1 s: a request lost with a connection does not count for long
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				_, err := pkv.Put(pctx, "stall-probe", []byte("x"))
				pcancel()
				if err == nil {
					break
				}
			}
			if d := time.Since(start); int64(d) > stall.Load() {
				stall.Store(int64(d))
			}
		}
	}()
	var ids []string
	var wg, restarted sync.WaitGroup
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("r-rl-%03d", i)
		ids = append(ids, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &events.RunRequest{RunID: id, Sequence: "rl", Args: json.RawMessage(`{"run":"` + id + `"}`)}
			subj, _ := events.RunSubject("rl")
			deadline := time.Now().Add(90 * time.Second)
			for ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := events.PublishMessage(pctx, js, subj, req, jetstream.WithMsgID(id))
				pcancel()
				if err == nil {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("publish %s: still failing after 90s: %v", id, err)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		time.Sleep(100 * time.Millisecond)
		if i == 20 {
			nodes[leader].kill()
			t.Logf("SIGKILLed %s, the leader of KV_RUNS", si.Cluster.Leader)
			restarted.Add(1)
			go func() {
				defer restarted.Done()
				time.Sleep(4 * time.Second)
				nodes[leader].start()
				t.Logf("restarted %s on its store", si.Cluster.Leader)
			}()
		}
	}
	wg.Wait()
	restarted.Wait()
	close(probeStop)
	<-probeDone
	if t.Failed() {
		for i, n := range nodes {
			t.Logf("node rl-%d output:\n%s", i+1, n.out.String())
		}
		t.FailNow()
	}
	var kv jetstream.KeyValue
	for {
		kctx, kcancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err = js.KeyValue(kctx, events.BucketRuns)
		kcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("bucket RUNS: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	states := map[string]events.RunState{}
	for len(states) < len(ids) && ctx.Err() == nil {
		for _, id := range ids {
			if _, ok := states[id]; ok {
				continue
			}
			gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
			e, err := kv.Get(gctx, id)
			gcancel()
			if err != nil {
				continue
			}
			var st events.RunState
			if events.Decode(e.Value(), &st) == nil && events.Finished(st.Status) {
				states[id] = st
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	maxDeliveries, succeeded := 0, 0
	var bad []string
	for _, id := range ids {
		st, ok := states[id]
		if !ok {
			bad = append(bad, id+": lost")
			continue
		}
		if st.Status == events.StatusSucceeded {
			succeeded++
		} else {
			bad = append(bad, fmt.Sprintf("%s %s: %s", id, st.Status, st.Error))
		}
		maxDeliveries = max(maxDeliveries, st.Attempt)
	}
	rerun := 0
	ncalls.Range(func(_, v any) bool {
		if v.(*atomic.Int32).Load() > 1 {
			rerun++
		}
		return true
	})
	t.Logf("%d runs with the RUNS leader SIGKILLed (the slowest RUNS write took %v): %d succeeded; most deliveries of a run: %d; groups called more than once: %d",
		len(ids), time.Duration(stall.Load()).Round(time.Millisecond), succeeded, maxDeliveries, rerun)
	if len(bad) > 0 {
		t.Errorf("runs not succeeded: %v", bad)
	}
	if maxDeliveries > 1 {
		t.Errorf("a run used %d deliveries; want 1: a leader election must not burn deliveries", maxDeliveries)
	}
}
