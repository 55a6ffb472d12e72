package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// swChildEnv, when set to a NATS URL, makes TestSeqworkerChildProcess run
// a worker against it until the process is killed.
const swChildEnv = "SKILLBUS_SEQWORKER_CHILD_URL"

// TestSeqworkerChildProcess is not a test on its own: it is the worker
// process that TestSeqworkerKilledMidRun starts (the test binary run
// again) and kills with SIGKILL.
func TestSeqworkerChildProcess(t *testing.T) {
	url := os.Getenv(swChildEnv)
	if url == "" {
		t.Skip("helper process for TestSeqworkerKilledMidRun")
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	w, err := seqworker.New(nc, seqworker.Config{Provision: swOptions(), Concurrency: 2, Logger: swLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); err != nil { // until killed
		t.Fatal(err)
	}
}

// TestSeqworkerKilledMidRun kills a worker process with SIGKILL while the
// second group of a run is running; a second worker finishes the run from
// the checkpoint: group 1's tool is not called again, group 2's is (the
// interrupted group runs again: at-least-once), group 3's once.
func TestSeqworkerKilledMidRun(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	inTwo := make(chan struct{}, 4)
	killed := make(chan struct{})
	swServe(t, env,
		swEcho("kill.one", &calls),
		tool.Tool{Name: "kill.two", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if calls.add("kill.two") == 1 {
				inTwo <- struct{}{}
				select { // the first call hangs until its worker is dead
				case <-killed:
				case <-ctx.Done():
				}
				return nil, tool.Errorf("500", "caller gone")
			}
			return map[string]bool{"two": true}, nil
		}},
		swEcho("kill.three", &calls),
	)
	swStore(t, env, `
name: sw-kill
groups:
  - name: sw-kill-one
    out: {one: object}
    tools: [{tool: kill.one, args: {step: 1}, as: one}]
  - name: sw-kill-two
    in: {one: object}
    out: {two: object}
    timeout: 30s
    tools: [{tool: kill.two, args: {prev: $args.one}, as: two}]
  - name: sw-kill-three
    in: {two: object}
    tools: [{tool: kill.three, args: {prev: $args.two}}]
`)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeqworkerChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), swChildEnv+"="+env.srv.ClientURL())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	swRequest(t, env, "r-kill", "sw-kill", nil)
	select {
	case <-inTwo:
	case <-time.After(30 * time.Second):
		t.Fatalf("the child worker never reached group 2; its output:\n%s", out.String())
	}
	st, _ := swState(t, env, "r-kill")
	if st.Status != events.StatusRunning || st.FinishedGroups != 1 {
		t.Fatalf("before the kill: state %s with %d finished groups; want running with the checkpoint of group 1", st.Status, st.FinishedGroups)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(killed)

	swWorker(t, env, seqworker.Config{})
	st = swWait(t, env, "r-kill", 30*time.Second)
	if st.Status != events.StatusSucceeded || st.Attempt != 2 || st.FinishedGroups != 3 {
		t.Fatalf("after the kill: %s attempt %d groups %d (%s); want succeeded on delivery 2 with 3 groups", st.Status, st.Attempt, st.FinishedGroups, st.Error)
	}
	for tool, want := range map[string]int{"kill.one": 1, "kill.two": 2, "kill.three": 1} {
		if got := calls.get(tool); got != want {
			t.Errorf("%s called %d times; want %d", tool, got, want)
		}
	}
}

// TestSeqworkerLostDelivery: while a worker runs group 1, the run's state
// is overwritten by a later owner (attempt 99, as a worker that took the
// run over after this one paused past AckWait would write). The first
// worker's checkpoint is compare-and-set, so it fails: the worker stops
// without overwriting the state and without running group 2.
func TestSeqworkerLostDelivery(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	swServe(t, env,
		tool.Tool{Name: "lost.one", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("lost.one")
			entered <- struct{}{}
			<-release
			return args, nil
		}},
		swEcho("lost.two", &calls),
	)
	swStore(t, env, `
name: sw-lost
groups:
  - name: sw-lost-one
    tools: [{tool: lost.one}]
  - name: sw-lost-two
    tools: [{tool: lost.two}]
`)
	swWorker(t, env, seqworker.Config{})
	swRequest(t, env, "r-lost", "sw-lost", nil)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("group 1 never started")
	}
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	owner := &events.RunState{RunID: "r-lost", Sequence: "sw-lost", Status: events.StatusRunning, Attempt: 99}
	b, _ := events.Encode(owner)
	rev, err := kv.Put(context.Background(), "r-lost", b)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	time.Sleep(700 * time.Millisecond) // a window for the write the stale worker must not make: its absence is the behaviour
	e, err := kv.Get(context.Background(), "r-lost")
	if err != nil {
		t.Fatal(err)
	}
	if e.Revision() != rev {
		t.Errorf("RUNS r-lost revision %d after the owner's write %d: the stale worker overwrote it with %s", e.Revision(), rev, e.Value())
	}
	if n := calls.get("lost.two"); n != 0 {
		t.Errorf("group 2 ran %d times on the worker that lost the run; want 0", n)
	}
}
