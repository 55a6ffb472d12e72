package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Options (docs/runs.md, Retention and sizing).
const (
	DefaultRunsTTL         = 7 * 24 * time.Hour
	DefaultSessionsTTL     = 24 * time.Hour
	DefaultEventsMaxAge    = 24 * time.Hour
	DefaultDuplicateWindow = 10 * time.Minute

	// Byte limits a stream or bucket is created with (docs/runs.md,
	// "Retention and sizing"): 256 MiB of RUNS hold about 100,000 runs of
	// 2.5 KB — 7 days (the TTL) of 14,000 runs a day; EVENTS keeps about
	// 24 h of 85,000 runs (oldest dropped first); RUN_SLOTS one run's
	// largest slots (the seqworker's run limit); SEQ_RUNS a backlog of
	// about 30,000 queued requests. Together 704 MiB, within a server's
	// JetStream store of 800 MB (deploy/k8s, single server), which
	// reserves each limit when the resource is made.
	DefaultRunsMaxBytes     = 256 << 20
	DefaultRunSlotsMaxBytes = 256 << 20
	DefaultEventsMaxBytes   = 128 << 20
	DefaultSeqRunsMaxBytes  = 64 << 20
	// RegistryLeaseTTL is how long an entry of BucketRegistryLease lives:
	// a registry leader that dies without releasing its lease is replaced
	// within this time (one that stops releases it at once).
	RegistryLeaseTTL = 10 * time.Second
	// DefaultAckWait is short so that a dead worker's runs are taken over
	// within seconds; a live worker keeps its runs with in-progress
	// heartbeats (internal/seqworker Config.Heartbeat).
	DefaultAckWait    = 10 * time.Second
	DefaultMaxDeliver = 10

	// LegacyAckWait is the ack wait that releases before the run
	// lifecycle created the seqworker consumer with by default. An
	// existing consumer with exactly this value and no explicit
	// Options.AckWait is moved to DefaultAckWait (a deliberate 2m is kept
	// by setting AckWait).
	LegacyAckWait = 2 * time.Minute
)

// Options sizes the provisioned resources. The zero value is right for one
// embedded server (one replica, file storage); a 3-node cluster sets
// Replicas to 3.
//
// A zero field means "unset": a resource that does not exist yet is created
// with the field's default, and a resource that exists keeps its current
// value (see Provision). So a service started without, say, --session-ttl
// never resets the TTL that another service set on purpose; a field set
// explicitly is applied to the existing resource.
type Options struct {
	// Replicas of every stream and bucket: 1 (default) to 5; at most the
	// number of servers in the cluster.
	Replicas int
	// Storage of every stream and bucket: jetstream.FileStorage (default)
	// or jetstream.MemoryStorage. An existing resource's storage cannot be
	// changed: Provision fails with ErrProvision.
	Storage jetstream.StorageType
	// RunsTTL is how long a RUNS key lives; default DefaultRunsTTL (7 days).
	RunsTTL time.Duration
	// SessionsTTL is how long a SKILLFACE_SESSIONS key lives; default
	// DefaultSessionsTTL (24 h).
	SessionsTTL time.Duration
	// EventsMaxAge is how long EVENTS keeps a message; default
	// DefaultEventsMaxAge (24 h).
	EventsMaxAge time.Duration
	// EventsMaxBytes caps the EVENTS stream's size (oldest dropped first);
	// default DefaultEventsMaxBytes (128 MiB); -1 = unlimited.
	EventsMaxBytes int64
	// RunsMaxBytes caps the RUNS bucket's size; default
	// DefaultRunsMaxBytes (256 MiB); -1 = unlimited. A write that would
	// exceed it is refused (the oldest runs are not dropped), so the
	// seqworker refuses new runs before it is full (docs/runs.md,
	// "Retention and sizing"): size it from the bytes per run.
	RunsMaxBytes int64
	// RunSlotsMaxBytes caps the RUN_SLOTS object store (large slot
	// values); default DefaultRunSlotsMaxBytes (256 MiB); -1 = unlimited.
	RunSlotsMaxBytes int64
	// SeqRunsMaxBytes caps the SEQ_RUNS stream (queued requests and
	// schedules); default DefaultSeqRunsMaxBytes (64 MiB); -1 =
	// unlimited. The stream allows message schedules, which nats-server
	// refuses with discard-new, so a full stream would drop its oldest
	// request: seq.run refuses new runs from 90% (docs/runs.md).
	SeqRunsMaxBytes int64
	// MaxValueSize caps one KV value in bytes in every bucket; 0 (default)
	// = the server's max_payload.
	MaxValueSize int32
	// DuplicateWindow is SEQ_RUNS's dedupe window for run ids; default
	// DefaultDuplicateWindow (10 min).
	DuplicateWindow time.Duration
	// AckWait is how long the seqworker consumer waits for an ack before
	// redelivering a run request; default DefaultAckWait (10 s). A worker
	// extends it with in-progress heartbeats while it runs, so AckWait is
	// how long a dead worker's runs wait before another worker takes them
	// over.
	AckWait time.Duration
	// LowerAckWait allows AckWait to lower the ack wait of an existing
	// seqworker consumer. Without it Provision refuses (ErrOptions) an
	// AckWait below the consumer's: the consumer is shared by every
	// replica (docs/runs.md, Failover).
	LowerAckWait bool
	// MaxDeliver caps deliveries of one run request; default
	// DefaultMaxDeliver (10); -1 = unlimited.
	MaxDeliver int
	// Owner names the service that provisions, one of the Owner
	// constants: it creates or updates the resources it owns (OwnerOf) and
	// only creates the others when they are missing, never changing them,
	// so with least-privilege NATS users (docs/security.md) no service
	// needs the right to reconfigure another's buckets. "" (default):
	// every resource is created or updated.
	Owner string
}

