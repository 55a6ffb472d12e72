package skillfacesvc

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/sections"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// ErrConfig is returned by Config.Validate and New; the message names the
// field.
var ErrConfig = errors.New("skillfacesvc: invalid configuration")

// Defaults of Config.
const (
	// DefaultMaxRequestBytes: the largest request body accepted (1 MiB, the
	// nats-server default max_payload).
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxConcurrent: requests one replica works on at once.
	DefaultMaxConcurrent = 64
	// DefaultTimeout bounds one request's work (session reads and writes
	// included) when the request brings no tighter deadline.
	DefaultTimeout = 10 * time.Second
	// DefaultRevisionWait bounds how long a request carrying the
	// SkillsRevisionHeader waits for this replica to see that revision.
	DefaultRevisionWait = 5 * time.Second
	// DefaultStartTimeout bounds Start's initial load of the SKILLS bucket.
	DefaultStartTimeout = 30 * time.Second
)

// Config configures a Service. The zero value is valid: the budgets of
// docs/skills.md, sessions kept 24 h, on a single-node JetStream.
type Config struct {
	// Provision sizes the streams and buckets every service provisions at
	// start (replicas, storage); Provision.SessionsTTL is how long an idle
	// session is kept in SKILLFACE_SESSIONS (default 24 h, docs/skills.md).
	Provision events.Options
	// Provisioned says Provision has been provisioned already (the service
	// commands do it before building the service, retrying until it
	// succeeds: internal/servicecmd): Start then only opens the buckets.
	// Provisioning again there, with update-then-create calls and no
	// retry, made services started together on a fresh cluster time out
	// and exit (docs/operations.md, "Start-up").
	Provisioned bool

	// EntryChars is the listing entry budget in characters; 0 means
	// skillface.DefaultEntryChars (1,536); at least skillface.MinEntryChars.
	EntryChars int
	// ListingEntries is how many skills the listing shows; 0 means
	// skillface.DefaultListingEntries (64).
	ListingEntries int
	// SessionBodies is how many skill bodies a session holds; 0 means
	// skillface.DefaultSessionBodies (4).
	SessionBodies int
	// BodyBytes is the body budget in bytes; 0 means
	// skillface.DefaultBodyBytes (16 KiB).
	BodyBytes int
	// MaxAttempts is how often one request retries a lost session
	// compare-and-set before answering 409; 0 means
	// skillface.DefaultMaxAttempts (100).
	MaxAttempts int

	// Info sets the skill_info budgets (whole text up to 200 lines, else
	// 30 lines and a table of contents); the zero value means the
	// docs/skills.md defaults.
	Info sections.Limits

	// MaxRequestBytes is the largest request body accepted; a larger one
	// is answered with code 413. 0 means DefaultMaxRequestBytes (1 MiB).
	MaxRequestBytes int
	// MaxConcurrent is how many requests one replica works on at once;
	// more wait for a slot (other replicas of the queue group take their
	// share). 0 means DefaultMaxConcurrent (64).
	MaxConcurrent int
	// Timeout bounds the work on one request; 0 means DefaultTimeout
	// (10 s).
	Timeout time.Duration
	// RevisionWait bounds how long a request with SkillsRevisionHeader
	// waits for this replica's view of the SKILLS bucket to reach that
	// revision; 0 means DefaultRevisionWait (5 s).
	RevisionWait time.Duration
	// StartTimeout bounds the initial load of the SKILLS bucket in Start
	// when ctx has no earlier deadline; 0 means DefaultStartTimeout (30 s).
	StartTimeout time.Duration

	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Meters is the meter provider of the service's metrics (metrics.go;
	// docs/operations.md); nil means OpenTelemetry's global one.
	Meters metric.MeterProvider
	// Version is reported by `nats micro info`; "" means version.String()
	// (internal/version: the one version of every skillbus binary).
	Version string
}

func (c Config) withDefaults() Config {
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RevisionWait == 0 {
		c.RevisionWait = DefaultRevisionWait
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Version == "" {
		c.Version = version.String()
	}
	return c
}

// Validate reports the first invalid field, by name. Errors: ErrConfig, or
// events.ErrOptions for a bad Provision field.
func (c Config) Validate() error {
	nonNeg := []struct {
		name string
		v    int64
		def  string
	}{
		{"ListingEntries", int64(c.ListingEntries), "64"},
		{"SessionBodies", int64(c.SessionBodies), "4"},
		{"BodyBytes", int64(c.BodyBytes), "16384"},
		{"MaxAttempts", int64(c.MaxAttempts), "100"},
		{"MaxRequestBytes", int64(c.MaxRequestBytes), "1048576"},
		{"MaxConcurrent", int64(c.MaxConcurrent), "64"},
		{"Timeout", int64(c.Timeout), "10s"},
		{"RevisionWait", int64(c.RevisionWait), "5s"},
		{"StartTimeout", int64(c.StartTimeout), "30s"},
		{"Info.WholeMaxLines", int64(c.Info.WholeMaxLines), "200"},
		{"Info.PreviewLines", int64(c.Info.PreviewLines), "30"},
		{"Info.TOCDepth", int64(c.Info.TOCDepth), "0, every level"},
	}
	for _, f := range nonNeg {
		if f.v < 0 {
			return fmt.Errorf("%w: %s is negative (%d); want 0 (default %s) or more", ErrConfig, f.name, f.v, f.def)
		}
	}
	if c.EntryChars != 0 && c.EntryChars < skillface.MinEntryChars {
		return fmt.Errorf("%w: EntryChars %d is below the minimum %d (a skill name and the .truncated mark must fit); 0 means the default %d",
			ErrConfig, c.EntryChars, skillface.MinEntryChars, skillface.DefaultEntryChars)
	}
	return c.Provision.Validate()
}

// options returns the skillface options for c (zero fields left to the
// package defaults).
func (c Config) options() []skillface.Option {
	var o []skillface.Option
	if c.EntryChars != 0 {
		o = append(o, skillface.WithEntryChars(c.EntryChars))
	}
	if c.ListingEntries != 0 {
		o = append(o, skillface.WithListingEntries(c.ListingEntries))
	}
	if c.SessionBodies != 0 {
		o = append(o, skillface.WithSessionBodies(c.SessionBodies))
	}
	if c.BodyBytes != 0 {
		o = append(o, skillface.WithBodyBytes(c.BodyBytes))
	}
	if c.MaxAttempts != 0 {
		o = append(o, skillface.WithMaxAttempts(c.MaxAttempts))
	}
	return o
}
