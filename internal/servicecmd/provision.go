package servicecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
)

// Provisioning retry back-off: from ProvisionRetryInitial doubling to
// ProvisionRetryMax (each wait ±50% at random, so services that failed
// together do not retry together), for ever — until it succeeds or the
// process is asked to stop. Each attempt may take ProvisionAttemptTimeout
// (a healthy cluster provisions in about a second; what an attempt created
// stays, so the next one goes further).
const (
	ProvisionRetryInitial   = 500 * time.Millisecond
	ProvisionRetryMax       = 10 * time.Second
	ProvisionAttemptTimeout = 10 * time.Second
)

// ProvisionRetry provisions o (events.Provision) through js until it
// succeeds, waiting ProvisionRetryInitial, doubling to ProvisionRetryMax
// (with jitter), between attempts and logging each failure with the next wait: on a fresh
// cluster, or with several services starting at the same moment, a first
// attempt can fail (no JetStream leader yet, a stream being created by
// another service).
//
// Streams and buckets are created first and updated only when they exist
// with another configuration (createFirst): checked on nats-server 2.15.2
// with nats.go 1.55, three clients running jetstream's
// CreateOrUpdateStream — update, then create when not found — for one R3
// stream at the same moment on a fresh 3-node cluster all wait until their
// deadline, while three plain creates succeed in milliseconds.
//
// Errors: events.ErrOptions and events.ErrIncompatible (an existing
// stream the server will not change, replicas on a lone server, subjects
// another stream holds) at once, since retrying cannot fix them; ctx's
// error when ctx ends first, joined with the last failure.
func ProvisionRetry(ctx context.Context, log *slog.Logger, js jetstream.JetStream, o events.Options) error {
	return provisionRetry(ctx, log, js, o, nil)
}

// provisionRetry is ProvisionRetry calling failed, when not nil, with each
// failed attempt's error (Serve shows it on /readyz).
func provisionRetry(ctx context.Context, log *slog.Logger, js jetstream.JetStream, o events.Options, failed func(error)) error {
	wait := ProvisionRetryInitial
	sm := createFirst{js}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, ProvisionAttemptTimeout)
		err := events.Provision(actx, sm, o)
		if err == nil {
			err = answering(actx, js, o)
		}
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("provisioned", "attempts", attempt)
			}
			return nil
		}
		if errors.Is(err, events.ErrOptions) || errors.Is(err, events.ErrIncompatible) {
			return err
		}
		d := wait/2 + time.Duration(rand.Int64N(int64(wait)+1))
		if failed != nil {
			failed(err) // before the log line: whoever reads it finds /readyz saying so
		}
		log.Warn("provisioning failed; retrying", "attempt", attempt, "retry_in", d.Round(time.Millisecond), "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(d):
		}
		wait = min(2*wait, ProvisionRetryMax)
	}
}

// createFirst is the jetstream.JetStream given to events.Provision: its
// CreateOrUpdateStream, CreateOrUpdateKeyValue and CreateOrUpdateObjectStore
// create, and update only a resource that exists with a different
// configuration (see ProvisionRetry for why); each create or update may
// take callTimeout, so a call caught in a concurrent creation fails soon and
// the attempt is retried rather than waiting for the whole attempt's
// deadline. Everything else, including the ResourceReader methods
// events.Provision uses to keep existing settings, is js's.
type createFirst struct {
	jetstream.JetStream
}

// callTimeout bounds one create or update call of createFirst.
const callTimeout = 4 * time.Second

// createOrUpdate runs create; when it reports the resource exists with
// another configuration (exists), it waits until the stream named stream
// answers and runs update. Each call gets callTimeout.
func createOrUpdate[T any](ctx context.Context, c createFirst, stream string, exists error, create, update func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	v, err := create(cctx)
	cancel()
	if !errors.Is(err, exists) {
		return v, err
	}
	if _, err := c.Stream(ctx, stream); err != nil {
		return v, err
	}
	uctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return update(uctx)
}

