//go:build linux

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/tool"
)

// rig is the suite's processes as TestChaosWaits and TestChaosSchedules
// start them: the 3-node cluster (127.0.0.1), the tool provider, three
// seqworkers (replicas 3, ack wait 6 s) and a driver connection.
type rig struct {
	t       *testing.T
	dir     string
	nodes   []*node
	workers []*worker
	toolLog string
	tools   *proc
	nc      *nats.Conn
	js      jetstream.JetStream
	c       *client.Client
	mu      sync.Mutex // mu guards actions and kills (faults run in goroutines)
	actions []string
	// kills are the times of the worker SIGKILLs (unix ns), in order: a
	// group in flight at one may run again (at-least-once).
	kills []int64
}

// startRig starts the rig in SKILLBUS_CHAOS_DIR/name (or a temporary
// directory), worker ids prefix-w1 … prefix-w3, and waits until every
// worker is ready and chaos.step answers.
func startRig(ctx context.Context, t *testing.T, name, prefix string) *rig {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("SKILLBUS_CHAOS_DIR"); d != "" {
		dir = filepath.Join(d, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	natsBin, workerBin := build(t, root)
	r := &rig{t: t, dir: dir, nodes: startCluster(t, natsBin, dir, nil), toolLog: filepath.Join(dir, "calls.jsonl")}
	u := urls(r.nodes)
	r.tools = &proc{t: t, name: "tools", argv: []string{os.Args[0], "-test.run=^TestChaosToolsProcess$", "-test.count=1"},
		env: []string{envToolsURL + "=" + u, envToolsLog + "=" + r.toolLog}, log: filepath.Join(dir, "tools.log")}
	r.tools.start()
	t.Cleanup(r.tools.stop)
	for i := range 3 {
		id := fmt.Sprintf("%s-w%d", prefix, i+1)
		w := &worker{health: freePort(t)}
		w.proc = &proc{t: t, name: "seqworker-" + id, log: filepath.Join(dir, "seqworker-"+id+".log"),
			argv: []string{workerBin, "--nats", u, "--replicas", "3", "--worker-id", id, "--ack-wait", "6s",
				"--health-addr", fmt.Sprintf("127.0.0.1:%d", w.health), "--shutdown-budget", "5s"}}
		w.start()
		t.Cleanup(w.stop)
		r.workers = append(r.workers, w)
	}
	for _, w := range r.workers {
		deadline := time.Now().Add(90 * time.Second)
		for !w.ready() {
			if time.Now().After(deadline) || !w.running() {
				t.Fatalf("%s not ready within 90s; its log:\n%s", w.name, w.tail(6000))
			}
			time.Sleep(200 * time.Millisecond) // a readiness probe has no event to wait on
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := natsconn.Dial(&natsconn.Config{URL: u}, "chaos-"+name+"-driver", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	r.nc = conn.Conn
	if r.js, err = jetstream.New(conn.Conn); err != nil {
		t.Fatal(err)
	}
	if r.c, err = client.New(conn.Conn); err != nil {
		t.Fatal(err)
	}
	tc, err := tool.NewClient(conn.Conn)
	if err != nil {
		t.Fatal(err)
	}
	waitForTools(ctx, t, tc, r.tools)
	return r
}

// waitForTools calls chaos.step until the suite's tool provider answers
// (its listing reached the caller's node); it fails t when ctx ends or the
// provider's process exits first.
func waitForTools(ctx context.Context, t *testing.T, tc *tool.Client, tools *proc) {
	t.Helper()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := tc.Call(cctx, "chaos.step", json.RawMessage(`{"run":"warm-up","group":0,"call":0,"ms":1}`))
		ccancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil || !tools.running() {
			t.Fatalf("the tool provider does not answer: %v; its log:\n%s", err, tools.tail(4000))
		}
		time.Sleep(200 * time.Millisecond) // between real calls that failed
	}
}

// say logs one of the suite's actions with its time.
func (r *rig) say(format string, a ...any) {
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, a...)
	r.mu.Lock()
	r.actions = append(r.actions, line)
	r.mu.Unlock()
	r.t.Log(line)
}

// killWorker SIGKILLs worker i and starts it again after down.
func (r *rig) killWorker(i int, down time.Duration, why string) {
	w := r.workers[i]
	r.mu.Lock()
	r.kills = append(r.kills, time.Now().UnixNano())
	r.mu.Unlock()
	w.kill()
	r.say("SIGKILL %s%s; restart in %s", w.name, why, down)
	time.Sleep(down) // the worker stays dead for a while: the fault's timing
	w.start()
}

// workerKills returns the times of the worker SIGKILLs so far (unix ns).
func (r *rig) workerKills() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.kills)
}

// killLeader SIGKILLs the node that leads the stream (a random one when
// it cannot be told), starts it again on its store after down, and waits
// until the cluster is healthy.
func (r *rig) killLeader(stream string, down time.Duration) {
	n := streamLeader(r.js, r.nodes, stream)
	what := " (the " + stream + " leader)"
	if n == nil {
		n, what = r.nodes[0], " (the "+stream+" leader not told)"
	}
	n.kill()
	r.say("SIGKILL %s%s; restart on its store in %s", n.name, what, down)
	time.Sleep(down) // the node stays dead for a while: the fault's timing
	n.start()
	healthy(r.t, r.say, r.nodes)
}

// streamLeader returns the node that leads the stream, or nil when it
// cannot be told.
func streamLeader(js jetstream.JetStream, nodes []*node, stream string) *node {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
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

// readCalls reads a call log (the lines of every tool, in file order).
func readCalls(t *testing.T, path string) []callLog {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read the call log: %v", err)
		return nil
	}
	var out []callLog
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c callLog
		if json.Unmarshal([]byte(line), &c) == nil && c.Run != "" {
			out = append(out, c)
		}
	}
	return out
}

// firstN returns at most n of l, and a line saying how many more.
func firstN(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(l[:n:n], fmt.Sprintf("… %d more", len(l)-n))
}
