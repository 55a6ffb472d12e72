package tool

import (
	"errors"

	"github.com/skillbus/skillbus/pkg/toolcall"
)

// Errors of this package; test with errors.Is.
var (
	// ErrPayloadTooLarge: a request (or a tool's result) is larger than the
	// server's max_payload. Terminal: retrying sends the same bytes. Raise
	// max_payload on the server or pass less data (for example a file path
	// instead of the file).
	ErrPayloadTooLarge = errors.New("tool: payload too large")
	// ErrBadArgs: the arguments are not a JSON object (docs/tools.md: a tool
	// request is a JSON object). Terminal.
	ErrBadArgs = errors.New("tool: arguments must be a JSON object")
	// ErrBadName: a tool name cannot be used as a subject (empty, spaces,
	// wildcards, empty dot-separated parts).
	ErrBadName = errors.New("tool: invalid tool name")
	// ErrConfig: a ServerConfig or Tool field is invalid; the message names
	// the field.
	ErrConfig = errors.New("tool: invalid configuration")
	// ErrRefused: the NATS server refused a subscription Serve made (a
	// tool's subject, or the micro service's $SRV discovery subjects): the
	// connection's user may not subscribe there (docs/security.md), so the
	// tool would receive no call. The error names the subject and also
	// wraps nats.ErrPermissionViolation.
	ErrRefused = errors.New("tool: subscription refused by the NATS server")
	// ErrTimeout: no reply before the call's deadline. It also wraps
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("tool: no reply before the deadline")
	// ErrInterrupted is toolcall.ErrInterrupted: the connection to NATS was
	// lost while the call was in flight and no answer came before its
	// deadline, although the call was sent again after the reconnect. It
	// also wraps ErrTimeout and context.DeadlineExceeded.
	ErrInterrupted = toolcall.ErrInterrupted
)

// Error is skillbus's one error with a code (toolcall.Error). A tool
// function returns it (Errorf) to choose the code its caller sees (the
// Nats-Service-Error-Code header); the caller receives an *Error with the
// same Code and Description and with Tool set to the tool's name. Any other
// error a tool function returns is code "500" ("504" when it wraps
// context.DeadlineExceeded).
type Error = toolcall.Error

// Errorf returns an *Error with code and a formatted description.
func Errorf(code, format string, args ...any) *Error {
	return toolcall.Errorf(code, format, args...)
}
