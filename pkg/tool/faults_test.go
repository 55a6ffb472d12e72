package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// TestCancelReachesProvider: cancelling a call's context (not its
// deadline) tells the provider, whose function sees its context end at
// once rather than at the call's deadline.
func TestCancelReachesProvider(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	f := withServer(t, natsserver.Options{}, tool.Tool{
		Name: "test.block",
		Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				ended <- ctx.Err()
			case <-time.After(50 * time.Second):
				ended <- errors.New("not cancelled")
			}
			return nil, ctx.Err()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.client.Call(callCtx, "test.block", nil)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool never started")
	}
	cancelled := time.Now()
	cancelCall()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Call after cancel = %v; want context.Canceled", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool's context ended with %v; want context.Canceled", err)
		}
		t.Logf("the provider saw the cancel after %v", time.Since(cancelled).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's context was not cancelled within 10s of the caller's cancel (its deadline is 60s away)")
	}
}

// TestCancelBeforeStart: a call cancelled while it waits on the provider
// for a free worker (MaxConcurrent) never runs.
func TestCancelBeforeStart(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	release := make(chan struct{})
	var runs atomic.Int32
	first := make(chan struct{}, 1)
	srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "one-at-a-time", MaxConcurrent: 1}, tool.Tool{
		Name: "test.serial",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if runs.Add(1) == 1 {
				first <- struct{}{}
				<-release
			}
			return args, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	c, err := tool.NewClient(natsserver.ConnectTB(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { _, _ = c.Call(ctx, "test.serial", json.RawMessage(`{"n":1}`)) }()
	<-first
	queued, cancelQueued := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(queued, "test.serial", json.RawMessage(`{"n":2}`))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // places the cancel while the second call waits at the provider (one that came first is remembered, and must not run either)
	cancelQueued()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call = %v; want context.Canceled", err)
	}
	time.Sleep(200 * time.Millisecond) // the cancel reaches the provider: nothing outside it tells when it has
	close(release)
	// A third call shows the provider is free again, after the second
	// was dropped.
	if _, err := c.Call(ctx, "test.serial", json.RawMessage(`{"n":3}`)); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the tool ran %d times; want 2 (the call cancelled while queued must not run)", n)
	}
}

// restartable is an embedded server that can be shut down and started
// again on the same port and store.
type restartable struct {
	t    *testing.T
	opts natsserver.Options
	srv  *natsserver.Server
}

func startRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{t: t, opts: natsserver.Options{StoreDir: t.TempDir()}}
	r.srv = natsserver.StartTB(t, r.opts)
	// Keep the port for the restarts.
	var port int
	for _, c := range r.srv.ClientURL()[len("nats://127.0.0.1:"):] {
		port = port*10 + int(c-'0')
	}
	r.opts.Port = port
	return r
}

func (r *restartable) url() string { return r.srv.ClientURL() }

func (r *restartable) stop() { r.srv.Shutdown() }

func (r *restartable) start() {
	r.t.Helper()
	var err error
	for i := 0; i < 50; i++ { // the port may take a moment to be free again
		if r.srv, err = natsserver.Start(r.opts); err == nil {
			r.t.Cleanup(r.srv.Shutdown)
			return
		}
		time.Sleep(100 * time.Millisecond) // the kernel tells nobody when the port is free again
	}
	r.t.Fatalf("restart the server: %v", err)
}

