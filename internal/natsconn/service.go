package natsconn

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Reconnect back-off of Dial: the wait after the n-th failed pass over
// the server list is ReconnectInitial doubled per pass up to ReconnectMax,
// with ±20% jitter so replicas do not reconnect in step. ReconnectMax is
// short so that a service is back within about a second of the server
// (the registry retakes its lease within 2 s of it: docs/operations.md);
// a pass is one TCP connect per server, cheap for the server to refuse.
const (
	ReconnectInitial = 250 * time.Millisecond
	ReconnectMax     = time.Second
)

// ReconnectDelay returns the wait before reconnect pass attempts (1-based)
// as Dial uses it.
func ReconnectDelay(attempts int) time.Duration {
	d := ReconnectInitial
	for i := 1; i < attempts && d < ReconnectMax; i++ {
		d *= 2
	}
	d = min(d, ReconnectMax)
	return d - d/5 + time.Duration(rand.Int64N(int64(2*d/5)+1))
}

// Dead-link detection of Dial: a PING every PingInterval, and the
// connection is taken for dead (and reconnected elsewhere) when
// MaxPingsOutstanding of them go unanswered — 4 to 6 s after a silent
// failure of the server or of the network to it (a partition, a frozen
// node), where nats.go's defaults (2 minutes, 2) take 4 to 6 minutes. It
// must stay under the 8 s a tool call waits for a silent provider (3 s
// of silence and the 5 s lost grace, docs/tools.md, "Keep-alives"): a
// provider or seqworker whose node is cut off reconnects to another one
// in time for the call sent again to reach it (RELIABILITY.md).
const (
	PingInterval        = 2 * time.Second
	MaxPingsOutstanding = 2
)

// unreachableLogEvery is how often Dial repeats its "waiting for NATS"
// line while a server stays unreachable (the first failure is logged at
// once).
const unreachableLogEvery = 15 * time.Second

// Conn is the long-lived connection of a service (see Dial). The embedded
// *nats.Conn is for the service's use; shut it down with Drain.
type Conn struct {
	*nats.Conn
	log    *slog.Logger
	url    string        // the configured servers, redacted
	lost   chan struct{} // closed when the connection closed without Drain
	closed chan struct{} // closed when the connection closed, for any reason
	ours   atomic.Bool   // Drain was called

	creds    string        // Config.Credentials, for messages
	refusals chan struct{} // signalled when a refusal is recorded (refused.go)

	mu         sync.Mutex // mu guards the fields below
	downSince  time.Time  // start of the current outage (or of the first connect)
	lastLogged time.Time
	failures   int
	connected  bool      // connected at least once
	refused    []Refusal // subscriptions refused since the last (re)connect
}

