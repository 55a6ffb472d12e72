package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
)

// ErrConfig is returned by Config.Validate; the message names the field.
var ErrConfig = errors.New("registry: invalid configuration")

// Config configures a Registry. The zero value is valid: a registry with no
// directory (it serves the endpoints and keeps sequences created over NATS)
// on a single-node JetStream.
type Config struct {
	// Dir is the root of the tree of skills and sequences to load and
	// watch; "" (default) loads no files. Skills are files named SKILL.md
	// or skill.yaml; sequences are files named *.seq.json, *.seq.yaml or
	// *.seq.yml, anywhere in the tree. .git, .hg, .svn, .jj and
	// node_modules directories are skipped (other hidden directories such
	// as .claude/skills are loaded), and so is every entry whose name
	// starts with ".." (a mounted ConfigMap's "..data" link and
	// timestamped directory, so the mount point itself can be Dir); symlinks are followed only when they
	// resolve inside Dir, each real directory visited once (loop guard);
	// only regular files are read (see the package doc).
	Dir string
	// Debounce is the quiet time after the last file-system event before
	// the tree is rescanned, so a burst of writes (an editor's save: a
	// temporary file, a rename, a few writes within milliseconds) is handled
	// once; default 10 ms. The quiet window is never shorter than the last
	// rescan took, so a large tree is not rescanned back to back. A steady
	// stream of events still rescans every MaxDelay. A file found invalid
	// less than 100 ms after its last change is checked again before it is
	// reported, so a half-written save is not reported as invalid.
	Debounce time.Duration
	// MaxDelay bounds how long a steady stream of events can postpone a
	// rescan; default 1 s.
	MaxDelay time.Duration
	// Resync is the period of a full rescan even without events, a safety
	// net for events the OS dropped (inotify queue overflow, network file
	// systems); default 1 min; negative disables it.
	Resync time.Duration
	// Timeout bounds each NATS operation (a KV write, an event publish);
	// default 10 s.
	Timeout time.Duration
	// Provision sizes the streams and buckets (replicas, storage, TTLs);
	// the zero value suits one embedded server.
	Provision events.Options
	// Provisioned says Provision has been provisioned already (the service
	// commands do it before building the service, retrying until it
	// succeeds: internal/servicecmd): Start then only opens the buckets.
	// Provisioning again there, with update-then-create calls and no
	// retry, made services started together on a fresh cluster time out
	// and exit (docs/operations.md, "Start-up").
	Provisioned bool
	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// Meters is the meter provider of the registry's metrics (metrics.go;
	// docs/operations.md); nil = OpenTelemetry's global one.
	Meters metric.MeterProvider
	// Version is reported by `nats micro info`; default version.String()
	// (internal/version: the one version of every skillbus binary).
	Version string
}

func (c Config) withDefaults() Config {
	if c.Debounce == 0 {
		c.Debounce = 10 * time.Millisecond
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = time.Second
	}
	if c.Resync == 0 {
		c.Resync = time.Minute
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Version == "" {
		c.Version = version.String()
	}
	return c
}

// Validate reports the first invalid field, by name. Errors: ErrConfig
// (or events.ErrOptions for a bad Provision field).
func (c Config) Validate() error {
	if c.Dir != "" {
		st, err := os.Stat(c.Dir)
		switch {
		case err != nil:
			return fmt.Errorf("%w: Dir %q: %v", ErrConfig, c.Dir, err)
		case !st.IsDir():
			return fmt.Errorf("%w: Dir %q is not a directory", ErrConfig, c.Dir)
		}
	}
	switch {
	case c.Debounce < 0:
		return fmt.Errorf("%w: Debounce %s is negative; want 0 (default 10ms) or more", ErrConfig, c.Debounce)
	case c.MaxDelay < 0:
		return fmt.Errorf("%w: MaxDelay %s is negative; want 0 (default 1s) or more", ErrConfig, c.MaxDelay)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %s is negative; want 0 (default 10s) or more", ErrConfig, c.Timeout)
	}
	if c.Debounce > 0 && c.MaxDelay > 0 && c.MaxDelay < c.Debounce {
		return fmt.Errorf("%w: MaxDelay %s is shorter than Debounce %s", ErrConfig, c.MaxDelay, c.Debounce)
	}
	return c.Provision.Validate()
}
