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
)

// progressClient is a Client that asks for keep-alives every 200 ms and
// takes a provider for dead 1 s after they stopped: short timings, so the
// tests run in seconds.
func progressClient(t *testing.T, s *natsserver.Server) *tool.Client {
	t.Helper()
	c, err := tool.NewClient(natsserver.ConnectTB(t, s), tool.WithKeepAlive(200*time.Millisecond), tool.WithLostGrace(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stopSoon stops srv, cancelling what still runs after a second.
func stopSoon(srv *tool.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Stop(ctx)
}

// next returns the next message of sub, failing after 10 s.
func next(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no message on %s: %v", sub.Subject, err)
	}
	return m
}

// rawProvider subscribes a plain nats.go connection of its own to subject
// (no pkg/tool Server): the test answers, acknowledges or drops each
// request it gets on the returned channel itself.
func rawProvider(t *testing.T, s *natsserver.Server, subject string) (*nats.Conn, chan *nats.Msg) {
	t.Helper()
	provider := natsserver.ConnectTB(t, s)
	got := make(chan *nats.Msg, 16)
	if _, err := provider.Subscribe(subject, func(m *nats.Msg) { got <- m }); err != nil {
		t.Fatal(err)
	}
	if err := provider.Flush(); err != nil {
		t.Fatal(err)
	}
	return provider, got
}

// callResult is what a Call returned.
type callResult struct {
	out json.RawMessage
	err error
}

// callAsync makes the call in a goroutine; what it returned comes on the
// channel.
func callAsync(ctx context.Context, c *tool.Client, name string, args json.RawMessage) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		out, err := c.Call(ctx, name, args)
		done <- callResult{out, err}
	}()
	return done
}

// TestServerSendsKeepAlives: a call asking for progress that the tool
// takes a while to answer gets "accepted", then "alive" at the interval
// asked for, then the reply; a quick call gets its reply alone.
func TestServerSendsKeepAlives(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := natsserver.StartTB(t, natsserver.Options{})
	srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "slow"},
		tool.Tool{Name: "test.slow", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			select {
			case <-release:
			case <-ctx.Done(): // the test failed first
			}
			return args, nil
		}},
		echo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopSoon(srv) })
	nc := natsserver.ConnectTB(t, s)
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(subject, data string) {
		t.Helper()
		m := &nats.Msg{Subject: subject, Reply: inbox, Data: []byte(data), Header: nats.Header{tool.ProgressHeader: []string{"200ms"}}}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}

	ask("tool.test.slow", `{"n":1}`)
	sent := time.Now()
	if m := next(t, sub); m.Header.Get(tool.ProgressHeader) != tool.ProgressAccepted || len(m.Data) != 0 {
		t.Fatalf("first message = %q %q; want an empty %s: %s", m.Header, m.Data, tool.ProgressHeader, tool.ProgressAccepted)
	}
	t.Logf("accepted after %v", time.Since(sent).Round(time.Millisecond))
	var beats []time.Time
	for range 3 {
		m := next(t, sub)
		if m.Header.Get(tool.ProgressHeader) != tool.ProgressAlive {
			t.Fatalf("message = %q %q; want %s: %s", m.Header, m.Data, tool.ProgressHeader, tool.ProgressAlive)
		}
		beats = append(beats, time.Now())
	}
	if gap := beats[2].Sub(beats[0]) / 2; gap < 100*time.Millisecond || gap > time.Second {
		t.Errorf("keep-alives %v apart; want about the 200ms asked for", gap)
	}
	close(release)
	for {
		m := next(t, sub)
		if m.Header.Get(tool.ProgressHeader) == tool.ProgressAlive {
			continue // sent before the release
		}
		if string(m.Data) != `{"n":1}` || len(m.Header) != 0 {
			t.Fatalf("reply = %q %q; want the result without headers", m.Header, m.Data)
		}
		break
	}

	ask("tool.test.echo", `{"text":"quick"}`)
	if m := next(t, sub); string(m.Data) != `{"text":"quick"}` {
		t.Fatalf("quick call's first message = %q %q; want its reply", m.Header, m.Data)
	}
	if m, err := sub.NextMsg(500 * time.Millisecond); err == nil {
		t.Errorf("after a quick call's reply: %q %q; want nothing", m.Header, m.Data)
	}
}

