// Package seqworker runs tool sequences as a durable, distributed service
// (docs/sequences.md, docs/runs.md): any number of replicas share run
// requests from the SEQ_RUNS work queue, checkpoint every finished group in
// the RUNS bucket, start boot sequences on agent_ready, keep the
// server-side schedules of scheduled sequences in line with the SEQUENCES
// bucket, and serve the skillbus.seq.* micro endpoints (seq_call, run,
// status, cancel, list, rerun).
//
// # Guarantees
//
//   - Run lifecycle (docs/runs.md): queued → running → succeeded | failed |
//     cancelled, with interrupted when the holder stopped. The state names
//     the holder (Config.WorkerID), its last heartbeat and the trigger.
//   - A run request is acknowledged only after the run's final state is in
//     RUNS. While it runs, the holder sends in-progress acks and renews the
//     state's heartbeat every Config.Heartbeat (long tool calls included),
//     so the consumer's short ack wait (10 s by default) only passes when the
//     holder is dead: the server then redelivers the request and the next
//     worker resumes after the last checkpointed group (a `resumed` event
//     says so). A tool of the group that was running may thus be called
//     twice (at-least-once); a finished group is never run again — also when
//     its slots are large: they live in the RUN_SLOTS object store.
//   - Stop stops intake, lets running groups finish within its deadline
//     (a run whose group finishes stops before its next one), then stores
//     each unfinished run as interrupted and hands its request back at once
//     (Nak without delay).
//   - Every state write is compare-and-set on the RUNS key's revision and
//     carries the delivery count (RunState.Attempt): a worker that lost its
//     delivery (paused past the ack wait while another took over) gets a
//     conflict and stops, so it cannot overwrite the new owner's state. A
//     conflict caused by a cancel request makes the holder cancel the run.
//   - The claim hint (events.HeaderPendingRevision) that enqueue puts on
//     requests only skips the create-only claim attempt: the state is read
//     and the claim is made only over a queued (or interrupted, or
//     abandoned running) state of the same request digest; a finished run is
//     never run again whatever the hint says, and a request whose digest
//     differs from the state's is terminated.
//   - A run that cannot succeed (unknown sequence, undecodable request or
//     sequence, an identifier over its limit, a checkpoint of a changed
//     sequence) is terminated at once (Term) with the reason in its RUNS
//     state when it has a usable run id. Faults of NATS itself (a state
//     write timing out while a stream elects a leader, a lost connection,
//     a reply lost across a reconnect) do not use the run's deliveries:
//     they are waited out on the worker that holds the run (faults.go;
//     docs/runs.md, "NATS faults"). What still fails after that is handed
//     back with a doubling delay; a run whose deliveries are exhausted
//     ends failed in RUNS with the reason.
//   - Boot runs have deterministic ids (BootRunID), are guarded by a
//     create-only RUNS key and published with Nats-Msg-Id, so each boot
//     sequence runs once per agent and boot id however many replicas see
//     the agent_ready event and however often it is redelivered.
//   - Scheduled sequences run on the NATS server's message schedules (one
//     tick per schedule for the whole cluster); tick run ids carry the
//     tick's own time (TickTime, TickRunID). Every replica reconciles the
//     schedule messages with the SEQUENCES bucket; a tick of a sequence that
//     is no longer scheduled is dropped.
//
// # Cost
//
// Beside the tool calls, a run costs, on the worker's critical path: one
// claim (a create-only write for a request published directly; a read and
// a compare-and-set for a run queued through seq.run or a boot), one RUNS
// write per finished group but the last (the final state is the last
// group's checkpoint), and three or more events published without
// waiting. Every state write carries the run's summary in headers, which
// is what `runs ls` reads. Each finished group is encoded to JSON once per
// run and reused by the later checkpoints, the final state and its group
// event. BenchmarkSeqworker in test/integration measures the overhead
// against raw request/reply.
package seqworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
	"go.opentelemetry.io/otel/metric"
)

// ErrStopped is returned by Start on a worker that was stopped.
var ErrStopped = errors.New("seqworker: worker stopped")

