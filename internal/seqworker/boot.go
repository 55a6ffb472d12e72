package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// startBoot starts consuming the shared durable consumer on the
// agent_ready events (events.BootConsumerConfig). Provisioning creates it,
// retried until the cluster answers; it is created here only when it is
// missing (deleted by hand since, or provisioning was left to this call).
func (w *Worker) startBoot(ctx context.Context) error {
	var cons jetstream.Consumer
	// Tried again while it fails for a passing reason, as Start's other
	// lookups are.
	err := w.persist(ctx, "start: look up consumer "+events.ConsumerSeqworkerBoot, func(c context.Context) (err error) {
		cons, err = w.js.Consumer(c, events.StreamEvents, events.ConsumerSeqworkerBoot)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = w.js.CreateOrUpdateConsumer(c, events.StreamEvents, events.BootConsumerConfig(w.cfg.Provision))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("seqworker: consumer %s on %s: %w", events.ConsumerSeqworkerBoot, events.StreamEvents, err)
	}
	w.bootCC, err = cons.Consume(func(msg jetstream.Msg) {
		ctx, span := events.StartReceiveSpan(w.runCtx, msg.Headers(), msg.Subject(), len(msg.Data()))
		err := w.onAgentReady(ctx, msg)
		events.EndSpan(span, err)
	}, jetstream.PullMaxMessages(16))
	if err != nil {
		return fmt.Errorf("seqworker: consume %s: %w", events.ConsumerSeqworkerBoot, err)
	}
	return nil
}

// onAgentReady starts every boot sequence once for the event's agent and
// boot id. Each run is guarded by a create-only RUNS key (pending state) —
// which outlives the stream's duplicate window — and published with its
// deterministic id as Nats-Msg-Id.
func (w *Worker) onAgentReady(ctx context.Context, msg jetstream.Msg) error {
	var ev events.AgentReady
	if err := events.Decode(msg.Data(), &ev); err != nil {
		w.log.Warn("agent_ready rejected", "subject", msg.Subject(), "err", err)
		_ = msg.TermWithReason(clip(err.Error(), 200))
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, name := range w.cat.boot() {
		if err := w.startBootRun(ctx, ev, name); err != nil {
			w.log.Warn("boot run not started; retrying the event", "agent", ev.Agent, "sequence", name, "err", err)
			_ = msg.Nak()
			return err
		}
	}
	return msg.Ack()
}

func (w *Worker) startBootRun(ctx context.Context, ev events.AgentReady, name string) error {
	id := BootRunID(ev.Agent, ev.BootID, name)
	req := &events.RunRequest{RunID: id, Sequence: name, Trigger: events.TriggerBoot, Agent: ev.Agent, BootID: ev.BootID, RequestedAt: time.Now().UTC()}
	args, err := w.bootArgs(ctx, name, ev)
	if err != nil {
		return err
	}
	req.Args = args
	return w.enqueue(ctx, req)
}

// bootArgs returns the run arguments of a boot run of the sequence name:
// those of seq.BootArgs (agent, boot_id) that its signature declares, from
// the agent_ready event; nil when it declares none.
func (w *Worker) bootArgs(ctx context.Context, name string, ev events.AgentReady) (json.RawMessage, error) {
	s, _, err := w.cat.get(ctx, name)
	if err != nil {
		return nil, err
	}
	args := map[string]string{}
	for k := range s.Signature {
		switch k {
		case "agent":
			args[k] = ev.Agent
		case "boot_id":
			args[k] = ev.BootID
		}
	}
	if len(args) == 0 {
		return nil, nil
	}
	return json.Marshal(args)
}

// enqueue records a queued state for req (create-only) and publishes the
// request, with the queued state's revision in events.HeaderPendingRevision
// (a claim hint: see run.claim). A queued state left by an earlier attempt
// that died before publishing is published again (the stream drops a
// duplicate inside its window; a worker skips a run whose state is
// finished). Errors: a terminalError wrapping errRunIDReused when the run
// id belongs to another request; NATS errors.
func (w *Worker) enqueue(ctx context.Context, req *events.RunRequest) error {
	_, err := w.enqueueOnce(ctx, req)
	return err
}

// enqueueOnce is enqueue, also reporting whether the run existed already
// (started, or done) so that nothing new was queued.
func (w *Worker) enqueueOnce(ctx context.Context, req *events.RunRequest) (existed bool, err error) {
	now := time.Now().UTC()
	digest := events.RequestDigest(req)
	st := &events.RunState{RunID: req.RunID, Sequence: req.Sequence, Status: events.StatusQueued, Trigger: trigger(req), Request: digest,
		Args: req.Args, Inline: req.Inline, Agent: req.Agent, BootID: req.BootID, CreatedAt: now, UpdatedAt: now, ScheduleEntry: req.ScheduleEntry}
	if req.ScheduleEntry != "" {
		st.ScheduledAt = req.RequestedAt
	}
	if len(req.Inline) > 0 && st.Sequence == "" {
		if s, err := seq.Decode(req.Inline); err == nil {
			st.Sequence, st.Groups = s.Name, len(s.Groups)
		}
	}
	rev, err := w.writeState(ctx, st, 0)
	if err != nil {
		if !errors.Is(err, errConflict) {
			return false, err
		}
		var cur *events.RunState
		cur, rev, err = w.readState(ctx, req.RunID)
		if err != nil {
			return false, err
		}
		if cur != nil && cur.Request != "" && cur.Request != digest {
			// The run id is an idempotency key: the same request again is
			// this run; another request under the same id is a mistake.
			return false, &terminalError{fmt.Errorf("%w: run id %q was already used for sequence %q with other arguments or another definition; "+
				"omit the run id to get a new one, or choose an unused one", errRunIDReused, req.RunID, cur.Sequence)}
		}
		if cur != nil && (cur.Status != events.StatusQueued || cur.Attempt > 0) {
			return true, nil // already started (or done)
		}
		existed = cur != nil // queued by an earlier request: published again below
		st = cur
	}
	if st != nil && rev > 0 {
		w.rememberQueued(st, rev)
	}
	subjName := req.Sequence
	if len(req.Inline) > 0 {
		subjName = events.InlineRunToken
	}
	subj, err := events.RunSubject(subjName)
	if err != nil {
		return false, &terminalError{err}
	}
	b, err := events.Encode(req)
	if err != nil {
		return false, &terminalError{err}
	}
	m := &nats.Msg{Subject: subj, Data: b, Header: nats.Header{}}
	if rev > 0 {
		m.Header.Set(events.HeaderPendingRevision, strconv.FormatUint(rev, 10))
	}
	_, err = events.Publish(ctx, w.js, m, jetstream.WithMsgID(req.RunID))
	return existed, err
}

// errRunIDReused: a run request reuses the run id of a run that was
// started with another request (RunState.Request differs).
var errRunIDReused = errors.New("seqworker: run id already used")
