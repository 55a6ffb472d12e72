package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// toolDef is one model-facing tool: its MCP description and handler, and
// whether --read-only keeps it.
type toolDef struct {
	tool     *mcp.Tool
	handler  mcp.ToolHandler
	readOnly bool
}

// schemaOptions derive JSON Schemas from this package's Go types: a
// json.RawMessage is any JSON value, and the values of a signal
// (events.SignalInfo.Values, a json.RawMessage that is always an object)
// and the arguments a call was sent (seq.SentArgs.Args, in callView and
// seq.ItemResult) are an object — a property that is any JSON value, the schema `true`,
// is refused by strict MCP clients (the inspector's --strict).
var schemaOptions = func() *jsonschema.ForOptions {
	o := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}}
	si, err := jsonschema.For[events.SignalInfo](o)
	if err != nil {
		panic(err)
	}
	si.Properties["values"] = &jsonschema.Schema{Type: "object", Description: "the values the signal brought, by the names of the wait's out"}
	portable(si)
	o.TypeSchemas[reflect.TypeFor[events.SignalInfo]()] = si
	// The arguments a call or a for_each item was sent (seq.SentArgs) are
	// an object.
	for _, t := range []reflect.Type{reflect.TypeFor[seq.ItemResult](), reflect.TypeFor[callView]()} {
		cs, err := jsonschema.ForType(t, o)
		if err != nil {
			panic(err)
		}
		desc := "the JSON object the tool was sent, after $args, $item and $index were substituted; absent when it was not sent or its arguments were clipped (args_clipped)"
		if p := cs.Properties["args"]; p != nil && p.Description != "" {
			desc = p.Description
		}
		cs.Properties["args"] = &jsonschema.Schema{Type: "object", Description: desc}
		portable(cs)
		o.TypeSchemas[t] = cs
	}
	o.TypeSchemas[reflect.TypeFor[scheduleValue]()] = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string"}, {Type: "array", Items: &jsonschema.Schema{Type: "object"}},
	}}
	return o
}()

// schemaFor returns the JSON Schema of T (github.com/google/jsonschema-go):
// a struct's fields are its properties, required unless omitempty, with
// the jsonschema tag as description, and no other property allowed. It
// panics on a type it cannot describe: the types are this package's own,
// and a test builds every schema.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](schemaOptions)
	if err != nil {
		panic(err)
	}
	portable(s)
	return s
}

// portable rewrites the nullable types jsonschema-go gives slices and
// pointers (["null", "array"]) as the single type: such a field is left
// out rather than null, and many clients (the OpenAPI dialect of some
// model providers) accept only one type.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		for _, t := range s.Types {
			if t != "null" {
				s.Type = t
			}
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		portable(p)
	}
	portable(s.Items)
	portable(s.AdditionalProperties)
}

// enum sets the allowed values of property name of s (nested through
// dotted paths of object and array items: "groups.missing").
func enum(s *jsonschema.Schema, path string, values ...string) {
	for _, part := range strings.Split(path, ".") {
		for s.Items != nil {
			s = s.Items
		}
		s = s.Properties[part]
	}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
}

// handlerFunc is a tool's body: it gets the call's arguments decoded into
// In and returns the structured result and its text ("" = the result as
// indented JSON), or an error a model can act on (describeError).
type handlerFunc[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, string, error)

// defineTool builds a toolDef whose input and output schemas are derived
// from In and Out and whose handler decodes the arguments strictly
// (decodeArgs) before calling fn. subjects are the NATS subjects the tool
// uses: a call is cut short when the server refuses one of them.
func defineTool[In, Out any](s *Server, t mcp.Tool, readOnly bool, subjects []string, fn handlerFunc[In, Out]) toolDef {
	in, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok {
		in = schemaFor[In]()
		t.InputSchema = in
	}
	t.OutputSchema = schemaFor[Out]()
	t.Annotations = annotations(t.Annotations, readOnly)
	name := t.Name
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args In
		if raw, ok := any(&args).(*json.RawMessage); ok {
			*raw = req.Params.Arguments // parsed by the service itself
		} else if err := decodeArgs(name, req.Params.Arguments, in, &args); err != nil {
			return errorResult(err.Error()), nil
		}
		ctx, done := s.perm.watch(ctx, subjects...)
		defer done()
		out, text, err := fn(ctx, req, args)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && errors.Is(cause, errPermission) {
				err = cause
			}
			return errorResult(s.describeError(name, err)), nil
		}
		if text == "" {
			b, _ := json.MarshalIndent(out, "", "  ")
			text = string(b)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}, nil
	}
	tool := t
	return toolDef{tool: &tool, handler: h, readOnly: readOnly}
}

// annotations returns a's hints completed with readOnly.
func annotations(a *mcp.ToolAnnotations, readOnly bool) *mcp.ToolAnnotations {
	if a == nil {
		a = &mcp.ToolAnnotations{}
	}
	a.ReadOnlyHint = readOnly
	f := false
	a.OpenWorldHint = &f
	return a
}

