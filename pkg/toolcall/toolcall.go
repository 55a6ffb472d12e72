// Package toolcall is the small contract between the code that calls
// skillbus tools and the code that provides them. It depends on the standard
// library only, so a tool provider written in Go (pkg/tool) and the sequence
// engine (pkg/seq) share it without either pulling in the other.
//
// A tool is called by name with a JSON object of arguments and answers with
// a JSON value or an error (docs/tools.md):
//
//   - Caller is what calls a tool: pkg/tool's Client does it over NATS
//     request/reply on tool.<name>, a test does it with a CallerFunc.
//   - ErrMissing says that no provider serves the tool (over NATS: "no
//     responders"). The sequence engine maps it onto the group's `missing`
//     policy (docs/sequences.md, "Failure policies").
//   - Error is the one "error with a code" of skillbus: a tool provider
//     returns it to choose its error code, a caller receives it with the
//     code the provider chose, and the command line receives a service's
//     error reply as one. Codes are HTTP-like status numbers as strings.
//   - Permanent says whether a code means that calling again with the same
//     arguments cannot succeed (4xx other than 408 and 429), so a retry
//     policy leaves such failures alone (docs/sequences.md, on_error: retry).
package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Caller calls one tool by name.
//
// args is a JSON object (never nil; "{}" when the call has no arguments).
// The result is the tool's JSON reply. Call must honour ctx: when ctx is
// done it returns promptly with an error wrapping ctx.Err().
//
// Errors: an error wrapping ErrMissing when no provider serves the tool;
// an *Error (possibly wrapped) when the provider answered with an error;
// any other error is a failure to reach the provider or to get its answer.
type Caller interface {
	Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
}

// CallerFunc adapts an ordinary function to the Caller interface.
type CallerFunc func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)

// Call calls f(ctx, tool, args).
func (f CallerFunc) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	return f(ctx, tool, args)
}

// ErrMissing says that no provider serves a tool. Over NATS it is decided
// by "no responders" on tool.<name>, at once rather than at a timeout; a
// Caller wraps it with the tool's name.
var ErrMissing = errors.New("toolcall: tool missing (no provider serves it)")

// ErrInterrupted says that a call's answer was lost with the caller's
// connection to the bus: the call was in flight when the connection
// dropped, and no answer came before the call's deadline (a Caller sends
// such a call again once the connection is back; this error is what is
// left when that did not help in time). The provider may or may not have
// run the call. It is an interruption, not a failure of the tool: the
// seqworker resumes the run after its last finished group instead of
// failing it (docs/runs.md, "NATS faults"). A Caller wraps it with the
// tool's name.
var ErrInterrupted = errors.New("toolcall: call interrupted (the connection to the bus was lost while it was in flight)")

// Error is an error with a code: what a tool provider (or a skillbus
// service) answers instead of a result. Over NATS the code and description
// travel in the NATS micro error headers Nats-Service-Error-Code and
// Nats-Service-Error.
//
// A tool function returns an *Error to choose the code its callers see; a
// Caller returns the *Error it received, with Tool set to the tool's name.
// Test for it with errors.As.
type Error struct {
	// Tool is the name of the tool that failed, for example "fs.read"; it
	// is set on the calling side and empty on the providing side and for
	// a service's error reply.
	Tool string
	// Code is an HTTP-like status: "400" bad arguments, "403" refused,
	// "404" not found, "409" conflict, "413" too large, "500" internal,
	// "502" a backend failed, "503" unavailable, "504" deadline. Empty
	// means "500".
	Code string
	// Description says what went wrong and how to fix it; over NATS it
	// travels in a header, so line breaks become spaces and it is cut at
	// 1,024 bytes.
	Description string
}

// Errorf returns an *Error with code and a formatted description.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...)}
}

// Error returns `tool "NAME" failed (code CODE): DESCRIPTION` when Tool is
// set, else the description alone (the code is in Code).
func (e *Error) Error() string {
	if e.Tool == "" {
		return e.Description
	}
	return fmt.Sprintf("tool %q failed (code %s): %s", e.Tool, e.CodeOrDefault(), e.Description)
}

// CodeOrDefault returns Code, or "500" when Code is empty.
func (e *Error) CodeOrDefault() string {
	if e.Code == "" {
		return "500"
	}
	return e.Code
}

// Permanent reports whether calling again with the same arguments cannot
// succeed: see the package function Permanent.
func (e *Error) Permanent() bool { return Permanent(e.CodeOrDefault()) }

// Permanent reports whether code means a permanent failure: a 4xx status
// other than 408 (request timeout) and 429 (too many requests). Retrying
// such a call sends the same arguments to the same kind of provider and
// fails the same way, so retry policies skip it (docs/sequences.md,
// on_error: retry). Every other code, including an empty or non-numeric
// one, is treated as transient.
func Permanent(code string) bool {
	if len(code) != 3 || code[0] != '4' || code[1] < '0' || code[1] > '9' || code[2] < '0' || code[2] > '9' {
		return false
	}
	return code != "408" && code != "429"
}
