//go:build linux

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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// forEachSeq is the run of TestChaosForEach: two 200-item fan-outs of
// chaos.step (the second over the first's results, so its items are the
// first's results in item order) and a last group of one call. Each
// item's call is logged by the tool as (run, group, call = the item's
// index), and its result names them back.
const forEachSeq = `
name: chaos-foreach
description: the chaos suite's fan-out run (test/chaos)
groups:
  - name: fe-one
    in: {run: string, items: array<integer>}
    out: {one: array<object>}
    tools:
      - {tool: chaos.step, for_each: $args.items, max_parallel: 20, args: {run: $args.run, group: 1, call: $index, ms: 250}, as: one}
  - name: fe-two
    in: {run: string, one: array<object>}
    out: {two: array<object>}
    tools:
      - {tool: chaos.step, for_each: $args.one, max_parallel: 20, args: {run: $args.run, group: 2, call: $item.call, ms: 250}, as: two}
  - name: fe-end
    in: {run: string}
    tools:
      - {tool: chaos.step, args: {run: $args.run, group: 3, call: 0, ms: 1}}
`

// The fan-out's shape, as forEachSeq has it.
const (
	forEachItems  = 200
	forEachGroups = 3
	forEachRuns   = 6 // runs started, one a second
	forEachKills  = 4 // worker SIGKILLs, each while that worker holds runs in a fan-out
)

