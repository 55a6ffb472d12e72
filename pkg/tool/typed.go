package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Error codes a tool answers with (the Nats-Service-Error-Code header,
// docs/tools.md "Errors"): the caller's policies read them — a 4xx is the
// caller's mistake and is not worth retrying as it is, a 5xx is the
// provider's.
const (
	// CodeBadRequest: the arguments are wrong (a missing or mistyped
	// argument, a path outside the root).
	CodeBadRequest = "400"
	// CodeForbidden: the call is not allowed (a command off the
	// allow-list).
	CodeForbidden = "403"
	// CodeNotFound: what the call names does not exist.
	CodeNotFound = "404"
	// CodeTooLarge: the arguments, the result or the work exceed a limit.
	CodeTooLarge = "413"
	// CodeCancelled: the caller cancelled the call.
	CodeCancelled = codeCancelled
	// CodeInternal: the tool failed (any error that is not an *Error).
	CodeInternal = "500"
	// CodeUnavailable: the tool cannot serve now (try again later).
	CodeUnavailable = "503"
	// CodeTimeout: the tool ran out of time (an error wrapping
	// context.DeadlineExceeded).
	CodeTimeout = "504"
)

// Typed makes a Tool of a function of typed arguments and result, so that
// a tool does not decode its arguments itself (and twice): the arguments
// are decoded once into In, with unknown fields refused, and a value that
// does not decode is answered with CodeBadRequest naming the problem; the
// Out value is the call's result (encoded as JSON). The tool's Schema is
// SchemaFor[In] (so calls are checked against it before f runs, and
// `skillbus tools -o json` shows it); set Schema afterwards to publish
// another. In must be a struct (or a pointer to one) whose JSON form is an
// object, as a tool's arguments are (docs/tools.md). Errors: ErrConfig
// when no schema can be derived from In.
func Typed[In, Out any](name, description string, f func(ctx context.Context, in In) (Out, error)) (Tool, error) {
	schema, err := SchemaFor[In]()
	if err != nil {
		return Tool{}, fmt.Errorf("%w: tool %s: %v", ErrConfig, name, err)
	}
	return Tool{
		Name:        name,
		Description: description,
		Schema:      schema,
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var in In
			if len(args) > 0 {
				dec := json.NewDecoder(bytes.NewReader(args))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&in); err != nil {
					return nil, Errorf(CodeBadRequest, "arguments of %s: %s", name, decodeProblem(err))
				}
				if _, err := dec.Token(); !errors.Is(err, io.EOF) {
					return nil, Errorf(CodeBadRequest, "arguments of %s: data after the JSON object", name)
				}
			}
			return f(ctx, in)
		},
	}, nil
}

// decodeProblem says what is wrong with arguments in JSON's words, not Go's
// ("field n: got a string, want a number").
func decodeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.Kind().String()
		switch want {
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
			want = "a whole number"
		case "float32", "float64":
			want = "a number"
		case "string":
			want = "a string"
		case "bool":
			want = "true or false"
		case "slice", "array":
			want = "an array"
		case "map", "struct":
			want = "an object"
		}
		field := te.Field
		if field == "" {
			field = "the arguments"
		}
		return fmt.Sprintf("%s: got a JSON %s, want %s", field, te.Value, want)
	}
	return err.Error()
}
