// Package metrics defines skillbus's OpenTelemetry instruments by name, in
// one place, so every service records the same names, units and attributes
// and docs/operations.md can list them. The services create their
// instruments here (NewSeqworker, NewRegistry, NewSkillface) on the meter
// provider internal/telemetry set up, and record on them; the process-level
// observers (ObserveConn) are wired by internal/servicecmd. A tool provider's
// instruments (skillbus.tool.calls, messaging.process.duration) live in
// pkg/tool, which must not import this package; the names are listed here
// too, and a test keeps the two in step.
//
// Names follow the OpenTelemetry semantic conventions where one applies —
// the messaging conventions for NATS traffic (messaging.client.sent.messages,
// messaging.client.consumed.messages, messaging.process.duration, with
// messaging.system = "nats") — and are skillbus.* otherwise. Durations are
// histograms in seconds ("s"). The Prometheus endpoint shows them with dots
// as underscores, the unit as a suffix and counters with _total:
// skillbus.runs.finished → skillbus_runs_finished_total,
// skillbus.group.duration → skillbus_group_duration_seconds.
//
// Attribute values are bounded sets (sequence, group, tool and skill names
// are those stored in the registry; statuses are the run and call statuses
// of docs/sequences.md), never run ids or free text, so series stay few.
package metrics

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Scope is the instrumentation scope of every skillbus instrument.
const Scope = "github.com/skillbus/skillbus"

// Instrument names.
const (
	// Seqworker (internal/seqworker).
	RunsStarted      = "skillbus.runs.started"       // counter {run}; sequence, trigger
	RunsFinished     = "skillbus.runs.finished"      // counter {run}; sequence, status
	RunsInFlight     = "skillbus.runs.in_flight"     // observed up-down counter {run}
	RunDuration      = "skillbus.run.duration"       // histogram s; sequence, status
	GroupDuration    = "skillbus.group.duration"     // histogram s; sequence, group, status
	ToolCallDuration = "skillbus.tool_call.duration" // histogram s; tool, status (caller side)
	ToolCallRetries  = "skillbus.tool_call.retries"  // counter {retry}; tool
	RunRedeliveries  = "skillbus.runs.redeliveries"  // counter {delivery}; sequence
	SeqRunsPending   = "skillbus.seq_runs.pending"   // observed gauge {message}: SEQ_RUNS consumer's pending count

	// Registry (internal/registry).
	RegistryEntries      = "skillbus.registry.entries"       // gauge {entry}; kind
	RegistryInvalidFiles = "skillbus.registry.invalid_files" // gauge {file}; kind
	RegistryLeader       = "skillbus.registry.leader"        // gauge {1}: 1 while this replica holds the lease (writes)
	RegistryTreeDiffers  = "skillbus.registry.tree_differs"  // gauge {1}: 1 while this replica's tree differs from the leader's

	// Skillface (internal/skillfacesvc).
	AssembleDuration   = "skillbus.skillface.assemble.duration"   // histogram s; status
	Activations        = "skillbus.skillface.activations"         // counter {activation}; skill
	ListingTruncations = "skillbus.skillface.listing.truncations" // counter {entry}

	// Tool providers (tools serve, mcp, the built-in tools): recorded by
	// pkg/tool (tool.MetricCalls, tool.MetricProcessDuration).
	ToolCallsServed = "skillbus.tool.calls" // counter {call}; tool, status (provider side)

	// NATS connection of every process (ObserveConn): OpenTelemetry
	// messaging semantic conventions, plus the connection's state.
	MessagingSent       = "messaging.client.sent.messages"     // counter {message}; messaging.system
	MessagingConsumed   = "messaging.client.consumed.messages" // counter {message}; messaging.system
	MessagingProcess    = "messaging.process.duration"         // histogram s; messaging.system, messaging.operation.name, messaging.destination.name, error.type (pkg/tool)
	NATSSentBytes       = "skillbus.nats.sent.bytes"           // counter By
	NATSReceivedBytes   = "skillbus.nats.received.bytes"       // counter By
	NATSReconnects      = "skillbus.nats.reconnects"           // counter {reconnect}
	NATSConnectionState = "skillbus.nats.connection.up"        // gauge: 1 connected, 0 not
)

