package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/streamread"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// Errors returned by this package; test with errors.Is. A service's error
// reply also holds a *toolcall.Error with the service's code and message
// (errors.As); its code selects one of ErrBadRequest, ErrNotFound,
// ErrConflict and ErrUnavailable. ErrInvalid and ErrClosed are found by
// the client itself, before or without an answer.
var (
	// ErrBadRequest: the service refused the request (code 400): a bad
	// field or an identifier over its limit. Terminal.
	ErrBadRequest = errors.New("client: bad request")
	// ErrInvalid: the caller's mistake, found by the client before it
	// sent anything: an argument of a method or an option that is not
	// valid (not a run id, a request whose fields events.Encode refuses,
	// a nil connection, a timeout below 100 ms). The message says which
	// and how to fix it. Terminal: nothing was sent.
	ErrInvalid = errors.New("client: invalid argument")
	// ErrClosed: the client's NATS connection is closed (or draining),
	// so nothing can be sent or received on it any more; it wraps
	// nats.ErrConnectionClosed (or nats.ErrConnectionDraining), found with
	// errors.Is too. Terminal for this connection: connect again and make
	// a new Client. Not ErrUnavailable: no service was asked.
	ErrClosed = errors.New("client: NATS connection closed")
	// ErrNotFound: no such run, sequence or group (code 404).
	ErrNotFound = errors.New("client: not found")
	// ErrConflict: a run id used for another request, or a finished run
	// cancelled (code 409). Terminal.
	ErrConflict = errors.New("client: conflict")
	// ErrUnavailable: no seqworker (or, for the registry methods, no
	// registry) answers: no responders, a timeout, code 503. Passing:
	// retry later.
	ErrUnavailable = errors.New("client: service unavailable")
	// ErrWaitedTooLong: Wait gave up after WaitOptions.WorkerWait without
	// a seqworker.
	ErrWaitedTooLong = errors.New("client: no seqworker answered in time")
)

// closed wraps an error of a closed or draining connection in ErrClosed
// (keeping the NATS error for errors.Is); other errors are returned as
// they are.
func closed(err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionDraining) {
		if !errors.Is(err, ErrClosed) {
			return fmt.Errorf("%w: %w", ErrClosed, err)
		}
	}
	return err
}

// serviceError wraps a service's error reply: a *toolcall.Error (the one
// error with a code of skillbus, found with errors.As) joined with the
// sentinel of its code (found with errors.Is).
func serviceError(subject, code, text string) error {
	te := &toolcall.Error{Code: code, Description: text}
	switch code {
	case "400":
		return fmt.Errorf("%w: %w", ErrBadRequest, te)
	case "404":
		return fmt.Errorf("%w: %w", ErrNotFound, te)
	case "409":
		return fmt.Errorf("%w: %w", ErrConflict, te)
	case "503":
		return fmt.Errorf("%w: %w", ErrUnavailable, te)
	}
	return fmt.Errorf("%s: %w", subject, te)
}

// DefaultTimeout bounds one request when the caller's context has no
// deadline.
const DefaultTimeout = 15 * time.Second

// Client talks to the skillbus-seq service of one NATS connection. It is
// safe for concurrent use. The connection is the caller's: Client never
// closes it.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
}

// Option configures a Client.
type Option func(*Client) error

// noReply says that who did not answer on subject within waited (a
// timeout), in words rather than as "context deadline exceeded".
func noReply(who, subject string, waited time.Duration) string {
	return fmt.Sprintf("%s did not answer on %s within %v: it is busy or stuck (check its logs), or the request was lost in a reconnect; try again", who, subject, waited.Round(100*time.Millisecond))
}

// WithTimeout sets how long one request may take when the context has no
// deadline (default DefaultTimeout). Errors (from New): ErrBadRequest for
// a timeout below 100 ms.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("%w: timeout %s; want at least 100ms", ErrInvalid, d)
		}
		c.timeout = d
		return nil
	}
}

