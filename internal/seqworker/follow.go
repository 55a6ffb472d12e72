package seqworker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The seqworker consumer is shared by every replica, and its settings can
// change while they run (a replica started with --ack-wait and
// --lower-ack-wait, an operator's `nats consumer edit`). A worker that kept
// the ack wait it read at start would go on sending in-progress acks at a
// third of the old value: under a lower ack wait the server redelivers the
// runs it holds to other workers, which take them over and run their
// groups again. So each worker follows the consumer (docs/runs.md,
// Failover): it re-reads the consumer's info every followEvery (and at
// once when a run it receives was redelivered), and its heartbeats, its
// takeover and cancel rules and its error messages use the current values.

// followMax bounds the interval between two reads of the consumer's info.
const followMax = 2 * time.Second

// liveConsumer holds the seqworker consumer's current AckWait and
// MaxDeliver, and tells heartbeats when they change.
type liveConsumer struct {
	ackWait    atomic.Int64 // nanoseconds
	maxDeliver atomic.Int64
	kick       chan struct{} // a read is wanted now (buffered 1)

	mu      sync.Mutex
	changed chan struct{} // closed at the next change
}

func newLiveConsumer() *liveConsumer {
	return &liveConsumer{kick: make(chan struct{}, 1), changed: make(chan struct{})}
}

// set stores the consumer's values; it reports whether they changed.
func (l *liveConsumer) set(ackWait time.Duration, maxDeliver int) bool {
	oldWait := time.Duration(l.ackWait.Swap(int64(ackWait)))
	oldMax := l.maxDeliver.Swap(int64(maxDeliver))
	if oldWait == ackWait && oldMax == int64(maxDeliver) {
		return false
	}
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	return true
}

// changes returns a channel closed when the values change next.
func (l *liveConsumer) changes() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// ackWaitNow is the seqworker consumer's ack wait as last read.
func (w *Worker) ackWaitNow() time.Duration { return time.Duration(w.liveValues.ackWait.Load()) }

// maxDeliverNow is the seqworker consumer's MaxDeliver as last read.
func (w *Worker) maxDeliverNow() int { return int(w.liveValues.maxDeliver.Load()) }

// followSoon asks followConsumer to read the consumer's info now (a run
// was redelivered: its ack wait may have changed).
func (w *Worker) followSoon() {
	select {
	case w.liveValues.kick <- struct{}{}:
	default:
	}
}

// followConsumer re-reads the consumer's info every min(followMax, a
// heartbeat) until intake stops, logging every change of its ack wait or
// MaxDeliver.
func (w *Worker) followConsumer() {
	defer w.loops.Done()
	for {
		t := time.NewTimer(min(followMax, w.beatEvery()))
		select {
		case <-w.intakeCtx.Done():
			t.Stop()
			return
		case <-w.liveValues.kick:
		case <-t.C:
		}
		t.Stop()
		ctx, cancel := context.WithTimeout(w.intakeCtx, followMax)
		info, err := w.consumer.Info(ctx)
		cancel()
		if err != nil {
			continue // passing (a leader election, a reconnect): next time
		}
		oldWait, oldMax := w.ackWaitNow(), w.maxDeliverNow()
		if w.liveValues.set(info.Config.AckWait, info.Config.MaxDeliver) {
			w.log.Warn("the shared seqworker consumer changed; this worker follows it", "ack_wait", info.Config.AckWait, "was", oldWait,
				"max_deliver", info.Config.MaxDeliver, "max_deliver_was", oldMax, "heartbeat", w.beatEvery())
		}
	}
}
