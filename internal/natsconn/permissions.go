package natsconn

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Violation is one thing the NATS server refused a connection's user
// (docs/security.md): a publish to Subject (Publish true), or a
// subscription to Subject, in Queue when it is a queue subscription. The
// server says so asynchronously (an -ERR that nats.go hands to the
// connection's error handler, wrapping nats.ErrPermissionViolation): the
// refused publish is dropped and a request waits for its timeout, the
// refused subscription receives nothing.
type Violation struct {
	Publish        bool
	Subject, Queue string
	// Err is the server's error as nats.go reports it.
	Err error
	// At is when it was reported.
	At time.Time
}

// Op is "publish" or "subscribe".
func (v Violation) Op() string {
	if v.Publish {
		return "publish"
	}
	return "subscribe"
}

var violationRe = regexp.MustCompile(`(?i)for (publish|subscription) to "([^"]+)"`)

// ParseViolation returns what a server error refuses, when err is a
// permissions violation (nats.ErrPermissionViolation naming "Publish to"
// or "Subscription to" a subject); ok is false for any other error.
func ParseViolation(err error) (v Violation, ok bool) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return Violation{}, false
	}
	m := violationRe.FindStringSubmatch(err.Error())
	if m == nil {
		return Violation{}, false
	}
	v = Violation{Publish: strings.EqualFold(m[1], "publish"), Subject: m[2], Err: err, At: time.Now()}
	if !v.Publish {
		if q := refusedQueueRe.FindStringSubmatch(err.Error()); q != nil {
			v.Queue = q[1]
		}
	}
	return v, true
}

// PermissionError is a Violation met by an operation, with the
// credentials it was refused to. It wraps nats.ErrPermissionViolation.
type PermissionError struct {
	Violation
	// Credentials describes the credentials in use (Config.Credentials:
	// "creds FILE (NATS_CREDS), role console"); "" when unknown.
	Credentials string
}

// Error is `the NATS server refused to let these credentials publish to
// "tool.fs.list" (creds /x/console.creds, role console); docs/security.md
// lists what each role may do`.
func (e *PermissionError) Error() string {
	what := fmt.Sprintf("%s to %q", e.Op(), e.Subject)
	if e.Queue != "" {
		what += fmt.Sprintf(" (queue %q)", e.Queue)
	}
	creds := ""
	if e.Credentials != "" {
		creds = " (" + e.Credentials + ")"
	}
	return "the NATS server refused to let these credentials " + what + creds + "; docs/security.md lists what each role may do"
}

// Unwrap returns nats.ErrPermissionViolation.
func (e *PermissionError) Unwrap() error { return nats.ErrPermissionViolation }

// PermissionWatch turns the violations the NATS server reports on one
// connection into errors of the operations that caused them, at once: a
// context watched for a subject (Context) is cancelled with a
// *PermissionError as its cause as soon as the server refuses a publish
// to that subject — a request would otherwise wait for its timeout. A
// violation no watch asked for goes to the Unclaimed callback. It chains
// onto the connection's error handler, which still sees every error.
type PermissionWatch struct {
	nc        *nats.Conn
	prev      nats.ErrHandler
	creds     string
	unclaimed func(*PermissionError)

	mu      sync.Mutex
	watches map[*permWatch]struct{}
	closed  bool
}

type permWatch struct {
	patterns []string
	cancel   context.CancelCauseFunc
}

// WatchPermissions starts watching nc. credentials describes the
// connection's credentials for the errors' messages ("" when unknown).
// unclaimed, when not nil, receives each violation that no watched context
// claimed (a subscription refused, a publish of a background task), from
// nats.go's callback goroutine: it must not block. Close stops watching.
func WatchPermissions(nc *nats.Conn, credentials string, unclaimed func(*PermissionError)) *PermissionWatch {
	p := &PermissionWatch{nc: nc, prev: nc.ErrorHandler(), creds: credentials, unclaimed: unclaimed, watches: map[*permWatch]struct{}{}}
	nc.SetErrorHandler(p.handle)
	return p
}

func (p *PermissionWatch) handle(c *nats.Conn, sub *nats.Subscription, err error) {
	if v, ok := ParseViolation(err); ok {
		p.refused(&PermissionError{Violation: v, Credentials: p.creds})
	}
	if p.prev != nil {
		p.prev(c, sub, err)
	}
}