// Owners of the streams, buckets and consumers (docs/security.md): the
// registry owns SKILLS, SEQUENCES and REGISTRY_LEASE, skillface SKILLFACE_SESSIONS, the
// seqworker everything else (RUNS, RUN_SLOTS, SEQ_RUNS, EVENTS and the
// seqworker consumers).
const (
	OwnerRegistry  = "registry"
	OwnerSeqworker = "seqworker"
	OwnerSkillface = "skillface"
)

// OwnerOf returns the Owner of a stream by its name: KV_<bucket> for a
// bucket, OBJ_<bucket> for an object store, SEQ_RUNS, EVENTS.
func OwnerOf(stream string) string {
	switch stream {
	case "KV_" + BucketSkills, "KV_" + BucketSequences, "KV_" + BucketRegistryLease:
		return OwnerRegistry
	case "KV_" + BucketSessions:
		return OwnerSkillface
	}
	return OwnerSeqworker
}

// owns reports whether o may create or update stream, or only create it.
func (o Options) owns(stream string) bool { return o.Owner == "" || OwnerOf(stream) == o.Owner }

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.RunsTTL == 0 {
		o.RunsTTL = DefaultRunsTTL
	}
	if o.SessionsTTL == 0 {
		o.SessionsTTL = DefaultSessionsTTL
	}
	if o.EventsMaxAge == 0 {
		o.EventsMaxAge = DefaultEventsMaxAge
	}
	if o.DuplicateWindow == 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	if o.AckWait == 0 {
		o.AckWait = DefaultAckWait
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if o.RunsMaxBytes == 0 {
		o.RunsMaxBytes = DefaultRunsMaxBytes
	}
	if o.RunSlotsMaxBytes == 0 {
		o.RunSlotsMaxBytes = DefaultRunSlotsMaxBytes
	}
	if o.EventsMaxBytes == 0 {
		o.EventsMaxBytes = DefaultEventsMaxBytes
	}
	if o.SeqRunsMaxBytes == 0 {
		o.SeqRunsMaxBytes = DefaultSeqRunsMaxBytes
	}
	return o
}

