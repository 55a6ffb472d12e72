package tool

import (
	"errors"
	"fmt"
)

// Errors of this package; test with errors.Is.
var (
	// ErrPayloadTooLarge: a request (or a tool's result) is larger than the
	// server's max_payload. Terminal: retrying sends the same bytes. Raise
	// max_payload on the server or pass less data (for example a file path
	// instead of the file).
	ErrPayloadTooLarge = errors.New("tool: payload too large")
	// ErrBadArgs: the arguments are not a JSON object (DESIGN.md §3: a tool
	// request is a JSON object). Terminal.
	ErrBadArgs = errors.New("tool: arguments must be a JSON object")
	// ErrBadName: a tool name cannot be used as a subject (empty, spaces,
	// wildcards, empty dot-separated parts).
	ErrBadName = errors.New("tool: invalid tool name")
	// ErrConfig: a ServerConfig or Tool field is invalid; the message names
	// the field.
	ErrConfig = errors.New("tool: invalid configuration")
	// ErrTimeout: no reply before the call's deadline. It also wraps
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("tool: no reply before the deadline")
)

// Error is an error a tool function returns to choose the error code its
// caller sees (the Nats-Service-Error-Code header). The caller receives it
// as a *seq.ToolError with the same Code and Description.
type Error struct {
	// Code is conventionally an HTTP-like status: "400" bad arguments,
	// "404" not found, "409" conflict, "500" internal, "503" unavailable.
	// Empty means "500".
	Code string
	// Description says what went wrong; it travels in a header, so line
	// breaks are replaced by spaces and it is cut at 1,024 bytes.
	Description string
}

// Error returns "CODE: DESCRIPTION".
func (e *Error) Error() string { return e.code() + ": " + e.Description }

func (e *Error) code() string {
	if e.Code == "" {
		return "500"
	}
	return e.Code
}

// Errorf returns an *Error with code and a formatted description.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...)}
}