// TestChaosForEach SIGKILLs seqworkers while they hold runs in the middle
// of a 200-item for_each (docs/sequences.md, "for_each"): 6 runs of two
// fan-outs and a last group, on the same 3-node cluster (replicas 3) and
// processes as TestChaos, 4 kills of the worker holding the most runs,
// each restarted after 0.5–1.5 s (ack wait 6 s, so a dead worker's runs
// are taken over within seconds). Targets, from the run states and the
// tool's call log: 0 lost runs, 0 failed, every item's result in item
// order (result i names item i, in both lists), and no item of a finished
// group called again (a call of group g logged after group g+1 started,
// or of the last group after the run finished). A group interrupted by a
// kill runs again whole (at-least-once): counted, not a failure. At least
// one run must have been taken over (else the fault did not happen as
// forced).
//
//	SKILLBUS_CHAOS=1 go test -v -count=1 -timeout 8m -run 'TestChaosForEach$' ./test/chaos
func TestChaosForEach(t *testing.T) {
	if os.Getenv(envChaos) == "" {
		t.Skip("the chaos suite runs only with SKILLBUS_CHAOS=1: SKILLBUS_CHAOS=1 go test -v -run 'TestChaosForEach$' ./test/chaos")
	}
	s := readSettings(t)
	rng := rand.New(rand.NewPCG(s.seed, s.seed^0xfe))
	t0 := time.Now()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if s.dir != "" {
		dir = filepath.Join(s.dir, "foreach")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	natsBin, workerBin := build(t, root)
	nodes := startCluster(t, natsBin, dir, nil)
	u := urls(nodes)

	toolLog := filepath.Join(dir, "calls.jsonl")
	tools := &proc{t: t, name: "tools", argv: []string{os.Args[0], "-test.run=^TestChaosToolsProcess$", "-test.count=1"},
		env: []string{envToolsURL + "=" + u, envToolsLog + "=" + toolLog}, log: filepath.Join(dir, "tools.log")}
	tools.start()
	t.Cleanup(tools.stop)
	workers := make([]*worker, 3)
	byID := map[string]*worker{}
	for i := range workers {
		id := fmt.Sprintf("fe-w%d", i+1)
		w := &worker{health: freePort(t)}
		w.proc = &proc{t: t, name: "seqworker-" + id, log: filepath.Join(dir, "seqworker-"+id+".log"),
			argv: []string{workerBin, "--nats", u, "--replicas", "3", "--worker-id", id, "--ack-wait", "6s",
				"--health-addr", fmt.Sprintf("127.0.0.1:%d", w.health), "--shutdown-budget", "5s"}}
		w.start()
		t.Cleanup(w.stop)
		workers[i], byID[id] = w, w
	}
	for _, w := range workers {
		deadline := time.Now().Add(90 * time.Second)
		for !w.ready() {
			if time.Now().After(deadline) || !w.running() {
				t.Fatalf("%s not ready within 90s; its log:\n%s", w.name, w.tail(6000))
			}
			time.Sleep(200 * time.Millisecond) // a readiness probe has no event to wait on
		}
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := natsconn.Dial(&natsconn.Config{URL: u}, "chaos-foreach-driver", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	storeSequence(ctx, t, js, forEachSeq)
	tc, err := tool.NewClient(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	waitForTools(ctx, t, tc, tools)
	t.Logf("ready after %s; %d runs of two %d-item fan-outs, seed %d", time.Since(t0).Round(time.Second), forEachRuns, forEachItems, s.seed)

	// Follow every run's state in RUNS as it is written.
	kv, err := js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("%x", time.Now().UnixNano()%0xffffff)
	ids := make([]string, forEachRuns)
	for i := range ids {
		ids[i] = fmt.Sprintf("fe-%s-%d", tag, i)
	}
	runs := newRunWatch(ctx, t, kv, ids)

	c, err := client.New(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]int, forEachItems)
	for i := range items {
		items[i] = i
	}
	go func() {
		for _, id := range ids {
			args, _ := json.Marshal(map[string]any{"run": id, "items": items})
			for {
				sctx, scancel := context.WithTimeout(ctx, 15*time.Second)
				_, err := c.Start(sctx, events.SeqRunRequest{RunID: id, Sequence: "chaos-foreach", Args: args})
				scancel()
				if err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(500 * time.Millisecond) // the same run id again: seq.run is idempotent
			}
			time.Sleep(time.Second) // the runs' pace: their fan-outs overlap, not in step
		}
	}()

	// The faults: kill the worker that holds the most runs in a fan-out.
	var actions []string
	say := func(format string, a ...any) {
		line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, a...)
		actions = append(actions, line)
		t.Log(line)
	}
	kills := 0
	killedAt := map[string]time.Time{}
	for kills < forEachKills && !runs.allFinished() && ctx.Err() == nil {
		held := runs.inFanOut()
		var target string
		for id, n := range held {
			// A worker killed lately still shows as the holder of its runs
			// until they are taken over: not a target again so soon.
			if byID[id] == nil || time.Since(killedAt[id]) < 10*time.Second {
				continue
			}
			if target == "" || n > held[target] || n == held[target] && id < target {
				target = id
			}
		}
		if target == "" {
			runs.changed(ctx, 2*time.Second)
			continue
		}
		w := byID[target]
		w.kill()
		kills++
		killedAt[target] = time.Now()
		down := time.Duration((0.5 + rng.Float64()) * float64(time.Second))
		say("SIGKILL %s holding %d run(s) in a fan-out; restart in %s", w.name, held[target], down.Round(time.Millisecond))
		time.Sleep(down) // the worker stays dead for a while: the fault's timing
		w.start()
		time.Sleep(time.Duration((1.5 + rng.Float64()) * float64(time.Second))) // between faults
	}
	say("faults over after %d kills", kills)
	finished := runs.wait(ctx, 3*time.Minute)

	// The figures: the run states, the results in item order, the call log.
	var lost, failed, takenOver, misordered []string
	for _, id := range ids {
		st := finished[id]
		switch {
		case st == nil || !events.Finished(st.Status):
			lost = append(lost, id)
			continue
		case st.Status != events.StatusSucceeded:
			failed = append(failed, fmt.Sprintf("%s %s (attempt %d): %s", id, st.Status, st.Attempt, st.Error))
			continue
		}
		if st.Attempt > 1 {
			takenOver = append(takenOver, fmt.Sprintf("%s: attempt %d", id, st.Attempt))
		}
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		slots, err := c.Slots(sctx, st)
		scancel()
		if err != nil {
			t.Errorf("run %s: read its slots: %v", id, err)
			continue
		}
		for _, name := range []string{"one", "two"} {
			if why := inItemOrder(slots[name], id); why != "" {
				misordered = append(misordered, fmt.Sprintf("%s slot %s: %s", id, name, why))
			}
		}
	}
	calls, rerun, runsOf := callsAfterFinish(t, toolLog, ids, finished)
	t.Logf("\n==== skillbus chaos suite: for_each (seed %d)\nfaults:  %d worker SIGKILLs during fan-outs\nruns:    %d started, %d succeeded, %d failed, %d lost, %d taken over after a kill %v\nitems:   %d tool calls; times each group ran, per run: %s\n         %d items of a finished group called again; %d runs with a result out of item order\nactions: %s",
		s.seed, kills, len(ids), len(ids)-len(lost)-len(failed), len(failed), len(lost), len(takenOver), takenOver,
		calls, strings.Join(runsOf, "; "), len(rerun), len(misordered), strings.Join(actions, " | "))
	for _, l := range [][]string{failed, misordered, rerun} {
		for i, e := range l {
			if i == 10 {
				t.Logf("  … %d more", len(l)-10)
				break
			}
			t.Logf("  %s", e)
		}
	}
	if len(lost) > 0 || len(failed) > 0 || len(rerun) > 0 || len(misordered) > 0 {
		for _, w := range workers {
			t.Logf("---- tail of %s ----\n%s", w.name, w.tail(3000))
		}
		t.Errorf("targets missed: %d lost %v, %d failed, %d items of a finished group called again, %d slots out of item order; want 0 of each (logs in %s)",
			len(lost), lost, len(failed), len(rerun), len(misordered), dir)
	}
	if kills == 0 || len(takenOver) == 0 {
		t.Errorf("%d kills, %d runs taken over: the fault did not happen as forced (no worker died holding a fan-out)", kills, len(takenOver))
	}
}

// runWatch follows the RUNS entries of some runs through a KV watch.
type runWatch struct {
	mu     sync.Mutex // mu guards states and next
	states map[string]*events.RunState
	next   chan struct{} // closed at the next change
}

// newRunWatch watches kv for the runs ids until ctx ends.
func newRunWatch(ctx context.Context, t *testing.T, kv jetstream.KeyValue, ids []string) *runWatch {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[events.KeyFor(id)] = true
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rw := &runWatch{states: map[string]*events.RunState{}, next: make(chan struct{})}
	go func() {
		defer func() { _ = w.Stop() }()
		for e := range w.Updates() {
			if e == nil || !want[e.Key()] || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var st events.RunState
			if events.Decode(e.Value(), &st) != nil {
				continue
			}
			st.Normalize()
			rw.mu.Lock()
			rw.states[st.RunID] = &st
			close(rw.next)
			rw.next = make(chan struct{})
			rw.mu.Unlock()
		}
	}()
	return rw
}

// changed waits for the next state written, up to limit.
func (rw *runWatch) changed(ctx context.Context, limit time.Duration) {
	rw.mu.Lock()
	next := rw.next
	rw.mu.Unlock()
	select {
	case <-next:
	case <-ctx.Done():
	case <-time.After(limit):
	}
}

// allFinished reports whether every run watched has its final state (none
// is known before it starts: false then).
func (rw *runWatch) allFinished() bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.states) < forEachRuns {
		return false
	}
	for _, st := range rw.states {
		if !events.Finished(st.Status) {
			return false
		}
	}
	return true
}

