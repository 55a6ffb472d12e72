package seqworker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/metric"

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

	// DefaultInlineSlotBytes: a slot value larger than this is kept in
	// the RUN_SLOTS object store instead of the RUNS entry.
	DefaultInlineSlotBytes = 64 << 10
	// DefaultInlineStateBytes: when the slots kept in the RUNS entry add up
	// to more than this, the largest go to the object store until they fit.
	DefaultInlineStateBytes = 256 << 10
	// DefaultSlotMaxBytes and DefaultRunSlotsMaxBytes are the limits of one
	// slot value and of all slot values of a run (docs/runs.md).
	DefaultSlotMaxBytes     = 64 << 20
	DefaultRunSlotsMaxBytes = 256 << 20
)

// MaxItemsLimit is the largest Config.MaxItems: a for_each call's list of
// a million items is held in memory with a result per item.
const MaxItemsLimit = 1_000_000

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
	// Provisioned says the caller has provisioned the resources with
	// Provision already (cmd/seqworker does, through internal/servicecmd,
	// with retries that survive services starting together on a fresh
	// cluster): Start then only opens them. Default false: Start
	// provisions them (events.Provision), for embedded uses.
	Provisioned bool
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
	// MaxItems bounds the items of one for_each call (seq.WithMaxItems;
	// docs/sequences.md, "for_each"): a longer list fails its group before
	// any item is called. 0 = seq.MaxItemsDefault (10,000); at most
	// MaxItemsLimit.
	MaxItems int
	// ShutdownTimeout bounds Run's graceful stop: running groups get this
	// long to finish before they are interrupted (their runs resume
	// elsewhere from the last checkpoint); default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// FetchWait is how long one pull request waits for run requests, and
	// so the longest a stop waits for the fetch loop; default 2 s.
	FetchWait time.Duration
	// WorkerID names this replica in run states and events (RunState.Worker);
	// default "<host>-<pid>-<random>". At most 128 bytes.
	WorkerID string
	// Heartbeat is how often the worker tells the server (an in-progress
	// ack) and the RUNS state (RunState.Heartbeat) that a run it holds is
	// alive, long tool calls included; default a third of the consumer's
	// ack wait. It must stay below half the ack wait: a larger value is
	// lowered to a third of it, with a warning.
	Heartbeat time.Duration
	// InlineSlotBytes, InlineStateBytes: slot values kept in the RUNS entry
	// (defaults DefaultInlineSlotBytes, DefaultInlineStateBytes); larger
	// ones go to the RUN_SLOTS object store.
	InlineSlotBytes  int
	InlineStateBytes int
	// SlotMaxBytes and RunSlotsMaxBytes limit one slot value and the slot
	// values of one run; a group that writes more fails the run with an
	// error naming the group, the call and the size. Defaults
	// DefaultSlotMaxBytes (64 MiB) and DefaultRunSlotsMaxBytes (256 MiB).
	SlotMaxBytes     int64
	RunSlotsMaxBytes int64
	// Caller calls the tools; nil (default) = pkg/tool's NATS client on
	// the worker's connection.
	Caller seq.Caller
	// Logger receives the worker's logs; nil = slog.Default().
	Logger *slog.Logger
	// Meters is the meter provider of the worker's metrics (metrics.go;
	// docs/operations.md); nil = OpenTelemetry's global one.
	Meters metric.MeterProvider
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
	if c.WorkerID == "" {
		c.WorkerID = defaultWorkerID()
	}
	if c.InlineSlotBytes == 0 {
		c.InlineSlotBytes = DefaultInlineSlotBytes
	}
	if c.InlineStateBytes == 0 {
		c.InlineStateBytes = DefaultInlineStateBytes
	}
	if c.SlotMaxBytes == 0 {
		c.SlotMaxBytes = DefaultSlotMaxBytes
	}
	if c.RunSlotsMaxBytes == 0 {
		c.RunSlotsMaxBytes = DefaultRunSlotsMaxBytes
	}
	return c
}

// maxWorkerIDBytes bounds Config.WorkerID (it is shown in run states,
// events and the RUNS headers).
const maxWorkerIDBytes = 128

// defaultWorkerID is "<host>-<pid>-<4 random characters>", its last
// maxWorkerIDBytes bytes.
func defaultWorkerID() string {
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s-%d-%s", host, os.Getpid(), strings.ToLower(nuid.Next()[18:]))
	if len(id) > maxWorkerIDBytes {
		id = id[len(id)-maxWorkerIDBytes:]
	}
	return id
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
	case c.MaxItems < 0 || c.MaxItems > MaxItemsLimit:
		return fmt.Errorf("%w: MaxItems = %d; want 0 (default %d) to %d", ErrConfig, c.MaxItems, seq.MaxItemsDefault, MaxItemsLimit)
	case c.ShutdownTimeout < 0:
		return fmt.Errorf("%w: ShutdownTimeout = %s; want 0 (default) or more", ErrConfig, c.ShutdownTimeout)
	case c.FetchWait < 100*time.Millisecond || c.FetchWait > time.Minute:
		return fmt.Errorf("%w: FetchWait = %s; want 100ms to 1m", ErrConfig, c.FetchWait)
	case len(c.WorkerID) > maxWorkerIDBytes || strings.ContainsAny(c.WorkerID, "\r\n"):
		return fmt.Errorf("%w: WorkerID %.40q; want one line of at most %d bytes", ErrConfig, c.WorkerID, maxWorkerIDBytes)
	case c.Heartbeat < 0 || (c.Heartbeat > 0 && c.Heartbeat < 50*time.Millisecond):
		return fmt.Errorf("%w: Heartbeat = %s; want 0 (a third of the ack wait) or at least 50ms", ErrConfig, c.Heartbeat)
	case c.InlineSlotBytes < 0 || c.InlineStateBytes < 0:
		return fmt.Errorf("%w: InlineSlotBytes = %d, InlineStateBytes = %d; want 0 (default) or more", ErrConfig, c.InlineSlotBytes, c.InlineStateBytes)
	case c.SlotMaxBytes < 0 || c.RunSlotsMaxBytes < 0:
		return fmt.Errorf("%w: SlotMaxBytes = %d, RunSlotsMaxBytes = %d; want 0 (default) or more", ErrConfig, c.SlotMaxBytes, c.RunSlotsMaxBytes)
	case c.RunSlotsMaxBytes < c.SlotMaxBytes:
		return fmt.Errorf("%w: RunSlotsMaxBytes = %d is below SlotMaxBytes = %d", ErrConfig, c.RunSlotsMaxBytes, c.SlotMaxBytes)
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
