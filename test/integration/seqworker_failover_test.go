package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// Environment of TestSeqworkerFailoverChild, the worker process that the
// failover tests start (the test binary run again).
const (
	swFailoverURL      = "SKILLBUS_FAILOVER_CHILD_URL"
	swFailoverAckWait  = "SKILLBUS_FAILOVER_CHILD_ACK_WAIT"
	swFailoverShutdown = "SKILLBUS_FAILOVER_CHILD_SHUTDOWN"
	swFailoverConc     = "SKILLBUS_FAILOVER_CHILD_CONCURRENCY"
)

// TestSeqworkerFailoverChild is not a test on its own: it is a worker
// process (worker id "child") that runs until SIGKILL, or until SIGTERM
// and its graceful stop.
func TestSeqworkerFailoverChild(t *testing.T) {
	url := os.Getenv(swFailoverURL)
	if url == "" {
		t.Skip("helper process for the seqworker failover tests")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	ackWait, _ := time.ParseDuration(os.Getenv(swFailoverAckWait))
	shutdown, _ := time.ParseDuration(os.Getenv(swFailoverShutdown))
	opts := swOptions()
	opts.AckWait = ackWait
	conc, _ := strconv.Atoi(os.Getenv(swFailoverConc))
	w, err := seqworker.New(nc, seqworker.Config{Provision: opts, Concurrency: max(conc, 1), WorkerID: "child", ShutdownTimeout: shutdown, FetchWait: 500 * time.Millisecond, Logger: swLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Run(ctx) // an interrupted run is an error: expected here
	_ = nc.Drain()
}

// swChild starts a failover child worker and returns it; it is killed at
// cleanup if still running.
func swChild(t *testing.T, env *swEnv, shutdown time.Duration, concurrency ...int) (*exec.Cmd, *cliBuf) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeqworkerFailoverChild$", "-test.count=1")
	conc := 2
	if len(concurrency) > 0 {
		conc = concurrency[0]
	}
	cmd.Env = append(os.Environ(), swFailoverURL+"="+env.srv.ClientURL(), swFailoverAckWait+"="+env.opts.AckWait.String(), swFailoverShutdown+"="+shutdown.String(),
		swFailoverConc+"="+strconv.Itoa(conc))
	var out cliBuf
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, &out
}

// swEvents collects the run events of one run stored in the EVENTS stream
// when it is called: it counts them first and reads that many, so it waits
// out no quiet interval to know it has them all.
func swEvents(t *testing.T, env *swEnv, runID string) []events.RunEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filter := "events.run." + runID + ".>"
	s, err := env.js.Stream(ctx, events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	cons, err := env.js.OrderedConsumer(ctx, events.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.RunEvent
	for range n {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatalf("read the events of %s: %v (%d of %d read)", runID, err, len(out), n)
		}
		var ev events.RunEvent
		if err := events.Decode(m.Data(), &ev); err == nil {
			out = append(out, ev)
		}
	}
	return out
}

func swHasEvent(evs []events.RunEvent, pred func(events.RunEvent) bool) bool {
	for _, ev := range evs {
		if pred(ev) {
			return true
		}
	}
	return false
}

// swFailoverSeq stores a three-group sequence whose second group's first
// call blocks until release is closed (or its caller gives up); later
// calls return at once.
func swFailoverSeq(t *testing.T, env *swEnv, name string, calls *swCounter, inTwo chan<- struct{}, release <-chan struct{}) {
	t.Helper()
	swServe(t, env,
		swEcho(name+".one", calls),
		tool.Tool{Name: name + ".two", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if calls.add(name+".two") == 1 {
				inTwo <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, tool.Errorf("500", "caller gone")
			}
			return map[string]bool{"two": true}, nil
		}},
		swEcho(name+".three", calls),
	)
	swStore(t, env, `
name: `+name+`
groups:
  - name: `+name+`-one
    out: {one: object}
    tools: [{tool: `+name+`.one, args: {step: 1}, as: one}]
  - name: `+name+`-two
    in: {one: object}
    out: {two: object}
    timeout: 2m
    tools: [{tool: `+name+`.two, args: {prev: $args.one}, as: two}]
  - name: `+name+`-three
    in: {two: object}
    tools: [{tool: `+name+`.three, args: {prev: $args.two}}]
`)
}

// TestSeqworkerFailoverSIGKILL: with the default ack wait (10 s), a worker
// process holding a run in a tool call that lasts longer than the ack wait
// keeps it (heartbeats); once the process is SIGKILLed, another worker
// resumes the run after its last finished group within 15 s, and a resumed
// event names the new worker, the group and the attempt.
func TestSeqworkerFailoverSIGKILL(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.AckWait = events.DefaultAckWait
	env := swStart(t, natsserver.Options{}, opts)
	var calls swCounter
	inTwo := make(chan struct{}, 4)
	release := make(chan struct{})
	defer close(release)
	swFailoverSeq(t, env, "fo-kill", &calls, inTwo, release)
	cmd, out := swChild(t, env, 5*time.Second)

	swRequest(t, env, "r-fo-kill", "fo-kill", nil)
	select {
	case <-inTwo:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child worker never reached group 2; its output:\n%s", out.String())
	}
	swWorker(t, env, seqworker.Config{WorkerID: "survivor"})
	// The call outlives the ack wait: the child's heartbeats keep the run.
	hold := events.DefaultAckWait + 3*time.Second
	time.Sleep(hold)
	st, _ := swState(t, env, "r-fo-kill")
	if st.Status != events.StatusRunning || st.Worker != "child" || st.Attempt != 1 || calls.get("fo-kill.two") != 1 {
		t.Fatalf("after %s in a tool call: %s held by %q on attempt %d, %d calls of group 2; want running, held by child on attempt 1, 1 call",
			hold, st.Status, st.Worker, st.Attempt, calls.get("fo-kill.two"))
	}
	if age := time.Since(st.Heartbeat); age > events.DefaultAckWait {
		t.Errorf("last heartbeat in the state %s ago; want within the ack wait (%s): it is renewed every two heartbeats", age, events.DefaultAckWait)
	}

	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	st = swUntil(t, env, "r-fo-kill", 60*time.Second, "taken over by survivor", func(st events.RunState) bool {
		return st.Attempt >= 2 && st.Worker == "survivor"
	})
	detected := time.Since(killed)
	t.Logf("failover after SIGKILL: run resumed by another worker %.1fs after the kill (ack wait %s)", detected.Seconds(), events.DefaultAckWait)
	if detected > 15*time.Second {
		t.Errorf("resumed %s after the SIGKILL; want at most 15s", detected)
	}
	st = swWait(t, env, "r-fo-kill", 30*time.Second)
	if st.Status != events.StatusSucceeded || st.FinishedGroups != 3 {
		t.Fatalf("after the failover: %s with %d groups (%s); want succeeded with 3", st.Status, st.FinishedGroups, st.Error)
	}
	for name, want := range map[string]int{"fo-kill.one": 1, "fo-kill.two": 2, "fo-kill.three": 1} {
		if got := calls.get(name); got != want {
			t.Errorf("%s called %d times; want %d", name, got, want)
		}
	}
	evs := swEvents(t, env, "r-fo-kill")
	if !swHasEvent(evs, func(ev events.RunEvent) bool {
		return ev.Kind == events.RunResumed && ev.Worker == "survivor" && ev.Group == 1 && ev.Attempt == 2
	}) {
		t.Errorf("no resumed event from survivor after group 1 on attempt 2; events %+v", evs)
	}
}

// TestSeqworkerFailoverSIGTERM: a worker process that gets SIGTERM while a
// group runs past its shutdown budget records the run as interrupted
// (after group 1) and hands it back at once: another worker resumes it
// well before the ack wait would have passed.
func TestSeqworkerFailoverSIGTERM(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.AckWait = events.DefaultAckWait
	env := swStart(t, natsserver.Options{}, opts)
	var calls swCounter
	inTwo := make(chan struct{}, 4)
	release := make(chan struct{})
	defer close(release)
	swFailoverSeq(t, env, "fo-term", &calls, inTwo, release)
	const budget = time.Second
	cmd, out := swChild(t, env, budget)

	swRequest(t, env, "r-fo-term", "fo-term", nil)
	select {
	case <-inTwo:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child worker never reached group 2; its output:\n%s", out.String())
	}
	// A follower (what `skillbus run` does: client.Wait) keeps waiting
	// while no seqworker runs, says what it waits for, and sees the
	// interruption and the resume.
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	type followed struct {
		st      *events.RunState
		err     error
		waiting []string
		kinds   []string
	}
	follow := make(chan followed, 1)
	saidWaiting := make(chan struct{}) // closed at the follower's first waiting text
	go func() {
		var f followed
		var once sync.Once
		f.st, f.err = c.Wait(context.Background(), "r-fo-term", client.WaitOptions{
			Poll:       200 * time.Millisecond,
			WorkerWait: time.Minute,
			OnWaiting: func(text string) {
				if text != "" {
					f.waiting = append(f.waiting, text)
					once.Do(func() { close(saidWaiting) })
				}
			},
			OnEvent: func(ev *events.RunEvent) { f.kinds = append(f.kinds, ev.Kind) },
		})
		follow <- f
	}()
	time.Sleep(300 * time.Millisecond)
	termed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the child did not exit within 30s of SIGTERM; its output:\n%s", out.String())
	}
	stopped := time.Since(termed)
	st, _ := swState(t, env, "r-fo-term")
	if st.Status != events.StatusInterrupted || st.FinishedGroups != 1 || st.Worker != "child" {
		t.Fatalf("after SIGTERM: %s with %d groups held by %q (%s); want interrupted after group 1 by child", st.Status, st.FinishedGroups, st.Worker, st.Error)
	}
	select { // the follower meets a bus without seqworker
	case <-saidWaiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the follower said nothing about waiting within 30 s of the worker's exit")
	}
	// The same stack restarted (here: a new worker) resumes at once.
	restarted := time.Now()
	swWorker(t, env, seqworker.Config{WorkerID: "successor"})
	st = swWait(t, env, "r-fo-term", 30*time.Second)
	resumed := time.Since(restarted)
	t.Logf("hand-back after SIGTERM: child exited %.1fs after the signal (shutdown budget %s); a new worker finished the run %.2fs after it started (ack wait %s)",
		stopped.Seconds(), budget, resumed.Seconds(), events.DefaultAckWait)
	if st.Status != events.StatusSucceeded || st.Attempt != 2 || st.Worker != "successor" {
		t.Fatalf("resumed: %s attempt %d by %q (%s); want succeeded on attempt 2 by successor", st.Status, st.Attempt, st.Worker, st.Error)
	}
	if resumed > events.DefaultAckWait/2 {
		t.Errorf("the new worker finished the run %s after it started; want it handed back at once (well under the %s ack wait)", resumed, events.DefaultAckWait)
	}
	f := <-follow
	if f.err != nil || f.st.Status != events.StatusSucceeded {
		t.Errorf("follower: %v, %+v; want it to wait across the restart and see the run succeed", f.err, f.st)
	}
	joined := strings.Join(f.waiting, " | ")
	if !strings.Contains(joined, "no seqworker answers") && !strings.Contains(joined, "interrupted after group 1") {
		t.Errorf("follower said %q while waiting; want it to say it waits for a seqworker (or for the interrupted run to be resumed)", joined)
	}
	if k := strings.Join(f.kinds, ","); !strings.Contains(k, events.RunInterrupted) || !strings.Contains(k, events.RunResumed) {
		t.Errorf("follower saw events %s; want interrupted and resumed among them", k)
	}
	if n := calls.get("fo-term.one"); n != 1 {
		t.Errorf("group 1 ran %d times; want 1", n)
	}
	evs := swEvents(t, env, "r-fo-term")
	if !swHasEvent(evs, func(ev events.RunEvent) bool {
		return ev.Kind == events.RunInterrupted && ev.Worker == "child" && ev.Group == 1
	}) || !swHasEvent(evs, func(ev events.RunEvent) bool {
		return ev.Kind == events.RunResumed && ev.Worker == "successor" && ev.Group == 1 && ev.Attempt == 2
	}) {
		t.Errorf("want an interrupted event from child and a resumed event from successor after group 1; events %+v", evs)
	}
}