// TestResentRunningCallRunsOnce: a call sent again (same reply subject)
// while it still runs on the provider is acknowledged at once and does
// not run a second time.
func TestResentRunningCallRunsOnce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var runs atomic.Int32
	s := natsserver.StartTB(t, natsserver.Options{})
	srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "slow"},
		tool.Tool{Name: "test.slow", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			runs.Add(1)
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done(): // the test failed first
			}
			return args, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopSoon(srv) })
	nc := natsserver.ConnectTB(t, s)
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: "tool.test.slow", Reply: inbox, Data: []byte(`{}`), Header: nats.Header{tool.ProgressHeader: []string{"1m"}}}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	<-started
	if got := next(t, sub).Header.Get(tool.ProgressHeader); got != tool.ProgressAccepted {
		t.Fatalf("first message: %s %q; want %q", tool.ProgressHeader, got, tool.ProgressAccepted)
	}
	if err := nc.PublishMsg(m); err != nil { // sent again
		t.Fatal(err)
	}
	if got := next(t, sub).Header.Get(tool.ProgressHeader); got != tool.ProgressAccepted {
		t.Fatalf("answer to the call sent again: %s %q; want %q at once (the keep-alive interval is a minute)", tool.ProgressHeader, got, tool.ProgressAccepted)
	}
	close(release)
	if r := next(t, sub); string(r.Data) != `{}` {
		t.Fatalf("reply = %q %q; want {}", r.Header, r.Data)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
	}
}

// TestLostReplySentAgain: a provider that acknowledges a call, sends
// keep-alives, then goes silent without a reply (its reply lost with its
// NATS node) gets the call again within seconds, on the same reply
// subject, and its answer then is the call's result — long before the
// call's deadline, and without an error.
func TestLostReplySentAgain(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	provider, got := rawProvider(t, s, "tool.test.lossy")
	var replies []string
	c := progressClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	done := callAsync(ctx, c, "test.lossy", json.RawMessage(`{"x":1}`))
	progress := func(reply, v string) {
		_ = provider.PublishMsg(&nats.Msg{Subject: reply, Header: nats.Header{tool.ProgressHeader: []string{v}}})
	}
	// First delivery: acknowledged, kept alive twice, then nothing.
	m := <-got
	if m.Header.Get(tool.ProgressHeader) != "200ms" {
		t.Errorf("request %s = %q; want the client's keep-alive interval 200ms", tool.ProgressHeader, m.Header.Get(tool.ProgressHeader))
	}
	replies = append(replies, m.Reply)
	progress(m.Reply, tool.ProgressAccepted)
	for range 2 {
		time.Sleep(200 * time.Millisecond) // the provider's own pace
		progress(m.Reply, tool.ProgressAlive)
	}
	// The call comes again once the keep-alives have stopped.
	select {
	case m2 := <-got:
		replies = append(replies, m2.Reply)
		_ = m2.Respond([]byte(`{"answer":2}`))
	case r := <-done:
		t.Fatalf("Call returned %s, %v before the call was sent again", r.out, r.err)
	}
	r := <-done
	if r.err != nil || string(r.out) != `{"answer":2}` {
		t.Fatalf("Call = %s, %v; want the second delivery's answer", r.out, r.err)
	}
	if replies[0] != replies[1] {
		t.Errorf("sent again on %s; want the same reply subject %s (the call's id)", replies[1], replies[0])
	}
	took := time.Since(start)
	t.Logf("answered after %v", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the call took %v; want it sent again within seconds of the keep-alives stopping, not at its deadline (20s)", took)
	}
}

