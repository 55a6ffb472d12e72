// Package natsserver starts an in-process nats-server with JetStream, for
// tests and for the all-in-one modes of the skillbus command (`skillbus
// dev`, `skillbus run` without NATS_URL).
//
// It lives in internal/ and apart from pkg/events on purpose: the service
// binaries (registry, seqworker, skillface) connect to a real cluster and
// must not link the whole server. Only cmd/skillbus (through
// internal/devstack) and tests import it.
package natsserver

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrNotReady is returned by Start when the server did not accept
// connections within Options.ReadyTimeout.
var ErrNotReady = errors.New("natsserver: server not ready for connections in time")

// Options configures an embedded server. The zero value is a usable
// single-node JetStream server on 127.0.0.1 with a random port and a
// temporary store directory removed at Shutdown.
type Options struct {
	// Name is the server name (also the JetStream node name); default
	// "skillbus-embedded". Servers of one cluster need distinct names.
	Name string
	// Host to listen on; default "127.0.0.1" (loopback only).
	Host string
	// Port for clients; 0 (default) picks a free random port. Use a
	// positive number for a fixed port.
	Port int
	// StoreDir is the JetStream store directory. Empty (default) creates a
	// temporary directory that Shutdown removes; a given directory is kept,
	// so data survives a restart on the same directory. While the server
	// runs it holds an exclusive lock on StoreDir/LockFile (holding its
	// pid), so a second server on the same directory, in any process, fails
	// to start with ErrStoreInUse instead of corrupting the store.
	StoreDir string
	// MaxPayload is the server's max_payload in bytes; 0 keeps the server
	// default (1 MiB).
	MaxPayload int32
	// ReadyTimeout bounds the wait for the server to accept connections;
	// default 10 s.
	ReadyTimeout time.Duration
	// Cluster, when Cluster.Name is set, joins this server to a cluster:
	// it listens for routes on Cluster.Port (0 = random) and connects to
	// Routes. See StartCluster for a ready-made 3-node cluster.
	Cluster ClusterOptions
	// Logs, when true, prints the server's own log to stderr; default off.
	Logs bool
	// ConfigFile, when set, is a nats-server configuration file read
	// before the other options are applied: for example the one `skillbus
	// auth` writes (operator mode, its accounts and resolver,
	// docs/security.md). Name, Host, Port, StoreDir, MaxPayload and
	// Cluster of these Options still win, and JetStream is always on.
	ConfigFile string
	// Logger, when set, receives the server's notices, warnings and errors
	// (permission violations among them) instead of Logs' stderr.
	Logger server.Logger
	// LeafNodes configures leaf node connections (docs/edge.md): a hub
	// accepts them, an edge site's server dials a hub. They add to those
	// of ConfigFile.
	LeafNodes LeafNodeOptions
	// NoJetStream runs the server without JetStream, and with no store
	// directory or lock: an edge site's leaf server, which only carries
	// the site's tool calls to the hub, needs none. Default false.
	NoJetStream bool
}

// LeafNodeOptions are an embedded server's leaf node connections.
type LeafNodeOptions struct {
	// Listen accepts leaf node connections (a hub) on Port; 0 picks a
	// random port (Server.LeafURL tells which).
	Listen bool
	Port   int
	// Remotes are hubs this server dials as a leaf node.
	Remotes []LeafRemote
}

// LeafRemote is one hub a leaf server dials.
type LeafRemote struct {
	// URLs of the hub's leaf node port (nats-leaf://HOST:PORT).
	URLs []string
	// Credentials is the creds file of the leaf's user on the hub ("":
	// none, for a hub without authentication).
	Credentials string
}

// ClusterOptions places an embedded server in a cluster.
type ClusterOptions struct {
	// Name of the cluster; empty = no clustering (the default).
	Name string
	// Port for routes; 0 picks a random port.
	Port int
	// Routes are the route URLs of the other members
	// (nats-route://127.0.0.1:PORT).
	Routes []string
}

// Server is a running embedded nats-server.
type Server struct {
	srv     *server.Server
	opts    *server.Options // the server's; its leaf node port is set once it listens
	tempDir string          // removed at Shutdown; "" when the caller gave StoreDir
	lock    *os.File        // the store lock, released at Shutdown

	once sync.Once
}

