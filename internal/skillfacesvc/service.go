// Package skillfacesvc is the skillface service (docs/skills.md): it keeps
// a skillface.Assembler current by watching the SKILLS bucket, keeps session
// state in the SKILLFACE_SESSIONS bucket (internal/kvsession), and serves
// the NATS micro endpoints skillbus.skillface.assemble and
// skillbus.skillface.info. cmd/skillface is a thin main around it; `skillbus
// dev` runs it in-process.
//
// # Guarantees
//
//   - Start returns only after the whole SKILLS bucket is loaded: the first
//     request a replica answers already sees every stored skill.
//   - Hot reload: a skill put or deleted in SKILLS is applied as soon as the
//     bucket's watch delivers it (typically well under a millisecond), with
//     no restart. A writer that needs the very next request to see its write
//     passes the revision kv.Put returned in the SkillsRevisionHeader
//     header: the replica then answers only once its view has reached that
//     revision (or with code 503 after Config.RevisionWait).
//   - A record in SKILLS that cannot be used (not JSON, invalid) is logged
//     and ignored; the previous version of that skill, if any, stays.
//   - Sessions live in SKILLFACE_SESSIONS, updated with compare-and-set, so
//     any replica serves any turn of any session and concurrent turns of one
//     session never lose an activation. Idle sessions expire after the
//     bucket's TTL (events.Options.SessionsTTL, default 24 h).
//   - Every request gets a reply: the JSON answer, or an error reply with the
//     micro error headers (Nats-Service-Error-Code, Nats-Service-Error) and
//     an ErrorReply body. A bad request never stops the service.
//   - Stop stops intake (the endpoints' subscriptions are drained), waits
//     for requests in flight, then stops the watch. The caller drains the
//     connection afterwards.
package skillfacesvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/kvsession"
	"github.com/skillbus/skillbus/internal/metrics"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// ErrStopped is returned by Start after Stop.
var ErrStopped = errors.New("skillfacesvc: stopped")

// Service is one skillface replica. Create it with New, then Start and Stop
// (or Run). Any number of replicas may serve one cluster: they form one
// queue group and share the sessions bucket.
type Service struct {
	cfg Config
	log *slog.Logger
	nc  *nats.Conn
	js  jetstream.JetStream

	asm      *skillface.Assembler
	skillsKV jetstream.KeyValue

	// mu guards skills, keys, applied and changed: the view of the SKILLS
	// bucket (the Assembler holds its own copy of the skill set).
	mu      sync.Mutex
	skills  map[string]*skill.Skill // by name: bodies and sections for skill_info
	keys    map[string]string       // KV key -> skill name
	applied uint64                  // highest SKILLS revision applied
	changed chan struct{}           // closed and replaced when applied grows

	sem chan struct{} // one token per request in flight (MaxConcurrent)

	// flightMu guards flight and idle.
	flightMu sync.Mutex
	flight   int
	idle     chan struct{} // closed when flight drops to 0; nil while 0

	requests, failures atomic.Uint64
	met                *metrics.Skillface // metrics.go

	svc    micro.Service
	cancel context.CancelFunc
	done   chan struct{} // closed when the watch loop ends

	lifeMu  sync.Mutex // guards started, stopped
	started bool
	stopped bool
}

// New returns a Service over nc. The caller owns nc and drains it after
// Stop. Errors: ErrConfig, events.ErrOptions.
func New(nc *nats.Conn, cfg Config) (*Service, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: the NATS connection is nil", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("skillfacesvc: jetstream: %w", err)
	}
	return &Service{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "skillface"),
		nc:      nc,
		js:      js,
		skills:  map[string]*skill.Skill{},
		keys:    map[string]string{},
		changed: make(chan struct{}),
		sem:     make(chan struct{}, cfg.MaxConcurrent),
		met:     newMetrics(cfg),
	}, nil
}