// Dial opens a service's connection: it never gives up on NATS by itself.
//
//   - When no server is reachable at start it returns at once with the
//     connection still trying (nats.RetryOnFailedConnect); WaitConnected
//     waits for it, and the log says "waiting for NATS" with the URL and
//     the last error (again every 15 s).
//   - A lost connection reconnects for ever (nats.MaxReconnects(-1)) with
//     the back-off of ReconnectDelay; disconnects, reconnects and lame duck
//     notices are logged. A silent one is found dead within 4 to 6 s
//     (PingInterval, MaxPingsOutstanding).
//   - The connection can still close for good: nats.go gives up when a
//     server refuses the credentials twice in a row, and a server may
//     close a client. Lost is closed then, with the reason logged, so the
//     service stops and exits non-zero and its orchestrator restarts it,
//     instead of a live process serving nothing.
//
// name is the connection name servers show (nats server report
// connections). opts come after the defaults. Errors: ErrConfig for bad
// settings or an unusable option.
func Dial(c *Config, name string, log *slog.Logger, opts ...nats.Option) (*Conn, error) {
	auth, err := c.Options()
	if err != nil {
		return nil, err
	}
	conn := &Conn{log: log, url: Redact(c.URL), lost: make(chan struct{}), closed: make(chan struct{}), downSince: time.Now(),
		creds: c.Credentials(), refusals: make(chan struct{}, 1)}
	base := []nats.Option{
		nats.Name(name),
		nats.Timeout(5 * time.Second),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(ReconnectDelay),
		nats.PingInterval(PingInterval),
		nats.MaxPingsOutstanding(MaxPingsOutstanding),
		nats.ConnectHandler(conn.onConnect),
		nats.ReconnectHandler(conn.onReconnect),
		nats.DisconnectErrHandler(conn.onDisconnect),
		nats.ReconnectErrHandler(conn.onReconnectErr),
		nats.ClosedHandler(conn.onClosed),
		nats.LameDuckModeHandler(func(nc *nats.Conn) {
			log.Warn("NATS server entering lame duck mode; will reconnect elsewhere", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if r, ok := ParseRefusal(err); ok {
				log.Error("the NATS server refused a subscription; nothing sent there reaches this process", "subject", r.Subject, "queue", r.Queue, "credentials", conn.creds, "err", err)
				conn.record(r)
				return
			}
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS error", "subject", subject, "err", err)
		}),
	}
	nc, err := nats.Connect(c.URL, append(append(base, auth...), opts...)...)
	if err != nil {
		return nil, err
	}
	conn.Conn = nc
	return conn, nil
}

// WaitConnected returns nil once the connection is established (at once if
// it is), ctx's error when ctx ends first, or ErrConnectionClosed wrapped
// with the last error when it closed for good (wrong credentials, say).
func (c *Conn) WaitConnected(ctx context.Context) error {
	ch := c.StatusChanged(nats.CONNECTED, nats.CLOSED)
	defer c.RemoveStatusListener(ch)
	for {
		switch c.Status() {
		case nats.CONNECTED:
			return nil
		case nats.CLOSED:
			return c.closedErr()
		}
		select {
		case <-ch:
		case <-c.closed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closedErr is the error of a connection closed for good.
func (c *Conn) closedErr() error {
	if err := c.LastError(); err != nil {
		return errors.Join(nats.ErrConnectionClosed, err)
	}
	return nats.ErrConnectionClosed
}

// Lost is closed when the connection has closed for good without Drain
// being called: the service should stop and exit non-zero.
func (c *Conn) Lost() <-chan struct{} { return c.lost }

// LostErr returns why the connection closed (nil while it is open or when
// Drain closed it).
func (c *Conn) LostErr() error {
	select {
	case <-c.lost:
		return c.closedErr()
	default:
		return nil
	}
}

// Drain drains the connection (subscriptions finish the messages they
// hold, pending publishes are flushed) and waits until it is closed; when
// ctx ends first it closes the connection at once and returns ctx's
// error. Safe to call on a connection already closed.
func (c *Conn) Drain(ctx context.Context) error {
	c.ours.Store(true)
	if err := c.Conn.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		c.Close()
		return err
	}
	select {
	case <-c.closed:
		return nil
	case <-ctx.Done():
		c.Close()
		<-c.closed
		return ctx.Err()
	}
}

// Close closes the connection at once (without draining).
func (c *Conn) Close() {
	c.ours.Store(true)
	c.Conn.Close()
}

func (c *Conn) onConnect(nc *nats.Conn) {
	c.mu.Lock()
	waited, failures := time.Since(c.downSince), c.failures
	c.failures, c.connected = 0, true
	c.mu.Unlock()
	c.log.Info("NATS connected", "url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName(), "waited", waited.Round(time.Millisecond), "failed_attempts", failures)
}

func (c *Conn) onReconnect(nc *nats.Conn) {
	c.mu.Lock()
	down := time.Since(c.downSince)
	c.failures, c.connected = 0, true
	c.mu.Unlock()
	// Every subscription was sent again: a refusal the server no longer
	// makes is forgotten once it has had the time to make it (refused.go).
	go c.recheckRefusals(time.Now())
	c.log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName(), "down", down.Round(time.Millisecond))
}

func (c *Conn) onDisconnect(_ *nats.Conn, err error) {
	c.mu.Lock()
	c.downSince, c.lastLogged, c.failures = time.Now(), time.Now(), 0
	c.mu.Unlock()
	if c.ours.Load() {
		return
	}
	c.log.Warn("NATS disconnected; reconnecting", "err", err)
}

func (c *Conn) onReconnectErr(_ *nats.Conn, err error) {
	c.mu.Lock()
	c.failures++
	first := c.lastLogged.IsZero()
	due := first || time.Since(c.lastLogged) >= unreachableLogEvery
	if due {
		c.lastLogged = time.Now()
	}
	failures, waited, connected := c.failures, time.Since(c.downSince), c.connected
	c.mu.Unlock()
	if !due {
		return
	}
	msg := "NATS unreachable; still reconnecting"
	if !connected {
		msg = "waiting for NATS"
	}
	c.log.Warn(msg, "url", c.url, "attempts", failures, "waited", waited.Round(time.Second), "err", err)
}

func (c *Conn) onClosed(nc *nats.Conn) {
	if !c.ours.Load() {
		c.log.Error("NATS connection closed for good", "err", nc.LastError())
		close(c.lost)
	}
	close(c.closed)
}
