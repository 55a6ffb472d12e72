package natsconn

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Refusal is a subscription the NATS server refused: its permissions do
// not let this connection's user subscribe to Subject (in Queue, when it
// is a queue subscription). The server says so once, asynchronously, and
// the subscription then receives nothing, while the connection stays up:
// a service whose endpoints were refused would look healthy and serve
// nothing. Conn records each refusal until the next reconnect (which sends
// every subscription again).
type Refusal struct {
	Subject, Queue string
	// Err is the server's error as nats.go reports it (it wraps
	// nats.ErrPermissionViolation).
	Err error

	at time.Time // when the server last refused it
}

// refusalSettle is how long after a reconnect's round trip a refusal the
// server did not repeat is kept: the server's error reaches the error
// handler through nats.go's callback queue, a moment after the round trip.
const refusalSettle = time.Second

// String is `tool.fs.read (queue skillbus-tools)`.
func (r Refusal) String() string {
	if r.Queue != "" {
		return r.Subject + " (queue " + r.Queue + ")"
	}
	return r.Subject
}

var (
	refusedSubRe   = regexp.MustCompile(`(?i)subscription to "([^"]+)"`)
	refusedQueueRe = regexp.MustCompile(`(?i)using queue "([^"]+)"`)
)

// ParseRefusal returns the subscription a server error refuses, when err
// is a permissions violation for a subscription (nats.ErrPermissionViolation
// naming "Subscription to"); ok is false for any other error (a refused
// publish among them).
func ParseRefusal(err error) (r Refusal, ok bool) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return Refusal{}, false
	}
	m := refusedSubRe.FindStringSubmatch(err.Error())
	if m == nil {
		return Refusal{}, false
	}
	r = Refusal{Subject: m[1], Err: err}
	if q := refusedQueueRe.FindStringSubmatch(err.Error()); q != nil {
		r.Queue = q[1]
	}
	return r, true
}

// Refused returns the subscriptions the server refused since the
// connection last (re)connected, oldest first, each once.
func (c *Conn) Refused() []Refusal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Refusal(nil), c.refused...)
}

// Refusals receives a value (it has room for one, so none is lost and
// none blocks the connection) whenever a refusal is recorded.
func (c *Conn) Refusals() <-chan struct{} { return c.refusals }

// RefusedError returns nil when no subscription is refused now, else an
// error naming every refused subject and the credentials in use:
//
//	the NATS server refused the subscriptions to tool.fs.read (queue
//	skillbus-tools) for the credentials creds /etc/skillbus/tools.creds
//	(NATS_CREDS): permissions violation
//
// It wraps nats.ErrPermissionViolation.
func (c *Conn) RefusedError() error {
	refused := c.Refused()
	if len(refused) == 0 {
		return nil
	}
	subs := make([]string, len(refused))
	for i, r := range refused {
		subs[i] = r.String()
	}
	what := "subscription"
	if len(subs) > 1 {
		what += "s"
	}
	return fmt.Errorf("the NATS server refused the %s to %s for the credentials %s: %w", what, strings.Join(subs, ", "), c.creds, nats.ErrPermissionViolation)
}

// record keeps a refusal (once per subject and queue) and signals it.
func (c *Conn) record(r Refusal) {
	r.at = time.Now()
	c.mu.Lock()
	known := false
	for i, o := range c.refused {
		if o.Subject == r.Subject && o.Queue == r.Queue {
			c.refused[i], known = r, true
		}
	}
	if !known {
		c.refused = append(c.refused, r)
	}
	c.mu.Unlock()
	select {
	case c.refusals <- struct{}{}:
	default:
	}
}

// Credentials describes the credentials c connects with, for messages:
// "creds /etc/skillbus/tools.creds (NATS_CREDS)", "nkey FILE (--nkey)",
// "user svc (context prod)", "a token", or "none (no user, token, creds or
// nkey given)"; a TLS client certificate is added.
func (c *Config) Credentials() string {
	var s string
	switch {
	case c.Creds.set():
		s = "creds " + c.Creds.V + " (" + c.Creds.Source + ")"
		if role, err := RoleOf(c.Creds.V); err == nil && role != "" {
			s += ", role " + role
		}
	case c.NKey.set():
		s = "nkey " + c.NKey.V + " (" + c.NKey.Source + ")"
	case c.User != "":
		s = "user " + c.User
		if c.Context != nil {
			s += " (context " + c.Context.Name + ")"
		}
	case c.Token != "":
		s = "a token"
	case strings.Contains(c.URL, "@"):
		s = "the user or token in the URL (" + c.URLSource + ")"
	default:
		s = "none (no user, token, creds or nkey given)"
	}
	if c.TLSCert.set() {
		s += ", TLS client certificate " + c.TLSCert.V
	}
	return s
}

// recheckRefusals runs after a reconnect at time since, which sent every
// subscription again: once the server has handled them (a round trip) and
// its errors have had refusalSettle to arrive, the refusals it did not
// make again are forgotten. Until then they stand, so the process does
// not look ready for a moment after each reconnect.
func (c *Conn) recheckRefusals(since time.Time) {
	c.mu.Lock()
	n := len(c.refused)
	c.mu.Unlock()
	if n == 0 {
		return
	}
	if err := c.FlushRefused(10 * time.Second); err != nil {
		return // disconnected again: the next reconnect checks
	}
	time.Sleep(refusalSettle)
	c.mu.Lock()
	kept := c.refused[:0]
	for _, r := range c.refused {
		if r.at.After(since) {
			kept = append(kept, r)
		}
	}
	c.refused = kept
	c.mu.Unlock()
	select {
	case c.refusals <- struct{}{}:
	default:
	}
}

// FlushRefused makes a round trip to the server (FlushTimeout) and then
// records a refusal the server sent before its answer: every subscription
// made before the call is then either registered or in Refused — without
// waiting for the error handler, which nats.go calls a moment later.
// Errors: FlushTimeout's.
func (c *Conn) FlushRefused(timeout time.Duration) error {
	if err := c.FlushTimeout(timeout); err != nil {
		return err
	}
	// nats.go keeps the server's last error (cleared at each reconnect),
	// set before the round trip's answer is read.
	if r, ok := ParseRefusal(c.LastError()); ok {
		c.record(r)
	}
	return nil
}

// Credentials describes the credentials the connection uses, as
// Config.Credentials does.
func (c *Conn) Credentials() string { return c.creds }
