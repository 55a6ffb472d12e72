package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// startStack starts an embedded server, a seqworker and a tool "echo" and
// returns a client connection and an inline sequence of two groups that
// call it.
func startStack(t *testing.T) (*nats.Conn, json.RawMessage) {
	t.Helper()
	srv := natsserver.StartTB(t, natsserver.Options{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := seqworker.New(natsserver.ConnectTB(t, srv), seqworker.Config{Logger: quiet, FetchWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	tools, err := tool.Serve(natsserver.ConnectTB(t, srv), tool.ServerConfig{Name: "echo-tools"}, tool.Tool{Name: "echo", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		return "ok", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tools.Stop(context.Background()) })
	s, err := seq.ParseYAML([]byte("name: twice\ngroups:\n  - name: one\n    tools: [{tool: echo}]\n  - name: two\n    tools: [{tool: echo}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	inline, err := seq.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return natsserver.ConnectTB(t, srv), inline
}

// TestWaitReplaysEarlierEvents: Wait called after the run finished still
// hands OnEvent every event of the run, in order — started, one group
// event per group, finished — read back from the EVENTS stream.
func TestWaitReplaysEarlierEvents(t *testing.T) {
	nc, inline := startStack(t)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := c.Start(ctx, events.SeqRunRequest{RunID: "replay-1", Inline: inline})
	if err != nil {
		t.Fatal(err)
	}
	// The first Wait sees the run to its end; the second starts after
	// every event was published.
	if _, err := c.Wait(ctx, id, client.WaitOptions{Poll: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	st, err := c.Wait(ctx, id, client.WaitOptions{Poll: 100 * time.Millisecond, OnEvent: func(ev *events.RunEvent) {
		if ev.RunID != id {
			t.Errorf("event of run %q; want %q", ev.RunID, id)
		}
		kinds = append(kinds, ev.Kind)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != events.StatusSucceeded {
		t.Errorf("status %s; want succeeded", st.Status)
	}
	want := []string{events.RunStarted, events.RunGroup, events.RunGroup, events.RunFinished}
	if len(kinds) != len(want) {
		t.Fatalf("events %v; want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v; want %v", kinds, want)
		}
	}
}

// TestWaitNotFound: Wait on a run id that no run has returns ErrNotFound
// after WaitOptions.NotFoundWait (plus at most a poll), not never.
func TestWaitNotFound(t *testing.T) {
	nc, _ := startStack(t)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Wait(ctx, "no-such-run", client.WaitOptions{Poll: 100 * time.Millisecond, NotFoundWait: 500 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Wait = %v; want ErrNotFound", err)
	}
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("Wait returned after %s; want between 0.5 s and 5 s", took.Round(time.Millisecond))
	}
	t.Logf("ErrNotFound after %s: %v", took.Round(time.Millisecond), err)
}

// TestWaitRunStoredLate: a run whose state appears within NotFoundWait
// (a request still on its way) is followed to its end, not refused.
func TestWaitRunStoredLate(t *testing.T) {
	nc, inline := startStack(t)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		st  *events.RunState
		err error
	}
	// The state is not there for a few reads: this subscription sees
	// Wait's reads go by (the seqworkers' queue group gets them too).
	reads, err := nc.SubscribeSync(events.SeqStatusSubject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	var kinds []string
	go func() {
		st, err := c.Wait(ctx, "late-1", client.WaitOptions{Poll: 100 * time.Millisecond, NotFoundWait: 20 * time.Second, OnEvent: func(ev *events.RunEvent) {
			kinds = append(kinds, ev.Kind)
		}})
		done <- result{st, err}
	}()
	for i := range 3 {
		if _, err := reads.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("Wait's read %d of a run not stored yet: %v", i+1, err)
		}
	}
	_ = reads.Unsubscribe()
	if _, err := c.Start(ctx, events.SeqRunRequest{RunID: "late-1", Inline: inline}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Wait = %v; want the run's end", r.err)
	}
	if r.st.Status != events.StatusSucceeded || len(kinds) == 0 || kinds[0] != events.RunStarted || kinds[len(kinds)-1] != events.RunFinished {
		t.Errorf("status %s, events %v; want succeeded, started … finished", r.st.Status, kinds)
	}
}

// TestRunEventsStopEarly: leaving Events' loop after the first event
// stops following (the loop ends, no more events are yielded), and a
// handle on an unknown run yields ErrNotFound once.
func TestRunEventsStopEarly(t *testing.T) {
	nc, inline := startStack(t)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.Run(ctx, "", client.WithInline(inline))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Get(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for ev, err := range run.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Kind != events.RunStarted {
			t.Errorf("first event %s; want started", ev.Kind)
		}
		break
	}
	if n != 1 {
		t.Errorf("%d events after break; want 1", n)
	}
	errs := 0
	for ev, err := range c.RunHandle("never-started").Events(ctx) {
		if ev != nil || !errors.Is(err, client.ErrNotFound) {
			t.Errorf("unknown run: %v, %v; want ErrNotFound", ev, err)
		}
		errs++
	}
	if errs != 1 {
		t.Errorf("unknown run yielded %d errors; want 1", errs)
	}
}
