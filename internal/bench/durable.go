package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DurableFloor (BENCHMARKS.md, "The durable floor") is the least a
// correct durable run on JetStream does, written directly with the
// jetstream package and nothing of skillbus: the client publishes the run
// request with a unique Nats-Msg-Id to a file-storage, R1 work-queue
// stream and waits for the publish ack; a worker takes it from a durable
// pull consumer kept pulled ahead (Consume, explicit ack), makes the G
// rounds of C parallel core requests, writes a state value (~1 KB) to a
// file-storage KV bucket after each round — Create first, then Update on
// the last revision (compare-and-set) — waiting for each ack, then acks
// the request and publishes a small "finished" message on a core subject
// the client subscribed to before it started. A run is timed from the
// publish to that message, as a skillbus run is from its start request to
// its finished event. So skillbus − raw splits into what durability on
// JetStream costs (floor − raw) and what skillbus adds (skillbus − floor).
//
// The floor makes its own stream (SKILLBUS_BENCH_<id>, subject
// _skillbus_bench.floor.<id>.run), consumer and KV bucket
// (skillbus_bench_<id>) and deletes them at the end; a user whose
// credentials may not make streams gets the bench without this row
// (Result.DurableSkipped says why).
type DurableFloor struct {
	js      jetstream.JetStream // the client's
	wjs     jetstream.JetStream // the worker's
	stream  string
	subject string
	done    string // the finished messages' subject prefix
	kv      jetstream.KeyValue
	cc      jetstream.ConsumeContext
	sub     *nats.Subscription
	worker  *nats.Conn
	raw     string
	groups  int
	calls   int
	argsOf  func(g, k int) []byte
	id      string
	n       atomic.Int64
	handled sync.WaitGroup
	waiters waiters[string]
}

// floorRequest is the durable floor's run request (~200 bytes with the
// arguments).
type floorRequest struct {
	Run      string          `json:"run"`
	Sequence string          `json:"sequence"`
	Args     json.RawMessage `json:"args"`
}

// floorState is the state the floor's worker writes after each round.
type floorState struct {
	Run     string            `json:"run"`
	Status  string            `json:"status"`
	Group   int               `json:"group"`
	Results []json.RawMessage `json:"results"`
}

