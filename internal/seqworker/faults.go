package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// Faults of NATS itself (docs/runs.md, "NATS faults"). A run's delivery
// budget (the consumer's MaxDeliver) is for the run's own faults: a
// worker that dies with it, a run that cannot finish. What NATS does to a
// run — a state write that times out while a stream elects a leader, a
// connection lost with a server, a reply lost across a reconnect — is
// waited out on the worker that holds the run, with the run request held
// by in-progress acks meanwhile, instead of handing the run back (each
// hand-back is one more delivery):
//
//   - RUNS, RUN_SLOTS and SEQUENCES operations are retried with back-off
//     (persist) while they fail for a passing reason (transient);
//   - a tool call interrupted by the worker's lost connection
//     (toolcall.ErrInterrupted) interrupts the run's pass, and the worker
//     resumes the run itself, after its last finished group, once the
//     connection is back;
//   - a delivery of a run that another live worker holds (its heartbeat in
//     RUNS is fresh: the server redelivered after a restart or a leader
//     change) waits for that worker instead of taking the run over.

// Retries of RUNS, RUN_SLOTS and SEQUENCES operations (persist).
const (
	persistFirst   = 100 * time.Millisecond // the first wait, doubling
	persistMax     = 2 * time.Second        // the longest wait
	persistTry     = 4 * time.Second        // one try
	persistFor     = 2 * time.Minute        // then the error is returned
	persistLogEach = 15 * time.Second       // a warning again after this
)

// errBusInterrupted is the cause of a run pass ended by a tool call whose
// connection to NATS was lost (toolcall.ErrInterrupted).
var errBusInterrupted = errors.New("seqworker: a tool call was interrupted by a lost NATS connection")

// transient reports whether err is a passing failure of NATS or
// JetStream, which the same request can overcome later: a timeout, no
// responders while a stream elects its leader, a lost connection,
// JetStream temporarily unavailable (a 5xx API error). Conflicts, states
// too large, terminal errors, client errors (4xx), a closed connection
// and a cancelled context are not.
func transient(err error) bool {
	switch {
	case err == nil, errors.Is(err, errConflict), errors.Is(err, errStateTooLarge), errors.Is(err, errLost), errors.Is(err, errCancelled), errors.Is(err, errBeatNotDue),
		errors.Is(err, errHandBack), isTerminal(err), errors.Is(err, context.Canceled),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, nats.ErrMaxPayload),
		errors.Is(err, nats.ErrBadSubject), errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, errNoSequence):
		return false
	}
	var slot *slotLimitError
	if errors.As(err, &slot) {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code >= 500 || apiErr.Code == 408 || apiErr.Code == 429
	}
	var syn *json.SyntaxError
	var typ *json.UnsupportedTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return false
	}
	return true // timeouts, no responders, disconnected, I/O
}

// persist runs op (a RUNS, RUN_SLOTS or SEQUENCES operation, each try
// bounded by persistTry) and runs it again while it fails for a passing
// reason, waiting 100 ms doubling to 2 s (±20%) between tries, for up to
// persistFor. It returns nil, op's error when it is not passing, ctx's
// error when ctx ends, or the last error once the time is up.
func (w *Worker) persist(ctx context.Context, what string, op func(ctx context.Context) error) error {
	start := time.Now()
	wait := persistFirst
	var logged time.Time
	for try := 1; ; try++ {
		octx, cancel := w.tryContext(ctx)
		err := op(octx)
		tryEnded := octx.Err() != nil // its time, or a reconnect, ended the try
		reconnected := errors.Is(octx.Err(), context.Canceled) && ctx.Err() == nil
		cancel()
		if err == nil {
			if try > 1 {
				w.log.Info(what+": succeeded after passing failures", "tries", try, "took", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), err)
		}
		if !tryEnded && !transient(err) {
			return err
		}
		if time.Since(start) > persistFor {
			return fmt.Errorf("%s: still failing after %v: %w", what, time.Since(start).Round(time.Second), err)
		}
		if time.Since(logged) >= persistLogEach {
			logged = time.Now()
			w.log.Warn(what+": passing failure; retrying", "tries", try, "err", err)
		}
		if errors.Is(err, errRetryOver) || reconnected {
			continue // a compare-and-set to redo over a known revision, or a try cut by a reconnect: at once
		}
		d := wait - wait/5 + rand.N(2*wait/5+1)
		sleepCtx(ctx, d)
		wait = min(2*wait, persistMax)
	}
}

// tryContext returns the context of one try of persist: it ends after
// persistTry, or as soon as the connection is back after a reconnect (a
// request in flight when the connection dropped gets no reply: nats.go
// waits for it until the deadline), so the try is made again at once on
// the new connection.
func (w *Worker) tryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	octx, cancel := context.WithTimeout(ctx, persistTry)
	// No goroutine per try: the cancel is registered with the context
	// that the next reconnect cancels.
	stop := context.AfterFunc(w.conn.next(), cancel)
	return octx, func() { stop(); cancel() }
}