// TestProviderDiesMidCall: a provider whose connection closes while it
// runs a call (as when its process is killed) is detected within
// seconds: the call fails with ErrProviderLost, a code "503" tool error,
// not at its deadline.
func TestProviderDiesMidCall(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	pc := natsserver.ConnectTB(t, s)
	if _, err := tool.Serve(pc, tool.ServerConfig{Name: "doomed"}, tool.Tool{
		Name: "test.doomed",
		Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}); err != nil {
		t.Fatal(err)
	}
	// A spy on every reply subject sees the provider's acknowledgement.
	spy := natsserver.ConnectTB(t, s)
	acks, err := spy.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	c := progressClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "test.doomed", nil)
		done <- err
	}()
	for next(t, acks).Header.Get(tool.ProgressHeader) != tool.ProgressAccepted {
	}
	killed := time.Now()
	pc.Close()
	err = <-done
	took := time.Since(killed)
	var te *tool.Error
	if !errors.Is(err, tool.ErrProviderLost) || !errors.As(err, &te) || te.Code != "503" {
		t.Fatalf("Call with its provider gone = %v; want ErrProviderLost, a code 503 *Error", err)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took > 6*time.Second {
		t.Errorf("the dead provider was found after %v; want within the silence (0.6s) and the lost grace (1s), not at the deadline (20s)", took)
	}
}

// TestPlainProviderWaited: a provider without the protocol (a plain NATS
// responder: no acknowledgement, no keep-alives) that takes longer than
// the keep-alive silence is waited for as before: the call is sent once.
func TestPlainProviderWaited(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	provider := natsserver.ConnectTB(t, s)
	var n atomic.Int32
	if _, err := provider.Subscribe("tool.test.plain", func(m *nats.Msg) {
		n.Add(1)
		go func() {
			time.Sleep(1500 * time.Millisecond) // over the 0.6 s silence and the 1 s grace
			_ = m.Respond([]byte(`{"plain":true}`))
		}()
	}); err != nil {
		t.Fatal(err)
	}
	if err := provider.Flush(); err != nil {
		t.Fatal(err)
	}
	c := progressClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := c.Call(ctx, "test.plain", nil)
	if err != nil || string(out) != `{"plain":true}` {
		t.Fatalf("Call = %s, %v; want the plain provider's answer", out, err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("the plain provider got the call %d times; want 1", got)
	}
}

// TestKeepAliveOptions: WithKeepAlive refuses intervals it cannot keep.
func TestKeepAliveOptions(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 2 * time.Minute} {
		if _, err := tool.NewClient(nil, tool.WithKeepAlive(d)); !errors.Is(err, tool.ErrConfig) {
			t.Errorf("WithKeepAlive(%v) = %v; want ErrConfig", d, err)
		}
	}
	if _, err := tool.NewClient(nil, tool.WithLostGrace(-time.Second)); !errors.Is(err, tool.ErrConfig) {
		t.Errorf("WithLostGrace(-1s) = %v; want ErrConfig", err)
	}
	for _, d := range []time.Duration{0, 100 * time.Millisecond, time.Minute} {
		if _, err := tool.NewClient(nil, tool.WithKeepAlive(d)); err != nil {
			t.Errorf("WithKeepAlive(%v) = %v; want nil", d, err)
		}
	}
}

