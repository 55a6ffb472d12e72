package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// startService adds the skillbus-seq micro service with its endpoints:
//
//	seq_call  skillbus.seq.call    events.SeqCallRequest   → events.SeqCallReply
//	run       skillbus.seq.run     events.SeqRunRequest    → events.SeqRunReply
//	status    skillbus.seq.status  events.SeqStatusRequest → events.RunState
//	cancel    skillbus.seq.cancel  events.SeqCancelRequest → events.RunState
//	list      skillbus.seq.list    events.SeqListRequest   → events.SeqListReply
//	rerun     skillbus.seq.rerun   events.SeqRerunRequest  → events.SeqRunReply
//	retry     skillbus.seq.retry   events.SeqRetryRequest  → events.SeqRunReply
//	signal    skillbus.seq.signal  events.SeqSignalRequest → events.RunState
//
// Bad input (including an identifier over its limit, events.MaxRunIDLength
// and the like) gets a micro error with code "400", an unknown group,
// sequence or run "404", a conflict (a run id reused, a finished run
// cancelled) "409", a NATS failure "503", a worker that is stopping "503".
func (w *Worker) startService() error {
	svc, err := micro.AddService(w.nc, micro.Config{
		Name:        events.ServiceSeq,
		Version:     version.String(), // the one skillbus version (internal/version)
		Description: "skillbus sequence runner: seq_call, run, status, cancel, list, rerun, retry, signal (docs/runs.md)",
		QueueGroup:  events.ServiceSeq,
	})
	if err != nil {
		return fmt.Errorf("seqworker: micro service: %w", err)
	}
	w.svc = svc
	g := svc.AddGroup(events.SeqPrefix)
	for _, ep := range []struct {
		name, subj string
		h          func(context.Context, micro.Request)
	}{
		{"seq_call", "call", w.serveCall},
		{"run", "run", w.serveRun},
		{"status", "status", w.serveStatus},
		{"cancel", "cancel", w.serveCancel},
		{"list", "list", w.serveList},
		{"rerun", "rerun", w.serveRerun},
		{"retry", "retry", w.serveRetry},
		{"signal", "signal", w.serveSignal}, // wait.go
	} {
		if err := g.AddEndpoint(ep.name, w.async(ep.h), micro.WithEndpointSubject(ep.subj)); err != nil {
			return fmt.Errorf("seqworker: endpoint %s: %w", ep.name, err)
		}
	}
	return w.addScheduleEndpoints(g) // service_schedules.go
}

// async runs a handler on its own goroutine, bounded by the call slots, so
// that a long seq_call does not hold up the other requests.
func (w *Worker) async(h func(context.Context, micro.Request)) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		if why := events.Relayed(req.Reply(), nats.Header(req.Headers())); why != "" {
			w.log.Debug("dropped a message that is not a request it may answer (events.Relayed)", "subject", req.Subject(), "why", why)
			return
		}
		if w.intakeCtx.Err() != nil {
			_ = req.Error("503", "the seqworker is stopping; retry", nil)
			return
		}
		select {
		case w.callSlots <- struct{}{}:
		case <-w.intakeCtx.Done():
			_ = req.Error("503", "the seqworker is stopping; retry", nil)
			return
		}
		if !w.begin() {
			<-w.callSlots
			_ = req.Error("503", "the seqworker is stopping; retry", nil)
			return
		}
		// The handler answers after this function returns: through a
		// detached request, never through micro's (whose bookkeeping the
		// service reads once the handler returns: replying through it
		// from another goroutine is a data race).
		dreq := detach(w.nc, req)
		go func() {
			defer w.inflight.Done()
			defer func() { <-w.callSlots }()
			defer func() {
				if r := recover(); r != nil {
					w.log.Error("seq endpoint panic", "subject", dreq.Subject(), "panic", r)
					_ = dreq.Error("500", fmt.Sprintf("internal error: %v", r), nil)
				}
			}()
			ctx := events.Extract(w.runCtx, map[string][]string(dreq.Headers()))
			h(ctx, dreq)
		}()
	})
}