// Validate reports the first out-of-range field, by name. Errors:
// ErrOptions.
func (o Options) Validate() error {
	o = o.WithDefaults()
	switch {
	case o.Replicas < 1 || o.Replicas > 5:
		return fmt.Errorf("%w: Replicas = %d; want 1 to 5", ErrOptions, o.Replicas)
	case o.Storage != jetstream.FileStorage && o.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("%w: Storage = %d; want file or memory", ErrOptions, o.Storage)
	case o.RunsTTL < time.Second:
		return fmt.Errorf("%w: RunsTTL = %s; want at least 1s", ErrOptions, o.RunsTTL)
	case o.SessionsTTL < time.Second:
		return fmt.Errorf("%w: SessionsTTL = %s; want at least 1s", ErrOptions, o.SessionsTTL)
	case o.EventsMaxAge < time.Second:
		return fmt.Errorf("%w: EventsMaxAge = %s; want at least 1s", ErrOptions, o.EventsMaxAge)
	case o.EventsMaxBytes < -1:
		return fmt.Errorf("%w: EventsMaxBytes = %d; want -1 (unlimited), 0 (the default) or more", ErrOptions, o.EventsMaxBytes)
	case o.RunsMaxBytes < -1:
		return fmt.Errorf("%w: RunsMaxBytes = %d; want -1 (unlimited), 0 (the default) or more", ErrOptions, o.RunsMaxBytes)
	case o.RunSlotsMaxBytes < -1:
		return fmt.Errorf("%w: RunSlotsMaxBytes = %d; want -1 (unlimited), 0 (the default) or more", ErrOptions, o.RunSlotsMaxBytes)
	case o.SeqRunsMaxBytes < -1:
		return fmt.Errorf("%w: SeqRunsMaxBytes = %d; want -1 (unlimited), 0 (the default) or more", ErrOptions, o.SeqRunsMaxBytes)
	case o.MaxValueSize < 0:
		return fmt.Errorf("%w: MaxValueSize = %d; want 0 (server limit) or more", ErrOptions, o.MaxValueSize)
	case o.DuplicateWindow < time.Second:
		return fmt.Errorf("%w: DuplicateWindow = %s; want at least 1s", ErrOptions, o.DuplicateWindow)
	case o.AckWait < time.Second:
		return fmt.Errorf("%w: AckWait = %s; want at least 1s", ErrOptions, o.AckWait)
	case o.MaxDeliver < -1:
		return fmt.Errorf("%w: MaxDeliver = %d; want -1 (unlimited) or at least 1", ErrOptions, o.MaxDeliver)
	case o.Owner != "" && o.Owner != OwnerRegistry && o.Owner != OwnerSeqworker && o.Owner != OwnerSkillface:
		return fmt.Errorf("%w: Owner = %q; want registry, seqworker, skillface or \"\" (all)", ErrOptions, o.Owner)
	}
	return nil
}

// StreamManager is what Provision needs from a JetStream context:
// jetstream.JetStream implements it.
type StreamManager interface {
	CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
	CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error)
	CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error)
}

// ObjectStoreManager is implemented by a StreamManager that can also
// provision object stores (jetstream.JetStream does). Provision creates
// BucketRunSlots only through it.
type ObjectStoreManager interface {
	CreateOrUpdateObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error)
}

// ResourceReader reads the current configuration of existing resources;
// jetstream.JetStream implements it. When the StreamManager given to
// Provision also implements ResourceReader, the unset (zero) fields of
// Options keep the values of the existing resources instead of their
// defaults.
type ResourceReader interface {
	KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error)
	Stream(ctx context.Context, name string) (jetstream.Stream, error)
	Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error)
}