// inFanOut counts, per worker, the runs it holds in one of the two
// fan-out groups (running, fewer than 2 groups finished).
func (rw *runWatch) inFanOut() map[string]int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	held := map[string]int{}
	for _, st := range rw.states {
		if st.Status == events.StatusRunning && st.FinishedGroups < 2 && st.Worker != "" {
			held[st.Worker]++
		}
	}
	return held
}

// wait waits until every run has its final state, up to limit, and
// returns the states.
func (rw *runWatch) wait(ctx context.Context, limit time.Duration) map[string]*events.RunState {
	end := time.Now().Add(limit)
	for !rw.allFinished() && time.Now().Before(end) && ctx.Err() == nil {
		rw.changed(ctx, time.Until(end))
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	out := map[string]*events.RunState{}
	for id, st := range rw.states {
		cp := *st
		out[id] = &cp
	}
	return out
}

// inItemOrder says what is wrong with a fan-out's result list of run id
// ("" when nothing): it must hold forEachItems results, result i naming
// run id and item i.
func inItemOrder(raw json.RawMessage, id string) string {
	var list []*struct {
		Run  string `json:"run"`
		Call int    `json:"call"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Sprintf("not a list of results: %v (%.80s)", err, raw)
	}
	if len(list) != forEachItems {
		return fmt.Sprintf("%d results; want %d", len(list), forEachItems)
	}
	for i, r := range list {
		if r == nil || r.Run != id || r.Call != i {
			return fmt.Sprintf("result %d = %+v; want item %d of %s", i, r, i, id)
		}
	}
	return ""
}

// callsAfterFinish reads the tool's call log: the calls of the runs ids,
// every call of an item of a group made after the group finished (after
// the next group's first call, or after the run finished for the last
// group), and per run how many times each group's items were called
// (calls / items: 1 when the group ran once, 2 when an interrupted group
// ran again whole).
func callsAfterFinish(t *testing.T, path string, ids []string, states map[string]*events.RunState) (calls int, late, perRun []string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read the call log: %v", err)
		return 0, nil, nil
	}
	byRun := map[string][]callLog{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c callLog
		if json.Unmarshal([]byte(line), &c) != nil || c.Group == 0 {
			continue
		}
		byRun[c.Run] = append(byRun[c.Run], c)
	}
	for _, id := range ids {
		cs := byRun[id]
		calls += len(cs)
		sort.Slice(cs, func(i, j int) bool { return cs[i].Seq < cs[j].Seq })
		var nextStarted [forEachGroups + 1]int64 // per group: the seq of the next group's first call
		for g := range nextStarted {
			nextStarted[g] = 1<<62 - 1
		}
		perGroup := make([]int, forEachGroups+1)
		for _, c := range cs {
			perGroup[c.Group]++
			if c.Group > 1 && c.Seq < nextStarted[c.Group-1] {
				nextStarted[c.Group-1] = c.Seq
			}
		}
		var finishedAt int64 = 1<<62 - 1
		if st := states[id]; st != nil && events.Finished(st.Status) && !st.FinishedAt.IsZero() {
			finishedAt = st.FinishedAt.UnixNano()
		}
		for _, c := range cs {
			if c.Seq > nextStarted[c.Group] || (c.Group == forEachGroups && c.At > finishedAt) {
				late = append(late, fmt.Sprintf("%s: group %d item %d called again after the group finished", id, c.Group, c.Call))
			}
		}
		times := make([]string, 0, forEachGroups)
		for g := 1; g <= forEachGroups; g++ {
			n := float64(perGroup[g])
			if g < forEachGroups {
				n /= forEachItems
			}
			times = append(times, fmt.Sprintf("%.3g", n))
		}
		perRun = append(perRun, strings.TrimPrefix(id, "fe-")+" "+strings.Join(times, "/"))
	}
	return calls, late, perRun
}

// TestChaosForEachFindsWhatItCounts runs TestChaosForEach's checks on
// made-up input, without the suite: an item of a finished group called
// again and results out of item order are found; an interrupted group run
// again whole before the next group started is not a re-run.
func TestChaosForEachFindsWhatItCounts(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	seq := int64(0)
	call := func(run string, group, item int, at int64) {
		seq++
		b, _ := json.Marshal(callLog{Seq: seq, Run: run, Group: group, Call: item, At: at})
		lines = append(lines, string(b))
	}
	for _, run := range []string{"fe-ok", "fe-rerun"} {
		for range 2 { // group 1 interrupted and run again whole: at-least-once
			for i := range forEachItems {
				call(run, 1, i, 1)
			}
		}
		for i := range forEachItems {
			call(run, 2, i, 2)
		}
		call(run, 3, 0, 3)
	}
	call("fe-rerun", 1, 42, 4) // item 42 of group 1, after group 2 started
	call("fe-rerun", 3, 0, 9)  // the last group after the run finished (at 5)
	path := filepath.Join(dir, "calls.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	finished := time.Unix(0, 5)
	states := map[string]*events.RunState{
		"fe-ok":    {Status: events.StatusSucceeded, FinishedAt: finished},
		"fe-rerun": {Status: events.StatusSucceeded, FinishedAt: finished},
	}
	calls, late, perRun := callsAfterFinish(t, path, []string{"fe-ok", "fe-rerun"}, states)
	if want := 2 * (3*forEachItems + 1); calls != want+2 {
		t.Errorf("calls = %d; want %d", calls, want+2)
	}
	if len(late) != 2 || !strings.Contains(late[0], "fe-rerun: group 1 item 42") || !strings.Contains(late[1], "fe-rerun: group 3 item 0") {
		t.Errorf("late = %q; want group 1 item 42 and group 3 item 0 of fe-rerun", late)
	}
	if len(perRun) != 2 || perRun[0] != "ok 2/1/1" {
		t.Errorf("per run = %q; want \"ok 2/1/1\" first", perRun)
	}

	list := make([]map[string]any, forEachItems)
	for i := range list {
		list[i] = map[string]any{"run": "fe-ok", "group": 1, "call": i}
	}
	ordered, _ := json.Marshal(list)
	if why := inItemOrder(ordered, "fe-ok"); why != "" {
		t.Errorf("results in item order: %s", why)
	}
	list[3], list[4] = list[4], list[3]
	swapped, _ := json.Marshal(list)
	if why := inItemOrder(swapped, "fe-ok"); !strings.Contains(why, "result 3") {
		t.Errorf("results 3 and 4 swapped: %q; want result 3 named", why)
	}
	if why := inItemOrder(ordered[:len(ordered)/2], "fe-ok"); why == "" {
		t.Errorf("a cut list passed")
	}
}
