package seq

import (
	"context"
	"time"
)

// Clock is the engine's source of time: run, group and call durations, each
// group's timeout and the waits between retries all go through it. The
// default is the real clock; `skillbus test` (internal/seqtest) passes a
// virtual one so that a `timeout: 10m` or a 10 s backoff takes no real time
// (docs/testing.md, "Time is simulated").
//
// A Clock must be safe for concurrent use: the calls of a parallel group use
// it from their own goroutines.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a channel that receives once, d after now, and a
	// stop function that releases the timer (it reports whether it stopped
	// the timer before it fired). The channel must be buffered so that a
	// timer firing while nobody receives never blocks the clock.
	NewTimer(d time.Duration) (c <-chan time.Time, stop func() bool)
	// WithTimeout returns a copy of ctx that ends d after now, as
	// context.WithTimeout does; when the time is up, ctx.Err() is non-nil
	// and context.Cause(ctx) is context.DeadlineExceeded.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// WithClock makes the run use c instead of the real clock (see Clock).
// A nil c keeps the real clock.
func WithClock(c Clock) RunOption {
	return func(cfg *runConfig) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// realClock is the default Clock: package time and context.WithTimeout.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

func (realClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// since returns the time elapsed on c since t.
func since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// backoffClock adapts a Clock to cenkalti/backoff's Clock.
type backoffClock struct{ c Clock }

func (b backoffClock) Now() time.Time { return b.c.Now() }