// errorResult is a tool error a model reads: isError with the text.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// argsError lists every problem of a call's arguments.
type argsError struct {
	tool     string
	problems []string
	allowed  []string
}

func (e *argsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: bad arguments", e.tool)
	if len(e.problems) == 1 {
		fmt.Fprintf(&b, ": %s.", e.problems[0])
	} else {
		fmt.Fprintf(&b, " (%d problems):", len(e.problems))
		for _, p := range e.problems {
			fmt.Fprintf(&b, "\n- %s", p)
		}
	}
	if len(e.allowed) == 0 {
		fmt.Fprintf(&b, "\n%s takes no arguments: call it with {}.", e.tool)
	} else {
		fmt.Fprintf(&b, "\n%s takes: %s. Fix the arguments and call it again.", e.tool, strings.Join(e.allowed, ", "))
	}
	return b.String()
}

// decodeArgs reads raw (a JSON object; empty means {}) into v, checking it
// against schema's properties first: every unknown argument (with the
// closest known one), every missing required argument and the first value
// of a wrong type are reported together in an *argsError.
func decodeArgs(tool string, raw json.RawMessage, schema *jsonschema.Schema, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	allowed := make([]string, 0, len(schema.Properties))
	for k := range schema.Properties {
		allowed = append(allowed, k)
	}
	sort.Strings(allowed)
	var describe []string
	for _, k := range allowed {
		d := k
		if slices.Contains(schema.Required, k) {
			d += " (required)"
		}
		describe = append(describe, d)
	}
	e := &argsError{tool: tool, allowed: describe}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		e.problems = append(e.problems, "the arguments must be one JSON object, for example {\""+firstOr(allowed, "name")+"\": ...}")
		return e
	}
	var unknown []string
	for k := range fields {
		if _, ok := schema.Properties[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		p := fmt.Sprintf("unknown argument %q", k)
		if c := suggest.Closest(k, allowed); c != "" {
			p += fmt.Sprintf(" (did you mean %q?)", c)
		}
		e.problems = append(e.problems, p)
	}
	for _, k := range schema.Required {
		if _, ok := fields[k]; !ok {
			e.problems = append(e.problems, fmt.Sprintf("argument %q is missing", k))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			want := te.Type.Kind().String()
			if p := schema.Properties[strings.Split(te.Field, ".")[0]]; p != nil && p.Type != "" {
				want = p.Type
			}
			e.problems = append(e.problems, fmt.Sprintf("argument %q must be %s %s, not a JSON %s", te.Field, article(want), want, te.Value))
		} else {
			e.problems = append(e.problems, err.Error())
		}
	}
	if len(e.problems) > 0 {
		return e
	}
	return nil
}

func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// describeError turns an error of a call into text a model can act on:
// every problem of an invalid sequence, the service's own fix-it message,
// or what is down and what to do about it.
func (s *Server) describeError(tool string, err error) string {
	if probs := client.Problems(err); len(probs) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "The sequence is not valid: %d problem(s). Fix every one and call %s again:", len(probs), tool)
		for i, p := range probs {
			fmt.Fprintf(&b, "\n%d. %s", i+1, p.String())
		}
		return b.String()
	}
	var pe *permissionError
	if errors.As(err, &pe) {
		return pe.Error() + ". The user who configured this server decides what it may do; do not retry. " +
			"Reading (skill_list, skill_info, seq_list, seq_show, seq_status) may still work."
	}
	var te *toolcall.Error
	if errors.As(err, &te) {
		text := te.Description
		if hint := notFoundHint(tool); te.Code == "404" && hint != "" {
			text += ". " + hint
		}
		if te.Tool != "" {
			text = te.Error()
		}
		return text
	}
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Sprintf("the arguments of %s are too large: a request is one NATS message, at most %d bytes on this server (its max_payload). "+
			"Names are at most 64 characters; give a shorter name or section, or split a large sequence into smaller ones.", tool, s.nc.MaxPayload())
	case errors.Is(err, client.ErrUnavailable), errors.Is(err, client.ErrWaitedTooLong):
		return err.Error() + ". skillbus is not running or not reachable from this MCP server: tell the user " +
			"(`skillbus dev` starts one on this machine; `skillbus mcp serve --local DIR` serves one of its own). Do not retry at once."
	case errors.Is(err, toolcall.ErrMissing):
		return err.Error() + ": no provider serves this tool now; tell the user."
	case errors.Is(err, context.DeadlineExceeded):
		return err.Error() + ": skillbus did not answer in time; try again in a moment."
	}
	return err.Error()
}

// notFoundHint says which tool lists what a 404 of tool did not find.
func notFoundHint(tool string) string {
	switch tool {
	case "skill_info":
		return "Call skill_list for the skills"
	case "seq_show", "seq_delete", "seq_run":
		return "Call seq_list for the stored sequences"
	case "seq_call":
		return "Call seq_list for the group names (each group of a stored sequence can be called)"
	case "seq_status", "seq_cancel", "seq_retry", "seq_signal":
		return "Check the run_id: it is the one seq_run returned"
	}
	return ""
}