func (w *Worker) serveCall(ctx context.Context, req micro.Request) {
	var in events.SeqCallRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	s, ok := w.cat.group(in.Group)
	if !ok {
		_ = req.Error("404", fmt.Sprintf("no stored sequence has a group named %q: list the groups with `skillbus seqs`, or store the sequence first", in.Group), nil)
		return
	}
	args, err := decodeArgs(in.Args)
	if err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	var opts []seq.RunOption
	if w.cfg.RetryInitial > 0 || w.cfg.RetryMax > 0 {
		opts = append(opts, seq.WithRetryBackoff(w.cfg.RetryInitial, w.cfg.RetryMax))
	}
	opts = append(opts, seq.WithMaxItems(w.cfg.MaxItems))
	started := time.Now().UTC()
	slots, gr, err := seq.RunGroup(ctx, s, in.Group, w.caller, args, opts...)
	if errors.Is(err, seq.ErrArgument) && (gr == nil || len(gr.Calls) == 0 || gr.Calls[0].Attempts == 0) {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	reply := &events.SeqCallReply{V: events.Version, Group: in.Group, Sequence: s.Name, Slots: slots}
	if gr != nil {
		reply.Result, _ = json.Marshal(gr)
	}
	if err != nil {
		reply.Error = err.Error()
	}
	if gr != nil {
		// A group that never ran (a wait_for group, which only a run can
		// do) is refused in the reply and neither recorded (no call-…
		// run) nor counted as a run, as a refused argument is not.
		reply.RunID = w.recordCall(ctx, s, in, slots, gr, err, started)
		w.callDone(ctx, s, gr, err, started, reply.RunID)
	}
	w.respond(req, reply)
}

// recordCall stores a finished seq_call in RUNS as a run of one group
// (trigger seq_call), so `runs ls` and `runs show` see it; large slots go
// to the object store as for any run. It returns the run id, "" when the
// record could not be written (logged; the caller still gets its reply).
func (w *Worker) recordCall(ctx context.Context, s *seq.Sequence, in events.SeqCallRequest, slots map[string]json.RawMessage, gr *seq.GroupResult, callErr error, started time.Time) string {
	id := "call-" + nuid.Next()
	now := time.Now().UTC()
	st := &events.RunState{RunID: id, Sequence: s.Name, Status: events.StatusSucceeded, Trigger: events.TriggerSeqCall, Worker: w.cfg.WorkerID,
		Heartbeat: now, Groups: 1, Args: in.Args, Attempt: 1, CreatedAt: started, StartedAt: started, UpdatedAt: now, FinishedAt: now}
	res := &seq.Result{Sequence: s.Name, Status: seq.StatusSucceeded, Slots: slots, Duration: seq.Duration(now.Sub(started))}
	if gr != nil {
		res.Groups = []seq.GroupResult{*gr}
		if gr.Status.Finished() {
			st.FinishedGroups = 1
		}
	}
	if callErr != nil {
		st.Status, st.Error = events.StatusFailed, callErr.Error()
		res.Status, res.Error = seq.StatusFailed, callErr.Error()
	}
	r := &run{w: w, req: &events.RunRequest{RunID: id}, log: w.log.With("run", id)}
	r.st = st
	if err := r.fill(ctx, st, res, &resultCoder{}); err != nil {
		w.log.Warn("seq_call not recorded", "group", in.Group, "err", err)
		return ""
	}
	st.FinishedAt, st.UpdatedAt = now, now
	if _, err := w.writeState(ctx, st, 0); err != nil {
		w.log.Warn("seq_call not recorded", "group", in.Group, "err", err)
		return ""
	}
	return id
}

func (w *Worker) serveRun(ctx context.Context, req micro.Request) {
	var in events.SeqRunRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	if in.RunID == "" {
		in.RunID = "run-" + nuid.Next()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w.startRun(ctx, req, &events.RunRequest{RunID: in.RunID, Sequence: in.Sequence, Inline: in.Inline, Args: in.Args, Trigger: events.TriggerManual, RequestedAt: time.Now().UTC()}, "")
}

// argProblems returns every problem of args against def's signature
// (runargs.Problems: unknown, mistyped and missing arguments), sorted by
// argument name and joined with "; ", or "" when they fit.
func argProblems(def *seq.Sequence, args map[string]json.RawMessage) string {
	if def == nil {
		return ""
	}
	probs := runargs.Problems(def.Signature, args)
	if len(probs) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(probs))
	msgs := make([]string, len(keys))
	for i, k := range keys {
		msgs[i] = probs[k]
	}
	return "run arguments: " + strings.Join(msgs, "; ")
}

// startRun checks a run request that seq.run or seq.rerun makes, queues it
// and answers with its run id; what starts every error's text (seq.rerun:
// which run it reruns).
func (w *Worker) startRun(ctx context.Context, mreq micro.Request, r *events.RunRequest, what string) {
	req := prefixErrors(mreq, what)
	in := r
	// Refuse at once what can never run, rather than queueing a run that
	// fails.
	var def *seq.Sequence
	var err error
	if len(in.Inline) > 0 {
		if def, err = seq.Decode(in.Inline); err != nil {
			_ = req.Error("400", "inline sequence: "+err.Error(), nil)
			return
		}
	} else if def, err = w.cat.lookup(ctx, in.Sequence); err != nil {
		code := "503"
		if errors.Is(err, errNoSequence) {
			code = "404"
		} else if isTerminal(err) {
			code = "400"
		}
		_ = req.Error(code, err.Error(), nil)
		return
	}
	args, err := decodeArgs(in.Args)
	if err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	// The arguments are checked against the signature before the run is
	// accepted (docs/architecture.md), with the words of `run --arg`, so a
	// caller learns of a mistyped or missing argument from its request
	// instead of from a run that fails at once.
	if msg := argProblems(def, args); msg != "" {
		_ = req.Error("400", msg, nil)
		return
	}
	if err := w.roomForRun(ctx); err != nil {
		// A run already queued under this id (the same request again) is
		// still answered; a new one is refused.
		if cur, _, rerr := w.readState(ctx, r.RunID); rerr != nil || cur == nil {
			_ = req.Error("503", err.Error(), nil)
			return
		}
	}
	existed, err := w.enqueueOnce(ctx, r)
	if err != nil {
		code := "503"
		switch {
		case errors.Is(err, errRunIDReused):
			code = "409"
		case isTerminal(err):
			code = "400"
		}
		msg := errtext.Error(err) // "run id "x" was already used for …", not "seqworker: run id already used: …"
		if code == "503" {
			msg = "the run could not be queued: " + msg
		}
		_ = req.Error(code, msg, nil)
		return
	}
	w.respond(req, &events.SeqRunReply{V: events.Version, RunID: in.RunID, Existing: existed})
}

func (w *Worker) serveStatus(ctx context.Context, req micro.Request) {
	var in events.SeqStatusRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := w.runs.Get(ctx, in.RunID)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			_ = req.Error("404", fmt.Sprintf("no run %q in the %s bucket (unknown, or expired after its TTL)", in.RunID, events.BucketRuns), nil)
			return
		}
		_ = req.Error("503", err.Error(), nil)
		return
	}
	var st events.RunState
	if err := events.Decode(e.Value(), &st); err != nil {
		// Not a run state: something else was stored under its key (a
		// JetStream API answer, docs/security.md "Reply subjects are not
		// permissions"). Say so rather than pass it on.
		_ = req.Error("500", fmt.Sprintf("the %s entry of run %q (revision %d) is not a run state (%v); a running run's next write replaces it, a finished run's record is lost", events.BucketRuns, in.RunID, e.Revision(), err), nil)
		return
	}
	_ = req.Respond(e.Value())
}

