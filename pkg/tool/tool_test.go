package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

type fixture struct {
	nc     *nats.Conn
	client *tool.Client
}

func withServer(t *testing.T, opts natsserver.Options, tools ...tool.Tool) fixture {
	t.Helper()
	s := natsserver.StartTB(t, opts)
	provider := natsserver.ConnectTB(t, s)
	if len(tools) > 0 {
		srv, err := tool.Serve(provider, tool.ServerConfig{Name: "test-tools"}, tools...)
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	}
	nc := natsserver.ConnectTB(t, s)
	c, err := tool.NewClient(nc, tool.WithDefaultTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{nc: nc, client: c}
}

var echo = tool.Tool{
	Name:        "test.echo",
	Description: "returns its arguments",
	Schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
	Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		return args, nil
	},
}

var fail = tool.Tool{
	Name: "test.fail",
	Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Code, Msg string }
		_ = json.Unmarshal(args, &a)
		if a.Code == "" {
			return nil, errors.New("plain failure\nsecond line")
		}
		return nil, tool.Errorf(a.Code, "%s", a.Msg)
	},
}

var panics = tool.Tool{
	Name: "test.panic",
	Func: func(ctx context.Context, args json.RawMessage) (any, error) { panic("boom") },
}

var sum = tool.Tool{
	Name: "math.sum",
	Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Values []int }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, tool.Errorf("400", "bad arguments: %v", err)
		}
		total := 0
		for _, v := range a.Values {
			total += v
		}
		return map[string]int{"sum": total}, nil
	},
}

func TestCall(t *testing.T) {
	f := withServer(t, natsserver.Options{}, echo, fail, panics, sum)
	ctx := context.Background()
	tests := []struct {
		name, tool, args string
		want             string
		code             string // a *toolcall.Error with this code
		wantErr          error
	}{
		{name: "echo", tool: "test.echo", args: `{"text":"hi"}`, want: `{"text":"hi"}`},
		{name: "empty args become {}", tool: "test.echo", args: ``, want: `{}`},
		{name: "struct result", tool: "math.sum", args: `{"values":[1,2,3]}`, want: `{"sum":6}`},
		{name: "tool chooses code", tool: "test.fail", args: `{"code":"404","msg":"no such file"}`, code: "404"},
		{name: "plain error is 500", tool: "test.fail", args: `{}`, code: "500"},
		{name: "panic is 500", tool: "test.panic", args: `{}`, code: "500"},
		{name: "typed 400", tool: "math.sum", args: `{"values":"x"}`, code: "400"},
		{name: "args not an object", tool: "test.echo", args: `[1]`, wantErr: tool.ErrBadArgs},
		{name: "bad name", tool: "a..b", args: `{}`, wantErr: tool.ErrBadName},
		{name: "missing tool", tool: "no.such.tool", args: `{}`, wantErr: toolcall.ErrMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.client.Call(ctx, tt.tool, json.RawMessage(tt.args))
			switch {
			case tt.code != "":
				var te *toolcall.Error
				if !errors.As(err, &te) || te.Code != tt.code || te.Tool != tt.tool {
					t.Fatalf("Call(%q, %q) = %s, %v; want *toolcall.Error code %s", tt.tool, tt.args, got, err, tt.code)
				}
				if strings.ContainsAny(te.Description, "\r\n") || te.Description == "" {
					t.Fatalf("description %q: want one non-empty line", te.Description)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Call(%q, %q) error = %v; want %v", tt.tool, tt.args, err, tt.wantErr)
				}
			default:
				if err != nil || string(got) != tt.want {
					t.Fatalf("Call(%q, %q) = %s, %v; want %s", tt.tool, tt.args, got, err, tt.want)
				}
			}
		})
	}
}

func TestNoRespondersIsFast(t *testing.T) {
	f := withServer(t, natsserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := f.client.Call(ctx, "absent.tool", nil)
	if !errors.Is(err, toolcall.ErrMissing) || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("Call(absent.tool) error = %v; want toolcall.ErrMissing and nats.ErrNoResponders", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("no-responders took %s; want it at once, not at the deadline", d)
	}
}

func TestPayloadTooLarge(t *testing.T) {
	big := tool.Tool{Name: "test.big", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		return strings.Repeat("x", 20000), nil
	}}
	f := withServer(t, natsserver.Options{MaxPayload: 8192}, echo, big)
	args := json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", 10000)))
	start := time.Now()
	_, err := f.client.Call(context.Background(), "test.echo", args)
	if !errors.Is(err, tool.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "max_payload") {
		t.Fatalf("Call with 10 kB args on an 8 kB server = %v; want ErrPayloadTooLarge mentioning max_payload", err)
	}
	if time.Since(start) > time.Second {
		t.Fatalf("payload error took %s; want it at once", time.Since(start))
	}
	// Arguments that fit alone but not with the trace and deadline headers.
	edge := json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", 8192-20)))
	if _, err := f.client.Call(context.Background(), "test.echo", edge); !errors.Is(err, tool.ErrPayloadTooLarge) {
		t.Fatalf("Call with %d-byte args (+headers) on an 8 kB server = %v; want ErrPayloadTooLarge", len(edge), err)
	}
	// A result too large for the server comes back as a 413 tool error.
	_, err = f.client.Call(context.Background(), "test.big", nil)
	var te *toolcall.Error
	if !errors.As(err, &te) || te.Code != "413" {
		t.Fatalf("Call(test.big) = %v; want a tool error with code 413", err)
	}
	// The connection is still healthy.
	if got, err := f.client.Call(context.Background(), "test.echo", json.RawMessage(`{"a":1}`)); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("Call after payload errors = %s, %v", got, err)
	}
}

