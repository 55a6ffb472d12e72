package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/pkg/events"
)

// RunOption configures one run started with Client.Run.
type RunOption func(*events.SeqRunRequest) error

// WithRunID gives the run its id (docs/runs.md: at most 128 characters of
// letters, digits, '-', '_' and '.'), making Run idempotent: the same
// request again returns the same run. Without it Run makes one ("run-"
// and a NUID). Errors (from Run): ErrInvalid for an id that is not one.
func WithRunID(id string) RunOption {
	return func(r *events.SeqRunRequest) error {
		if err := events.CheckRunID(id); err != nil {
			return fmt.Errorf("%w: WithRunID: %v", ErrInvalid, err)
		}
		r.RunID = id
		return nil
	}
}

// WithArgs gives the run its arguments: a value encoded as a JSON object
// (a map or a struct; a json.RawMessage or []byte is taken as it is),
// checked by the seqworker against the sequence's signature before it
// accepts the run (ErrBadRequest naming the argument). Errors (from Run):
// ErrInvalid for a value that does not encode as JSON.
func WithArgs(args any) RunOption {
	return func(r *events.SeqRunRequest) error {
		switch v := args.(type) {
		case json.RawMessage:
			r.Args = v
		case []byte:
			r.Args = v
		default:
			b, err := json.Marshal(args)
			if err != nil {
				return fmt.Errorf("%w: WithArgs: %v", ErrInvalid, err)
			}
			r.Args = b
		}
		return nil
	}
}

// WithInline runs a sequence given as its JSON AST (what pkg/seq's Encode
// writes, or a stored sequence read with SeqGet) instead of a stored one:
// Run's sequence name is then "" (or the AST's own name). Building the AST
// needs no import of pkg/seq when it comes as bytes.
func WithInline(ast json.RawMessage) RunOption {
	return func(r *events.SeqRunRequest) error {
		r.Inline = ast
		r.Sequence = ""
		return nil
	}
}

// Run is a handle on one run started with Client.Run: its id and the
// client that follows it. Safe for concurrent use.
type Run struct {
	// ID is the run's id.
	ID string
	c  *Client
}

// Run starts a run of the stored sequence (or, with WithInline, of the
// sequence given) and returns a handle on it. It always sends a run id
// (WithRunID's or a new one), so the request is idempotent and sent again
// to another seqworker replica when one does not answer (see Start).
// Errors: ErrInvalid (an option's, an empty sequence without WithInline),
// and those of Start.
func (c *Client) Run(ctx context.Context, sequence string, opts ...RunOption) (*Run, error) {
	req := events.SeqRunRequest{Sequence: sequence}
	for _, o := range opts {
		if err := o(&req); err != nil {
			return nil, err
		}
	}
	if req.Sequence == "" && len(req.Inline) == 0 {
		return nil, fmt.Errorf("%w: Run: no sequence: name a stored one or give WithInline", ErrInvalid)
	}
	if req.RunID == "" {
		req.RunID = "run-" + nuid.Next()
	}
	id, err := c.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	return &Run{ID: id, c: c}, nil
}

// RunHandle returns a handle on a run started earlier (by id), to Get,
// follow or cancel it. Nothing is sent: a run that does not exist shows as
// ErrNotFound from its methods.
func (c *Client) RunHandle(id string) *Run { return &Run{ID: id, c: c} }

// Get waits for the run to finish and returns its final state, as Wait
// with the default WaitOptions. Errors: those of Wait.
func (r *Run) Get(ctx context.Context) (*events.RunState, error) {
	return r.c.Wait(ctx, r.ID, WaitOptions{})
}

// Status returns the run's state now. Errors: those of Client.Status.
func (r *Run) Status(ctx context.Context) (*events.RunState, error) {
	return r.c.Status(ctx, r.ID)
}

// Events returns the run's events in order, from its first (also those
// published before the call: Wait's replay from EVENTS) to its finished
// event, then ends. A failure to follow it (Wait's errors) is yielded once
// as (nil, err) and ends the sequence; leaving the loop early stops
// following.
func (r *Run) Events(ctx context.Context) iter.Seq2[*events.RunEvent, error] {
	return func(yield func(*events.RunEvent, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := false
		_, err := r.c.Wait(ctx, r.ID, WaitOptions{OnEvent: func(ev *events.RunEvent) {
			if stopped {
				return
			}
			if !yield(ev, nil) {
				stopped = true
				cancel()
			}
		}})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// Cancel asks to cancel the run, by the caller by (a name, a user) and for
// reason, and returns its state after the request (see Client.Cancel).
// Errors: those of Client.Cancel.
func (r *Run) Cancel(ctx context.Context, by, reason string) (*events.RunState, error) {
	return r.c.Cancel(ctx, r.ID, by, reason)
}
