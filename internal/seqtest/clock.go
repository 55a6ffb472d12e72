package seqtest

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"time"
)

// epoch is the virtual time at which every case starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// vclock is the virtual seq.Clock of a case (docs/testing.md, "Time is
// simulated"): time stands still until every goroutine of the run is
// blocked, then jumps to the earliest pending timer.
type vclock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*vtimer
	notify chan struct{} // a timer was added
}

type vtimer struct {
	at   time.Time
	c    chan time.Time // buffered: firing never blocks
	fire func()         // instead of c, for WithTimeout
}

func newClock() *vclock {
	return &vclock{now: epoch, notify: make(chan struct{}, 1)}
}

// Now returns the virtual time (seq.Clock).
func (v *vclock) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

func (v *vclock) add(t *vtimer, d time.Duration) func() bool {
	v.mu.Lock()
	t.at = v.now.Add(d)
	if d <= 0 {
		at := v.now
		v.mu.Unlock()
		v.run(t, at)
		return func() bool { return false }
	}
	v.timers = append(v.timers, t)
	v.mu.Unlock()
	select {
	case v.notify <- struct{}{}:
	default:
	}
	return func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		for i, x := range v.timers {
			if x == t {
				v.timers = append(v.timers[:i], v.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

func (v *vclock) run(t *vtimer, at time.Time) {
	if t.fire != nil {
		t.fire()
		return
	}
	t.c <- at
}

// NewTimer returns a timer of virtual time (seq.Clock).
func (v *vclock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := &vtimer{c: make(chan time.Time, 1)}
	return t.c, v.add(t, d)
}

// WithTimeout returns ctx ending after d of virtual time, with the cause
// context.DeadlineExceeded (seq.Clock).
func (v *vclock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	stop := v.add(&vtimer{fire: func() { cancel(context.DeadlineExceeded) }}, d)
	return cctx, func() { stop(); cancel(context.Canceled) }
}

// sleep waits d of virtual time or until ctx ends (a mock's delay).
func (v *vclock) sleep(ctx context.Context, d time.Duration) error {
	c, stop := v.NewTimer(d)
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// pending reports whether a timer waits.
func (v *vclock) pending() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.timers) > 0
}

// advance moves the time to the earliest timer and fires every timer due.
func (v *vclock) advance() {
	v.mu.Lock()
	if len(v.timers) == 0 {
		v.mu.Unlock()
		return
	}
	next := v.timers[0].at
	for _, t := range v.timers {
		if t.at.Before(next) {
			next = t.at
		}
	}
	v.now = next
	var due, keep []*vtimer
	for _, t := range v.timers {
		if !t.at.After(next) {
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	v.timers = keep
	v.mu.Unlock()
	for _, t := range due {
		v.run(t, next)
	}
}

// runBlocked reports whether every goroutine running engine code (a frame
// of package seq on its stack) is blocked: on a channel, a select, a wait
// group or a lock. Only the virtual clock can then wake them, so it is
// time to advance it. This is how testing/synctest decides, read from the
// goroutines' stacks because synctest only works inside `go test`.
func runBlocked(buf *[]byte) bool {
	for {
		n := runtime.Stack(*buf, true)
		if n < len(*buf) {
			*buf = (*buf)[:n]
			break
		}
		*buf = make([]byte, 2*len(*buf))
	}
	defer func() { *buf = (*buf)[:cap(*buf)] }()
	seen := false
	for _, g := range bytes.Split(*buf, []byte("\n\n")) {
		if !bytes.Contains(g, []byte("skillbus/pkg/seq.")) {
			continue
		}
		seen = true
		head, _, _ := bytes.Cut(g, []byte("\n"))
		i, j := bytes.IndexByte(head, '['), bytes.IndexByte(head, ']')
		if i < 0 || j < i {
			return false
		}
		state, _, _ := bytes.Cut(head[i+1:j], []byte(","))
		if !blockedStates[string(state)] {
			return false
		}
	}
	return seen
}

// blockedStates are the goroutine states (as runtime.Stack prints them) of a
// goroutine that waits for another goroutine or a timer. Not "semacquire":
// the runtime parks a goroutine so while it waits for the garbage
// collector, which ends without the clock.
var blockedStates = map[string]bool{
	"chan receive": true, "chan send": true, "select": true, "select (no cases)": true,
	"sync.WaitGroup.Wait": true, "sync.Mutex.Lock": true,
	"sync.RWMutex.Lock": true, "sync.RWMutex.RLock": true, "sync.Cond.Wait": true,
	"chan receive (nil chan)": true, "chan send (nil chan)": true,
}

// jump moves the time forward to t (the time a wait ends, between two runs
// of the engine) and fires every timer due by then, in time order.
func (v *vclock) jump(t time.Time) {
	for {
		v.mu.Lock()
		due := false
		for _, x := range v.timers {
			if !x.at.After(t) {
				due = true
			}
		}
		v.mu.Unlock()
		if !due {
			break
		}
		v.advance()
	}
	v.mu.Lock()
	if t.After(v.now) {
		v.now = t
	}
	v.mu.Unlock()
}
