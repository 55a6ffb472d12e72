package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// swEnv is one embedded server with the skillbus resources provisioned.
type swEnv struct {
	srv  *natsserver.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	opts events.Options
}

// swOptions are short timings for tests: a silent worker loses a run
// after 1 s.
func swOptions() events.Options {
	return events.Options{AckWait: time.Second, MaxDeliver: 5, DuplicateWindow: time.Minute}
}

func swStart(t testing.TB, so natsserver.Options, opts events.Options) *swEnv {
	t.Helper()
	srv := natsserver.StartTB(t, so)
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := events.Provision(ctx, js, opts); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return &swEnv{srv: srv, nc: nc, js: js, opts: opts}
}

func swLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SKILLBUS_TEST_LOGS") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// swWorker starts a worker on its own connection; it is stopped at cleanup.
func swWorker(t testing.TB, env *swEnv, cfg seqworker.Config) *seqworker.Worker {
	t.Helper()
	nc := natsserver.ConnectTB(t, env.srv)
	cfg.Provision = env.opts
	if cfg.Logger == nil {
		cfg.Logger = swLogger(t)
	}
	if cfg.RetryInitial == 0 {
		cfg.RetryInitial, cfg.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	}
	if cfg.RedeliveryDelay == 0 {
		cfg.RedeliveryDelay, cfg.RedeliveryMaxDelay = 100*time.Millisecond, 500*time.Millisecond
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = 500 * time.Millisecond
	}
	w, err := seqworker.New(nc, cfg)
	if err != nil {
		t.Fatalf("seqworker.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

// swServe serves tools on their own connection until cleanup.
func swServe(t testing.TB, env *swEnv, tools ...tool.Tool) {
	t.Helper()
	nc := natsserver.ConnectTB(t, env.srv)
	s, err := tool.Serve(nc, tool.ServerConfig{Name: "seqworker-test-tools"}, tools...)
	if err != nil {
		t.Fatalf("tool.Serve: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
}

// swStore parses a sequence (YAML or JSON source) and stores it in
// SEQUENCES as the registry does; it returns the KV revision.
func swStore(t testing.TB, env *swEnv, src string) uint64 {
	t.Helper()
	s, err := seq.Parse([]byte(src))
	if err != nil {
		t.Fatalf("seq.Parse: %v", err)
	}
	b, err := seq.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := env.js.KeyValue(context.Background(), events.BucketSequences)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(context.Background(), events.KeyFor(s.Name), b)
	if err != nil {
		t.Fatalf("store %s: %v", s.Name, err)
	}
	return rev
}

// swRequest publishes a run request for a stored sequence.
func swRequest(t testing.TB, env *swEnv, runID, sequence string, args any) {
	t.Helper()
	req := &events.RunRequest{RunID: runID, Sequence: sequence}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		req.Args = b
	}
	subj, err := events.RunSubject(sequence)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.PublishMessage(context.Background(), env.js, subj, req, jetstream.WithMsgID(runID)); err != nil {
		t.Fatalf("publish run %s: %v", runID, err)
	}
}

// swState reads a run's state; ok is false when there is none.
func swState(t testing.TB, env *swEnv, runID string) (events.RunState, bool) {
	t.Helper()
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), runID)
	if err != nil {
		return events.RunState{}, false
	}
	var st events.RunState
	if err := events.Decode(e.Value(), &st); err != nil {
		t.Fatalf("run %s: state %s: %v", runID, e.Value(), err)
	}
	return st, true
}

// swWait waits until the run's state is succeeded or failed.
func swWait(t testing.TB, env *swEnv, runID string, within time.Duration) events.RunState {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, ok := swState(t, env, runID)
		if ok && (st.Status == events.StatusSucceeded || st.Status == events.StatusFailed) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not finished after %s; state %+v", runID, within, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// swResult decodes the pkg/seq result inside a state.
func swResult(t testing.TB, st events.RunState) seq.Result {
	t.Helper()
	var r seq.Result
	if err := json.Unmarshal(st.Result, &r); err != nil {
		t.Fatalf("run %s: result %s: %v", st.RunID, st.Result, err)
	}
	return r
}

// swQueued counts the run requests left in SEQ_RUNS (schedules excluded).
func swQueued(t testing.TB, env *swEnv) uint64 {
	t.Helper()
	s, err := env.js.Stream(context.Background(), events.StreamSeqRuns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(events.SubjectRunAll))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// swCounter counts tool calls by name.
type swCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *swCounter) add(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	return c.n[name]
}

func (c *swCounter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// swEcho is a tool that returns its arguments and counts its calls.
func swEcho(name string, c *swCounter) tool.Tool {
	return tool.Tool{Name: name, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		if c != nil {
			c.add(name)
		}
		return args, nil
	}}
}

func swJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}

func jetstreamFetchWait(d time.Duration) jetstream.FetchOpt { return jetstream.FetchMaxWait(d) }