// Worker is one seqworker replica. Create it with New, then either Run it
// until its context ends, or Start and later Stop it.
type Worker struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	cfg    Config
	log    *slog.Logger
	caller seq.Caller
	met    *metrics.Seqworker  // metrics.go
	attrs  attrCache           // the measurements' attribute sets (metrics.go)
	waits  metric.Int64Counter // skillbus.runs.waits; nil without metrics (wait.go)

	runs       jetstream.KeyValue
	slots      jetstream.ObjectStore // large slot values; nil if unavailable
	maxValue   int                   // largest RUNS value that can be written
	sequences  jetstream.KeyValue
	stream     jetstream.Stream
	consumer   jetstream.Consumer
	liveValues *liveConsumer // the consumer's AckWait and MaxDeliver, followed (follow.go)
	cat        *catalog
	defs       *defStore // definitions of runs (definition.go)

	runSlots  chan struct{} // a token per running run
	callSlots chan struct{} // a token per running seq_call

	// runCtx is the parent of every run and call; cancelled when a stop's
	// deadline passes.
	runCtx    context.Context
	runCancel context.CancelFunc
	// intakeCtx ends the fetch loop, the boot consumer and the watchers.
	intakeCtx    context.Context
	intakeCancel context.CancelFunc

	inflight sync.WaitGroup // runs and calls
	loops    sync.WaitGroup // fetch loop, watcher, reconciler

	svc       micro.Service
	advSub    *nats.Subscription
	cancelSub *nats.Subscription

	// stopping is set when Stop begins: a run whose group finishes then
	// is handed back instead of starting its next group.
	stopping atomic.Bool
	// heldMu guards held: the runs this worker holds, by run id.
	heldMu sync.Mutex
	held   map[string]*run
	// beatMu guards beating: the runs whose requests the heartbeat keeps
	// (heartbeat.go); beatDone is closed when beatLoop returns.
	beatMu   sync.Mutex
	beating  map[*run]struct{}
	beatDone chan struct{}
	// queuedMu guards queued: the runs this worker queued whose request
	// it has not claimed yet (queued.go).
	queuedMu sync.Mutex
	queued   map[string]queuedMemo

	room roomGauge // how full the stores are (room.go)

	// runsTTL is the RUNS bucket's TTL as last read, for parking waits
	// (wait.go).
	runsTTL runsTTLCache

	// schedMu guards schedKV: the SEQ_SCHEDULES bucket, opened at first
	// use (entries.go).
	schedMu sync.Mutex
	schedKV jetstream.KeyValue
	// schedMetOnce makes schedMet, the schedules' instruments
	// (schedmetrics.go), at first use.
	schedMetOnce sync.Once
	schedMet     *schedInstruments

	bootCC  jetstream.ConsumeContext
	recheck chan string // sequence names whose schedule to reconcile
	conn    *connWatch  // reconnects, for the tries of persist

	// mu guards state, draining and stopErr, and orders inflight.Add
	// before the final inflight.Wait.
	mu       sync.Mutex
	state    int // 0 new, 1 started, 2 stopped
	draining bool
	stopErr  error
}

// begin registers one run or call; false once Stop waits for them.
func (w *Worker) begin() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.draining {
		return false
	}
	w.inflight.Add(1)
	return true
}

// New returns a worker on nc (which the caller owns and drains after Stop).
// Errors: ErrConfig naming the bad field.
func New(nc *nats.Conn, cfg Config) (*Worker, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil NATS connection", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("seqworker: jetstream: %w", err)
	}
	caller := cfg.Caller
	if caller == nil {
		c, err := tool.NewClient(nc)
		if err != nil {
			return nil, fmt.Errorf("seqworker: tool client: %w", err)
		}
		caller = c
	}
	w := &Worker{
		nc: nc, js: js, cfg: cfg, log: cfg.Logger, caller: caller,
		runSlots:  make(chan struct{}, cfg.Concurrency),
		callSlots: make(chan struct{}, cfg.Concurrency),
		recheck:   make(chan string, 1024),
		held:      map[string]*run{},
		beating:   map[*run]struct{}{},
		queued:    map[string]queuedMemo{},
		conn:      newConnWatch(),
	}
	w.defs, w.liveValues = newDefStore(), newLiveConsumer() // definition.go, follow.go
	w.runCtx, w.runCancel = context.WithCancel(context.Background())
	w.intakeCtx, w.intakeCancel = context.WithCancel(context.Background())
	w.initMetrics()
	return w, nil
}