// Start starts a server and waits until it accepts connections (and, in a
// cluster, has its routes). Errors: a bad option, a port in use, the store
// directory not writable, ErrStoreInUse (another server holds the store
// directory: returned at once), or ErrNotReady.
func Start(opts Options) (*Server, error) {
	so := &server.Options{}
	if opts.ConfigFile != "" {
		fo, err := server.ProcessConfigFile(opts.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("natsserver: configuration %s: %w", opts.ConfigFile, err)
		}
		so = fo
	}
	if opts.Name != "" || opts.ConfigFile == "" {
		so.ServerName = opts.Name // else the configuration's server_name
	}
	so.Host, so.Port = opts.Host, opts.Port
	so.JetStream, so.StoreDir, so.NoSigs = !opts.NoJetStream, opts.StoreDir, true
	so.NoLog = !opts.Logs && opts.Logger == nil
	if opts.MaxPayload != 0 || opts.ConfigFile == "" {
		so.MaxPayload = opts.MaxPayload
	}
	if so.ServerName == "" {
		so.ServerName = "skillbus-embedded"
	}
	if so.Host == "" {
		so.Host = "127.0.0.1"
	}
	if so.Port == 0 {
		so.Port = server.RANDOM_PORT
	}
	if opts.Port < 0 {
		return nil, fmt.Errorf("natsserver: Port %d is negative; use 0 for a random port", opts.Port)
	}
	if err := leafNodes(so, opts.LeafNodes); err != nil {
		return nil, err
	}
	s := &Server{opts: so}
	if opts.NoJetStream {
		so.StoreDir = ""
	} else if so.StoreDir == "" {
		d, err := os.MkdirTemp("", "skillbus-nats-*")
		if err != nil {
			return nil, fmt.Errorf("natsserver: temporary store directory: %w", err)
		}
		s.tempDir, so.StoreDir = d, d
	}
	if so.JetStream {
		lock, err := lockStore(so.StoreDir)
		if err != nil {
			s.removeTemp()
			return nil, err
		}
		s.lock = lock
	}
	if opts.Cluster.Name != "" {
		so.Cluster.Name = opts.Cluster.Name
		so.Cluster.Host = so.Host
		so.Cluster.Port = opts.Cluster.Port
		if so.Cluster.Port == 0 {
			so.Cluster.Port = server.RANDOM_PORT
		}
		for _, r := range opts.Cluster.Routes {
			u, err := url.Parse(r)
			if err != nil {
				s.release()
				return nil, fmt.Errorf("natsserver: cluster route %q: %w", r, err)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	srv, err := server.NewServer(so)
	if err != nil {
		s.release()
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	switch {
	case opts.Logger != nil:
		srv.SetLoggerV2(opts.Logger, false, false, false)
	case opts.Logs:
		srv.ConfigureLogger()
	}
	s.srv = srv
	srv.Start()
	wait := opts.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !srv.ReadyForConnections(wait) {
		s.Shutdown()
		return nil, fmt.Errorf("%w (waited %s)", ErrNotReady, wait)
	}
	return s, nil
}

// ClientURL returns the URL clients connect to (nats://127.0.0.1:PORT).
func (s *Server) ClientURL() string { return s.srv.ClientURL() }

// LeafURL returns the URL leaf servers dial (nats-leaf://HOST:PORT), or ""
// when the server accepts no leaf node connections.
func (s *Server) LeafURL() string {
	if s.opts.LeafNode.Port == 0 {
		return ""
	}
	host := s.opts.LeafNode.Host
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("nats-leaf://%s:%d", host, s.opts.LeafNode.Port)
}

// LeafNodes returns the number of leaf node connections the server has
// (to leaf servers, or to hubs).
func (s *Server) LeafNodes() int { return s.srv.NumLeafNodes() }

// ClusterURL returns the route URL other cluster members connect to, or ""
// when the server is not clustered.
func (s *Server) ClusterURL() string {
	a := s.srv.ClusterAddr()
	if a == nil {
		return ""
	}
	return "nats-route://" + a.String()
}

// StoreDir returns the JetStream store directory in use.
func (s *Server) StoreDir() string { return s.srv.StoreDir() }

// Connect opens a client connection to this server with the given options
// (a name, for example).
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(s.ClientURL(), opts...)
}

// Shutdown stops the server, waits until it is down, releases the store
// lock and removes a temporary store directory. It is safe to call more
// than once.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		if s.srv != nil {
			s.srv.Shutdown()
			s.srv.WaitForShutdown()
		}
		s.release()
	})
}