// New returns a client on nc. Errors: those of the options; ErrInvalid
// for a nil connection.
func New(nc *nats.Conn, opts ...Option) (*Client, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: nil NATS connection", ErrInvalid)
	}
	c := &Client{nc: nc, timeout: DefaultTimeout}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// request sends m to subject (a seqworker endpoint) and decodes the
// reply into out (a message type of pkg/events), with Requester. Errors:
// ErrInvalid for a request events.Encode refuses; a service error
// (serviceError, with the header's text) for an error reply;
// ErrUnavailable (wrapped) for no responders and timeouts, naming the
// seqworker; ErrClosed.
func (c *Client) request(ctx context.Context, subject string, m events.Message, out events.Message) error {
	var resp any
	if out != nil {
		resp = out
	}
	return Requester{
		Timeout: c.timeout,
		NoResponders: func(subject string) error {
			return fmt.Errorf("%w: no seqworker answers on %s", ErrUnavailable, subject)
		},
		NoReply: func(subject string, waited time.Duration) error {
			return fmt.Errorf("%w: %s", ErrUnavailable, noReply("the seqworker", subject, waited))
		},
		ErrorReply: func(subject, code string, reply *nats.Msg) error {
			return serviceError(subject, code, reply.Header.Get(micro.ErrorHeader))
		},
	}.Do(ctx, c.nc, subject, m, resp)
}

// Start starts a run (seq.run) and returns its run id. Exactly one of
// req.Sequence (a stored sequence) and req.Inline (a sequence AST, as
// pkg/seq's Encode writes it) is set; req.RunID is optional and makes the
// call idempotent (the same request again returns the same run). Errors:
// ErrInvalid, ErrBadRequest, ErrNotFound (no such stored sequence), ErrConflict (the
// run id was used for another request), ErrUnavailable, ErrClosed.
//
// With a run id the request is idempotent, so Start sends it again when a
// seqworker does not answer within StartAttemptTimeout (a stalled replica
// of the queue group took it; the next attempt goes to a replica chosen at
// random again), until the context's deadline or the client's timeout.
func (c *Client) Start(ctx context.Context, req events.SeqRunRequest) (string, error) {
	var reply events.SeqRunReply
	if req.RunID == "" {
		if err := c.request(ctx, events.SeqRunSubject, &req, &reply); err != nil {
			return "", err
		}
		return reply.RunID, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var err error
	for {
		actx, cancel := context.WithTimeout(ctx, StartAttemptTimeout)
		err = c.request(actx, events.SeqRunSubject, &req, &reply)
		cancel()
		if err == nil {
			return reply.RunID, nil
		}
		var te *toolcall.Error
		if ctx.Err() != nil || !errors.Is(err, ErrUnavailable) || errors.As(err, &te) || errors.Is(err, nats.ErrNoResponders) || strings.Contains(err.Error(), "no seqworker answers") {
			break // an answer, no seqworker at all, or out of time
		}
	}
	return "", err
}

// StartAttemptTimeout is how long Start waits for one attempt of an
// idempotent request (one with a run id) before sending it again.
const StartAttemptTimeout = 2 * time.Second

// Status returns a run's state (normalised: see events.RunState.Normalize).
// Errors: ErrInvalid (not a run id), ErrNotFound, ErrUnavailable,
// ErrClosed.
//
// The request is a read, so it is hedged (see HedgeAfter): a replica of
// the queue group that holds the request without answering — a stopped
// (SIGSTOP) or stuck process, whose subscription the server still routes
// to — delays the answer by HedgeAfter, not by the client's timeout.
func (c *Client) Status(ctx context.Context, runID string) (*events.RunState, error) {
	return hedged(ctx, c.timeout, func(ctx context.Context) (*events.RunState, error) {
		var st events.RunState
		if err := c.request(ctx, events.SeqStatusSubject, &events.SeqStatusRequest{RunID: runID}, &st); err != nil {
			return nil, err
		}
		st.Normalize()
		return &st, nil
	})
}

// HedgeAfter is how long a hedged request (Status) waits for an answer
// before it sends the same request again, alongside the one still
// waiting; each copy goes to a replica of the queue group chosen at
// random by the server, so one replica that does not answer delays the
// answer by about HedgeAfter per copy it receives. At most MaxHedged
// copies are in flight; the first answer wins and the others are
// dropped.
const (
	HedgeAfter = 100 * time.Millisecond
	MaxHedged  = 10
)

// hedged runs call, and again every HedgeAfter while no call has
// answered, until one answers (a result, or an error that is an answer:
// anything but a timeout), ctx ends, or timeout passes when ctx has no
// deadline. No responders is an answer too: nobody serves the subject.
// The error of a hedged request that nobody answered is the last
// timeout's.
func hedged[T any](ctx context.Context, timeout time.Duration, call func(context.Context) (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		v   T
		err error
	}
	results := make(chan result, MaxHedged)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	send := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := call(ctx)
			results <- result{v, err}
		}()
	}
	send()
	sent, pending := 1, 1
	timer := time.NewTimer(HedgeAfter)
	defer timer.Stop()
	var zero T
	var last error
	done := ctx.Done()
	for {
		select {
		case <-timer.C:
			if sent < MaxHedged {
				send()
				sent++
				pending++
				timer.Reset(HedgeAfter)
			}
		case r := <-results:
			pending--
			var te *toolcall.Error
			if r.err == nil || !errors.Is(r.err, ErrUnavailable) || errors.As(r.err, &te) || strings.Contains(r.err.Error(), "no seqworker answers") {
				return r.v, r.err // an answer (an error reply is one), or nobody serves the subject
			}
			last = r.err
			if pending == 0 {
				if ctx.Err() != nil || sent == MaxHedged {
					return zero, last // nobody answered: the last timeout, in words
				}
				timer.Reset(0) // an attempt that timed out early: send another at once
			}
		case <-done:
			// The copies in flight end with it, each with its timeout's
			// error: the loop returns the last once all have.
			done, sent = nil, MaxHedged
			timer.Stop()
		}
	}
}

