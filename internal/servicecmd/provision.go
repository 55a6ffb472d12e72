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
// Errors: events.ErrOptions at once (retrying cannot fix it); ctx's error
// when ctx ends first, joined with the last failure.
func ProvisionRetry(ctx context.Context, log *slog.Logger, js jetstream.JetStream, o events.Options) error {
	wait := ProvisionRetryInitial
	sm := createFirst{js}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, ProvisionAttemptTimeout)
		err := events.Provision(actx, sm, o)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("provisioned", "attempts", attempt)
			}
			return nil
		}
		if errors.Is(err, events.ErrOptions) {
			return err
		}
		d := wait/2 + time.Duration(rand.Int64N(int64(wait)+1))
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
// CreateOrUpdateStream and CreateOrUpdateKeyValue create, and update only
// a resource that exists with a different configuration (see
// ProvisionRetry for why). Everything else, including the ResourceReader
// methods events.Provision uses to keep existing settings, is js's.
type createFirst struct {
	jetstream.JetStream
}

func (c createFirst) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := c.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		if _, err := c.Stream(ctx, cfg.Name); err != nil {
			return nil, err
		}
		return c.UpdateStream(ctx, cfg)
	}
	return s, err
}

func (c createFirst) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := c.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		if _, err := c.Stream(ctx, "KV_"+cfg.Bucket); err != nil {
			return nil, err
		}
		return c.UpdateKeyValue(ctx, cfg)
	}
	return kv, err
}