// release unlocks the store (the lock file stays: removing it would race
// with a server locking it right then) and removes a temporary store.
func (s *Server) release() {
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
	s.removeTemp()
}

func (s *Server) removeTemp() {
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// StartTB starts a server for a test or benchmark with a random port and a
// tb.TempDir() store, registers its Shutdown with tb.Cleanup, and fails tb
// when the server does not start.
func StartTB(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.StoreDir == "" {
		opts.StoreDir = tb.TempDir()
	}
	s, err := Start(opts)
	if err != nil {
		tb.Fatalf("start embedded nats-server: %v", err)
	}
	tb.Cleanup(s.Shutdown)
	return s
}

// ConnectTB connects to s for a test, failing tb on error; the connection is
// closed by tb.Cleanup.
func ConnectTB(tb testing.TB, s *Server, opts ...nats.Option) *nats.Conn {
	tb.Helper()
	nc, err := s.Connect(opts...)
	if err != nil {
		tb.Fatalf("connect to embedded nats-server: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// StartCluster starts an n-node JetStream cluster named name in-process,
// each node with its own store directory under dir, and waits until
// JetStream has a meta leader. It is meant for tests of replicated
// resources (n = 3). Shut every node down with ShutdownAll.
func StartCluster(n int, name, dir string, ready time.Duration) ([]*Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("natsserver: cluster size %d; want at least 1", n)
	}
	if ready <= 0 {
		ready = 20 * time.Second
	}
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var nodes []*Server
	for i := range n {
		s, err := Start(Options{
			Name:         fmt.Sprintf("%s-%d", name, i+1),
			StoreDir:     fmt.Sprintf("%s/node%d", dir, i+1),
			ReadyTimeout: ready,
			Cluster:      ClusterOptions{Name: name, Port: ports[i], Routes: routes},
		})
		if err != nil {
			ShutdownAll(nodes)
			return nil, err
		}
		nodes = append(nodes, s)
	}
	deadline := time.Now().Add(ready)
	for time.Now().Before(deadline) {
		if metaLeaderSeesAll(nodes) {
			return nodes, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	ShutdownAll(nodes)
	return nil, fmt.Errorf("%w: no JetStream meta leader that sees all %d nodes in cluster %q after %s", ErrNotReady, n, name, ready)
}

// metaLeaderSeesAll reports whether a node is the JetStream meta leader
// and counts every node as a current peer (online, with JetStream and
// stats received): only then can it place an asset on all of them (a
// replicated bucket made before fails with "no suitable peers for
// placement").
func metaLeaderSeesAll(nodes []*Server) bool {
	for _, s := range nodes {
		if s.srv.JetStreamIsLeader() {
			return len(s.srv.JetStreamClusterPeers()) >= len(nodes)
		}
	}
	return false
}

// ShutdownAll shuts down every server of a cluster.
func ShutdownAll(nodes []*Server) {
	for _, s := range nodes {
		s.Shutdown()
	}
}

// leafNodes adds lo's listener and remotes to so.
func leafNodes(so *server.Options, lo LeafNodeOptions) error {
	if lo.Listen {
		if lo.Port < 0 {
			return fmt.Errorf("natsserver: LeafNodes.Port %d is negative; use 0 for a random port", lo.Port)
		}
		so.LeafNode.Host = so.Host
		if so.LeafNode.Host == "" {
			so.LeafNode.Host = "127.0.0.1"
		}
		so.LeafNode.Port = lo.Port
		if so.LeafNode.Port == 0 {
			so.LeafNode.Port = server.RANDOM_PORT
		}
		// One server: no other hub address to tell the leaves of, and
		// leaves keep dialling the URL they were given (a proxy or load
		// balancer in front stays in the path).
		so.LeafNode.NoAdvertise = true
	}
	for i, r := range lo.Remotes {
		rem := &server.RemoteLeafOpts{Credentials: r.Credentials}
		for _, raw := range r.URLs {
			u, err := url.Parse(raw)
			if err != nil || u.Host == "" {
				return fmt.Errorf("natsserver: LeafNodes.Remotes[%d]: URL %q: want nats-leaf://HOST:PORT", i, raw)
			}
			rem.URLs = append(rem.URLs, u)
		}
		if len(rem.URLs) == 0 {
			return fmt.Errorf("natsserver: LeafNodes.Remotes[%d] has no URL", i)
		}
		so.LeafNode.Remotes = append(so.LeafNode.Remotes, rem)
	}
	return nil
}