// Attribute keys.
const (
	AttrSequence = attribute.Key("skillbus.sequence")
	AttrGroup    = attribute.Key("skillbus.group")
	AttrTool     = attribute.Key("skillbus.tool")
	AttrSkill    = attribute.Key("skillbus.skill")
	AttrStatus   = attribute.Key("skillbus.status")  // succeeded, failed, cancelled, skipped, ...; ok or an error code for tool calls
	AttrTrigger  = attribute.Key("skillbus.trigger") // manual, boot, schedule, seq_call
	AttrKind     = attribute.Key("skillbus.kind")    // skill, sequence

	AttrMessagingSystem      = attribute.Key("messaging.system")           // always "nats"
	AttrMessagingDestination = attribute.Key("messaging.destination.name") // the subject
)

// NATSSystem returns the messaging.system attribute of every messaging
// metric: "nats".
func NATSSystem() attribute.KeyValue { return AttrMessagingSystem.String("nats") }

// DurationBuckets are the histogram boundaries of every duration, in
// seconds: from 5 ms (a local tool call) to 10 min (a long run).
func DurationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
}

// builder creates instruments on one meter and keeps the first error, so a
// constructor reads as a list.
type builder struct {
	m   metric.Meter
	err error
}

func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	c, err := b.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.keep(err)
	return c
}

func (b *builder) seconds(name, desc string) metric.Float64Histogram {
	h, err := b.m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(DurationBuckets()...))
	b.keep(err)
	return h
}

func (b *builder) keep(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Seqworker are the instruments of a sequence runner. Its observed ones
// (skillbus.runs.in_flight, skillbus.seq_runs.pending) are read by the
// callbacks given to NewSeqworker until Unregister.
type Seqworker struct {
	RunsStarted      metric.Int64Counter
	RunsFinished     metric.Int64Counter
	RunDuration      metric.Float64Histogram
	GroupDuration    metric.Float64Histogram
	ToolCallDuration metric.Float64Histogram
	ToolCallRetries  metric.Int64Counter
	Redeliveries     metric.Int64Counter

	reg metric.Registration
}

// SeqworkerObservers are what a seqworker reports at each collection.
type SeqworkerObservers struct {
	// InFlight returns the runs the replica executes now; it must be cheap
	// and safe to call concurrently.
	InFlight func() int64
	// Pending returns the SEQ_RUNS consumer's pending count (from
	// jetstream.Consumer.Info). It is called at most once per
	// PendingMaxAge, whatever the scrape rate (a scrape in between gets
	// the value read last), and with a deadline of PendingTimeout; an
	// error skips the observation until the next call.
	Pending func(ctx context.Context) (int64, error)
}

// PendingMaxAge is how long a pending count read by
// SeqworkerObservers.Pending is reported before it is read again, and
// PendingTimeout how long one read may take.
const (
	PendingMaxAge  = 5 * time.Second
	PendingTimeout = 2 * time.Second
)

// NewSeqworker creates the seqworker's instruments on mp and registers its
// observed ones, read from obs (a nil function is not observed). Errors:
// the SDK's (an invalid name or unit), which would be a bug here.
func NewSeqworker(mp metric.MeterProvider, obs SeqworkerObservers) (*Seqworker, error) {
	m := mp.Meter(Scope)
	b := builder{m: m}
	s := &Seqworker{
		RunsStarted:      b.counter(RunsStarted, "{run}", "Runs started, by sequence and trigger (a run resumed by another delivery counts again)"),
		RunsFinished:     b.counter(RunsFinished, "{run}", "Runs finished, by sequence and final status"),
		RunDuration:      b.seconds(RunDuration, "Duration of a run, from its first start to its final status"),
		GroupDuration:    b.seconds(GroupDuration, "Duration of a group, retries included"),
		ToolCallDuration: b.seconds(ToolCallDuration, "Duration of a tool call as the caller sees it, per attempt"),
		ToolCallRetries:  b.counter(ToolCallRetries, "{retry}", "Tool call attempts after the first (on_error: retry)"),
		Redeliveries:     b.counter(RunRedeliveries, "{delivery}", "Run requests delivered again (a worker died or stopped, or a passing failure)"),
	}
	inFlight, err := m.Int64ObservableUpDownCounter(RunsInFlight, metric.WithUnit("{run}"), metric.WithDescription("Runs this replica is executing now"))
	b.keep(err)
	pending, err := m.Int64ObservableGauge(SeqRunsPending, metric.WithUnit("{message}"),
		metric.WithDescription("Run requests waiting in the SEQ_RUNS work queue (the seqworker consumer's pending count, read at most every 5 s)"))
	b.keep(err)
	if b.err != nil {
		return nil, b.err
	}
	readPending := cached(PendingMaxAge, PendingTimeout, obs.Pending)
	s.reg, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if obs.InFlight != nil {
			o.ObserveInt64(inFlight, obs.InFlight())
		}
		if n, ok := readPending(ctx); ok {
			o.ObserveInt64(pending, n)
		}
		return nil
	}, inFlight, pending)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Unregister stops the observations; safe to call more than once.