// Provision creates or updates every stream, consumer and bucket of
// docs/runs.md and docs/skills.md from o. It is idempotent: calling it
// again with the same Options changes nothing, so every service calls it
// at start, in any order. Fields of o left zero keep the existing
// resources' values (when js implements ResourceReader, as
// jetstream.JetStream does) or take their defaults on creation; explicitly
// set fields are applied. With o.Owner set, the resources of other owners
// are only created when missing (when js can create without updating, as
// jetstream.JetStream can) and the seqworker consumer is left to the
// seqworker: the service needs no right to change what it does not own
// (docs/security.md). With no deadline on ctx it uses 30 s. Errors:
// ErrOptions, ErrProvision (wrapping the server's error and naming the
// resource); for a refusal no retry can get past (an existing stream's
// storage or retention, replicas on a lone server, subjects another stream
// holds) an *IncompatibleError, which is also ErrIncompatible.
func Provision(ctx context.Context, js StreamManager, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	if rr, ok := js.(ResourceReader); ok {
		if err := checkAckWait(ctx, rr, o); err != nil { // ackwait.go
			return err
		}
		o = o.inherit(ctx, rr)
	}
	o = o.WithDefaults()
	cr, _ := js.(creator)
	for _, kv := range KeyValueConfigs(o) {
		var err error
		if cr != nil && !o.owns("KV_"+kv.Bucket) {
			_, err = cr.CreateKeyValue(ctx, kv)
			err = existsIsFine(err, jetstream.ErrBucketExists)
		} else {
			_, err = js.CreateOrUpdateKeyValue(ctx, kv)
		}
		if err != nil {
			return provisionErr(ctx, js, "bucket "+kv.Bucket, "KV_"+kv.Bucket, []string{"$KV." + kv.Bucket + ".>"}, o, err)
		}
	}
	for _, sc := range StreamConfigs(o) {
		var err error
		if cr != nil && !o.owns(sc.Name) {
			_, err = cr.CreateStream(ctx, sc)
			err = existsIsFine(err, jetstream.ErrStreamNameAlreadyInUse)
		} else {
			_, err = js.CreateOrUpdateStream(ctx, sc)
		}
		if err != nil {
			return provisionErr(ctx, js, "stream "+sc.Name, sc.Name, sc.Subjects, o, err)
		}
	}
	if o.Owner == "" || o.Owner == OwnerSeqworker {
		// Only the seqworker reads its consumer; the others leave it alone.
		if _, err := js.CreateOrUpdateConsumer(ctx, StreamSeqRuns, SeqworkerConsumerConfig(o)); err != nil {
			return provisionErr(ctx, js, "consumer "+ConsumerSeqworker+" on "+StreamSeqRuns, StreamSeqRuns, nil, o, err)
		}
		if _, err := js.CreateOrUpdateConsumer(ctx, StreamEvents, BootConsumerConfig(o)); err != nil {
			return provisionErr(ctx, js, "consumer "+ConsumerSeqworkerBoot+" on "+StreamEvents, StreamEvents, nil, o, err)
		}
	}
	if om, ok := js.(ObjectStoreManager); ok {
		var err error
		if oc, ok := js.(objectCreator); ok && !o.owns("OBJ_"+BucketRunSlots) {
			_, err = oc.CreateObjectStore(ctx, RunSlotsConfig(o))
			err = existsIsFine(err, jetstream.ErrBucketExists)
		} else {
			_, err = om.CreateOrUpdateObjectStore(ctx, RunSlotsConfig(o))
		}
		if err != nil {
			return provisionErr(ctx, js, "object store "+BucketRunSlots, "OBJ_"+BucketRunSlots, []string{"$O." + BucketRunSlots + ".>"}, o, err)
		}
	}
	return nil
}

// creator creates without updating (jetstream.JetStream implements it):
// Provision uses it for the resources that Options.Owner does not own.
type creator interface {
	CreateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error)
	CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error)
}

// objectCreator creates an object store without updating it.
type objectCreator interface {
	CreateObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error)
}

// seqworkerConsumer reads the seqworker consumer when owner provisions it.
func seqworkerConsumer(ctx context.Context, rr ResourceReader, owner string) (jetstream.Consumer, error) {
	if owner != "" && owner != OwnerSeqworker {
		return nil, errors.New("not the owner")
	}
	return rr.Consumer(ctx, StreamSeqRuns, ConsumerSeqworker)
}

// existsIsFine turns "it exists (with another configuration)" into
// success: a resource another service owns is that service's to change.
func existsIsFine(err, exists error) error {
	if errors.Is(err, exists) {
		return nil
	}
	return err
}

// RunSlotsConfig returns the configuration of the BucketRunSlots object
// store: the same retention as RUNS, so a run's large slot values expire
// with it.
func RunSlotsConfig(o Options) jetstream.ObjectStoreConfig {
	o = o.WithDefaults()
	return jetstream.ObjectStoreConfig{
		Bucket:      BucketRunSlots,
		Description: "skillbus: run slot values too large for a RUNS entry",
		TTL:         o.RunsTTL,
		MaxBytes:    orUnlimited(o.RunSlotsMaxBytes),
		Storage:     o.Storage,
		Replicas:    o.Replicas,
	}
}