// List lists runs, newest first; req filters and pages (see
// events.SeqListRequest: pass the reply's Next as req.Before for the next
// page). Errors: ErrInvalid, ErrBadRequest, ErrUnavailable, ErrClosed.
func (c *Client) List(ctx context.Context, req events.SeqListRequest) (*events.SeqListReply, error) {
	var reply events.SeqListReply
	if err := c.request(ctx, events.SeqListSubject, &req, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// Cancel asks to cancel a run and returns its state after the request: a
// queued or interrupted run is cancelled at once; a running one is stopped
// by the worker that holds it (use Wait to see it end cancelled). Calling
// it again is harmless. Errors: ErrNotFound, ErrConflict (the run already
// finished), ErrInvalid, ErrBadRequest, ErrUnavailable, ErrClosed.
func (c *Client) Cancel(ctx context.Context, runID, by, reason string) (*events.RunState, error) {
	var st events.RunState
	if err := c.request(ctx, events.SeqCancelSubject, &events.SeqCancelRequest{RunID: runID, By: by, Reason: reason}, &st); err != nil {
		return nil, err
	}
	st.Normalize()
	return &st, nil
}

// Rerun starts a new run with the sequence and arguments of runID and
// returns the new run's id (newRunID, or a new one when ""). Errors:
// ErrNotFound, ErrConflict, ErrInvalid, ErrBadRequest, ErrUnavailable, ErrClosed.
func (c *Client) Rerun(ctx context.Context, runID, newRunID string) (string, error) {
	reply, err := c.RerunReply(ctx, runID, newRunID)
	if err != nil {
		return "", err
	}
	return reply.RunID, nil
}

// RerunReply is Rerun returning the whole reply: Existing tells that
// newRunID named a run that already existed (the same rerun asked again),
// which was returned instead of a new one. Errors: as Rerun.
func (c *Client) RerunReply(ctx context.Context, runID, newRunID string) (*events.SeqRunReply, error) {
	var reply events.SeqRunReply
	if err := c.request(ctx, events.SeqRerunSubject, &events.SeqRerunRequest{RunID: runID, NewRunID: newRunID}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// Retry starts a new run that continues runID — a failed or cancelled
// run — from its first group that did not finish, reusing the finished
// groups' slots (no tool of theirs is called again), with its arguments
// and the definition it ran, or with latest the stored one (which must
// agree with it up to that group and in its signature); docs/runs.md,
// "Retry". WithRetryFrom starts it at an earlier group instead (and
// allows a succeeded run). It returns the new run's id (newRunID, or a
// new one when ""). Errors: ErrNotFound (no such run), ErrConflict (not
// retryable, a group the run never reached, the definition changed, or
// newRunID used for another run), ErrBadRequest (WithRetryFrom naming no
// group of the run), ErrInvalid (a bad option), ErrUnavailable,
// ErrClosed.
func (c *Client) Retry(ctx context.Context, runID, newRunID string, latest bool, opts ...RetryOption) (string, error) {
	reply, err := c.RetryReply(ctx, runID, newRunID, latest, opts...)
	if err != nil {
		return "", err
	}
	return reply.RunID, nil
}

// RetryReply is Retry returning the whole reply: Existing tells that
// newRunID named a retry that already existed (the same retry asked
// again), which was returned instead of a new one. Errors: as Retry.
func (c *Client) RetryReply(ctx context.Context, runID, newRunID string, latest bool, opts ...RetryOption) (*events.SeqRunReply, error) {
	req := &events.SeqRetryRequest{RunID: runID, NewRunID: newRunID, Latest: latest}
	for _, o := range opts {
		if err := o(req); err != nil {
			return nil, err
		}
	}
	var reply events.SeqRunReply
	if err := c.request(ctx, events.SeqRetrySubject, req, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// RetryOption configures Retry.
type RetryOption func(*events.SeqRetryRequest) error

// WithRetryFrom makes Retry re-run the run from group (docs/runs.md,
// "Retry from a group"): a group's name, or its 1-based number as runs
// show prints it ("2"). The new run reuses the groups before it, with
// only the slots they wrote, and runs it and every group after it again.
// The group must be at or before the run's first group that did not
// finish (every group of a succeeded run); the seqworker checks it
// (Retry's ErrBadRequest for no such group, with the closest name and
// the groups allowed; ErrConflict for one the run never reached).
// Errors (from Retry): ErrInvalid for an empty group or one longer than
// events.MaxNameLength bytes.
//
//	// The run's group "publish" wrote bad data: run it (and what follows) again.
//	id, err := c.Retry(ctx, runID, "", false, client.WithRetryFrom("publish"))
func WithRetryFrom(group string) RetryOption {
	return func(r *events.SeqRetryRequest) error {
		switch {
		case group == "":
			return fmt.Errorf("%w: WithRetryFrom: the group is empty; give a group's name or its 1-based number", ErrInvalid)
		case len(group) > events.MaxNameLength:
			return fmt.Errorf("%w: WithRetryFrom: the group is %d bytes; a group's name is at most %d", ErrInvalid, len(group), events.MaxNameLength)
		}
		r.From = group
		return nil
	}
}

// Call runs one group of a stored sequence by its name (seq_call) with
// args (its `in` values, a JSON object) and returns its slots and result.
// A group that ran and failed is a reply with Error set, not an error.
// Errors: ErrNotFound (no such group), ErrInvalid, ErrBadRequest (bad arguments),
// ErrUnavailable, ErrClosed.
func (c *Client) Call(ctx context.Context, group string, args json.RawMessage) (*events.SeqCallReply, error) {
	var reply events.SeqCallReply
	if err := c.request(ctx, events.SeqCallSubject, &events.SeqCallRequest{Group: group, Args: args}, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// Slots returns every slot value of a run state: those kept in the state
// and those kept in the RUN_SLOTS object store, read through nc by direct
// gets of each object's metadata and chunks (no consumer: a client role
// may not create one, docs/security.md), its SHA-256 digest checked.
// Errors: NATS errors reading the object store; an object that is missing
// or does not match its digest (naming the slot); ErrClosed.
func (c *Client) Slots(ctx context.Context, st *events.RunState) (map[string]json.RawMessage, error) {
	out := maps.Clone(st.Slots)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	if len(st.SlotRefs) == 0 {
		return out, nil
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, closed(err)
	}
	for k, ref := range st.SlotRefs {
		b, err := streamread.ReadObject(ctx, js, events.BucketRunSlots, ref.Object)
		if err != nil {
			return nil, fmt.Errorf("slot %q (%s/%s): %w", k, events.BucketRunSlots, ref.Object, closed(err))
		}
		out[k] = b
	}
	return out, nil
}

// DefaultNotFoundWait is how long Wait waits, by default, for a run whose
// state is not stored (404) before it returns ErrNotFound. A run accepted
// by Start is stored before Start returns, so only a mistyped id, a run
// removed from RUNS (its TTL) or one started by another way (a schedule, a
// trigger, a request still in flight) meets it.
const DefaultNotFoundWait = 10 * time.Second

// finishedEventWait bounds how long Wait, once the state says the run
// finished, keeps reading its events for the finished one (so OnEvent
// sees every event up to the end).
const finishedEventWait = time.Second

// WaitOptions configure Wait. The zero value waits with the defaults.
type WaitOptions struct {
	// OnEvent receives each run event (started, group, interrupted,
	// resumed, cancelling, finished) in the order the EVENTS stream stored
	// them, from the run's first event on — those published before Wait
	// was called too (they are read back from the stream) — from the
	// goroutine that called Wait.
	OnEvent func(ev *events.RunEvent)
	// OnWaiting receives a sentence saying what Wait waits for, when that
	// changes (no seqworker answers; a run interrupted and waiting to be
	// resumed); "" when it no longer waits for anything special.
	OnWaiting func(text string)
	// Poll is how often the run's state is read besides the events;
	// default 500 ms, so that Wait returns within about that of a run's
	// end even when its events reach it late (docs/runs.md).
	Poll time.Duration
	// WorkerWait is how long Wait keeps waiting while no seqworker answers
	// (all of them stopped or restarting); default 2 minutes. Then it
	// returns ErrWaitedTooLong.
	WorkerWait time.Duration
	// NotFoundWait is how long Wait keeps waiting while the seqworker says
	// the run does not exist (404); default DefaultNotFoundWait. Then it
	// returns ErrNotFound. The state is read every Poll, so Wait returns
	// between NotFoundWait and NotFoundWait + Poll after its first read.
	NotFoundWait time.Duration
}

// Wait follows a run until it is finished (succeeded, failed or
// cancelled) and returns its final state. It keeps waiting across worker
// restarts — an interrupted run, or no seqworker answering for up to
// o.WorkerWait — telling o.OnWaiting what it waits for. A run not stored
// yet (404) is waited for up to o.NotFoundWait (default
// DefaultNotFoundWait, 10 s).
//
// The run's events are read from the EVENTS stream with a
// streamread.Follower from the run's first event (events.run.ID.>, by
// STREAM.MSG.GET: a client may not create consumers, docs/security.md
// "Consumers: only a stream's owner makes them"), so OnEvent misses none
// published before Wait subscribed; once the state says the run finished,
// Wait reads on for up to a second for its finished event.
//
// Errors: ctx's error; ErrNotFound (no such run after o.NotFoundWait);
// ErrWaitedTooLong; ErrInvalid (not a run id); ErrClosed.
func (c *Client) Wait(ctx context.Context, runID string, o WaitOptions) (*events.RunState, error) {
	if o.Poll == 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.WorkerWait == 0 {
		o.WorkerWait = 2 * time.Minute
	}
	if o.NotFoundWait == 0 {
		o.NotFoundWait = DefaultNotFoundWait
	}
	if err := events.CheckRunID(runID); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	subj, _ := events.RunEventSubject(runID, events.RunStarted)
	f, err := streamread.NewFollower(ctx, c.nc, streamread.FollowConfig{
		Stream:  events.StreamEvents,
		Filters: []string{strings.TrimSuffix(subj, events.RunStarted) + ">"},
		From:    1,
		Poll:    o.Poll,
	})
	if err != nil {
		return nil, fmt.Errorf("follow the events of run %s: %w", runID, closed(err))
	}
	ch := make(chan *events.RunEvent, 256)
	rctx, stopRead := context.WithCancel(ctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readEvents(rctx, f, o.Poll, ch)
	}()
	defer func() {
		stopRead()
		<-readDone
		f.Close()
	}()
	poll := time.NewTicker(o.Poll)
	defer poll.Stop()
	var (
		unavailableSince time.Time
		notFoundSince    time.Time
		waiting          string
		sawFinished      bool
	)
	say := func(text string) {
		if text != waiting {
			waiting = text
			if o.OnWaiting != nil {
				o.OnWaiting(text)
			}
		}
	}
	deliver := func(ev *events.RunEvent) {
		if ev.Kind == events.RunFinished {
			sawFinished = true
		}
		if o.OnEvent != nil {
			o.OnEvent(ev)
		}
	}
	// finish delivers the events still to come up to the finished one
	// (at most finishedEventWait), then returns st.
	finish := func(st *events.RunState) (*events.RunState, error) {
		say("")
		if o.OnEvent == nil || sawFinished {
			return st, nil
		}
		t := time.NewTimer(finishedEventWait)
		defer t.Stop()
		for !sawFinished {
			select {
			case ev := <-ch:
				deliver(ev)
			case <-t.C:
				return st, nil
			case <-ctx.Done():
				return st, nil
			}
		}
		return st, nil
	}
	check := true
	for {
		if check {
			st, err := c.Status(ctx, runID)
			switch {
			case err == nil:
				unavailableSince, notFoundSince = time.Time{}, time.Time{}
				if events.Finished(st.Status) {
					return finish(st)
				}
				if st.Status == events.StatusInterrupted {
					say(fmt.Sprintf("run %s was interrupted after group %d of %d (%s); waiting for a seqworker to resume it", runID, st.FinishedGroups, st.Groups, st.Error))
				} else {
					say("")
				}
			case errors.Is(err, ErrNotFound):
				unavailableSince = time.Time{}
				if notFoundSince.IsZero() {
					notFoundSince = time.Now()
				}
				if time.Since(notFoundSince) >= o.NotFoundWait {
					return nil, fmt.Errorf("run %s still not stored after %s of waiting (check the run id: `skillbus runs`): %w", runID, o.NotFoundWait, err)
				}
			case errors.Is(err, ErrUnavailable):
				if unavailableSince.IsZero() {
					unavailableSince = time.Now()
				}
				if time.Since(unavailableSince) > o.WorkerWait {
					return nil, fmt.Errorf("%w: no seqworker answered for %s while waiting for run %s: %v", ErrWaitedTooLong, o.WorkerWait, runID, err)
				}
				var te *toolcall.Error
				if errors.As(err, &te) {
					// A seqworker answered, with an error (it cannot read RUNS).
					say(fmt.Sprintf("the seqworker cannot read the state of run %s (%s); trying again for up to %s", runID, te.Description, o.WorkerWait))
				} else {
					say(fmt.Sprintf("no seqworker answers (stopped or restarting); waiting up to %s for one to come back to follow run %s", o.WorkerWait, runID))
				}
			case ctx.Err() != nil:
				return nil, ctx.Err()
			default:
				return nil, err
			}
		}
		check = false
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-poll.C:
			check = true
		case ev := <-ch:
			deliver(ev)
			switch ev.Kind {
			case events.RunFinished, events.RunInterrupted, events.RunResumed, events.RunCancelling:
				check = true
			}
		}
	}
}

// readEvents reads the run events f follows onto ch until ctx ends; a
// failed read (the stream not there yet, a lost connection) is tried
// again after poll, from the same cursor.
func readEvents(ctx context.Context, f *streamread.Follower, poll time.Duration, ch chan<- *events.RunEvent) {
	for ctx.Err() == nil {
		msgs, err := f.Read(ctx, poll)
		if err != nil {
			t := time.NewTimer(poll)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		for _, m := range msgs {
			var ev events.RunEvent
			if events.Decode(m.Data, &ev) != nil {
				continue
			}
			select {
			case ch <- &ev:
			case <-ctx.Done():
				return
			}
		}
	}
}
