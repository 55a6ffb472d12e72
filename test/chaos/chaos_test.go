//go:build linux

// Package chaos is skillbus's chaos suite (RELIABILITY.md): a 3-node
// cluster of real nats-server processes (replicas 3), three seqworker
// processes and a tool provider process, under load, while the suite
// SIGKILLs workers, SIGKILLs and restarts one NATS node at a time (same
// store), and cuts one node off the network at a time (network
// namespaces; root and iproute2 needed, else skipped with a message). It
// counts the runs submitted, succeeded, failed and lost, and the finished
// groups run again (from the tool's call log), and prints them.
//
// It runs only with SKILLBUS_CHAOS=1 (it builds nats-server and seqworker
// and takes a few minutes):
//
//	SKILLBUS_CHAOS=1 go test -v -timeout 15m ./test/chaos
//
// Settings: SKILLBUS_CHAOS_DURATION (load time, default 90s),
// SKILLBUS_CHAOS_RATE (runs started per second, default 4),
// SKILLBUS_CHAOS_SEED (the faults' random seed, default the time),
// SKILLBUS_CHAOS_DIR (keep the logs and stores there instead of a
// temporary directory), SKILLBUS_CHAOS_REPORT (write the figures as JSON
// to that file).
package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

const envChaos = "SKILLBUS_CHAOS"

// chaosSeq is the sequence every run runs: three groups of two parallel
// calls, each group reading the previous one's slot.
const chaosSeq = `
name: chaos
description: the chaos suite's run (test/chaos)
groups:
  - name: chaos-one
    in: {run: string}
    out: {one: array}
    tools:
      - {tool: chaos.step, args: {run: $args.run, group: 1, call: 1, ms: 400}, as: one}
      - {tool: chaos.step, args: {run: $args.run, group: 1, call: 2, ms: 400}, as: one}
  - name: chaos-two
    in: {run: string, one: array}
    out: {two: array}
    tools:
      - {tool: chaos.step, args: {run: $args.run, group: 2, call: 1, ms: 400, prev: $args.one}, as: two}
      - {tool: chaos.step, args: {run: $args.run, group: 2, call: 2, ms: 400}, as: two}
  - name: chaos-three
    in: {run: string, two: array}
    tools:
      - {tool: chaos.step, args: {run: $args.run, group: 3, call: 1, ms: 400, prev: $args.two}}
      - {tool: chaos.step, args: {run: $args.run, group: 3, call: 2, ms: 400}}
`

const groups = 3

// settings are the suite's knobs (see the package comment).
type settings struct {
	duration time.Duration
	rate     float64
	seed     uint64
	dir      string
	report   string
}

func readSettings(t *testing.T) settings {
	s := settings{duration: 90 * time.Second, rate: 4, seed: uint64(time.Now().UnixNano())}
	if v := os.Getenv("SKILLBUS_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SKILLBUS_CHAOS_DURATION=%q: want a positive Go duration (90s)", v)
		}
		s.duration = d
	}
	if v := os.Getenv("SKILLBUS_CHAOS_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 100 {
			t.Fatalf("SKILLBUS_CHAOS_RATE=%q: want runs per second, more than 0 and at most 100", v)
		}
		s.rate = r
	}
	if v := os.Getenv("SKILLBUS_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SKILLBUS_CHAOS_SEED=%q: want a whole number", v)
		}
		s.seed = n
	}
	s.dir, s.report = os.Getenv("SKILLBUS_CHAOS_DIR"), os.Getenv("SKILLBUS_CHAOS_REPORT")
	return s
}

// worker is a seqworker process and its health address.
type worker struct {
	*proc
	health int
}