// KeyValueConfigs returns the configurations of the six buckets for o
// (with defaults applied).
func KeyValueConfigs(o Options) []jetstream.KeyValueConfig {
	o = o.WithDefaults()
	base := func(name, desc string, ttl time.Duration) jetstream.KeyValueConfig {
		return jetstream.KeyValueConfig{
			Bucket:       name,
			Description:  desc,
			History:      1,
			TTL:          ttl,
			MaxValueSize: o.MaxValueSize,
			Storage:      o.Storage,
			Replicas:     o.Replicas,
		}
	}
	runs := base(BucketRuns, "skillbus: run checkpoints and results by run id", o.RunsTTL)
	runs.MaxBytes = orUnlimited(o.RunsMaxBytes)
	return []jetstream.KeyValueConfig{
		base(BucketSkills, "skillbus: validated skills by name", 0),
		base(BucketSequences, "skillbus: validated sequence ASTs by name", 0),
		runs,
		base(BucketSessions, "skillbus: skillface session activation state", o.SessionsTTL),
		base(BucketRegistryLease, "skillbus: the lease of the registry replica that writes SKILLS and SEQUENCES", RegistryLeaseTTL),
		base(BucketSchedules, "skillbus: schedule entries' state (pause, current and buffered ticks, counters)", 0),
	}
}

// StreamConfigs returns the configurations of SEQ_RUNS and EVENTS for o.
func StreamConfigs(o Options) []jetstream.StreamConfig {
	o = o.WithDefaults()
	return []jetstream.StreamConfig{
		{
			Name:              StreamSeqRuns,
			Description:       "skillbus: run requests (work queue) and sequence schedules",
			Subjects:          []string{SubjectRunAll, SubjectScheduleAll},
			Retention:         jetstream.WorkQueuePolicy,
			Storage:           o.Storage,
			Replicas:          o.Replicas,
			Duplicates:        o.DuplicateWindow,
			AllowMsgSchedules: true,
			MaxMsgs:           -1,
			MaxBytes:          orUnlimited(o.SeqRunsMaxBytes),
			MaxAge:            0,
			MaxMsgsPerSubject: -1,
		},
		{
			Name:              StreamEvents,
			Description:       "skillbus: agent_ready, run progress and registry events",
			Subjects:          []string{SubjectEventsAll},
			Retention:         jetstream.LimitsPolicy,
			Storage:           o.Storage,
			Replicas:          o.Replicas,
			MaxAge:            o.EventsMaxAge,
			MaxBytes:          orUnlimited(o.EventsMaxBytes),
			MaxMsgs:           -1,
			MaxMsgsPerSubject: -1,
			Discard:           jetstream.DiscardOld,
		},
	}
}

// SeqworkerConsumerConfig returns the durable pull consumer shared by every
// seqworker replica: filtered on seq.run.> (schedule messages are never
// delivered, only their ticks), explicit acks.
func SeqworkerConsumerConfig(o Options) jetstream.ConsumerConfig {
	o = o.WithDefaults()
	return jetstream.ConsumerConfig{
		Durable:       ConsumerSeqworker,
		Description:   "skillbus: seqworker replicas share run requests",
		FilterSubject: SubjectRunAll,
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       o.AckWait,
		MaxDeliver:    o.MaxDeliver,
		Replicas:      o.Replicas,
		MemoryStorage: o.Storage == jetstream.MemoryStorage,
	}
}

