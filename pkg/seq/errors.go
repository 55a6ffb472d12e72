package seq

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them (test with errors.Is); problems found in a sequence are reported as
// *Error values that also carry where the problem is (test with errors.As).
var (
	// ErrSyntax: the text is not well-formed JSON or YAML, or the tools
	// string of the JSON form is not a list of `;`-terminated objects.
	ErrSyntax = errors.New("seq: syntax error")
	// ErrUnknownField: a field that the language does not have (unknown
	// fields are errors, never ignored: docs/sequences.md).
	ErrUnknownField = errors.New("seq: unknown field")
	// ErrMissingField: a required field (name, groups, tools, tool, a
	// fallback under missing: degrade, retries under on_error: retry) is absent.
	ErrMissingField = errors.New("seq: missing field")
	// ErrInvalidValue: a field has the wrong shape or a value outside its
	// legal set (names, enums, types, durations, schedules, retries, fallback).
	ErrInvalidValue = errors.New("seq: invalid value")
	// ErrDataflow: a named-slot rule of docs/sequences.md is broken ($args.<key>
	// not declared in `in`, `as` not declared in `out`, a slot written twice,
	// an out slot declared twice or never written, conflicting types).
	ErrDataflow = errors.New("seq: dataflow error")
	// ErrExpression: a `when` expression does not compile, does not
	// type-check, does not yield a bool, or failed while being evaluated.
	ErrExpression = errors.New("seq: when expression error")
	// ErrArgument: at run time, a run argument is missing, unknown or of the
	// wrong type, or a slot read by a group holds a value of the wrong type.
	ErrArgument = errors.New("seq: argument error")
	// ErrToolFailed: a tool call failed (after its retries) and the group's
	// on_error policy aborted the run.
	ErrToolFailed = errors.New("seq: tool call failed")
	// ErrGroupTimeout: the group's timeout ended its calls (attempts and
	// backoff waits included) before they finished.
	ErrGroupTimeout = errors.New("seq: group timeout")
	// ErrNoGroup: RunGroup was asked for a group name the sequence lacks.
	ErrNoGroup = errors.New("seq: no such group")
	// ErrCheckpoint: a checkpoint given to Resume does not belong to the
	// sequence being run (different name or different groups).
	ErrCheckpoint = errors.New("seq: checkpoint does not match the sequence")
	// ErrObserver: an observer hook returned an error, which stops the run
	// (status interrupted, resumable from the last checkpoint).
	ErrObserver = errors.New("seq: observer failed")
	// ErrTooCostly: a `when` expression is over its budget (WhenCostLimit,
	// MaxWhenLength's companion): refused when stored because its estimated
	// cost is too high, or stopped when run because it used up its cost
	// budget or the group's timeout. It is the cause (Error.Err) of an
	// *Error whose Kind is ErrExpression, so errors.Is holds for both; when
	// the group's deadline stopped the evaluation, errors.Is(err,
	// ErrGroupTimeout) holds too. The message says "expression too costly".
	ErrTooCostly = errors.New("seq: expression too costly")
	// ErrWaiting: the run reached a wait_for group and stopped there to
	// wait (docs/sequences.md, "wait_for"); its Result is StatusWaiting and
	// the waiting group's GroupResult.Wait says for what. Not a failure: a
	// runner stores the state and resumes the run WithWaitOutcome.
	ErrWaiting = errors.New("seq: run waiting")
	// ErrWaitTimeout: no signal came within a signal wait's timeout.
	ErrWaitTimeout = errors.New("seq: wait timed out")
	// ErrRejected: the signal a group waited for rejected it (`skillbus
	// runs signal --reject REASON`).
	ErrRejected = errors.New("seq: signal rejected")
)

// Error is one problem in a sequence or one failure of a run, with its
// location. Group and Tool are 1-based (0 = not about a group / a tool).
// Kind is one of the sentinel errors above; errors.Is(err, Kind) holds.
// Err, when set, is the underlying cause (a tool error, ctx.Err()).
//
// Error() reads `group N "name": tool M "tool.name": FIELD: message`, the
// parts that do not apply left out; Message alone says what was received,
// what is allowed and how to fix it.
type Error struct {
	Kind      error
	Group     int    // 1-based group number; 0 when not about one group
	GroupName string // the group's name when known
	Tool      int    // 1-based tool-call number inside the group; 0 when none
	ToolName  string // the tool's name when known
	Field     string // the field, e.g. "timeout", "args.path", "signature.repo"
	Line      int    // 1-based line in a YAML source; 0 when unknown
	Message   string
	Err       error // underlying cause, may be nil
}

// Where returns the location prefix, e.g. `group 2 "fetch": tool 1 "http.get"`.
func (e *Error) Where() string {
	var parts []string
	if e.Group > 0 {
		if e.GroupName != "" {
			parts = append(parts, fmt.Sprintf("group %d %q", e.Group, e.GroupName))
		} else {
			parts = append(parts, fmt.Sprintf("group %d", e.Group))
		}
	}
	if e.Tool > 0 {
		if e.ToolName != "" {
			parts = append(parts, fmt.Sprintf("tool %d %q", e.Tool, e.ToolName))
		} else {
			parts = append(parts, fmt.Sprintf("tool %d", e.Tool))
		}
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	return strings.Join(parts, ": ")
}

// Error returns Where(), ": ", Message and, for YAML sources, " (line N)".
func (e *Error) Error() string {
	msg := e.Message
	if e.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", e.Line)
	}
	if w := e.Where(); w != "" {
		return w + ": " + msg
	}
	return msg
}

// Unwrap returns Kind and, when set, the cause Err.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Errors is every problem found in one sequence, in source order. Parse
// returns it (never empty) when the sequence is invalid; get it back with
// errors.As(err, &errs) to print each problem on its own line.
type Errors []*Error

// Error returns the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so errors.Is(err, ErrDataflow) holds when
// any of them is a dataflow error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// problems collects *Error values during parsing.
type problems struct {
	list Errors
}

func (p *problems) add(e *Error) { p.list = append(p.list, e) }

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return p.list
}
