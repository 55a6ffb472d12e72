// Package health serves a skillbus process's health and metrics endpoints
// on one HTTP address (--health-addr), for an orchestrator's probes and a
// Prometheus scrape (docs/operations.md, "Health"):
//
//	/livez    200 "ok" while the process runs: no dependency is checked, so
//	          a NATS outage never makes Kubernetes restart every pod at once.
//	/readyz   200 "ok" when every readiness condition holds, else 503 with
//	          one line per condition that does not ("nats: disconnected").
//	          ?verbose lists every condition either way.
//	/metrics  the Prometheus text format (internal/telemetry), 404 when
//	          the prometheus exporter is off.
//
// Readiness is a set of named conditions. A Gate is one a service sets
// itself (closed until the first KV load is done, for instance); a Check is
// a function asked at every probe (the NATS connection is up). Stopping
// fails readiness for good: the first step of a graceful shutdown. A
// Readiness with no condition is not ready: a process registers its
// conditions (all closed at first) before it serves /readyz, and a probe
// can never find it ready in between.
package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStopping is the readiness error once Stopping was called.
var ErrStopping = errors.New("shutting down")

// errNotYet is a gate's error until it is opened.
var errNotYet = errors.New("not yet")

// errNoConditions is the readiness error while no condition is registered.
var errNoConditions = errors.New("starting: no readiness condition registered yet")

// Readiness is the set of conditions /readyz reports. The zero value has
// no condition and is not ready (errNoConditions) until the first Check or
// Gate; it is safe for concurrent use.
type Readiness struct {
	stopping atomic.Bool

	mu    sync.Mutex // mu guards conds
	conds []condition
}

type condition struct {
	name  string
	check func() error
}

// Check adds a condition named name that holds while check returns nil;
// check is called at every probe, so it must be quick and safe to call
// concurrently.
func (r *Readiness) Check(name string, check func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conds = append(r.conds, condition{name, check})
}

// Gate adds a condition named name that does not hold ("not yet") until
// the returned Gate is opened. It is the hook a service calls when its
// start-up work is done.
func (r *Readiness) Gate(name string) *Gate {
	g := &Gate{}
	g.err.Store(&errNotYet)
	r.Check(name, g.Err)
	return g
}

// Stopping makes the process not ready from now on (ErrStopping), whatever
// the conditions say. It cannot be undone.
func (r *Readiness) Stopping() { r.stopping.Store(true) }

// Err returns nil when the process is ready, else an error listing every
// condition that does not hold, one "name: reason" per line.
func (r *Readiness) Err() error {
	_, err := r.report()
	return err
}

// report returns every condition's line and the combined error.
func (r *Readiness) report() (lines []string, err error) {
	var failed []string
	if r.stopping.Load() {
		failed = append(failed, "stopping: "+ErrStopping.Error())
		lines = append(lines, failed[0])
	}
	r.mu.Lock()
	conds := append([]condition(nil), r.conds...)
	r.mu.Unlock()
	if len(conds) == 0 {
		failed = append(failed, errNoConditions.Error())
		lines = append(lines, failed[len(failed)-1])
	}
	for _, c := range conds { // no callback under the lock
		if e := c.check(); e != nil {
			l := c.name + ": " + e.Error()
			failed = append(failed, l)
			lines = append(lines, l)
		} else {
			lines = append(lines, c.name+": ok")
		}
	}
	if len(failed) > 0 {
		return lines, errors.New(strings.Join(failed, "\n"))
	}
	return lines, nil
}

// Gate is a readiness condition set by its owner. Safe for concurrent use.
type Gate struct {
	err atomic.Pointer[error]
}

// Open makes the condition hold.
func (g *Gate) Open() { g.err.Store(new(error)) }

// Fail makes the condition fail with err (nil = Open).
func (g *Gate) Fail(err error) { g.err.Store(&err) }

// Err returns nil when the gate is open, else why not.
func (g *Gate) Err() error { return *g.err.Load() }

// Server is the running health endpoint.
type Server struct {
	srv *http.Server
	ln  net.Listener
	// done is closed when Serve returned.
	done chan struct{}
}

// Listen binds addr (host:port; ":0" picks a free port) at once, so a port
// in use is an error at start, and serves the endpoints of the package
// documentation in a goroutine until Shutdown. metrics may be nil (no
// /metrics). Errors: the listen error, naming addr.
func Listen(addr string, ready *Readiness, metrics http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		lines, err := ready.report()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, verbose := r.URL.Query()["verbose"]
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			body := err.Error() + "\n"
			if verbose {
				body = strings.Join(lines, "\n") + "\n"
			}
			_, _ = w.Write([]byte(body))
			return
		}
		body := "ok\n"
		if verbose {
			body = strings.Join(lines, "\n") + "\nok\n"
		}
		_, _ = w.Write([]byte(body))
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed at Shutdown
	}()
	return s, nil
}

// Addr returns the address the server listens on (with the port chosen
// for ":0").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops the server: probes and scrapes in progress finish, within
// ctx's deadline. Safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