// connWatch tells when the worker's connection is back after a reconnect.
type connWatch struct {
	mu     sync.Mutex
	back   context.Context // cancelled at the next reconnect
	cancel context.CancelFunc
}

func newConnWatch() *connWatch {
	c := &connWatch{}
	c.back, c.cancel = context.WithCancel(context.Background())
	return c
}

// next returns a context cancelled when the connection is up again after
// the next disconnect.
func (c *connWatch) next() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.back
}

// reconnected wakes the waiters of next.
func (c *connWatch) reconnected() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel()
	c.back, c.cancel = context.WithCancel(context.Background())
}

// watch follows nc's status until it closes or done ends.
func (c *connWatch) watch(nc *nats.Conn, done <-chan struct{}) {
	status := nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	go func() {
		defer nc.RemoveStatusListener(status)
		for {
			select {
			case st := <-status:
				switch st {
				case nats.CONNECTED:
					c.reconnected()
				case nats.CLOSED:
					return
				}
			case <-done:
				return
			}
		}
	}()
}

// holderWatch tells a live holder of a run from a silent one. A live
// holder writes its state's heartbeat every two beats (more often while
// checkpoints do), so a heartbeat older than two and a half beats — by the
// clocks, or by the time this worker watched it without seeing it change
// (which does not depend on the clocks agreeing) — is a silent holder. A
// dead worker's run is redelivered after the ack wait (three beats) of
// silence: it is claimed at once.
type holderWatch struct {
	seen  time.Time // when the heartbeat below was first seen
	beat  time.Time // the holder's last heartbeat seen
	since bool
}

// silent reports whether the holder whose state shows heartbeat hb is
// silent, given the beat interval.
func (h *holderWatch) silent(hb time.Time, beat time.Duration) bool {
	limit := 2*beat + beat/2
	if !h.since || hb.After(h.beat) {
		h.seen, h.beat, h.since = time.Now(), hb, true
	}
	return time.Since(hb) >= limit || time.Since(h.seen) >= limit
}

// passCaller calls tools for one pass of a run: a call interrupted by a
// lost connection (toolcall.ErrInterrupted) ends the pass with
// errBusInterrupted, so the group is interrupted (not failed) and the
// worker resumes the run.
type passCaller struct {
	inner  seq.Caller
	cancel context.CancelCauseFunc
}

// Call calls the tool through the worker's caller (seq.Caller).
func (p *passCaller) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	out, err := p.inner.Call(ctx, tool, args)
	if err != nil && errors.Is(err, toolcall.ErrInterrupted) {
		p.cancel(fmt.Errorf("%w: %w", errBusInterrupted, err))
	}
	return out, err
}

// waitConnected returns once the worker's connection is up (at once when
// it is), or when ctx ends.
func (w *Worker) waitConnected(ctx context.Context) {
	for !w.nc.IsConnected() && ctx.Err() == nil && !w.nc.IsClosed() {
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// heldMsg is a run request this worker holds: once it is settled (acked,
// handed back, terminated), its in-progress acks stop, so a late
// heartbeat cannot reset a hand-back's delay or keep a message another
// worker now holds.
type heldMsg struct {
	jetstream.Msg
	settled atomic.Bool
}

// Ack acknowledges the request (jetstream.Msg).
func (m *heldMsg) Ack() error { m.settled.Store(true); return m.Msg.Ack() }

// DoubleAck acknowledges the request and waits for the server
// (jetstream.Msg).
func (m *heldMsg) DoubleAck(ctx context.Context) error {
	m.settled.Store(true)
	return m.Msg.DoubleAck(ctx)
}

// Nak hands the request back at once (jetstream.Msg).
func (m *heldMsg) Nak() error { m.settled.Store(true); return m.Msg.Nak() }

// NakWithDelay hands the request back after delay (jetstream.Msg).
func (m *heldMsg) NakWithDelay(delay time.Duration) error {
	m.settled.Store(true)
	return m.Msg.NakWithDelay(delay)
}

// Term drops the request for good (jetstream.Msg).
func (m *heldMsg) Term() error { m.settled.Store(true); return m.Msg.Term() }

// TermWithReason drops the request for good (jetstream.Msg).
func (m *heldMsg) TermWithReason(reason string) error {
	m.settled.Store(true)
	return m.Msg.TermWithReason(reason)
}

// InProgress tells the server the request is still being worked on,
// unless it was settled (jetstream.Msg).
func (m *heldMsg) InProgress() error {
	if m.settled.Load() {
		return nil
	}
	return m.Msg.InProgress()
}
