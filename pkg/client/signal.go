package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skillbus/skillbus/pkg/events"
)

// SignalOption configures Signal.
type SignalOption func(*events.SeqSignalRequest) error

// WithReject makes the signal a rejection: the wait group fails with
// reason under its on_error (an approval denied) and no values are sent.
func WithReject(reason string) SignalOption {
	return func(r *events.SeqSignalRequest) error {
		if len(reason) > events.MaxReasonLength {
			return fmt.Errorf("%w: the reject reason is %d bytes; at most %d", ErrInvalid, len(reason), events.MaxReasonLength)
		}
		r.Reject, r.Reason = true, reason
		return nil
	}
}

// WithSignalBy records who signals (a user, a program).
func WithSignalBy(by string) SignalOption {
	return func(r *events.SeqSignalRequest) error {
		if len(by) > events.MaxReasonLength {
			return fmt.Errorf("%w: by is %d bytes; at most %d", ErrInvalid, len(by), events.MaxReasonLength)
		}
		r.By = by
		return nil
	}
}

// Signal delivers the signal name to the waiting run runID with values
// (name → JSON value; they must fit the wait's `out` types, as run
// arguments fit a signature) and returns the run's state with the signal
// recorded; the run resumes at its wait group on any worker
// (docs/runs.md, "Waiting runs"). Of two signals the first wins. Errors:
// ErrNotFound (no such run), ErrConflict (the run is not waiting for a
// signal of that name: not waiting, waiting for another signal or a
// timer, or signalled already), ErrBadRequest (values that do not fit,
// in the words of `run --arg`), ErrInvalid (a bad option, values with a
// rejection), ErrUnavailable, ErrClosed.
func (c *Client) Signal(ctx context.Context, runID, name string, values map[string]json.RawMessage, opts ...SignalOption) (*events.RunState, error) {
	req := &events.SeqSignalRequest{RunID: runID, Name: name}
	for _, o := range opts {
		if err := o(req); err != nil {
			return nil, err
		}
	}
	if len(values) > 0 {
		if req.Reject {
			return nil, fmt.Errorf("%w: a rejection carries no values (only its reason); drop the values or the rejection", ErrInvalid)
		}
		b, err := json.Marshal(values)
		if err != nil {
			return nil, fmt.Errorf("%w: signal values: %v", ErrInvalid, err)
		}
		req.Values = b
	}
	var st events.RunState
	if err := c.request(ctx, events.SeqSignalSubject, req, &st); err != nil {
		return nil, err
	}
	st.Normalize()
	return &st, nil
}