// Run starts the worker and serves until ctx ends, then stops it
// gracefully within Config.ShutdownTimeout. It returns nil after a clean
// stop. Errors: those of Start and Stop.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), w.cfg.ShutdownTimeout)
	defer cancel()
	return w.Stop(sctx)
}

// Start provisions the NATS resources (events.Provision; not when
// Config.Provisioned), loads the
// SEQUENCES bucket, reconciles the schedules and starts taking run
// requests, agent_ready events and micro requests. ctx bounds the start
// only (30 s when it has no deadline). Errors: ErrStopped, events.ErrProvision, NATS errors.
func (w *Worker) Start(ctx context.Context) (err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	w.mu.Lock()
	if w.state != 0 {
		w.mu.Unlock()
		return fmt.Errorf("%w: Start called twice or after Stop", ErrStopped)
	}
	w.state = 1
	w.mu.Unlock()
	defer func() {
		if err != nil {
			w.intakeCancel()
			w.runCancel()
			w.loops.Wait()
		}
	}()

	w.conn.watch(w.nc, w.runCtx.Done())
	if !w.cfg.Provisioned {
		if err := events.Provision(ctx, w.js, w.cfg.Provision); err != nil {
			return err
		}
	}
	// Each lookup is tried again while it fails for a passing reason
	// (persist): in a cluster that has just formed, or whose meta leader
	// moves, a JetStream API request can go unanswered, and one such
	// request must not use up the whole start budget.
	lookup := func(what string, op func(context.Context) error) error {
		if err := w.persist(ctx, "start: look up "+what, op); err != nil {
			return fmt.Errorf("seqworker: %s: %w", what, err)
		}
		return nil
	}
	if err := lookup("bucket "+events.BucketRuns, func(c context.Context) (err error) { w.runs, err = w.js.KeyValue(c, events.BucketRuns); return }); err != nil {
		return err
	}
	if err := lookup("bucket "+events.BucketSequences, func(c context.Context) (err error) {
		w.sequences, err = w.js.KeyValue(c, events.BucketSequences)
		return
	}); err != nil {
		return err
	}
	if err := lookup("stream "+events.StreamSeqRuns, func(c context.Context) (err error) { w.stream, err = w.js.Stream(c, events.StreamSeqRuns); return }); err != nil {
		return err
	}
	if err := lookup("consumer "+events.ConsumerSeqworker, func(c context.Context) (err error) {
		w.consumer, err = w.js.Consumer(c, events.StreamSeqRuns, events.ConsumerSeqworker)
		return
	}); err != nil {
		return err
	}
	if w.slots, err = w.js.ObjectStore(ctx, events.BucketRunSlots); err != nil {
		w.log.Warn("object store for large slot values unavailable; large slots fail their run", "bucket", events.BucketRunSlots, "err", err)
		w.slots = nil
	}
	w.maxValue = int(w.nc.MaxPayload()) - 16<<10 // room for the headers
	if st, err := w.runs.Status(ctx); err == nil {
		if mv := int(st.Config().MaxValueSize); mv > 0 && mv < w.maxValue {
			w.maxValue = mv
		}
	}
	ci := w.consumer.CachedInfo()
	w.liveValues.set(ci.Config.AckWait, ci.Config.MaxDeliver)
	if w.cfg.Heartbeat > w.ackWaitNow()/2 {
		w.log.Warn("heartbeat too slow for the ack wait; using a third of the ack wait", "heartbeat", w.cfg.Heartbeat, "ack_wait", w.ackWaitNow())
	}
	w.cat = newCatalog(w.sequences)

	if err := w.startWatcher(ctx); err != nil {
		return err
	}
	if w.advSub, err = w.nc.QueueSubscribe(events.AdvisoryMaxDeliveriesSeqworker, events.ConsumerSeqworker, w.onMaxDeliveries); err != nil {
		return fmt.Errorf("seqworker: subscribe to max-deliveries advisories: %w", err)
	}
	cancelSubj, _ := events.RunEventSubject("x", events.RunCancelling)
	if w.cancelSub, err = w.nc.Subscribe(strings.Replace(cancelSubj, ".x.", ".*.", 1), w.onCancelSignal); err != nil {
		return fmt.Errorf("seqworker: subscribe to cancel requests: %w", err)
	}
	if err := w.startBoot(ctx); err != nil {
		return err
	}
	if err := w.startService(); err != nil {
		return err
	}
	// Make the subscriptions known to the server before returning, so a
	// request sent right after Start finds the endpoints.
	if err := w.nc.FlushTimeout(10 * time.Second); err != nil {
		return fmt.Errorf("seqworker: flush subscriptions: %w", err)
	}
	w.beatDone = make(chan struct{})
	go w.beatLoop(w.beatDone)
	w.loops.Add(2)
	go w.fetchLoop()
	go w.followConsumer()
	w.log.Info("seqworker started", "worker", w.cfg.WorkerID, "concurrency", w.cfg.Concurrency, "ack_wait", w.ackWaitNow(), "heartbeat", w.beatEvery(), "max_deliver", w.maxDeliverNow())
	return nil
}