// TestNoKeepAliveAsked: a Client made WithKeepAlive(0) sends no
// ProgressHeader, and a progress message it gets anyway is not taken for
// the reply.
func TestNoKeepAliveAsked(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	provider := natsserver.ConnectTB(t, s)
	header := make(chan string, 1)
	if _, err := provider.Subscribe("tool.test.chatty", func(m *nats.Msg) {
		header <- m.Header.Get(tool.ProgressHeader)
		_ = provider.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{tool.ProgressHeader: []string{tool.ProgressAccepted}}})
		_ = m.Respond([]byte(`{"ok":true}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := provider.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := tool.NewClient(natsserver.ConnectTB(t, s), tool.WithKeepAlive(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := c.Call(ctx, "test.chatty", nil)
	if err != nil || string(out) != `{"ok":true}` {
		t.Fatalf("Call = %s, %v; want the reply after the progress message", out, err)
	}
	if h := <-header; h != "" {
		t.Errorf("request %s = %q; want none", tool.ProgressHeader, h)
	}
}

// TestUnacknowledgedCallSentAgain: once a tool's provider has spoken the
// keep-alive protocol, a call of it that gets neither an acknowledgement
// nor its reply for the silence (3 intervals) was lost on its way — its
// node died with it — and is sent again on the same reply subject,
// instead of waiting for its deadline; at most twice, and never taken for
// a dead provider on that account (the deadline ends it).
func TestUnacknowledgedCallSentAgain(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	provider, got := rawProvider(t, s, "tool.test.drops")
	c := progressClient(t, s)
	call := func(timeout time.Duration) <-chan error {
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := c.Call(ctx, "test.drops", nil)
			done <- err
		}()
		return done
	}
	// A first call, acknowledged and answered: the provider speaks the
	// protocol.
	done := call(20 * time.Second)
	m := recv(t, got)
	_ = provider.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{tool.ProgressHeader: []string{tool.ProgressAccepted}}})
	_ = m.Respond([]byte(`{}`))
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A call whose first delivery is lost: sent again, answered.
	start := time.Now()
	done = call(20 * time.Second)
	first := recv(t, got) // dropped
	again := recv(t, got)
	_ = again.Respond([]byte(`{}`))
	if err := <-done; err != nil {
		t.Fatalf("the call sent again and answered = %v", err)
	}
	if first.Reply != again.Reply {
		t.Errorf("sent again on %s; want the same reply subject %s", again.Reply, first.Reply)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the lost call was answered after %v; want it sent again after the 0.6 s silence, not at its deadline", took)
	}

	// A call never answered: sent 3 times in all, then its deadline.
	done = call(3 * time.Second)
	err := <-done
	if !errors.Is(err, tool.ErrTimeout) || errors.Is(err, tool.ErrProviderLost) {
		t.Errorf("a call never acknowledged = %v; want ErrTimeout at its deadline, not ErrProviderLost", err)
	}
	if n := len(got); n != 3 {
		t.Errorf("the unanswered call was delivered %d times; want 3 (sent again at most twice)", n)
	}
}

// recv returns the next message of ch, failing after 10 s.
func recv(t *testing.T, ch chan *nats.Msg) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no request in 10 s")
		return nil
	}
}

// TestSilentCallSentAgainEveryInterval: once a call's keep-alives have
// stopped, it is sent again every keep-alive interval until the lost
// grace ends, so a provider that takes up only a later copy (the first
// ones lost on their way, as to a node cut off the network that the
// cluster still routes to) is found: here the first two copies sent
// again are dropped and the third is answered. With a copy every silence
// (3 intervals), only two fit in the grace and the call failed with 503.
func TestSilentCallSentAgainEveryInterval(t *testing.T) {
	t.Parallel()
	s := natsserver.StartTB(t, natsserver.Options{})
	provider, got := rawProvider(t, s, "tool.test.flaky")
	c := progressClient(t, s) // 200 ms interval: silent after 0.6 s, lost 1 s later
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := callAsync(ctx, c, "test.flaky", json.RawMessage(`{}`))
	m := <-got
	_ = provider.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{tool.ProgressHeader: []string{tool.ProgressAccepted}}})
	for copies := 1; ; copies++ {
		select {
		case m := <-got:
			if copies <= 2 {
				continue // lost on its way
			}
			_ = m.Respond([]byte(`{"answer":3}`))
			r := <-done
			if r.err != nil || string(r.out) != `{"answer":3}` {
				t.Fatalf("Call = %s, %v; want the answer to the third copy sent again", r.out, r.err)
			}
			return
		case r := <-done:
			t.Fatalf("Call returned %s, %v after %d copies sent again; want a copy every interval (200ms) for the lost grace (1s)", r.out, r.err, copies-1)
		}
	}
}
