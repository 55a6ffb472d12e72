package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// swConsumerAckWait reads the shared seqworker consumer's ack wait.
func swConsumerAckWait(t *testing.T, env *swEnv) time.Duration {
	t.Helper()
	c, err := env.js.Consumer(context.Background(), events.StreamSeqRuns, events.ConsumerSeqworker)
	if err != nil {
		t.Fatal(err)
	}
	return c.CachedInfo().Config.AckWait
}

// TestProvisionRefusesLowerAckWait: a replica's explicit ack wait below
// the shared consumer's is refused with both values named (before: it
// changed the consumer for every replica, silently); a larger one, an
// unset one and an explicit LowerAckWait are accepted.
func TestProvisionRefusesLowerAckWait(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, events.Options{}) // the default 10 s
	ctx := context.Background()
	err := events.Provision(ctx, env.js, events.Options{AckWait: time.Second})
	if !errors.Is(err, events.ErrOptions) || !strings.Contains(err.Error(), "AckWait = 1s") || !strings.Contains(err.Error(), "(10s)") || !strings.Contains(err.Error(), "--lower-ack-wait") {
		t.Fatalf("Provision(AckWait 1s) over a 10s consumer: %v; want ErrOptions naming 1s, 10s and --lower-ack-wait", err)
	}
	if got := swConsumerAckWait(t, env); got != 10*time.Second {
		t.Fatalf("consumer ack wait %s after a refused Provision; want 10s unchanged", got)
	}
	if err := events.Provision(ctx, env.js, events.Options{}); err != nil {
		t.Fatalf("Provision with no ack wait: %v", err)
	}
	if err := events.Provision(ctx, env.js, events.Options{AckWait: 20 * time.Second}); err != nil {
		t.Fatalf("Provision raising the ack wait: %v", err)
	}
	if err := events.Provision(ctx, env.js, events.Options{AckWait: 2 * time.Second, LowerAckWait: true}); err != nil {
		t.Fatalf("Provision(AckWait 2s, LowerAckWait): %v", err)
	}
	if got := swConsumerAckWait(t, env); got != 2*time.Second {
		t.Fatalf("consumer ack wait %s after an explicit lowering; want 2s", got)
	}
}

// TestSeqworkerFollowsAckWait: the shared consumer's ack wait is lowered
// (4 s → 1 s) while a worker holds a run whose group takes 7 s, and a
// second worker started with the new value joins. The holder follows the
// consumer and heartbeats at a third of 1 s, so the run is never taken
// over: one delivery, its long call made once (before: the holder kept
// beating every 1.3 s, the server redelivered the run and the new worker
// took it over and ran the group again).
func TestSeqworkerFollowsAckWait(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.AckWait = 4 * time.Second
	opts.MaxDeliver = 10
	env := swStart(t, natsserver.Options{}, opts)
	var calls swCounter
	entered := make(chan struct{}, 4)
	swServe(t, env, tool.Tool{Name: "follow.long", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		calls.add("follow.long")
		entered <- struct{}{}
		select {
		case <-time.After(7 * time.Second):
			return map[string]bool{"done": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	swStore(t, env, `
name: follow
groups:
  - name: follow-long
    timeout: 60s
    tools: [{tool: follow.long}]
`)
	swWorker(t, env, seqworker.Config{WorkerID: "holder"})
	swRequest(t, env, "r-follow", "follow", nil)
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the run never started")
	}
	// The ack wait is lowered on purpose, as `seqworker --ack-wait 1s
	// --lower-ack-wait` does at start.
	lowered := opts
	lowered.AckWait, lowered.LowerAckWait = time.Second, true
	if err := events.Provision(context.Background(), env.js, lowered); err != nil {
		t.Fatal(err)
	}
	// The holder follows at its next read of the consumer (within 2 s):
	// wait until its recorded heartbeats come at the new rate (a third of
	// 1 s) rather than for a fixed time, which a loaded machine overran.
	var last time.Time
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the holder's heartbeats never came at the lowered ack wait's rate")
		}
		st, ok := swState(t, env, "r-follow")
		if !ok || st.Heartbeat.IsZero() || st.Heartbeat.Equal(last) {
			continue
		}
		if !last.IsZero() && st.Heartbeat.Sub(last) < 700*time.Millisecond {
			break
		}
		last = st.Heartbeat
	}
	joinerOpts := env.opts
	env.opts = lowered
	swWorker(t, env, seqworker.Config{WorkerID: "joiner"})
	env.opts = joinerOpts

	st := swWait(t, env, "r-follow", 60*time.Second)
	if st.Status != events.StatusSucceeded || st.Attempt != 1 || st.Worker != "holder" {
		t.Errorf("run: %s on delivery %d by %s (%s); want succeeded on delivery 1 by its holder", st.Status, st.Attempt, st.Worker, st.Error)
	}
	if n := calls.get("follow.long"); n != 1 {
		t.Errorf("the 7 s call was made %d times; want 1 (no takeover)", n)
	}
}
