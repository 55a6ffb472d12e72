package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// TestSeqworkerCancel, with one worker process of concurrency 1: a run
// blocks it in group 2; a second run, queued behind it, is cancelled and
// never starts; the running run is cancelled on the worker that holds it
// (its call ends canceled, group 3 never starts, the state ends cancelled
// with who asked and why); cancelling again is harmless, cancelling a
// finished run is a 409.
func TestSeqworkerCancel(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	inTwo := make(chan struct{}, 4)
	release := make(chan struct{})
	defer close(release)
	swFailoverSeq(t, env, "cx", &calls, inTwo, release)
	_, out := swChild(t, env, 5*time.Second, 1)
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var running string
	for deadline := time.Now().Add(60 * time.Second); ; {
		// The child may still be starting: retry until seq.run answers.
		running, err = c.Start(ctx, events.SeqRunRequest{RunID: "r-cx-running", Sequence: "cx"})
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("start: %v; child output:\n%s", err, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case <-inTwo:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child never reached group 2; its output:\n%s", out.String())
	}
	queued, err := c.Start(ctx, events.SeqRunRequest{RunID: "r-cx-queued", Sequence: "cx"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Cancel(ctx, queued, "tester", "queued, not wanted")
	if err != nil {
		t.Fatalf("cancel queued: %v", err)
	}
	if st.Status != events.StatusCancelled || st.Cancel == nil || st.Cancel.By != "tester" {
		t.Fatalf("cancel of a queued run: %s, cancel %+v; want cancelled at once by tester", st.Status, st.Cancel)
	}

	t0 := time.Now()
	st, err = c.Cancel(ctx, running, "tester", "runaway")
	if err != nil {
		t.Fatalf("cancel running: %v", err)
	}
	if st.Status != events.StatusRunning || st.Cancel == nil || st.Cancel.Reason != "runaway" {
		t.Fatalf("cancel of a running run answered %s, cancel %+v; want running with the cancel recorded", st.Status, st.Cancel)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err = c.Wait(wctx, running, client.WaitOptions{Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("wait for the cancelled run: %v", err)
	}
	t.Logf("running run cancelled on its holder %.2fs after the request", time.Since(t0).Seconds())
	if st.Status != events.StatusCancelled || st.Worker != "child" || !strings.Contains(st.Error, "by tester: runaway") || st.FinishedGroups != 1 {
		t.Fatalf("cancelled run: %s by %q after %d groups (%s); want cancelled on child after group 1, saying by tester: runaway", st.Status, st.Worker, st.FinishedGroups, st.Error)
	}
	res := swResult(t, *st)
	if c := res.Groups[1].Calls[0].Status; c != "canceled" {
		t.Errorf("group 2's call ended %s; want canceled", c)
	}
	if g := res.Groups[2].Status; g != "pending" {
		t.Errorf("group 3 is %s; want pending (never started)", g)
	}
	// The queued run's request reaches the now idle worker, which drops it.
	swDrained(t, env, 10*time.Second, "the cancelled run's request acknowledged")
	if st, _ := swState(t, env, queued); st.Status != events.StatusCancelled || st.Attempt != 0 {
		t.Errorf("queued run after its request was delivered: %s attempt %d; want cancelled, never started", st.Status, st.Attempt)
	}
	if n := calls.get("cx.one"); n != 1 {
		t.Errorf("group 1 ran %d times; want 1 (the queued run never started)", n)
	}

	// Idempotent; a finished run is a conflict; an unknown one not found.
	if st, err := c.Cancel(ctx, running, "someone", "again"); err != nil || st.Status != events.StatusCancelled || st.Cancel.Reason != "runaway" {
		t.Errorf("second cancel: %v, %+v; want the cancelled state unchanged", err, st)
	}
	_, err = c.Start(ctx, events.SeqRunRequest{Sequence: "sw-cx-quick"})
	if !errors.Is(err, client.ErrNotFound) {
		t.Errorf("start of an unknown sequence: %v; want ErrNotFound", err)
	}
	swServe(t, env, tool.Tool{Name: "cx.quick", Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }})
	swStore(t, env, "name: cxq\ngroups:\n  - name: cxq-one\n    tools: [{tool: cx.quick}]\n")
	done, err := c.Start(ctx, events.SeqRunRequest{Sequence: "cxq"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.Wait(wctx, done, client.WaitOptions{Poll: 100 * time.Millisecond}); err != nil || st.Status != events.StatusSucceeded {
		t.Fatalf("quick run: %v %+v", err, st)
	}
	var ce *toolcall.Error
	if _, err := c.Cancel(ctx, done, "", ""); !errors.Is(err, client.ErrConflict) || !errors.As(err, &ce) || ce.Code != "409" || !strings.Contains(ce.Description, "already finished") {
		t.Errorf("cancel of a finished run: %v; want a 409 saying it already finished", err)
	}
	if _, err := c.Cancel(ctx, "r-no-such-run", "", ""); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("cancel of an unknown run: %v; want 404", err)
	}
}

// TestSeqworkerIdentifierBounds sends identifiers over their limits to
// every entry point: each is refused (a 400 naming the limit, or a dropped
// request) and the worker keeps serving — its connection is not closed by
// the server for an over-long subject.
func TestSeqworkerIdentifierBounds(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("ib.echo", &calls))
	swStore(t, env, "name: ib\nboot: true\ngroups:\n  - name: ib-one\n    tools: [{tool: ib.echo}]\n")
	swWorker(t, env, seqworker.Config{})
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct{ subject, body string }{
		{events.SeqStatusSubject, `{"v":1,"run_id":"` + long + `"}`},
		{events.SeqRunSubject, `{"v":1,"run_id":"` + long + `","sequence":"ib"}`},
		{events.SeqRunSubject, `{"v":1,"sequence":"` + long + `"}`},
		{events.SeqCancelSubject, `{"v":1,"run_id":"` + long + `"}`},
		{events.SeqCancelSubject, `{"v":1,"run_id":"ok","reason":"` + long + `"}`},
		{events.SeqRerunSubject, `{"v":1,"run_id":"` + long + `"}`},
		{events.SeqCallSubject, `{"v":1,"group":"` + long + `"}`},
		{events.SeqListSubject, `{"v":1,"sequence":"` + long + `"}`},
	} {
		m, err := env.nc.Request(tc.subject, []byte(tc.body), 10*time.Second)
		if err != nil {
			t.Fatalf("%s with a 5,000-byte field: %v", tc.subject, err)
		}
		if code := m.Header.Get(micro.ErrorCodeHeader); code != "400" || !strings.Contains(m.Header.Get(micro.ErrorHeader), "limit") {
			t.Errorf("%s with a 5,000-byte field: %q %q; want 400 naming the limit", tc.subject, code, m.Header.Get(micro.ErrorHeader))
		}
	}
	// A poison queued request (an over-long Nats-Msg-Id) and an
	// agent_ready with an over-long agent name do not stop the worker.
	poison := &nats.Msg{Subject: "seq.run.ib", Data: []byte(`{"v":1,"run_id":"p","sequence":"ib"}`), Header: nats.Header{}}
	poison.Header.Set("Nats-Msg-Id", long)
	if _, err := env.js.PublishMsg(context.Background(), poison); err != nil {
		t.Fatal(err)
	}
	if _, err := env.js.Publish(context.Background(), "events.agent_ready.a", []byte(`{"v":1,"agent":"`+long+`","boot_id":"b"}`)); err != nil {
		t.Fatal(err)
	}
	swRequest(t, env, "r-ib-after", "ib", nil)
	if st := swWait(t, env, "r-ib-after", 20*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("a normal run after the poison: %s (%s); want succeeded", st.Status, st.Error)
	}
	swDrained(t, env, 10*time.Second, "the poison request terminated")
	m, err := env.nc.Request(events.SeqStatusSubject, []byte(`{"v":1,"run_id":"r-ib-after"}`), 10*time.Second)
	if err != nil || m.Header.Get(micro.ErrorCodeHeader) != "" {
		t.Errorf("status after the poison: %v %v; want the service still serving", err, m)
	}
}

// TestSeqworkerStalledReplica: one of two seqworkers is stopped with
// SIGSTOP, so the seq.run requests the queue group hands it go unanswered;
// pkg/client's Start (what `skillbus run` uses) sends an idempotent request
// again after StartAttemptTimeout and every run starts and succeeds.
func TestSeqworkerStalledReplica(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("stall.echo", &calls))
	swStore(t, env, "name: stall\ngroups:\n  - name: stall-one\n    tools: [{tool: stall.echo}]\n")
	cmd, out := swChild(t, env, time.Second)
	c, err := client.New(env.nc, client.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The child serves seq.run once it answers a request.
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := c.Start(ctx, events.SeqRunRequest{RunID: "r-stall-warm", Sequence: "stall"}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never answered; its output:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	swWorker(t, env, seqworker.Config{WorkerID: "live"})
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGCONT) }()
	const n = 6
	t0 := time.Now()
	for i := range n {
		id := fmt.Sprintf("r-stall-%d", i)
		if _, err := c.Start(ctx, events.SeqRunRequest{RunID: id, Sequence: "stall"}); err != nil {
			t.Fatalf("start %s with a stalled replica: %v", id, err)
		}
	}
	t.Logf("%d runs started in %s with one of two replicas stalled", n, time.Since(t0).Round(time.Millisecond))
	_ = cmd.Process.Signal(syscall.SIGCONT) // its queued work may now go on
	for i := range n {
		if st := swWait(t, env, fmt.Sprintf("r-stall-%d", i), 60*time.Second); st.Status != events.StatusSucceeded {
			t.Errorf("run %d: %s (%s)", i, st.Status, st.Error)
		}
	}
}
