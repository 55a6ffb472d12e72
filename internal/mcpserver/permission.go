package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsconn"
)

// errPermission is the cause of a tool call's context when the NATS server
// refused one of its publishes or subscriptions: the credentials of the
// connection do not allow it (docs/operations.md).
var errPermission = errors.New("permission denied")

// permissionError says which subject the credentials may not use.
type permissionError struct {
	op, subject string // "publish" or "subscribe"; the subject refused
}

func (e *permissionError) Error() string {
	return fmt.Sprintf("permission denied: the NATS credentials of this MCP server may not %s on %q", e.op, e.subject)
}

func (e *permissionError) Unwrap() error { return errPermission }

// violationRe reads the subject of the server's -ERR "Permissions
// Violation for Publish to "x"" / "for Subscription to "x"".
var violationRe = regexp.MustCompile(`(Publish|Subscription) to "([^"]+)"`)

// permissions cancels the calls whose subjects the server refuses, at once
// instead of at their timeout: NATS reports a refused publish only as an
// asynchronous error on the connection.
type permissions struct {
	nc   *nats.Conn
	prev nats.ErrHandler
	// mu guards watches.
	mu      sync.Mutex
	watches map[*permWatch]struct{}
}

type permWatch struct {
	subjects []string
	cancel   context.CancelCauseFunc
}

// watchPermissions chains an error handler onto nc's (the previous one is
// still called).
func watchPermissions(nc *nats.Conn) *permissions {
	p := &permissions{nc: nc, prev: nc.ErrorHandler(), watches: map[*permWatch]struct{}{}}
	nc.SetErrorHandler(p.handle)
	return p
}

func (p *permissions) handle(c *nats.Conn, sub *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		if m := violationRe.FindStringSubmatch(err.Error()); m != nil {
			op := "publish"
			if m[1] == "Subscription" {
				op = "subscribe"
			}
			p.refused(op, m[2])
		}
	}
	if p.prev != nil {
		p.prev(c, sub, err)
	}
}

// refused cancels every watch of subject (a subscription refused on an
// inbox cancels every watch: no reply can come back).
func (p *permissions) refused(op, subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.watches {
		for _, s := range w.subjects {
			if subjectMatches(s, subject) || (op == "subscribe" && isInbox(subject)) {
				w.cancel(&permissionError{op: op, subject: subject})
				break
			}
		}
	}
}

// watch returns a context cancelled with a *permissionError when the
// server refuses one of subjects, and the function that ends the watch.
func (p *permissions) watch(ctx context.Context, subjects ...string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &permWatch{subjects: subjects, cancel: cancel}
	p.mu.Lock()
	p.watches[w] = struct{}{}
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.watches, w)
		p.mu.Unlock()
		cancel(nil)
	}
}

// close puts the previous error handler back.
func (p *permissions) close() {
	p.nc.SetErrorHandler(p.prev)
}

// subjectMatches reports whether the refused subject (possibly with
// wildcards, as a subscription) covers the watched subject: the server's
// matching rule, natsconn.MatchSubject.
func subjectMatches(watched, refused string) bool {
	return natsconn.MatchSubject(refused, watched)
}

func isInbox(subject string) bool {
	return len(subject) >= 7 && subject[:7] == "_INBOX."
}