// prefixErrors returns req whose Error descriptions start with what.
func prefixErrors(req micro.Request, what string) micro.Request {
	if what == "" {
		return req
	}
	return &prefixed{Request: req, what: what}
}

type prefixed struct {
	micro.Request
	what string
}

func (p *prefixed) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	return p.Request.Error(code, p.what+description, data, opts...)
}

func (w *Worker) respond(req micro.Request, m events.Message) {
	b, err := events.Encode(m)
	if err != nil {
		_ = req.Error("500", err.Error(), nil)
		return
	}
	if err := req.Respond(b); err != nil {
		w.log.Warn("reply", "subject", req.Subject(), "err", err)
		_ = req.Error("500", fmt.Sprintf("reply of %d bytes not sent: %v", len(b), err), nil)
	}
}

// detached is a micro.Request answered outside micro's request
// bookkeeping: it publishes the reply on the request's reply subject
// itself, so it may be used after the micro handler has returned (as
// pkg/tool's providers do). Errors are sent as micro sends them (headers
// Nats-Service-Error and Nats-Service-Error-Code); the service's error
// statistics do not count them.
type detached struct {
	nc             *nats.Conn
	subject, reply string
	header         nats.Header
	data           []byte
}

// detach copies what req's answer needs.
func detach(nc *nats.Conn, req micro.Request) *detached {
	return &detached{nc: nc, subject: req.Subject(), reply: req.Reply(), header: nats.Header(req.Headers()), data: req.Data()}
}

func (d *detached) publish(m *nats.Msg, opts []micro.RespondOpt) error {
	for _, o := range opts {
		o(m)
	}
	if d.reply == "" {
		return nats.ErrMsgNoReply
	}
	m.Subject = d.reply
	if err := d.nc.PublishMsg(m); err != nil {
		return fmt.Errorf("%w: %s", micro.ErrRespond, err)
	}
	return nil
}

// Respond sends data as the reply.
func (d *detached) Respond(data []byte, opts ...micro.RespondOpt) error {
	return d.publish(&nats.Msg{Data: data}, opts)
}

// RespondJSON sends v encoded as JSON.
func (d *detached) RespondJSON(v any, opts ...micro.RespondOpt) error {
	b, err := json.Marshal(v)
	if err != nil {
		return micro.ErrMarshalResponse
	}
	return d.Respond(b, opts...)
}

// Error sends a micro error reply with code and description.
func (d *detached) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	if code == "" {
		return fmt.Errorf("%w: error code", micro.ErrArgRequired)
	}
	if description == "" {
		return fmt.Errorf("%w: description", micro.ErrArgRequired)
	}
	m := &nats.Msg{Header: nats.Header{micro.ErrorHeader: []string{description}, micro.ErrorCodeHeader: []string{code}}}
	for _, o := range opts {
		o(m)
	}
	m.Data = data
	return d.publish(m, nil)
}

// Data returns the request's body.
func (d *detached) Data() []byte { return d.data }

// Headers returns the request's headers.
func (d *detached) Headers() micro.Headers { return micro.Headers(d.header) }

// Subject returns the subject the request arrived on.
func (d *detached) Subject() string { return d.subject }

// Reply returns the request's reply subject.
func (d *detached) Reply() string { return d.reply }