func (w *worker) ready() bool { return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", w.health)) }

// figures are what the suite counts and prints.
type figures struct {
	Seed            uint64         `json:"seed"`
	Duration        string         `json:"load_duration"`
	Partitions      bool           `json:"partitions_possible"`
	Submitted       int            `json:"runs_submitted"`
	NotStarted      int            `json:"runs_not_started"`
	Succeeded       int            `json:"runs_succeeded"`
	Failed          int            `json:"runs_failed"`
	Lost            int            `json:"runs_lost"`
	GroupsRerun     int            `json:"finished_groups_rerun"`
	StrayCalls      int            `json:"duplicate_calls"`
	Calls           int            `json:"tool_calls"`
	WorkerKills     int            `json:"worker_sigkills"`
	NodeKills       int            `json:"nats_node_sigkills"`
	LeaderKills     int            `json:"runs_leader_sigkills"`
	NodeRestarts    int            `json:"nats_node_restarts"`
	PartitionsMade  int            `json:"partitions"`
	Deliveries      map[string]int `json:"runs_by_deliveries"`
	MaxDeliveries   int            `json:"max_deliveries"`
	FailedErrors    []string       `json:"failed_errors,omitempty"`
	LostRuns        []string       `json:"lost_runs,omitempty"`
	RerunDetail     []string       `json:"rerun_detail,omitempty"`
	P50RunSeconds   float64        `json:"run_p50_seconds"`
	MaxRunSeconds   float64        `json:"run_max_seconds"`
	Actions         []string       `json:"actions"`
	BuildAndStartup string         `json:"build_and_startup"`
}

func TestChaos(t *testing.T) {
	if os.Getenv(envChaos) == "" {
		t.Skip("the chaos suite runs only with SKILLBUS_CHAOS=1 (it builds nats-server and seqworker and takes a few minutes): SKILLBUS_CHAOS=1 go test -v -timeout 15m ./test/chaos")
	}
	s := readSettings(t)
	rng := rand.New(rand.NewPCG(s.seed, s.seed^0x5eed))
	t0 := time.Now()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := s.dir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	natsBin, workerBin := build(t, root)
	net, why := newNetwork(t, 3)
	if net == nil {
		t.Logf("network partitions are skipped: %s (they need root and iproute2's ip); the nodes run on 127.0.0.1", why)
	}
	nodes := startCluster(t, natsBin, dir, net)
	u := urls(nodes)
	t.Logf("cluster up: %s (namespaces: %v)", u, net != nil)

	toolLog := filepath.Join(dir, "calls.jsonl")
	tools := &proc{t: t, name: "tools", argv: []string{os.Args[0], "-test.run=^TestChaosToolsProcess$", "-test.count=1"},
		env: []string{envToolsURL + "=" + u, envToolsLog + "=" + toolLog}, log: filepath.Join(dir, "tools.log")}
	tools.start()
	t.Cleanup(tools.stop)

	workers := make([]*worker, 3)
	for i := range workers {
		w := &worker{health: freePort(t)}
		w.proc = &proc{t: t, name: fmt.Sprintf("seqworker-%d", i+1), log: filepath.Join(dir, fmt.Sprintf("seqworker-%d.log", i+1)),
			argv: []string{workerBin, "--nats", u, "--replicas", "3", "--worker-id", fmt.Sprintf("w%d", i+1),
				"--health-addr", fmt.Sprintf("127.0.0.1:%d", w.health), "--shutdown-budget", "5s"}}
		w.start()
		t.Cleanup(w.stop)
		workers[i] = w
	}
	for _, w := range workers {
		deadline := time.Now().Add(90 * time.Second)
		for !w.ready() {
			if time.Now().After(deadline) || !w.running() {
				t.Fatalf("%s not ready within 90s; its log:\n%s", w.name, w.tail(6000))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := natsconn.Dial(&natsconn.Config{URL: u}, "chaos-driver", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), s.duration+10*time.Minute)
	defer cancel()
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	storeSequence(ctx, t, js, chaosSeq)
	tc, err := tool.NewClient(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	waitForTools(ctx, t, tc, tools)
	fig := &figures{Seed: s.seed, Duration: s.duration.String(), Partitions: net != nil, Deliveries: map[string]int{},
		BuildAndStartup: time.Since(t0).Round(time.Second).String()}
	t.Logf("ready after %s; load for %s at %.1f runs/s, seed %d", fig.BuildAndStartup, s.duration, s.rate, s.seed)

	c, err := client.New(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	tag := strconv.FormatInt(time.Now().Unix()%100000, 36)
	end := time.Now().Add(s.duration)

	// The load: runs started at the rate, each retried (same run id: the
	// endpoint is idempotent) until a seqworker takes it.
	var mu sync.Mutex
	started := map[string]time.Time{}
	var notStarted []string
	var wg sync.WaitGroup
	tick := time.Duration(float64(time.Second) / s.rate)
	faultsDone := make(chan struct{})
	for i := 0; ; i++ {
		at := time.Now()
		if at.After(end) {
			break
		}
		id := fmt.Sprintf("chaos-%s-%04d", tag, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]string{"run": id})
			sctx, scancel := context.WithTimeout(ctx, 3*time.Minute)
			defer scancel()
			for {
				_, err := c.Start(sctx, events.SeqRunRequest{RunID: id, Sequence: "chaos", Args: args})
				if err == nil {
					mu.Lock()
					started[id] = at
					mu.Unlock()
					return
				}
				if sctx.Err() != nil {
					mu.Lock()
					notStarted = append(notStarted, id+": "+err.Error())
					mu.Unlock()
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
		if i == 0 {
			go func() {
				defer close(faultsDone)
				faults(t, rng, end, nodes, workers, net, js, fig)
			}()
		}
		time.Sleep(tick - time.Since(at))
	}
	wg.Wait()
	<-faultsDone
	mu.Lock()
	fig.Submitted = len(started) + len(notStarted)
	fig.NotStarted = len(notStarted)
	mu.Unlock()
	t.Logf("load over: %d runs submitted (%d could not be started); waiting for them to finish", fig.Submitted, fig.NotStarted)
	for len(notStarted) > 0 && len(fig.FailedErrors) < 5 {
		fig.FailedErrors = append(fig.FailedErrors, "not started: "+notStarted[0])
		notStarted = notStarted[1:]
	}

	// Wait for every run's final state (the faults are over).
	kv, err := js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]*events.RunState{}
	waitUntil := time.Now().Add(4 * time.Minute)
	for {
		open := 0
		for id := range started {
			if st := states[id]; st != nil && events.Finished(st.Status) {
				continue
			}
			gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
			e, err := kv.Get(gctx, id)
			gcancel()
			if err == nil {
				var st events.RunState
				if events.Decode(e.Value(), &st) == nil {
					st.Normalize()
					states[id] = &st
					if events.Finished(st.Status) {
						continue
					}
				}
			}
			open++
		}
		if open == 0 || time.Now().After(waitUntil) {
			break
		}
		time.Sleep(time.Second)
	}
	analyse(t, fig, started, states, toolLog)
	report(t, fig, s.report)

	if fig.Lost > 0 || fig.GroupsRerun > 0 || fig.Failed > 0 || fig.NotStarted > 0 {
		for _, p := range append([]*proc{tools}, procsOf(workers)...) {
			t.Logf("---- tail of %s ----\n%s", p.name, p.tail(3000))
		}
		t.Errorf("targets missed: %d lost, %d finished groups re-run, %d failed, %d not started; want 0 of each (logs in %s)", fig.Lost, fig.GroupsRerun, fig.Failed, fig.NotStarted, dir)
	}
}

func procsOf(ws []*worker) []*proc {
	var ps []*proc
	for _, w := range ws {
		ps = append(ps, w.proc)
	}
	return ps
}

// storeSequence stores chaosSeq in SEQUENCES as the registry would.
// storeSequence stores the sequence src in SEQUENCES, retrying until the
// cluster takes it.
func storeSequence(ctx context.Context, t *testing.T, js jetstream.JetStream, src string) {
	t.Helper()
	sq, err := seq.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := seq.Encode(sq)
	if err != nil {
		t.Fatal(err)
	}
	for {
		// Each try has a time of its own: a publish whose acknowledgement
		// is lost (a cluster that has just formed) otherwise waits for the
		// whole test's context (CI once spent its 6 minutes on one Put).
		// A put again of the same value is harmless.
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err := js.KeyValue(tctx, events.BucketSequences)
		if err == nil {
			_, err = kv.Put(tctx, events.KeyFor(sq.Name), b)
		}
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("store the sequence: %v", err)
		}
		t.Logf("store the sequence %s: %v; trying again", sq.Name, err)
		time.Sleep(500 * time.Millisecond)
	}
}

// faults runs the faults until end: every 4 to 8 seconds one of a worker
// SIGKILL (restarted after 0.5 to 3 s), a NATS node SIGKILL (restarted on
// its store after 1 to 5 s), or a node cut off the network for 3 to 8 s.
// One fault at a time; a node fault waits for the cluster to be healthy
// again before the next fault.
func faults(t *testing.T, rng *rand.Rand, end time.Time, nodes []*node, workers []*worker, net *network, js jetstream.JetStream, fig *figures) {
	var target *node
	say := func(format string, a ...any) {
		line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, a...)
		fig.Actions = append(fig.Actions, line)
		t.Log(line)
	}
	dur := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	time.Sleep(dur(2, 4))
	for time.Now().Before(end.Add(-3 * time.Second)) {
		kinds := []string{"worker", "worker", "node", "leader"}
		if net != nil {
			kinds = append(kinds, "partition")
		}
		kind := kinds[rng.IntN(len(kinds))]
		if kind == "leader" {
			// A node kill aimed at the leader of RUNS (the stall of its
			// writes is what used to burn deliveries).
			kind = "node"
			target = runsLeader(js, nodes)
		}
		switch kind {
		case "worker":
			w := workers[rng.IntN(len(workers))]
			w.kill()
			fig.WorkerKills++
			down := dur(0.5, 3)
			say("SIGKILL %s; restart in %s", w.name, down.Round(time.Millisecond))
			time.Sleep(down)
			w.start()
		case "node":
			n := target
			what := ""
			if n == nil {
				n = nodes[rng.IntN(len(nodes))]
			} else {
				what = " (the RUNS leader)"
				fig.LeaderKills++
			}
			target = nil
			n.kill()
			fig.NodeKills++
			down := dur(1, 5)
			say("SIGKILL %s%s; restart on its store in %s", n.name, what, down.Round(time.Millisecond))
			time.Sleep(down)
			n.start()
			fig.NodeRestarts++
			healthy(t, say, nodes)
		case "partition":
			n := nodes[rng.IntN(len(nodes))]
			if err := net.cut(n.i); err != nil {
				t.Errorf("cut %s off: %v", n.name, err)
				continue
			}
			n.note("cut off the network")
			fig.PartitionsMade++
			down := dur(3, 8)
			say("partition: %s cut off the network for %s", n.name, down.Round(time.Millisecond))
			time.Sleep(down)
			if err := net.heal(n.i); err != nil {
				t.Errorf("reconnect %s: %v", n.name, err)
			}
			n.note("reconnected")
			healthy(t, say, nodes)
		}
		time.Sleep(dur(4, 8))
	}
	say("faults over")
}

// runsLeader returns the node that leads the KV_RUNS stream, or nil when
// it cannot be told.
func runsLeader(js jetstream.JetStream, nodes []*node) *node {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KV_"+events.BucketRuns)
	if err != nil {
		return nil
	}
	si, err := st.Info(ctx)
	if err != nil || si.Cluster == nil {
		return nil
	}
	for _, n := range nodes {
		if "n"+strconv.Itoa(n.i) == si.Cluster.Leader {
			return n
		}
	}
	return nil
}

// healthy waits (up to 90 s) until every node reports healthy (/healthz:
// JetStream current), so that only one node is ever down.
func healthy(t *testing.T, say func(string, ...any), nodes []*node) {
	start := time.Now()
	for _, n := range nodes {
		if !n.waitHealthy(90*time.Second - time.Since(start)) {
			say("%s not healthy after 90s", n.name)
			return
		}
	}
	say("cluster healthy again after %s", time.Since(start).Round(time.Millisecond))
}

// analyse counts the outcomes and reads the call log for groups run
// again after they finished: a group's call logged after the next group
// started (or, for the last group, after the run finished). Every call of
// a group logged again that way is a finished group re-run; only some of
// them are stray duplicate calls (a call sent again after a reconnect,
// whose other copy ran late: at-least-once).
func analyse(t *testing.T, fig *figures, started map[string]time.Time, states map[string]*events.RunState, logPath string) {
	var durations []float64
	for id := range started {
		st := states[id]
		switch {
		case st == nil || !events.Finished(st.Status):
			fig.Lost++
			status := "no state"
			if st != nil {
				status = st.Status + " (attempt " + strconv.Itoa(st.Attempt) + ", worker " + st.Worker + ")"
			}
			fig.LostRuns = append(fig.LostRuns, id+": "+status)
			continue
		case st.Status == events.StatusSucceeded:
			fig.Succeeded++
		default:
			fig.Failed++
			if len(fig.FailedErrors) < 10 {
				fig.FailedErrors = append(fig.FailedErrors, fmt.Sprintf("%s %s (attempt %d): %s", id, st.Status, st.Attempt, st.Error))
			}
		}
		fig.Deliveries[strconv.Itoa(st.Attempt)]++
		fig.MaxDeliveries = max(fig.MaxDeliveries, st.Attempt)
		if !st.FinishedAt.IsZero() {
			durations = append(durations, st.FinishedAt.Sub(started[id]).Seconds())
		}
	}
	sort.Float64s(durations)
	if len(durations) > 0 {
		fig.P50RunSeconds = round2(durations[len(durations)/2])
		fig.MaxRunSeconds = round2(durations[len(durations)-1])
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Errorf("read the call log: %v", err)
		return
	}
	byRun := map[string][]callLog{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c callLog
		if json.Unmarshal([]byte(line), &c) != nil || c.Group == 0 {
			continue
		}
		byRun[c.Run] = append(byRun[c.Run], c)
		fig.Calls++
	}
	for id, calls := range byRun {
		sort.Slice(calls, func(i, j int) bool { return calls[i].Seq < calls[j].Seq })
		var after [groups + 2]int64 // per group: the seq at which the next group started
		for g := 1; g <= groups; g++ {
			after[g] = 1<<62 - 1
		}
		for _, c := range calls {
			if c.Group > 1 && c.Seq < after[c.Group-1] {
				after[c.Group-1] = c.Seq
			}
		}
		var finishedAt int64 = 1<<62 - 1
		if st := states[id]; st != nil && events.Finished(st.Status) && !st.FinishedAt.IsZero() {
			finishedAt = st.FinishedAt.UnixNano()
		}
		late := map[int]map[int]int{} // group → call → late calls
		for _, c := range calls {
			isLate := c.Seq > after[c.Group] || (c.Group == groups && c.At > finishedAt)
			if !isLate {
				continue
			}
			if late[c.Group] == nil {
				late[c.Group] = map[int]int{}
			}
			late[c.Group][c.Call]++
		}
		for g, byCall := range late {
			if len(byCall) == 2 { // every call of the group ran again
				fig.GroupsRerun++
				fig.RerunDetail = append(fig.RerunDetail, fmt.Sprintf("%s: group %d ran again after it finished (%v)", id, g, byCall))
				continue
			}
			for _, n := range byCall {
				fig.StrayCalls += n
			}
		}
	}
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// report prints the figures and, when path is set, writes them as JSON.
func report(t *testing.T, fig *figures, path string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n==== skillbus chaos suite (seed %d, load %s, partitions %v)\n", fig.Seed, fig.Duration, fig.Partitions)
	fmt.Fprintf(&b, "faults:  %d worker SIGKILLs, %d NATS node SIGKILLs (%d of the RUNS leader; %d restarts on the same store), %d network partitions\n",
		fig.WorkerKills, fig.NodeKills, fig.LeaderKills, fig.NodeRestarts, fig.PartitionsMade)
	fmt.Fprintf(&b, "runs:    %d submitted, %d succeeded, %d failed, %d lost, %d not started\n", fig.Submitted, fig.Succeeded, fig.Failed, fig.Lost, fig.NotStarted)
	fmt.Fprintf(&b, "groups:  %d finished groups re-run; %d duplicate calls (at-least-once); %d tool calls\n", fig.GroupsRerun, fig.StrayCalls, fig.Calls)
	keys := make([]string, 0, len(fig.Deliveries))
	for k := range fig.Deliveries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { a, _ := strconv.Atoi(keys[i]); b, _ := strconv.Atoi(keys[j]); return a < b })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, fig.Deliveries[k]))
	}
	fmt.Fprintf(&b, "deliveries per run: {%s}, max %d\n", strings.Join(parts, ", "), fig.MaxDeliveries)
	fmt.Fprintf(&b, "run time (start request to finish): p50 %.2fs, max %.2fs\n", fig.P50RunSeconds, fig.MaxRunSeconds)
	for _, e := range fig.FailedErrors {
		fmt.Fprintf(&b, "  failed: %s\n", e)
	}
	for i, e := range fig.LostRuns {
		if i == 10 {
			fmt.Fprintf(&b, "  ... %d more lost\n", len(fig.LostRuns)-10)
			break
		}
		fmt.Fprintf(&b, "  lost: %s\n", e)
	}
	for _, e := range fig.RerunDetail {
		fmt.Fprintf(&b, "  re-run: %s\n", e)
	}
	fmt.Print(b.String())
	t.Log(b.String())
	if path != "" {
		j, _ := json.MarshalIndent(fig, "", "  ")
		if err := os.WriteFile(path, j, 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
}