// BootConsumerConfig returns the durable pull consumer on EVENTS shared
// by every seqworker replica to start boot sequences on agent_ready events
// (docs/runs.md, Triggers): explicit acks, redelivered after 1 s, 5 s,
// then 30 s, at most 10 times. A consumer created now starts with new
// events (DeliverNew): a fresh deployment does not replay the boots
// already in EVENTS. Provision creates it with the seqworker's other
// resources, so it is retried like them on a cluster still electing.
func BootConsumerConfig(o Options) jetstream.ConsumerConfig {
	o = o.WithDefaults()
	return jetstream.ConsumerConfig{
		Durable:       ConsumerSeqworkerBoot,
		Description:   "skillbus: seqworker replicas start boot sequences on agent_ready",
		FilterSubject: SubjectAgentReadyAll,
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    10,
		BackOff:       []time.Duration{time.Second, 5 * time.Second, 30 * time.Second},
		Replicas:      o.Replicas,
	}
}

// orUnlimited is a byte limit as JetStream takes it: -1 for unlimited
// (Options' -1).
func orUnlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// keptBytes is the Options value that keeps an existing resource's byte
// limit: the limit, or -1 for an unlimited one (a resource made before
// the defaults had limits keeps none until a limit is set on purpose:
// lowering it below what the resource holds would delete its oldest
// entries).
func keptBytes(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// inherit fills the unset fields of o from the existing resources; a
// resource that does not exist (or cannot be read) leaves its fields unset,
// so WithDefaults applies. Storage is not inherited: it cannot change, and
// Provision reports a mismatch.
func (o Options) inherit(ctx context.Context, rr ResourceReader) Options {
	if kv, err := rr.KeyValue(ctx, BucketRuns); err == nil {
		if st, err := kv.Status(ctx); err == nil {
			cfg := st.Config()
			if o.RunsTTL == 0 {
				o.RunsTTL = cfg.TTL
			}
			if o.Replicas == 0 {
				o.Replicas = cfg.Replicas
			}
			if o.MaxValueSize == 0 {
				o.MaxValueSize = cfg.MaxValueSize
			}
			if o.RunsMaxBytes == 0 {
				o.RunsMaxBytes = keptBytes(cfg.MaxBytes)
			}
		}
	}
	if kv, err := rr.KeyValue(ctx, BucketSessions); err == nil && o.SessionsTTL == 0 {
		if st, err := kv.Status(ctx); err == nil {
			o.SessionsTTL = st.TTL()
		}
	}
	if s, err := rr.Stream(ctx, StreamEvents); err == nil {
		cfg := s.CachedInfo().Config
		if o.EventsMaxAge == 0 {
			o.EventsMaxAge = cfg.MaxAge
		}
		if o.EventsMaxBytes == 0 {
			o.EventsMaxBytes = keptBytes(cfg.MaxBytes)
		}
	}
	if s, err := rr.Stream(ctx, StreamSeqRuns); err == nil {
		cfg := s.CachedInfo().Config
		if o.DuplicateWindow == 0 {
			o.DuplicateWindow = cfg.Duplicates
		}
		if o.SeqRunsMaxBytes == 0 {
			o.SeqRunsMaxBytes = keptBytes(cfg.MaxBytes)
		}
	}
	if s, err := rr.Stream(ctx, "OBJ_"+BucketRunSlots); err == nil && o.RunSlotsMaxBytes == 0 {
		o.RunSlotsMaxBytes = keptBytes(s.CachedInfo().Config.MaxBytes)
	}
	// Only the seqworker provisions (and may read) its consumer.
	if c, err := seqworkerConsumer(ctx, rr, o.Owner); err == nil {
		cfg := c.CachedInfo().Config
		if o.AckWait == 0 && cfg.AckWait != LegacyAckWait {
			o.AckWait = cfg.AckWait
		}
		if o.MaxDeliver == 0 && cfg.MaxDeliver != 0 {
			o.MaxDeliver = cfg.MaxDeliver
		}
	}
	// Values read back that Validate would refuse (a resource made by hand
	// with, say, no TTL) are dropped so the defaults apply instead.
	if o.RunsTTL < time.Second {
		o.RunsTTL = 0
	}
	if o.SessionsTTL < time.Second {
		o.SessionsTTL = 0
	}
	if o.EventsMaxAge < time.Second {
		o.EventsMaxAge = 0
	}
	if o.DuplicateWindow < time.Second {
		o.DuplicateWindow = 0
	}
	if o.AckWait < time.Second {
		o.AckWait = 0
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		o.Replicas = 0
	}
	return o
}
