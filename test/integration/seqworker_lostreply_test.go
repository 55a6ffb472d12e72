package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// freezeProxy is a TCP proxy between a NATS client and its server that
// can freeze what the client sends (held, not forwarded: a frozen NATS
// node) and then cut every connection (the node killed: what was held is
// lost). The client reconnects through it.
type freezeProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex // mu guards the fields below
	frozen bool
	held   []byte
	marker []byte        // what to watch for in held
	seen   chan struct{} // closed when held contains marker
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: strings.TrimPrefix(target, "nats://")}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.accept()
	return p
}

func (p *freezeProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *freezeProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(c, s); c.Close() }()
		go p.up(c, s)
	}
}

// up forwards what the client sends, unless frozen.
func (p *freezeProxy) up(c, s net.Conn) {
	defer s.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.frozen {
			p.held = append(p.held, buf[:n]...)
			if p.seen != nil && bytes.Contains(p.held, p.marker) {
				close(p.seen)
				p.seen = nil
			}
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		if _, err := s.Write(buf[:n]); err != nil {
			return
		}
	}
}

// freeze holds what the clients send from now on; the channel is closed
// once the held bytes contain marker.
func (p *freezeProxy) freeze(marker string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen, p.marker, p.seen = true, []byte(marker), make(chan struct{})
	return p.seen
}

// cut closes every connection, dropping what was held, and thaws: a
// client that reconnects goes through.
func (p *freezeProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns, p.frozen, p.held = nil, false, nil
}

const swLostReplySeq = `
name: sw-lostreply
groups:
  - name: sw-lost-call
    out: {v: object}
    timeout: 30s
    tools:
      - {tool: sw.lossy, as: v}
`

// waitAccepted waits until a provider's acknowledgement (docs/tools.md,
// "Keep-alives") crosses the server, seen by a spy on every reply subject.
func waitAccepted(t *testing.T, acks *nats.Subscription) {
	t.Helper()
	for {
		m, err := acks.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("no acknowledgement from the provider: %v", err)
		}
		if m.Header.Get(tool.ProgressHeader) == tool.ProgressAccepted {
			return
		}
	}
}

// TestSeqworkerLostReply: the reply of a tool call is lost on the
// provider's side — its connection frozen while the tool answers, then
// cut, as when the provider's NATS node hangs and is killed — while the
// seqworker's connection is fine. The seqworker sends the call again once
// the keep-alives have stopped, the reconnected provider answers, and the
// run succeeds in seconds on its first attempt, not at the group timeout
// (30 s) as "failed".
func TestSeqworkerLostReply(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	proxy := startProxy(t, env.srv.ClientURL())
	pc, err := nats.Connect(proxy.url(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	var calls atomic.Int32
	started := make(chan int32, 4)
	answer := make(chan struct{})
	srv, err := tool.Serve(pc, tool.ServerConfig{Name: "lossy"}, tool.Tool{Name: "sw.lossy", Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
		n := calls.Add(1)
		started <- n
		if n == 1 {
			select {
			case <-answer:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return map[string]int32{"try": n}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	spy := natsserver.ConnectTB(t, env.srv)
	acks, err := spy.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, swLostReplySeq)
	swRequest(t, env, "lost-1", "sw-lostreply", map[string]any{})
	begun := time.Now()
	<-started
	waitAccepted(t, acks)
	written := proxy.freeze(`"try":1`)
	close(answer)
	select {
	case <-written:
	case <-time.After(20 * time.Second):
		t.Fatal("the provider never wrote its reply")
	}
	proxy.cut()
	st := swWait(t, env, "lost-1", 25*time.Second)
	took := time.Since(begun)
	if st.Status != events.StatusSucceeded || string(st.Slots["v"]) != `{"try":2}` {
		t.Fatalf("run = %s (%s), slot v = %s; want succeeded with the second delivery's answer", st.Status, st.Error, st.Slots["v"])
	}
	r := swResult(t, st)
	if c := r.Groups[0].Calls[0]; c.Attempts != 1 || st.Attempt != 1 {
		t.Errorf("call attempts %d, run attempt %d; want 1 and 1 (a lost reply is not a failed attempt)", c.Attempts, st.Attempt)
	}
	t.Logf("run succeeded %v after it started (the tool ran %d times)", took.Round(time.Millisecond), calls.Load())
	if took > 15*time.Second {
		t.Errorf("the run took %v; want the call sent again within seconds, well before the group timeout (30s)", took)
	}
}

// TestSeqworkerProviderDies: a provider whose connection closes mid-call
// (its process killed) is a tool error within seconds, and the group's
// on_error applies: abort fails the run, continue goes on without the
// value — not the group timeout (60 s).
func TestSeqworkerProviderDies(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"abort", "continue"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			env := swStart(t, natsserver.Options{}, swOptions())
			pc := natsserver.ConnectTB(t, env.srv)
			started := make(chan struct{}, 1)
			if _, err := tool.Serve(pc, tool.ServerConfig{Name: "doomed"}, tool.Tool{Name: "sw.doomed", Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}}); err != nil {
				t.Fatal(err)
			}
			swServe(t, env, swEcho("sw.echo", &swCounter{}))
			spy := natsserver.ConnectTB(t, env.srv)
			acks, err := spy.SubscribeSync("_INBOX.>")
			if err != nil {
				t.Fatal(err)
			}
			if err := spy.Flush(); err != nil {
				t.Fatal(err)
			}
			swWorker(t, env, seqworker.Config{})
			swStore(t, env, `
name: sw-dies
groups:
  - name: sw-dies-call
    out: {v: object}
    timeout: 60s
    on_error: `+policy+`
    tools:
      - {tool: sw.doomed, as: v}
  - name: sw-dies-after
    out: {after: object}
    tools:
      - {tool: sw.echo, args: {after: true}, as: after}
`)
			swRequest(t, env, "dies-1", "sw-dies", map[string]any{})
			<-started
			waitAccepted(t, acks)
			killed := time.Now()
			pc.Close()
			st := swWait(t, env, "dies-1", 30*time.Second)
			took := time.Since(killed)
			r := swResult(t, st)
			call := r.Groups[0].Calls[0]
			t.Logf("%s %v after the provider died: %s", st.Status, took.Round(time.Millisecond), call.Error)
			if call.Status != seq.CallFailed || !strings.Contains(call.Error, "503") || !strings.Contains(call.Error, "keep-alive") {
				t.Errorf("call = %s %q; want failed with the 503 of a lost provider", call.Status, call.Error)
			}
			want := events.StatusFailed
			if policy == "continue" {
				want = events.StatusSucceeded
			}
			if st.Status != want {
				t.Errorf("run = %s (%s); want %s under on_error: %s", st.Status, st.Error, want, policy)
			}
			if took > 20*time.Second {
				t.Errorf("the run ended %v after its provider died; want within seconds (3 s of silence and the 5 s lost grace), not at the group timeout (60s)", took)
			}
		})
	}
}
