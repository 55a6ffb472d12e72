// Package devstack runs the whole of skillbus in one process: an embedded
// nats-server with JetStream, the registry, the seqworker, the skillface
// service and the built-in tools (docs/architecture.md, Components). `skillbus dev` runs it until
// interrupted; `skillbus run` without NATS_URL starts one for a single run.
//
// Every component talks to the others only through the embedded server,
// exactly as separate processes would on a cluster, so what works here works
// deployed.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// BuiltinProvider is the micro service name of the built-in tools.
const BuiltinProvider = "skillbus-builtin"

// Config configures a Stack. The zero value is a stack on a random port
// with a temporary store, no definition directory and no built-in tools.
type Config struct {
	// DataDir is the JetStream store directory; "" (default) uses a
	// temporary directory removed by Stop. A given directory is kept, so
	// runs, sessions and stored sequences survive a restart.
	DataDir string
	// Host and Port the embedded server listens on; defaults 127.0.0.1
	// and 0 (a random free port).
	Host string
	Port int
	// Dir is the tree of skills and sequences the registry loads and
	// watches; "" (default) loads none.
	Dir string
	// Tools configures the built-in tools; Tools.Root "" (default) serves
	// none.
	Tools builtin.Config
	// FetchWait is the seqworker's pull wait, which bounds how long Stop
	// waits for it; default 500 ms.
	FetchWait time.Duration
	// Concurrency is the number of runs the seqworker executes at once
	// (seqworker.Config.Concurrency); 0 (default) is the seqworker's
	// default. With 1, a run started while another runs stays queued.
	Concurrency int
	// Logger receives the services' logs; nil discards them.
	Logger *slog.Logger
	// Auth, when set, locks the bus down with a `skillbus auth` setup
	// (docs/security.md): the embedded server runs its operator, accounts
	// and resolver, and each component connects as its own user — the
	// registry, the seqworker and skillface with their roles' creds, the
	// built-in tools as the "tools" role. nil (default): no
	// authentication, for a loopback address only.
	Auth *auth.Setup
	// ServerLogger, when set, receives the embedded server's log
	// (permission violations among it).
	ServerLogger server.Logger
	// LeafNodes, when LeafNodes.Listen is set, makes the embedded server a
	// hub that edge sites' leaf servers dial (docs/edge.md; Stack.LeafURL).
	LeafNodes natsserver.LeafNodeOptions
}

// Stack is a running all-in-one skillbus.
type Stack struct {
	srv      *natsserver.Server
	auth     *auth.Setup
	conns    []*nats.Conn // the components' connections, in start order
	shared   *nats.Conn   // without auth: the services' one connection
	reg      *registry.Registry
	worker   *seqworker.Worker
	face     *skillfacesvc.Service
	provider *builtin.Provider
	tools    *tool.Server
}

// Start starts the server and every service, in an order that lets each
// find what it needs, and returns when all of them serve. On error what was
// started is stopped again. Errors: the server's (a port in use, a store
// directory not writable), builtin.ErrConfig, and each service's Start
// errors, wrapped with the component's name.
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = 500 * time.Millisecond
	}
	s := &Stack{auth: cfg.Auth}
	defer func() {
		if err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Stop(stopCtx)
		}
	}()
	if cfg.Tools.Root != "" {
		if s.provider, err = builtin.New(cfg.Tools); err != nil {
			return nil, err
		}
	}
	so := natsserver.Options{Name: "skillbus-dev", Host: cfg.Host, Port: cfg.Port, StoreDir: cfg.DataDir, Logger: cfg.ServerLogger, LeafNodes: cfg.LeafNodes}
	if cfg.Auth != nil {
		so.ConfigFile = cfg.Auth.AuthConfig()
	}
	busStarted := time.Now()
	s.srv, err = natsserver.Start(so)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	regNC, err := s.connect(auth.RoleRegistry, "skillbus-dev registry")
	if err != nil {
		return nil, err
	}
	if s.reg, err = registry.New(regNC, registry.Config{Dir: cfg.Dir, Logger: log.With("service", "registry"), Provision: s.owner(events.OwnerRegistry),
		// The server is this process's: a registry lease in its store is
		// left from an earlier run (docs/skills.md, "One writer").
		BusStarted: busStarted}); err != nil {
		return nil, err
	}
	if err = s.reg.Start(ctx); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	faceNC, err := s.connect(auth.RoleSkillface, "skillbus-dev skillface")
	if err != nil {
		return nil, err
	}
	if s.face, err = skillfacesvc.New(faceNC, skillfacesvc.Config{Logger: log.With("service", "skillface"), Provision: s.owner(events.OwnerSkillface)}); err != nil {
		return nil, err
	}
	if err = s.face.Start(ctx); err != nil {
		return nil, fmt.Errorf("skillface: %w", err)
	}
	if s.provider != nil {
		tnc, err := s.connect(auth.RoleTools, "skillbus-dev tools")
		if err != nil {
			return nil, err
		}
		s.tools, err = tool.Serve(tnc, tool.ServerConfig{Name: BuiltinProvider, Version: version.String(), Description: "skillbus built-in tools rooted at " + s.provider.Root(), Metadata: s.provider.Metadata()}, s.provider.Tools()...)
		if err != nil {
			return nil, fmt.Errorf("built-in tools: %w", err)
		}
	}
	workerNC, err := s.connect(auth.RoleSeqworker, "skillbus-dev seqworker")
	if err != nil {
		return nil, err
	}
	if s.worker, err = seqworker.New(workerNC, seqworker.Config{FetchWait: cfg.FetchWait, Concurrency: cfg.Concurrency, ShutdownTimeout: 5 * time.Second, Logger: log.With("service", "seqworker"), Provision: s.owner(events.OwnerSeqworker)}); err != nil {
		return nil, err
	}
	if err = s.worker.Start(ctx); err != nil {
		return nil, fmt.Errorf("seqworker: %w", err)
	}
	return s, nil
}