func (s *Seqworker) Unregister() error {
	if s == nil || s.reg == nil {
		return nil
	}
	return s.reg.Unregister()
}

// cached wraps read so that it is called at most once per maxAge, with a
// deadline of timeout, one call at a time; callers in between get the
// last result (ok false after an error). A nil read reports nothing.
func cached(maxAge, timeout time.Duration, read func(ctx context.Context) (int64, error)) func(ctx context.Context) (int64, bool) {
	if read == nil {
		return func(context.Context) (int64, bool) { return 0, false }
	}
	var (
		mu   sync.Mutex
		at   time.Time
		val  int64
		good bool
	)
	return func(ctx context.Context) (int64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < maxAge {
			return val, good
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		n, err := read(rctx)
		at, val, good = time.Now(), n, err == nil
		return val, good
	}
}

// Registry are the instruments of the registry; its gauges are observed by
// the callbacks given to NewRegistry.
type Registry struct {
	reg metric.Registration
}

// RegistryCounts is what the registry reports at each collection: stored
// entries and files that did not validate, by kind ("skill", "sequence").
type RegistryCounts struct {
	Entries, Invalid map[string]int64
	// Leader is true while this replica holds the lease and so is the one
	// that writes SKILLS and SEQUENCES; TreeDiffers while it does not and
	// its tree differs from the leader's (docs/skills.md, "One writer").
	Leader, TreeDiffers bool
}

// NewRegistry registers the registry's gauges on mp, read from counts at
// each collection (counts must be cheap and safe to call concurrently).
// Unregister stops them.
func NewRegistry(mp metric.MeterProvider, counts func() RegistryCounts) (*Registry, error) {
	m := mp.Meter(Scope)
	entries, err := m.Int64ObservableGauge(RegistryEntries, metric.WithUnit("{entry}"), metric.WithDescription("Skills and sequences stored, by kind"))
	if err != nil {
		return nil, err
	}
	invalid, err := m.Int64ObservableGauge(RegistryInvalidFiles, metric.WithUnit("{file}"), metric.WithDescription("Definition files that do not validate (the last good version stays stored), by kind"))
	if err != nil {
		return nil, err
	}
	leader, err := m.Int64ObservableGauge(RegistryLeader, metric.WithUnit("{1}"), metric.WithDescription("1 while this registry replica holds the lease: the one replica that writes SKILLS and SEQUENCES"))
	if err != nil {
		return nil, err
	}
	differs, err := m.Int64ObservableGauge(RegistryTreeDiffers, metric.WithUnit("{1}"), metric.WithDescription("1 while this registry replica's tree differs from the leader's (its tree is not loaded)"))
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c := counts()
		for kind, n := range c.Entries {
			o.ObserveInt64(entries, n, metric.WithAttributes(AttrKind.String(kind)))
		}
		for kind, n := range c.Invalid {
			o.ObserveInt64(invalid, n, metric.WithAttributes(AttrKind.String(kind)))
		}
		o.ObserveInt64(leader, b2i(c.Leader))
		o.ObserveInt64(differs, b2i(c.TreeDiffers))
		return nil
	}, entries, invalid, leader, differs)
	if err != nil {
		return nil, err
	}
	return &Registry{reg: reg}, nil
}

// Unregister stops observing.
func (r *Registry) Unregister() error { return r.reg.Unregister() }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Skillface are the instruments of prompt assembly.
type Skillface struct {
	AssembleDuration   metric.Float64Histogram
	Activations        metric.Int64Counter
	ListingTruncations metric.Int64Counter
}

// NewSkillface creates skillface's instruments on mp.
func NewSkillface(mp metric.MeterProvider) (*Skillface, error) {
	b := builder{m: mp.Meter(Scope)}
	s := &Skillface{
		AssembleDuration:   b.seconds(AssembleDuration, "Duration of an assemble request, by reply status"),
		Activations:        b.counter(Activations, "{activation}", "Skills activated (or triggered again), by skill"),
		ListingTruncations: b.counter(ListingTruncations, "{entry}", "Listing entries cut or left out by the listing budgets"),
	}
	return s, b.err
}
