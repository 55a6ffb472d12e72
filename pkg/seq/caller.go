package seq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Caller calls one tool by name. It is the only way the engine reaches the
// outside world, so the same engine runs against an in-memory table of Go
// functions in tests and against NATS request/reply (pkg/tool) in the
// seqworker (see package events).
//
// args is a JSON object (never nil; "{}" when the call has no arguments).
// The result is the tool's JSON reply. Call must honour ctx: when ctx is done
// it returns promptly with an error wrapping ctx.Err().
//
// Errors: an error wrapping ErrToolMissing when no provider serves the tool
// (no responders on NATS) — the engine applies the group's `missing` policy
// to it; any other error is a tool failure and the engine applies `on_error`.
// A *ToolError carries a provider's own error code and description.
type Caller interface {
	Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
}

// CallerFunc adapts an ordinary function to the Caller interface.
type CallerFunc func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)

// Call calls f(ctx, tool, args).
func (f CallerFunc) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return f(ctx, tool, args)
}

// ErrToolMissing says that no provider serves a tool. Over NATS it is decided
// by "no responders" on tool.<name> (see package events); a Caller wraps it with the
// tool's name. The engine maps it onto the group's `missing` policy
// (fail|skip|degrade, docs/sequences.md).
var ErrToolMissing = errors.New("seq: tool missing (no provider serves it)")

// ToolError is an error reported by a tool provider itself (over NATS: the
// micro error headers Nats-Service-Error-Code and Nats-Service-Error). It is a
// tool failure, not a missing tool, so the group's `on_error` policy applies.
type ToolError struct {
	// Tool is the tool's name, for example "fs.read".
	Tool string
	// Code is the provider's error code (a string, conventionally an HTTP-like
	// number such as "400" or "500"); empty when the provider gave none.
	Code string
	// Description is the provider's error text.
	Description string
}

// Error returns `tool "NAME" failed (code CODE): DESCRIPTION`.
func (e *ToolError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("tool %q failed: %s", e.Tool, e.Description)
	}
	return fmt.Sprintf("tool %q failed (code %s): %s", e.Tool, e.Code, e.Description)
}
