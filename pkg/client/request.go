package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/pkg/events"
)

// Requester sends one request to a skillbus micro service and decodes its
// reply: the one request/reply helper of this package's methods (the
// seqworker's and the registry's endpoints) and of the skillbus command
// line. Its fields say how the failures that are not answers, and the
// error replies, are reported; nil fields take this package's default
// (below). The zero value is ready to use.
type Requester struct {
	// Timeout bounds one request (default DefaultTimeout); when Cap is
	// false it applies only to a context without a deadline, when true
	// the context's deadline is also cut to it.
	Timeout time.Duration
	Cap     bool
	// NoResponders is the error for nobody serving subject (NATS's no
	// responders). Default: ErrUnavailable, "no service answers on …".
	NoResponders func(subject string) error
	// NoReply is the error for no answer within waited (the time the
	// request was allowed). Default: ErrUnavailable with noReply's words
	// for "the service".
	NoReply func(subject string, waited time.Duration) error
	// ErrorReply is the error for an error reply with its code (the
	// micro.ErrorCodeHeader) and the whole reply. Default: serviceError
	// with the reply's text (ReplyText).
	ErrorReply func(subject, code string, reply *nats.Msg) error
}

// ReplyText is the text of an error reply: the "error" field of its JSON
// body when it has one (the registry's replies: the header is cut at
// 1,024 bytes), else its micro.ErrorHeader.
func ReplyText(reply *nats.Msg) string {
	text := reply.Header.Get(micro.ErrorHeader)
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(reply.Data, &body) == nil && body.Error != "" {
		text = body.Error
	}
	return text
}

// Do sends req to subject on nc and decodes the reply into resp (nil:
// the reply is not read). req is sent as it is when []byte, encoded with
// events.Encode when an events.Message (its "v" and checks), else as
// JSON; resp takes the reply as it is when a *json.RawMessage, is decoded
// with events.Decode when an events.Message, else as JSON. Errors:
// ErrInvalid for a request that cannot be encoded; r.NoResponders,
// r.NoReply and r.ErrorReply's errors; ctx's error when it was cancelled;
// ErrClosed; "reply on SUBJECT: …" for a reply that cannot be decoded.
func (r Requester) Do(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	var data []byte
	switch v := req.(type) {
	case []byte:
		data = v
	case events.Message:
		b, err := events.Encode(v)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		data = b
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		data = b
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if _, ok := ctx.Deadline(); !ok || r.Cap {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	wait := time.Until(dl) // for the message: the time allowed
	reply, err := events.Request(ctx, nc, &nats.Msg{Subject: subject, Data: data})
	if err != nil {
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			if r.NoResponders != nil {
				return r.NoResponders(subject)
			}
			return fmt.Errorf("%w: no service answers on %s", ErrUnavailable, subject)
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			if r.NoReply != nil {
				return r.NoReply(subject, wait)
			}
			return fmt.Errorf("%w: %s", ErrUnavailable, noReply("the service", subject, wait))
		}
		return closed(err)
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		if r.ErrorReply != nil {
			return r.ErrorReply(subject, code, reply)
		}
		return serviceError(subject, code, ReplyText(reply))
	}
	if resp == nil {
		return nil
	}
	if raw, ok := resp.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], reply.Data...)
		return nil
	}
	if m, ok := resp.(events.Message); ok {
		err = events.Decode(reply.Data, m)
	} else {
		err = json.Unmarshal(reply.Data, resp)
	}
	if err != nil {
		return fmt.Errorf("reply on %s: %w", subject, err)
	}
	return nil
}