func TestDeadline(t *testing.T) {
	var sawDeadline atomic.Bool
	slow := tool.Tool{Name: "test.slow", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < 2*time.Second {
			sawDeadline.Store(true)
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	f := withServer(t, natsserver.Options{}, slow)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := f.client.Call(ctx, "test.slow", nil)
	if !errors.Is(err, tool.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call(test.slow) error = %v; want ErrTimeout and context.DeadlineExceeded", err)
	}
	if !sawDeadline.Load() {
		t.Errorf("the tool did not see the caller's deadline in its context")
	}
}

// TestReplicasShareCalls serves the same tool from two providers and checks
// both get calls (queue group) and calls run concurrently.
func TestReplicasShareCalls(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	var hits [2]atomic.Int32
	for i := range 2 {
		nc := natsserver.ConnectTB(t, s)
		srv, err := tool.Serve(nc, tool.ServerConfig{Name: "replica"}, tool.Tool{Name: "test.who", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			hits[i].Add(1)
			time.Sleep(20 * time.Millisecond) // the call's own work, so concurrent handling shows in the total time
			return i, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	}
	c, _ := tool.NewClient(natsserver.ConnectTB(t, s))
	const n = 40
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		go func() {
			_, err := c.Call(context.Background(), "test.who", nil)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if hits[0].Load() == 0 || hits[1].Load() == 0 {
		t.Errorf("calls per replica = %d, %d; want both > 0", hits[0].Load(), hits[1].Load())
	}
	if d := time.Since(start); d > n*20*time.Millisecond/2 {
		t.Errorf("%d calls of 20ms took %s; want concurrent handling", n, d)
	}
}

func TestMicroDiscovery(t *testing.T) {
	f := withServer(t, natsserver.Options{}, echo, sum)
	msg, err := f.nc.Request("$SRV.INFO.test-tools", nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	found := map[string]micro.EndpointInfo{}
	for _, e := range info.Endpoints {
		found[e.Metadata["tool"]] = e
	}
	e, ok := found["test.echo"]
	if !ok {
		t.Fatalf("endpoints = %+v; want test.echo", info.Endpoints)
	}
	if e.Subject != "tool.test.echo" || e.QueueGroup != "skillbus-tools" || e.Metadata["schema"] != string(echo.Schema) {
		t.Fatalf("endpoint = %+v; want subject tool.test.echo, queue skillbus-tools, schema published", e)
	}
}

func TestServeConfigErrors(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	ok := func(ctx context.Context, a json.RawMessage) (any, error) { return nil, nil }
	tests := []struct {
		name  string
		cfg   tool.ServerConfig
		tools []tool.Tool
		want  error
		field string
	}{
		{"no tools", tool.ServerConfig{}, nil, tool.ErrConfig, "no tools"},
		{"bad service name", tool.ServerConfig{Name: "a.b"}, []tool.Tool{{Name: "x", Func: ok}}, tool.ErrConfig, "Name"},
		{"bad tool name", tool.ServerConfig{}, []tool.Tool{{Name: "x y", Func: ok}}, tool.ErrBadName, "x y"},
		{"nil func", tool.ServerConfig{}, []tool.Tool{{Name: "x"}}, tool.ErrConfig, "Func"},
		{"schema not object", tool.ServerConfig{}, []tool.Tool{{Name: "x", Func: ok, Schema: json.RawMessage(`[]`)}}, tool.ErrConfig, "Schema"},
		{"endpoint clash", tool.ServerConfig{}, []tool.Tool{{Name: "a.b", Func: ok}, {Name: "a_b", Func: ok}}, tool.ErrConfig, "a_b"},
		{"concurrency", tool.ServerConfig{MaxConcurrent: -1}, []tool.Tool{{Name: "x", Func: ok}}, tool.ErrConfig, "MaxConcurrent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := tool.Serve(nc, tt.cfg, tt.tools...)
			if err == nil {
				_ = srv.Stop(context.Background())
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Serve = %v; want %v naming %q", err, tt.want, tt.field)
			}
		})
	}
}

func TestStopWaitsForInFlight(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	started := make(chan struct{})
	var finished atomic.Bool
	srv, err := tool.Serve(nc, tool.ServerConfig{}, tool.Tool{Name: "test.work", Func: func(ctx context.Context, a json.RawMessage) (any, error) {
		close(started)
		time.Sleep(200 * time.Millisecond) // the call's own work, still running when Stop is called
		finished.Store(true)
		return "done", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tool.NewClient(natsserver.ConnectTB(t, s), tool.WithMissingGrace(100*time.Millisecond)) // not 15 s for the last Call
	res := make(chan string, 1)
	go func() {
		out, err := c.Call(context.Background(), "test.work", nil)
		res <- fmt.Sprint(string(out), err)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !finished.Load() {
		t.Fatal("Stop returned before the in-flight call finished")
	}
	if got := <-res; got != `"done"<nil>` {
		t.Fatalf("in-flight call result = %s; want \"done\"<nil>", got)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := c.Call(context.Background(), "test.work", nil); !errors.Is(err, toolcall.ErrMissing) {
		t.Fatalf("Call after Stop = %v; want ErrToolMissing", err)
	}
}

// TestStopHonoursDeadline serves a tool that ignores its context and checks
// Stop returns soon after its deadline (plus CancelGrace) with an error
// naming the stuck tool, instead of waiting for it forever.
func TestStopHonoursDeadline(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{})
	srv, err := tool.Serve(nc, tool.ServerConfig{CancelGrace: 100 * time.Millisecond}, tool.Tool{Name: "test.stuck", Func: func(ctx context.Context, a json.RawMessage) (any, error) {
		close(started)
		<-release // ignores ctx
		return "late", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tool.NewClient(natsserver.ConnectTB(t, s))
	go func() { _, _ = c.Call(context.Background(), "test.stuck", nil) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Stop(ctx) }()
	select {
	case err := <-stopped:
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Stop took %v; want about 300 ms (deadline 200 ms + grace 100 ms)", took)
		}
		if err == nil || !strings.Contains(err.Error(), "test.stuck") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop = %v; want a deadline error naming test.stuck", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return 10 s after its 200 ms deadline while a tool ignored its context")
	}
}

// TestStopWaitsForQueuedCalls sends a burst of calls to a provider that
// runs one at a time and stops it at once: every call delivered to it is
// answered, and none runs after Stop has returned.
func TestStopWaitsForQueuedCalls(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	var stopReturned, ranLate atomic.Bool
	var ran atomic.Int32
	first := make(chan struct{}, 1)
	srv, err := tool.Serve(nc, tool.ServerConfig{MaxConcurrent: 1}, tool.Tool{Name: "test.slow", Func: func(ctx context.Context, a json.RawMessage) (any, error) {
		select {
		case first <- struct{}{}:
		default:
		}
		time.Sleep(10 * time.Millisecond) // the call's own work: the burst queues behind it
		if stopReturned.Load() {
			ranLate.Store(true)
		}
		ran.Add(1)
		return "ok", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	cnc := natsserver.ConnectTB(t, s)
	inbox := nats.NewInbox()
	replies, err := cnc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	for range n {
		if err := cnc.PublishRequest("tool.test.slow", inbox, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cnc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Wait until the provider holds the burst (the first call runs).
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("the first call of the burst did not start within 5 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopReturned.Store(true)
	handled := ran.Load()
	time.Sleep(300 * time.Millisecond) // a window for a call that would run after Stop: its absence is the behaviour
	if ranLate.Load() || ran.Load() != handled {
		t.Errorf("%d calls ran after Stop returned; want none", ran.Load()-handled)
	}
	if handled != n {
		t.Errorf("Stop returned after %d of the %d delivered calls; want all", handled, n)
	}
	for i := range n {
		if _, err := replies.NextMsg(2 * time.Second); err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, n, err)
		}
	}
}

// TestQuickToolRecoversFromASlowCall calls a tool often enough that it
// runs on the subscription goroutine (a quick tool), then makes one call
// block: once it returns, the tool's calls run on workers again, so a
// second blocking call no longer holds up a quick one.
func TestQuickToolRecoversFromASlowCall(t *testing.T) {
	release := make(chan struct{}, 2)
	blocked := make(chan struct{}, 2)
	mix := tool.Tool{Name: "test.mix", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Wait bool }
		_ = json.Unmarshal(args, &a)
		if a.Wait {
			blocked <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return "ok", nil
	}}
	f := withServer(t, natsserver.Options{}, mix)
	ctx := context.Background()
	for i := range 200 {
		if _, err := f.client.Call(ctx, "test.mix", nil); err != nil {
			t.Fatalf("quick call %d: %v", i, err)
		}
	}
	slow := func() chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := f.client.Call(ctx, "test.mix", json.RawMessage(`{"wait":true}`))
			ch <- err
		}()
		return ch
	}
	first := slow()
	<-blocked                         // it blocks, perhaps the subscription too
	time.Sleep(10 * time.Millisecond) // the behaviour: a call slower than quickMax (100 µs) ends the quick streak
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatalf("first slow call: %v", err)
	}
	second := slow()
	<-blocked
	quickCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := f.client.Call(quickCtx, "test.mix", nil); err != nil {
		t.Errorf("a quick call while a slow one runs, after a slow call: %v; want it answered at once (the tool runs on workers again)", err)
	}
	release <- struct{}{}
	if err := <-second; err != nil {
		t.Fatalf("second slow call: %v", err)
	}
}
