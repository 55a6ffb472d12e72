package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// DefaultCallTimeout bounds a call whose context has no deadline.
const DefaultCallTimeout = 60 * time.Second

// Client calls tools over NATS request/reply. It implements toolcall.Caller (and so pkg/seq's Caller), so
// the seqworker's engine runs sequences against real tool providers. A
// Client is safe for concurrent use.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
	tr      tracing

	subjects  sync.Map     // tool name → subject
	nsubjects atomic.Int32 // names stored in subjects (at most maxSubjects)
}

// ClientOption configures a Client.
type ClientOption func(*Client) error

// WithDefaultTimeout sets the deadline applied when a call's context has
// none; d must be positive. Default DefaultCallTimeout (60 s).
func WithDefaultTimeout(d time.Duration) ClientOption {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("%w: default timeout %s; want more than 0", ErrConfig, d)
		}
		c.timeout = d
		return nil
	}
}

// NewClient returns a Client over nc. Errors: ErrConfig from an option.
func NewClient(nc *nats.Conn, opts ...ClientOption) (*Client, error) {
	c := &Client{nc: nc, timeout: DefaultCallTimeout, tr: newTracing()}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

var _ toolcall.Caller = (*Client)(nil)

// Call sends args (a JSON object; nil or empty means "{}") to tool.<name>
// and returns the provider's JSON result. The call ends at ctx's deadline,
// or after the default timeout when ctx has none; the deadline travels in
// the DeadlineHeader and the trace context in traceparent.
//
// Errors:
//   - ErrBadName, ErrBadArgs (args are not braced like a JSON object):
//     nothing was sent. Malformed JSON inside the braces is sent and the
//     provider answers it with a code "400" *Error.
//   - ErrPayloadTooLarge: args exceed the server's max_payload; nothing
//     was sent.
//   - an error wrapping toolcall.ErrMissing (and nats.ErrNoResponders): no
//     provider serves the tool; returned at once, not after the timeout.
//   - *Error (toolcall.Error): the provider answered with an error (its code and
//     description).
//   - an error wrapping ErrTimeout and context.DeadlineExceeded, or
//     context.Canceled: no reply in time.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	subject, err := c.subject(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadName, err)
	}
	if len(args) == 0 || isBlank(args) {
		args = json.RawMessage("{}")
	} else if !looksLikeObject(args) {
		return nil, fmt.Errorf("%w: tool %q: got %s", ErrBadArgs, name, preview(args))
	}
	if max := c.nc.MaxPayload(); int64(len(args)) > max {
		return nil, tooLarge(name, len(args), max)
	}
	// A context that can never end (context.Background) needs no timer of
	// its own: the request's pooled timer bounds the wait.
	deadline, hasDeadline := ctx.Deadline()
	plain := !hasDeadline && ctx.Done() == nil
	if !hasDeadline && !plain {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	} else if plain {
		deadline = time.Now().Add(c.timeout)
	}
	ctx, span := c.tr.start(ctx, func() string { return "request " + subject }, trace.SpanKindClient, "request", subject, len(args))
	msg := &nats.Msg{Subject: subject, Data: args, Header: nats.Header{DeadlineHeader: []string{formatDeadline(deadline)}}}
	c.tr.inject(ctx, msg.Header)
	start := time.Now()
	var reply *nats.Msg
	if plain {
		reply, err = c.nc.RequestMsg(msg, time.Until(deadline))
	} else {
		reply, err = c.nc.RequestMsgWithContext(ctx, msg)
	}
	end(span, err)
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("tool %q: no provider serves %s: %w (%w)", name, subject, toolcall.ErrMissing, err)
	case errors.Is(err, nats.ErrMaxPayload):
		// The arguments fit, but not with the headers (trace context,
		// deadline) added.
		return nil, tooLarge(name, len(args), c.nc.MaxPayload())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return nil, fmt.Errorf("tool %q: %w (waited %s): %w", name, ErrTimeout, time.Since(start).Round(time.Millisecond), context.DeadlineExceeded)
	default:
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	if len(reply.Header) > 0 {
		if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
			if code == "504" && (ctx.Err() != nil || !time.Now().Before(deadline)) {
				// The provider gave up at our deadline and said so first.
				return nil, fmt.Errorf("tool %q: %w (waited %s): %w", name, ErrTimeout, time.Since(start).Round(time.Millisecond), context.DeadlineExceeded)
			}
			return nil, &toolcall.Error{Tool: name, Code: code, Description: reply.Header.Get(micro.ErrorHeader)}
		}
	}
	return json.RawMessage(reply.Data), nil
}

// formatDeadline writes t as DeadlineHeader wants it: RFC 3339 with
// nanoseconds, UTC.
func formatDeadline(t time.Time) string {
	var buf [40]byte
	return string(t.UTC().AppendFormat(buf[:0], time.RFC3339Nano))
}

// toolSubject returns tool.<name>. A name of letters, digits, '-', '_'
// and single dots between parts is joined at once; anything else goes
// through events.ToolSubject, which explains what is wrong.
func toolSubject(name string) (string, error) {
	ok := name != "" && name[0] != '.' && name[len(name)-1] != '.'
	for i := 0; ok && i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.':
			ok = name[i-1] != '.'
		default:
			ok = false
		}
	}
	if ok {
		return events.ToolPrefix + name, nil
	}
	return events.ToolSubject(name)
}

// subject returns tool.<name> (toolSubject), remembering the subjects of
// the first maxSubjects names so that a call does not build its subject
// again.
func (c *Client) subject(name string) (string, error) {
	if s, ok := c.subjects.Load(name); ok {
		return s.(string), nil
	}
	s, err := toolSubject(name)
	if err == nil && c.nsubjects.Add(1) <= maxSubjects {
		c.subjects.Store(name, s)
	}
	return s, err
}

// maxSubjects bounds Client's subject cache.
const maxSubjects = 1024

func tooLarge(tool string, size int, max int64) error {
	return fmt.Errorf("%w: arguments for tool %q are %d bytes (with headers) and the server's max_payload is %d bytes — pass a reference (a path, a URL, a KV key) instead of the data, or raise max_payload", ErrPayloadTooLarge, tool, size, max)
}
