package seqworker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Defaults of Config.
const (
	DefaultConcurrency        = 16
	DefaultRedeliveryDelay    = time.Second
	DefaultRedeliveryMaxDelay = time.Minute
	DefaultShutdownTimeout    = 30 * time.Second
	DefaultFetchWait          = 2 * time.Second
)

// ErrConfig: a Config field is out of range; the message names the field.
var ErrConfig = errors.New("seqworker: invalid configuration")

// Config configures a Worker. The zero value is usable: every field says
// its default.
type Config struct {
	// Concurrency is the number of runs (and seq_call requests) this
	// replica executes at once; default DefaultConcurrency (16). The other
	// run requests stay in the SEQ_RUNS work queue for other replicas.
	Concurrency int
	// Provision sizes the streams, buckets and consumer that the worker
	// provisions at start (events.Provision); the zero value is right for
	// one server. Every service of a deployment should pass the same value.
	// Provision.AckWait is how long a silent worker keeps a run before the
	// server redelivers it (the worker sends in-progress acks every third
	// of it while it runs); Provision.MaxDeliver bounds deliveries.
	Provision events.Options
	// RedeliveryDelay is the first delay before a run whose delivery failed
	// for a passing reason (NATS or KV unavailable, a checkpoint that could
	// not be written) is delivered again; it doubles per delivery up to
	// RedeliveryMaxDelay. Defaults DefaultRedeliveryDelay (1 s) and
	// DefaultRedeliveryMaxDelay (1 min).
	RedeliveryDelay    time.Duration
	RedeliveryMaxDelay time.Duration
	// RetryInitial and RetryMax set the backoff between the attempts of a
	// tool call under on_error: retry (seq.WithRetryBackoff); defaults
	// seq.DefaultRetryInitial and seq.DefaultRetryMax.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// ShutdownTimeout bounds Run's graceful stop: running groups get this
	// long to finish before they are interrupted (their runs resume
	// elsewhere from the last checkpoint); default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// FetchWait is how long one pull request waits for run requests, and
	// so the longest a stop waits for the fetch loop; default 2 s.
	FetchWait time.Duration
	// Caller calls the tools; nil (default) = pkg/tool's NATS client on
	// the worker's connection.
	Caller seq.Caller
	// Logger receives the worker's logs; nil = slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.RedeliveryDelay == 0 {
		c.RedeliveryDelay = DefaultRedeliveryDelay
	}
	if c.RedeliveryMaxDelay == 0 {
		c.RedeliveryMaxDelay = DefaultRedeliveryMaxDelay
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.FetchWait == 0 {
		c.FetchWait = DefaultFetchWait
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first invalid field by name. Errors: ErrConfig (or
// events.ErrOptions for Provision).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Concurrency < 1 || c.Concurrency > 10000:
		return fmt.Errorf("%w: Concurrency = %d; want 1 to 10000", ErrConfig, c.Concurrency)
	case c.RedeliveryDelay < 0:
		return fmt.Errorf("%w: RedeliveryDelay = %s; want 0 (default) or more", ErrConfig, c.RedeliveryDelay)
	case c.RedeliveryMaxDelay < c.RedeliveryDelay:
		return fmt.Errorf("%w: RedeliveryMaxDelay = %s is below RedeliveryDelay = %s", ErrConfig, c.RedeliveryMaxDelay, c.RedeliveryDelay)
	case c.RetryInitial < 0 || c.RetryMax < 0:
		return fmt.Errorf("%w: RetryInitial = %s, RetryMax = %s; want 0 (default) or more", ErrConfig, c.RetryInitial, c.RetryMax)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("%w: ShutdownTimeout = %s; want 0 (default) or more", ErrConfig, c.ShutdownTimeout)
	case c.FetchWait < 100*time.Millisecond || c.FetchWait > time.Minute:
		return fmt.Errorf("%w: FetchWait = %s; want 100ms to 1m", ErrConfig, c.FetchWait)
	}
	if err := c.Provision.Validate(); err != nil {
		return fmt.Errorf("%w: Provision: %w", ErrConfig, err)
	}
	return nil
}

// redeliveryDelay is the NakWithDelay delay after the given delivery
// (1-based): RedeliveryDelay doubled per delivery, capped.
func (c Config) redeliveryDelay(delivery int) time.Duration {
	d := c.RedeliveryDelay
	for i := 1; i < delivery && d < c.RedeliveryMaxDelay; i++ {
		d *= 2
	}
	return min(d, c.RedeliveryMaxDelay)
}
