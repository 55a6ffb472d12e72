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

// swWait waits until the run's state is succeeded or failed, watching its
// RUNS key (swUntil); within is the only bound.
func swWait(t testing.TB, env *swEnv, runID string, within time.Duration) events.RunState {
	t.Helper()
	return swUntil(t, env, runID, within, "finished", func(st events.RunState) bool {
		return st.Status == events.StatusSucceeded || st.Status == events.StatusFailed
	})
}

// swUntil watches the run's key in RUNS and returns the first state for
// which cond holds, checking the state stored when it starts and then
// every update: a test waits on the write itself, not on a poll. (A state
// that already holds is returned after one read, with no watch.) within
// is a generous bound for a loaded machine, not a time the behaviour must
// meet; past it swUntil fails t naming what it waited for and the last
// state seen (or that there was none).
func swUntil(t testing.TB, env *swEnv, runID string, within time.Duration, what string, cond func(events.RunState) bool) events.RunState {
	t.Helper()
	// One read first: a run already there needs no watch (a watch is a
	// consumer the server makes and removes, work a test of 200 runs
	// would add to the workers' load).
	last, seen := swState(t, env, runID)
	if seen && cond(last) {
		return last
	}
	swWatchRuns(t, env.js, runID, within, func(key string, st events.RunState) bool {
		last, seen = st, true
		return cond(st)
	}, func() string {
		if !seen {
			return fmt.Sprintf("run %s not %s within %s: no state in RUNS", runID, what, within)
		}
		return fmt.Sprintf("run %s not %s within %s; last state %s (attempt %d, %d groups, worker %q): %s", runID, what, within, last.Status, last.Attempt, last.FinishedGroups, last.Worker, last.Error)
	})
	return last
}

// swUntilAll watches every key of RUNS (on any connection js) and returns once cond holds for
// the latest states seen (by run id, the deleted ones left out), checked
// after the stored states are read and then at every update. Past within
// it fails t naming what and the states seen.
func swUntilAll(t testing.TB, js jetstream.JetStream, within time.Duration, what string, cond func(map[string]events.RunState) bool) map[string]events.RunState {
	t.Helper()
	runs := map[string]events.RunState{}
	swWatchRuns(t, js, ">", within, func(key string, st events.RunState) bool {
		if key != "" {
			runs[key] = st
		}
		return cond(runs)
	}, func() string {
		var b []string
		for id, st := range runs {
			b = append(b, id+" "+string(st.Status))
		}
		return fmt.Sprintf("not %s within %s; runs seen: %v", what, within, b)
	})
	return runs
}

// swWatchRuns watches RUNS keys matching pattern (one run id, or ">" for
// all) and calls each with every state stored and then every update until
// it returns true. With ">", each sees the stored states first and is
// asked only from the end of those on (key "" then), so a condition over
// several runs is never decided on half of them. Past within it fails t
// with failure's message.
func swWatchRuns(t testing.TB, js jetstream.JetStream, pattern string, within time.Duration, each func(key string, st events.RunState) bool, failure func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	kv, err := js.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, pattern, jetstream.IgnoreDeletes())
	if err != nil {
		t.Fatalf("watch RUNS %s: %v", pattern, err)
	}
	defer func() { _ = w.Stop() }()
	all, caughtUp := pattern == ">", false
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					t.Fatal(failure())
				}
				t.Fatalf("the watch of RUNS %s ended: %s", pattern, failure())
			}
			if e == nil { // the stored states are all read
				caughtUp = true
				if all && each("", events.RunState{}) {
					return
				}
				continue
			}
			var st events.RunState
			if err := events.Decode(e.Value(), &st); err != nil {
				t.Fatalf("run %s: state %s: %v", e.Key(), e.Value(), err)
			}
			if all && !caughtUp {
				each(e.Key(), st) // recorded; decided at the end of the stored states
				continue
			}
			if each(e.Key(), st) {
				return
			}
		case <-ctx.Done():
			t.Fatal(failure())
		}
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

// swDrained waits until no run request is left in SEQ_RUNS (swQueued is 0)
// and fails t with the count left after within. It reads the stream's
// state every 20 ms: a work queue's message count changes with no event a
// client can watch (the acknowledgement that removes a request is the
// worker's), so this is the one polling helper of the package.
func swDrained(t testing.TB, env *swEnv, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := swQueued(t, env)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d run requests left in %s after %s; want 0: %s", n, events.StreamSeqRuns, within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// swSubjectUntil waits for a message on subject that a stream stores,
// for streams an ordered consumer may not read (SEQ_RUNS is a work
// queue): it subscribes to subject first, then reads the last message the
// stream holds on it, then each new one the subscription gets, and returns
// the headers of the first for which cond holds. within is a generous
// bound; past it swSubjectUntil fails t naming what and the last headers
// seen.
func swSubjectUntil(t testing.TB, nc *nats.Conn, js jetstream.JetStream, stream, subject string, within time.Duration, what string, cond func(nats.Header, []byte) bool) nats.Header {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	msgs := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(subject, msgs)
	if err != nil {
		t.Fatalf("subscribe %s: %v", subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.FlushWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	var last nats.Header
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetLastMsgForSubject(ctx, subject); err == nil {
		if last = m.Header; cond(m.Header, m.Data) {
			return m.Header
		}
	}
	for {
		select {
		case m := <-msgs:
			if last = m.Header; cond(m.Header, m.Data) {
				return m.Header
			}
		case <-ctx.Done():
			t.Fatalf("no %s on %s (%s) within %s; last headers seen: %v", what, subject, stream, within, last)
		}
	}
}

// swStreamUntil reads the messages of stream on subject (a filter: may end
// in ">"), the last one stored first and then each new one as it is
// stored, and returns the first for which cond holds: the test waits on
// the message itself, not on polls of the stream. within is a generous
// bound; past it swStreamUntil fails t naming what and the last message
// seen.
func swStreamUntil(t testing.TB, js jetstream.JetStream, stream, subject string, within time.Duration, what string, cond func(jetstream.Msg) bool) jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		t.Fatalf("read %s on %s: %v", stream, subject, err)
	}
	last := "none"
	for {
		m, err := c.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("no %s on %s (%s) within %s; last message seen: %s", what, subject, stream, within, last)
			}
			continue // a fetch cut short (a reconnect): read on
		}
		last = fmt.Sprintf("%s %.300s", m.Subject(), m.Data())
		if cond(m) {
			return m
		}
	}
}