// Start provisions the streams and buckets (unless Config.Provisioned), loads every skill of the SKILLS
// bucket, starts following the bucket, and serves the endpoints. ctx bounds
// the start-up only (Config.StartTimeout when it has no deadline). Errors:
// ErrStopped, events.ErrProvision, a bucket or watch error, a micro service
// error.
func (s *Service) Start(ctx context.Context) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if s.started {
		return errors.New("skillfacesvc: already started")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.StartTimeout)
		defer cancel()
	}
	if !s.cfg.Provisioned {
		if err := events.Provision(ctx, s.js, s.cfg.Provision); err != nil {
			return err
		}
	}
	var err error
	if s.skillsKV, err = s.js.KeyValue(ctx, events.BucketSkills); err != nil {
		return fmt.Errorf("skillfacesvc: bucket %s: %w", events.BucketSkills, err)
	}
	sessKV, err := s.js.KeyValue(ctx, events.BucketSessions)
	if err != nil {
		return fmt.Errorf("skillfacesvc: bucket %s: %w", events.BucketSessions, err)
	}
	store := kvsession.NewDirect(sessKV, s.nc, events.BucketSessions)
	if err := store.RefreshTTL(ctx); err != nil {
		// Not fatal: with the TTL unknown every turn writes its session
		// (see skillface.SessionTTLReporter); it is read again later.
		s.log.Warn("cannot read the sessions bucket's TTL; every turn writes its session until it can", "err", err)
	}
	opts := append(s.cfg.options(), skillface.WithSessionStore(store))
	if s.asm, err = skillface.New(opts...); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}

	loopCtx, cancel := context.WithCancel(context.Background())
	w, err := s.load(ctx, loopCtx)
	if err != nil {
		cancel()
		return err
	}
	s.cancel = cancel
	s.done = make(chan struct{})
	go s.follow(loopCtx, w)
	if err := s.serve(); err != nil {
		cancel()
		<-s.done
		return err
	}
	s.started = true
	s.mu.Lock()
	n, rev := len(s.skills), s.applied
	s.mu.Unlock()
	s.log.Info("skillface started", "skills", n, "skills_revision", rev,
		"sessions_ttl", s.cfg.Provision.WithDefaults().SessionsTTL, "max_concurrent", s.cfg.MaxConcurrent)
	return nil
}

// Stop stops the endpoints (their subscriptions are drained, so no request
// already received is lost), waits until the requests in flight are
// answered, then stops following the SKILLS bucket; ctx bounds the wait.
// It does not drain or close the connection: the caller does, after Stop.
// Safe to call more than once and before Start.
func (s *Service) Stop(ctx context.Context) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	if !s.started {
		return nil
	}
	var errs []error
	if err := s.svc.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("skillfacesvc: stop endpoints: %w", err))
	}
	if err := s.waitIdle(ctx); err != nil {
		errs = append(errs, err)
	}
	s.cancel()
	select {
	case <-s.done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("skillfacesvc: skills watch still running at the stop deadline: %w", ctx.Err()))
	}
	s.log.Info("skillface stopped", "requests", s.requests.Load(), "errors", s.failures.Load())
	return errors.Join(errs...)
}

// Run starts the service, serves until ctx is done, then stops it within
// 10 s. It returns Start's error, or Stop's.
func (s *Service) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Stop(sctx)
}

// Stats is a snapshot of a replica's counters; it is also the data of the
// endpoints in `nats micro stats skillbus-skillface`.
type Stats struct {
	// Assembler: the prompt-assembly counters (pkg/skillface).
	Assembler skillface.Stats `json:"assembler"`
	// Skills: skills loaded; SkillsRevision: the highest SKILLS revision
	// applied.
	Skills         int    `json:"skills"`
	SkillsRevision uint64 `json:"skills_revision"`
	// Requests answered and, of those, Errors answered with an error reply.
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	// InFlight: requests being worked on now.
	InFlight int `json:"in_flight"`
}

// Stats returns the replica's counters. Before Start, Assembler is zero.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	st := Stats{Skills: len(s.skills), SkillsRevision: s.applied}
	s.mu.Unlock()
	if s.asm != nil {
		st.Assembler = s.asm.Stats()
	}
	st.Requests, st.Errors = s.requests.Load(), s.failures.Load()
	s.flightMu.Lock()
	st.InFlight = s.flight
	s.flightMu.Unlock()
	return st
}

// SkillsRevision returns the highest revision of the SKILLS bucket this
// replica has applied (0 before Start or for an empty bucket).
func (s *Service) SkillsRevision() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// begin counts a request in flight.
func (s *Service) begin() {
	s.flightMu.Lock()
	if s.flight == 0 {
		s.idle = make(chan struct{})
	}
	s.flight++
	s.flightMu.Unlock()
}

// end uncounts a request in flight.
func (s *Service) end() {
	s.flightMu.Lock()
	s.flight--
	if s.flight == 0 {
		close(s.idle)
		s.idle = nil
	}
	s.flightMu.Unlock()
}

// waitIdle waits until no request is in flight, and stays so for a moment
// (requests the drained subscriptions still deliver are counted as they
// arrive), or until ctx is done.
func (s *Service) waitIdle(ctx context.Context) error {
	const settle = 25 * time.Millisecond
	for {
		s.flightMu.Lock()
		idle := s.idle
		s.flightMu.Unlock()
		if idle != nil {
			select {
			case <-idle:
			case <-ctx.Done():
				return fmt.Errorf("skillfacesvc: requests still in flight at the stop deadline: %w", ctx.Err())
			}
		}
		select {
		case <-time.After(settle):
		case <-ctx.Done():
			return nil
		}
		s.flightMu.Lock()
		n := s.flight
		s.flightMu.Unlock()
		if n == 0 {
			return nil
		}
	}
}
