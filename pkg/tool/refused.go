package tool

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// refusalWatch finds the subscriptions the NATS server refuses while
// Serve subscribes. The server answers a refused SUB with an asynchronous
// error ("Permissions Violation for Subscription to ...") and keeps the
// connection; nats.go hands it to the connection's error handler and
// keeps it as the connection's last error, without telling the
// subscription's owner. So each step of Serve ends with a round trip to
// the server (a flush: the server has then handled every SUB sent before
// it) and compares the connection's last error with the one before.
type refusalWatch struct {
	nc      *nats.Conn
	last    error // the connection's last error at the previous check
	refused []string
	cause   error // the last refusal's error
	flush   error // a failed round trip
}

func watchRefusals(nc *nats.Conn) *refusalWatch {
	return &refusalWatch{nc: nc, last: nc.LastError()}
}

var refusedSubject = regexp.MustCompile(`(?i)subscription to "([^"]+)"`)

// check makes a round trip and records a new refusal of a subject ours
// says belongs to this step.
func (w *refusalWatch) check(ours func(subject string) bool) {
	if w.flush != nil {
		return
	}
	if err := w.nc.FlushTimeout(10 * time.Second); err != nil {
		w.flush = err
		return
	}
	err := w.nc.LastError()
	if err == nil || err == w.last {
		return
	}
	w.last = err
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	if m := refusedSubject.FindStringSubmatch(err.Error()); m != nil && ours(m[1]) {
		w.refused = append(w.refused, m[1])
		w.cause = err
	}
}

// err returns the refusals (ErrRefused) or the failed round trip, if any.
func (w *refusalWatch) err() error {
	if len(w.refused) > 0 {
		return fmt.Errorf("%w: it may not subscribe to %s with this connection's credentials, so the tools would receive nothing; give the user permission to subscribe there, or use the creds of a role that has it (docs/security.md): %w",
			ErrRefused, strings.Join(w.refused, ", "), w.cause)
	}
	if w.flush != nil {
		return fmt.Errorf("tool: register endpoints with the server: %w", w.flush)
	}
	return nil
}