func reconnecting(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestCallSurvivesRestart: a call in flight when the NATS server goes
// down, whose reply is lost with it (its provider is gone too), is sent
// again after the reconnect and answered by another provider — well
// before its deadline, not "no reply before the deadline".
func TestCallSurvivesRestart(t *testing.T) {
	t.Parallel()
	r := startRestartable(t)
	got := make(chan struct{}, 1)
	// The first provider takes the call and never answers: its
	// connection is closed for good while the server is down.
	first := natsserver.ConnectTB(t, r.srv)
	if _, err := tool.Serve(first, tool.ServerConfig{Name: "first"}, tool.Tool{
		Name: "test.work",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			got <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}); err != nil {
		t.Fatal(err)
	}
	c, err := tool.NewClient(reconnecting(t, r.url()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	started := time.Now()
	done := callAsync(ctx, c, "test.work", json.RawMessage(`{"x":1}`))
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the first provider never got the call")
	}
	r.stop()
	first.Close()
	r.start()
	second := reconnecting(t, r.url())
	if _, err := tool.Serve(second, tool.ServerConfig{Name: "second"}, tool.Tool{
		Name: "test.work",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
	}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || string(res.out) != `{"x":1}` {
		t.Fatalf("Call across the restart = %s, %v; want the second provider's answer", res.out, res.err)
	}
	if took := time.Since(started); took > 20*time.Second {
		t.Errorf("the call took %v; want it answered after the reconnect, not at its deadline", took)
	}
}

// TestInterruptedAtDeadline: a call whose connection is down until its
// deadline fails with an error wrapping ErrInterrupted (and ErrTimeout):
// an interruption, not a tool failure.
func TestInterruptedAtDeadline(t *testing.T) {
	t.Parallel()
	r := startRestartable(t)
	got := make(chan struct{}, 1)
	prov := natsserver.ConnectTB(t, r.srv)
	if _, err := tool.Serve(prov, tool.ServerConfig{Name: "slow"}, tool.Tool{
		Name: "test.slow",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			got <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}); err != nil {
		t.Fatal(err)
	}
	c, err := tool.NewClient(reconnecting(t, r.url()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "test.slow", nil)
		done <- err
	}()
	<-got
	r.stop()
	err = <-done
	if !errors.Is(err, tool.ErrInterrupted) || !errors.Is(err, tool.ErrTimeout) || !errors.Is(err, toolcall.ErrInterrupted) {
		t.Fatalf("Call with the server down until its deadline = %v; want ErrInterrupted and ErrTimeout", err)
	}
	// A timeout without a connection loss is not an interruption.
	r.start()
	prov2 := reconnecting(t, r.url())
	if _, err := tool.Serve(prov2, tool.ServerConfig{Name: "slow2"}, tool.Tool{
		Name: "test.slow2",
		Func: func(ctx context.Context, args json.RawMessage) (any, error) { <-ctx.Done(); return nil, ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	for ctx2.Err() == nil { // until the client has reconnected
		short, cancelShort := context.WithTimeout(ctx2, 300*time.Millisecond)
		_, err = c.Call(short, "test.slow2", nil)
		cancelShort()
		if errors.Is(err, tool.ErrTimeout) && !errors.Is(err, tool.ErrInterrupted) {
			return
		}
		time.Sleep(50 * time.Millisecond) // between attempts: each is a real call that times out
	}
	t.Fatalf("a plain timeout after the reconnect = %v; want ErrTimeout without ErrInterrupted", err)
}

// TestMissingGrace: a tool that answered lately and has no provider for a
// moment (its provider reconnecting) is waited for; a tool never seen is
// missing at once; with a grace of 0 every tool is missing at once.
func TestMissingGrace(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	serve := func(name string) *tool.Server {
		srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "grace"}, tool.Tool{
			Name: name, Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	nc := natsserver.ConnectTB(t, s)
	c, err := tool.NewClient(nc)
	if err != nil {
		t.Fatal(err)
	}
	noGrace, err := tool.NewClient(nc, tool.WithMissingGrace(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start := time.Now()
	if _, err := c.Call(ctx, "test.never", nil); !errors.Is(err, toolcall.ErrMissing) {
		t.Fatalf("a tool never served = %v; want ErrMissing", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a tool never seen was found missing after %v; want at once", took)
	}

	srv := serve("test.flaky")
	for _, cl := range []*tool.Client{c, noGrace} {
		if _, err := cl.Call(ctx, "test.flaky", nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = srv.Stop(ctx)
	if _, err := noGrace.Call(ctx, "test.flaky", nil); !errors.Is(err, toolcall.ErrMissing) {
		t.Fatalf("with no grace, a stopped tool = %v; want ErrMissing at once", err)
	}
	back := make(chan struct{})
	go func() {
		time.Sleep(time.Second) // the behaviour: a provider away for 1 s, within the missing grace
		serve("test.flaky")
		close(back)
	}()
	out, err := c.Call(ctx, "test.flaky", json.RawMessage(`{"ok":true}`))
	if err != nil || string(out) != `{"ok":true}` {
		t.Fatalf("a tool seen lately whose provider comes back after 1s = %s, %v; want its answer", out, err)
	}
	<-back
}
