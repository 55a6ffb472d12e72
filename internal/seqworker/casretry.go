package seqworker

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// casRetry paces a compare-and-set loop over a KV key that other workers
// and requests write too (a schedule entry, a run being cancelled or
// signalled). A lost write is read again and decided again; the loop is
// bounded by time, not by a count of tries, because how often a try loses
// depends on how many writers there are and on how far behind the
// replica that answered the read is: on a replicated bucket a read may be
// answered by a follower (KV direct get), so a try right after a lost one
// can read the same old revision and lose again. A jittered, growing wait
// (5 ms at first, at most 200 ms) lets the writers spread out and the
// follower catch up.
type casRetry struct {
	b       *backoff.ExponentialBackOff
	started bool // the first try was given
}

// newCASRetry returns a casRetry that gives up once maxElapsed has passed
// since it was made.
func newCASRetry(maxElapsed time.Duration) *casRetry {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.MaxInterval = 5*time.Millisecond, 1.6, 200*time.Millisecond
	b.RandomizationFactor, b.MaxElapsedTime = 0.5, maxElapsed
	b.Reset()
	return &casRetry{b: b}
}

// next reports whether to try (again): at once for the first try; for
// each later one after the next wait, false once the time is up or ctx
// has ended.
func (c *casRetry) next(ctx context.Context) bool {
	if !c.started {
		c.started = true
		return ctx.Err() == nil
	}
	d := c.b.NextBackOff()
	if d == backoff.Stop {
		return false
	}
	sleepCtx(ctx, d)
	return ctx.Err() == nil
}