// refused cancels the watches it concerns: a refused publish those with a
// pattern matching its subject; a refused subscription those watching that
// very subject, and every one when it is an inbox (no reply can arrive).
func (p *PermissionWatch) refused(e *PermissionError) {
	claimed := false
	p.mu.Lock()
	for w := range p.watches {
		for _, pat := range w.patterns {
			if (e.Publish && MatchSubject(pat, e.Subject)) || (!e.Publish && (pat == e.Subject || strings.HasPrefix(e.Subject, "_INBOX."))) {
				w.cancel(e)
				claimed = true
				break
			}
		}
	}
	closed := p.closed
	p.mu.Unlock()
	if !claimed && !closed && p.unclaimed != nil {
		p.unclaimed(e)
	}
}

// Context returns a context that is cancelled, with the *PermissionError
// as its cause (context.Cause; RefusedCause), when the server refuses a publish
// to a subject matching one of patterns (NATS wildcards: * one token, >
// the rest) or a subscription to one of them; and the function that ends
// the watch (call it when the operation is over).
func (p *PermissionWatch) Context(ctx context.Context, patterns ...string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &permWatch{patterns: patterns, cancel: cancel}
	p.mu.Lock()
	p.watches[w] = struct{}{}
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.watches, w)
		p.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Close stops watching and puts the connection's previous error handler
// back. Safe to call more than once.
func (p *PermissionWatch) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.nc.SetErrorHandler(p.prev)
	}
}

// RefusedCause returns the *PermissionError that cancelled ctx (a context of
// PermissionWatch.Context) when there is one, else err unchanged: an
// operation's error — a context error, a timeout — becomes the refusal
// that caused it.
func RefusedCause(ctx context.Context, err error) error {
	var pe *PermissionError
	if err != nil && errors.As(context.Cause(ctx), &pe) {
		return pe
	}
	return err
}

// MatchSubject reports whether subject matches the NATS subject pattern
// (* one token, > one or more); a wildcard character in subject is taken
// literally (a JetStream API subject may carry a filter such as
// $KV.RUNS.> as its last tokens).
func MatchSubject(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(p) == len(s)
}

// JetStreamAPI returns the patterns of every JetStream API subject about
// stream: its info, direct and stream message gets, and its consumers'
// create, info, next and delete — for a PermissionWatch of an operation
// on that stream made through nats.go's jetstream package.
func JetStreamAPI(stream string) []string {
	return []string{"$JS.API.*.*." + stream, "$JS.API.*.*." + stream + ".>", "$JS.API.*.*.*." + stream, "$JS.API.*.*.*." + stream + ".>"}
}

// Permissions are the publish and subscribe allow and deny lists of a user
// JWT — what the NATS server lets that user do (docs/security.md) — and
// the user's skillbus role (RoleTag), "" when it has none.
type Permissions struct {
	Role                                 string
	PubAllow, PubDeny, SubAllow, SubDeny []string
}

// PermissionsOf reads the permissions of the user of a creds file.
// Errors: a file that cannot be read or holds no user JWT.
func PermissionsOf(creds string) (*Permissions, error) {
	uc, err := userClaims(creds)
	if err != nil {
		return nil, err
	}
	p := &Permissions{PubAllow: uc.Permissions.Pub.Allow, PubDeny: uc.Permissions.Pub.Deny, SubAllow: uc.Permissions.Sub.Allow, SubDeny: uc.Permissions.Sub.Deny}
	for _, t := range uc.Tags {
		if r, ok := strings.CutPrefix(t, RoleTag); ok {
			p.Role = r
		}
	}
	return p, nil
}

// MayPublish reports whether the lists let the user publish to subject,
// as the server decides: no deny pattern matches it, and the allow list is
// empty (everything) or has a pattern that matches it.
func (p *Permissions) MayPublish(subject string) bool {
	return allows(p.PubAllow, p.PubDeny, subject)
}

// MaySubscribe is MayPublish for subscriptions to subject (a subject
// without wildcards).
func (p *Permissions) MaySubscribe(subject string) bool {
	return allows(p.SubAllow, p.SubDeny, subject)
}

func allows(allow, deny []string, subject string) bool {
	for _, d := range deny {
		if MatchSubject(d, subject) {
			return false
		}
	}
	if len(allow) == 0 {
		return true
	}
	for _, a := range allow {
		if MatchSubject(a, subject) {
			return true
		}
	}
	return false
}