// StartDurableFloor provisions the floor's stream, consumer and bucket,
// named after id (letters and digits), and starts its worker on worker: a
// run makes groups rounds of calls parallel core requests to the subject
// raw (a plain echo), with argsOf(g, k) as the arguments of call k of
// round g. Runs are published on nc. Close removes it all. Errors: what
// JetStream answered (a user without the right to make streams: a
// permissions violation).
func StartDurableFloor(ctx context.Context, nc, worker *nats.Conn, id, raw string, groups, calls int, argsOf func(g, k int) []byte) (*DurableFloor, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	wjs, err := jetstream.New(worker)
	if err != nil {
		return nil, err
	}
	f := &DurableFloor{
		js: js, wjs: wjs, worker: worker, raw: raw, groups: groups, calls: calls, argsOf: argsOf, id: id,
		stream:  "SKILLBUS_BENCH_" + id,
		subject: "_skillbus_bench.floor." + id + ".run",
		done:    "_skillbus_bench.floor." + id + ".done.",
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(pctx, jetstream.StreamConfig{
		Name: f.stream, Subjects: []string{f.subject}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Replicas: 1, Duplicates: 2 * time.Minute,
	}); err != nil {
		return nil, fmt.Errorf("create the stream %s: %w", f.stream, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	if f.kv, err = wjs.CreateKeyValue(pctx, jetstream.KeyValueConfig{Bucket: "skillbus_bench_" + id, History: 1, Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
		return nil, fmt.Errorf("create the bucket skillbus_bench_%s: %w", id, err)
	}
	cons, err := wjs.CreateOrUpdateConsumer(pctx, f.stream, jetstream.ConsumerConfig{
		Durable: "floor-worker", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 5, MaxAckPending: 1024,
	})
	if err != nil {
		return nil, fmt.Errorf("create the consumer of %s: %w", f.stream, err)
	}
	if f.sub, err = nc.Subscribe(f.done+"*", f.onDone); err != nil {
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	if f.cc, err = cons.Consume(func(m jetstream.Msg) {
		f.handled.Add(1)
		go func() {
			defer f.handled.Done()
			f.handle(m)
		}()
	}, jetstream.PullMaxMessages(128)); err != nil {
		return nil, err
	}
	ok = true
	return f, nil
}

// onDone hands a finished message to its run's waiter.
func (f *DurableFloor) onDone(m *nats.Msg) {
	run := strings.TrimPrefix(m.Subject, f.done)
	f.waiters.deliver(run, string(m.Data))
}

// handle is the worker's part of one run: the rounds, a checkpoint after
// each, the ack, the finished message. A redelivered request resumes
// after its last checkpoint (a finished run is only acked and announced).
func (f *DurableFloor) handle(m jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req floorRequest
	if err := json.Unmarshal(m.Data(), &req); err != nil || req.Run == "" {
		_ = m.Term()
		return
	}
	var rev uint64
	first := 1
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
		if e, err := f.kv.Get(ctx, req.Run); err == nil {
			var st floorState
			if json.Unmarshal(e.Value(), &st) == nil {
				rev, first = e.Revision(), st.Group+1
				if st.Status == "succeeded" {
					first = f.groups + 1
				}
			}
		}
	}
	for g := first; g <= f.groups; g++ {
		results := make([]json.RawMessage, f.calls)
		errs := make(chan error, f.calls)
		for k := range f.calls {
			go func() {
				r, err := f.worker.RequestWithContext(ctx, f.raw, f.argsOf(g, k+1))
				if err == nil {
					results[k] = r.Data
				}
				errs <- err
			}()
		}
		var failed error
		for range f.calls {
			if err := <-errs; err != nil && failed == nil {
				failed = err
			}
		}
		if failed != nil {
			_ = m.Nak()
			return
		}
		status := "running"
		if g == f.groups {
			status = "succeeded"
		}
		b, _ := json.Marshal(floorState{Run: req.Run, Status: status, Group: g, Results: results})
		var err error
		if rev == 0 {
			rev, err = f.kv.Create(ctx, req.Run, b)
		} else {
			rev, err = f.kv.Update(ctx, req.Run, b, rev)
		}
		if err != nil {
			_ = m.Nak()
			return
		}
	}
	_ = m.Ack()
	_ = f.worker.Publish(f.done+req.Run, fmt.Appendf(nil, `{"run":%q,"status":"succeeded","revision":%d}`, req.Run, rev))
}

// Run makes one durable run and waits for its finished message; it
// returns the number of tool calls it made. Errors: the publish's, a run
// that did not succeed, ctx's.
func (f *DurableFloor) Run(ctx context.Context) (int, error) {
	run := fmt.Sprintf("floor-%s-%d", f.id, f.n.Add(1))
	ch, done := f.waiters.add(run)
	defer done()
	b, _ := json.Marshal(floorRequest{Run: run, Sequence: "durable-floor", Args: f.argsOf(0, 0)})
	if _, err := f.js.Publish(ctx, f.subject, b, jetstream.WithMsgID(run)); err != nil {
		return 0, err
	}
	select {
	case msg := <-ch:
		if !strings.Contains(msg, `"status":"succeeded"`) {
			return 0, fmt.Errorf("durable floor run %s: %s", run, msg)
		}
		return f.groups * f.calls, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Close stops the worker, waits for the runs it handles, and deletes the
// stream and the bucket.
func (f *DurableFloor) Close() {
	if f.cc != nil {
		f.cc.Stop()
	}
	f.handled.Wait()
	if f.sub != nil {
		_ = f.sub.Unsubscribe()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f.kv != nil {
		_ = f.wjs.DeleteKeyValue(ctx, "skillbus_bench_"+f.id)
	}
	_ = f.js.DeleteStream(ctx, f.stream)
}