func (c createFirst) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return createOrUpdate(ctx, c, cfg.Name, jetstream.ErrStreamNameAlreadyInUse,
		func(ctx context.Context) (jetstream.Stream, error) { return c.CreateStream(ctx, cfg) },
		func(ctx context.Context) (jetstream.Stream, error) { return c.UpdateStream(ctx, cfg) })
}

func (c createFirst) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return createOrUpdate(ctx, c, "KV_"+cfg.Bucket, jetstream.ErrBucketExists,
		func(ctx context.Context) (jetstream.KeyValue, error) { return c.CreateKeyValue(ctx, cfg) },
		func(ctx context.Context) (jetstream.KeyValue, error) { return c.UpdateKeyValue(ctx, cfg) })
}

func (c createFirst) CreateOrUpdateObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	return createOrUpdate(ctx, c, "OBJ_"+cfg.Bucket, jetstream.ErrBucketExists,
		func(ctx context.Context) (jetstream.ObjectStore, error) { return c.CreateObjectStore(ctx, cfg) },
		func(ctx context.Context) (jetstream.ObjectStore, error) { return c.UpdateObjectStore(ctx, cfg) })
}

// answering checks that every stream provisioning made (and, for the
// seqworker, its consumer) answers an info request within callTimeout: a
// replicated stream or consumer just created can be without a leader for
// a while, and a service whose start then reads it would wait until its
// start deadline and exit (seen with two seqworkers started together on a
// fresh 3-node cluster: the consumer's info timed out after 30 s). Only
// the info APIs every role may use (docs/security.md) are called. Errors:
// events.ErrProvision naming the stream or consumer that did not answer.
func answering(ctx context.Context, js jetstream.JetStream, o events.Options) error {
	var streams []string
	for _, kv := range events.KeyValueConfigs(o) {
		streams = append(streams, "KV_"+kv.Bucket)
	}
	for _, sc := range events.StreamConfigs(o) {
		streams = append(streams, sc.Name)
	}
	streams = append(streams, "OBJ_"+events.BucketRunSlots)
	for _, name := range streams {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := js.Stream(cctx, name)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: stream %s does not answer yet: %v", events.ErrProvision, name, err)
		}
	}
	if o.Owner == "" || o.Owner == events.OwnerSeqworker {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := js.Consumer(cctx, events.StreamSeqRuns, events.ConsumerSeqworker)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: consumer %s on %s does not answer yet: %v", events.ErrProvision, events.ConsumerSeqworker, events.StreamSeqRuns, err)
		}
	}
	return nil
}

// ProvisionFix says how to get past an incompatible stream or bucket
// (events.IncompatibleError), in the services' flags and the nats CLI's
// commands (docs/operations.md, "Provisioning errors").
func ProvisionFix(ie *events.IncompatibleError) string {
	switch ie.Setting {
	case events.IncompatibleReplicas:
		return fmt.Sprintf("on a single NATS server start every service with --replicas 1 (SKILLBUS_REPLICAS=1), or connect them to a JetStream cluster of at least %d servers", ie.Replicas)
	case events.IncompatibleStorage:
		return fmt.Sprintf("start every service with the storage %s was created with (--memory for memory storage, no --memory for file), or, if its data may go, delete it (nats stream rm %s) and start again", ie.Stream, ie.Stream)
	case events.IncompatibleSize:
		return "give the seqworker smaller limits (--runs-max-bytes, --run-slots-max-bytes, --events-max-bytes, --seq-runs-max-bytes; -1 for none), or give the NATS server a larger JetStream store (max_file_store, max_memory_store)"
	case events.IncompatibleSubjects:
		if ie.Holder != "" {
			return fmt.Sprintf("skillbus needs those subjects for %s: take them out of the stream %s (nats stream edit %s) or delete that stream (nats stream rm %s), or run skillbus in another NATS account", ie.Stream, ie.Holder, ie.Holder, ie.Holder)
		}
		return fmt.Sprintf("skillbus needs those subjects for %s: find the stream that holds them (nats stream ls --subject SUBJECT) and take them out of it, or run skillbus in another NATS account", ie.Stream)
	}
	return fmt.Sprintf("if its data may go, delete it (nats stream rm %s) and start again, so it is created with skillbus's settings", ie.Stream)
}
