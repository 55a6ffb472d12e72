package seq

import "github.com/skillbus/skillbus/pkg/toolcall"

// Caller calls one tool by name. It is the only way the engine reaches the
// outside world, so the same engine runs against an in-memory table of Go
// functions in tests and against NATS request/reply (pkg/tool) in the
// seqworker. It is toolcall.Caller, the contract shared with tool
// providers (see pkg/toolcall for the rules a Caller follows).
//
// Errors: an error wrapping ErrToolMissing when no provider serves the tool
// (no responders on NATS) — the engine applies the group's `missing` policy
// to it; any other error is a tool failure and the engine applies `on_error`.
// A *ToolError carries a provider's own error code and description.
type Caller = toolcall.Caller

// CallerFunc adapts an ordinary function to the Caller interface.
type CallerFunc = toolcall.CallerFunc

// ErrToolMissing says that no provider serves a tool (toolcall.ErrMissing).
// Over NATS it is decided by "no responders" on tool.<name>; a Caller wraps
// it with the tool's name. The engine maps it onto the group's `missing`
// policy (fail|skip|degrade, docs/sequences.md).
var ErrToolMissing = toolcall.ErrMissing

// ToolError is an error reported by a tool provider itself (toolcall.Error):
// a tool failure, not a missing tool, so the group's `on_error` policy
// applies. Its Error method returns `tool "NAME" failed (code CODE):
// DESCRIPTION`.
type ToolError = toolcall.Error