// Stop stops the worker in two phases: it stops intake at once (no more
// fetches, agent_ready events or micro requests) and lets the running
// groups and calls go on until ctx is done — a run whose group finishes
// meanwhile stops before its next group; at the deadline it interrupts the
// rest. Every unfinished run is stored as interrupted (with its last
// finished group) and handed back to the queue at once for another
// replica; Stop waits for them to return. It does not
// close the NATS connection (the caller drains it). Stop is safe to call
// more than once; later calls return the first result. Errors: ctx's error
// when runs had to be interrupted.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if w.state == 2 {
		defer w.mu.Unlock()
		return w.stopErr
	}
	started := w.state == 1
	w.state = 2
	w.mu.Unlock()

	w.stopping.Store(true)
	w.intakeCancel()
	var err error
	if started {
		if w.bootCC != nil {
			w.bootCC.Stop()
		}
		if w.svc != nil {
			if e := w.svc.Stop(); e != nil {
				w.log.Warn("stop micro service", "err", e)
			}
		}
		w.loops.Wait()
		if w.advSub != nil {
			_ = w.advSub.Unsubscribe()
		}
		defer func() {
			if w.cancelSub != nil {
				_ = w.cancelSub.Unsubscribe()
			}
		}()
		w.mu.Lock()
		w.draining = true
		w.mu.Unlock()
		done := make(chan struct{})
		go func() { w.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("seqworker: stop: runs interrupted at the deadline (they resume elsewhere from their last checkpoint): %w", ctx.Err())
			w.runCancel()
			<-done
		}
	}
	w.runCancel()
	if w.beatDone != nil {
		<-w.beatDone
	}
	w.mu.Lock()
	w.stopErr = err
	w.mu.Unlock()
	_ = w.met.Unregister()
	w.log.Info("seqworker stopped", "err", err)
	return err
}

// fetchLoop pulls run requests while there are free run slots.
func (w *Worker) fetchLoop() {
	defer w.loops.Done()
	for {
		select {
		case w.runSlots <- struct{}{}:
		case <-w.intakeCtx.Done():
			return
		}
		free := 1
	more:
		for free < w.cfg.Concurrency {
			select {
			case w.runSlots <- struct{}{}:
				free++
			default:
				break more
			}
		}
		fctx, cancel := context.WithTimeout(w.intakeCtx, w.cfg.FetchWait)
		batch, err := w.consumer.Fetch(free, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			w.release(free)
			if w.intakeCtx.Err() != nil {
				return
			}
			w.log.Warn("fetch run requests", "err", err)
			sleepCtx(w.intakeCtx, time.Second)
			continue
		}
		used := 0
		for msg := range batch.Messages() {
			if used == free {
				_ = msg.Nak()
				continue
			}
			used++
			if w.intakeCtx.Err() != nil {
				// Stopping: hand the run to another replica now.
				_ = msg.Nak()
				w.release(1)
				continue
			}
			if !w.begin() {
				_ = msg.Nak()
				w.release(1)
				continue
			}
			go func() {
				defer w.inflight.Done()
				defer w.release(1)
				w.handleRun(msg)
			}()
		}
		cancel()
		w.release(free - used)
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) &&
			!errors.Is(err, context.Canceled) && !errors.Is(err, nats.ErrTimeout) {
			if w.intakeCtx.Err() != nil {
				return
			}
			w.log.Warn("fetch run requests", "err", err)
			sleepCtx(w.intakeCtx, 500*time.Millisecond)
		}
	}
}

func (w *Worker) release(n int) {
	for range n {
		<-w.runSlots
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// terminalError marks a failure that no redelivery can fix.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

func isTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}
