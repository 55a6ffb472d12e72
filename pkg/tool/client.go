package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

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
	c := &Client{nc: nc, timeout: DefaultCallTimeout}
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
//   - ErrBadName, ErrBadArgs: nothing was sent.
//   - ErrPayloadTooLarge: args exceed the server's max_payload; nothing
//     was sent.
//   - an error wrapping toolcall.ErrMissing (and nats.ErrNoResponders): no
//     provider serves the tool; returned at once, not after the timeout.
//   - *Error (toolcall.Error): the provider answered with an error (its code and
//     description).
//   - an error wrapping ErrTimeout and context.DeadlineExceeded, or
//     context.Canceled: no reply in time.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	subject, err := events.ToolSubject(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadName, err)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	} else if !isObject(args) {
		return nil, fmt.Errorf("%w: tool %q: got %s", ErrBadArgs, name, preview(args))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	msg := &nats.Msg{Subject: subject, Data: args, Header: nats.Header{}}
	msg.Header.Set(DeadlineHeader, deadline.UTC().Format(time.RFC3339Nano))
	if max := c.nc.MaxPayload(); int64(len(args)) > max {
		return nil, tooLarge(name, len(args), max)
	}
	start := time.Now()
	reply, err := events.Request(ctx, c.nc, msg)
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
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		if code == "504" && ctx.Err() != nil {
			// The provider gave up at our deadline and said so first.
			return nil, fmt.Errorf("tool %q: %w (waited %s): %w", name, ErrTimeout, time.Since(start).Round(time.Millisecond), context.DeadlineExceeded)
		}
		return nil, &toolcall.Error{Tool: name, Code: code, Description: reply.Header.Get(micro.ErrorHeader)}
	}
	return json.RawMessage(reply.Data), nil
}

func tooLarge(tool string, size int, max int64) error {
	return fmt.Errorf("%w: arguments for tool %q are %d bytes (with headers) and the server's max_payload is %d bytes — pass a reference (a path, a URL, a KV key) instead of the data, or raise max_payload", ErrPayloadTooLarge, tool, size, max)
}