// connect returns the connection of the component in role: without Auth
// one connection shared by the services (the tools get their own), with
// Auth a connection per component as the role's user.
func (s *Stack) connect(role, name string) (*nats.Conn, error) {
	var opts []nats.Option
	switch {
	case s.auth != nil:
		o, err := auth.ConnectOptions(s.auth.CredsFile(role))
		if err != nil {
			return nil, err
		}
		opts = o
	case role != auth.RoleTools && s.shared != nil:
		return s.shared, nil
	case role != auth.RoleTools:
		name = "skillbus-dev services"
	}
	nc, err := s.srv.Connect(append([]nats.Option{nats.Name(name)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded server as %s: %w", role, err)
	}
	if s.auth == nil && role != auth.RoleTools {
		s.shared = nc
	}
	s.conns = append(s.conns, nc)
	return nc, nil
}

// owner returns the provisioning options of the service owner: with Auth
// each service updates only what it owns (its user may not change the
// rest, docs/security.md); without, every service provisions everything.
func (s *Stack) owner(owner string) events.Options {
	if s.auth == nil {
		return events.Options{}
	}
	return events.Options{Owner: owner}
}

// Creds returns the creds file of role when the stack runs with Auth, else
// "".
func (s *Stack) Creds(role string) string {
	if s.auth == nil {
		return ""
	}
	return s.auth.CredsFile(role)
}

// URL returns the client URL of the embedded server (nats://HOST:PORT).
func (s *Stack) URL() string { return s.srv.ClientURL() }

// StoreDir returns the JetStream store directory in use.
func (s *Stack) StoreDir() string { return s.srv.StoreDir() }

// LeafURL returns the URL edge sites' leaf servers dial
// (nats-leaf://HOST:PORT), or "" without Config.LeafNodes.
func (s *Stack) LeafURL() string { return s.srv.LeafURL() }

// LeafNodes returns the number of leaf servers connected to the stack's
// server.
func (s *Stack) LeafNodes() int { return s.srv.LeafNodes() }

// ToolsRoot returns the built-in tools' root (absolute), or "" when the
// stack serves no built-in tools.
func (s *Stack) ToolsRoot() string {
	if s.provider == nil {
		return ""
	}
	return s.provider.Root()
}

// Registry returns the in-process registry (for Rescan in tests).
func (s *Stack) Registry() *registry.Registry { return s.reg }

// Stop stops the services in the reverse order of Start — the seqworker
// first (runs in flight get until ctx's deadline to finish their group),
// then the tools, skillface and the registry — drains the connections and
// shuts the server down. Safe to call on a partly started stack and more
// than once. Errors: the first error of a component's Stop (joined).
func (s *Stack) Stop(ctx context.Context) error {
	var errs []error
	if s.worker != nil {
		errs = append(errs, s.worker.Stop(ctx))
	}
	if ctx.Err() != nil {
		// The worker used the whole budget (runs in flight, handed back at
		// its end); the rest stop in moments, given their own short one,
		// rather than each reporting the same spent deadline.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
	}
	if s.tools != nil {
		errs = append(errs, s.tools.Stop(ctx))
	}
	if s.face != nil {
		errs = append(errs, s.face.Stop(ctx))
	}
	if s.reg != nil {
		errs = append(errs, s.reg.Stop(ctx))
	}
	for i := len(s.conns) - 1; i >= 0; i-- {
		if nc := s.conns[i]; !nc.IsClosed() {
			drain(ctx, nc)
		}
	}
	if s.srv != nil {
		s.srv.Shutdown()
	}
	if s.provider != nil {
		_ = s.provider.Close()
	}
	return errors.Join(errs...)
}

// drain drains nc and waits for it to close, until ctx is done.
func drain(ctx context.Context, nc *nats.Conn) {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-closed:
	case <-ctx.Done():
		nc.Close()
	}
}
