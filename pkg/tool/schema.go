package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrBadSchema: a tool's argument schema is not a JSON Schema this package
// can check calls against (not an object, an unknown keyword value, an
// unsupported draft: JSON Schema draft 2020-12 and draft-07 are).
var ErrBadSchema = errors.New("tool: invalid argument schema")

// SchemaFor returns the JSON Schema of a tool's arguments derived from the
// Go type T (a struct), with github.com/google/jsonschema-go's rules: each
// exported field is a property named by its json tag, required unless
// tagged omitempty or omitzero, described by its jsonschema tag; other
// properties are refused (additionalProperties false). A json.RawMessage
// or interface field takes any JSON value. Errors: the library's, for a
// type with no JSON form (channels, functions, maps keyed by non-strings).
//
//	type readArgs struct {
//		Path     string `json:"path" jsonschema:"file relative to the root"`
//		MaxBytes int    `json:"max_bytes,omitempty"`
//	}
//	schema, err := tool.SchemaFor[readArgs]()
func SchemaFor[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}})
	if err != nil {
		return nil, fmt.Errorf("tool: schema of %s: %w", reflect.TypeFor[T](), err)
	}
	return json.Marshal(s)
}

// ArgsSchema is a compiled argument schema: it checks a call's arguments
// before the tool runs. Serve compiles every Tool.Schema into one; a
// program checks arguments itself with CompileSchema and Check. It is safe
// for concurrent use.
type ArgsSchema struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// CompileSchema compiles a JSON Schema of a tool's arguments (draft 2020-12
// or draft-07). Errors: ErrBadSchema, wrapped with the reason.
func CompileSchema(raw json.RawMessage) (*ArgsSchema, error) {
	if !isObject(raw) {
		return nil, fmt.Errorf("%w: it must be a JSON object", ErrBadSchema)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	// The draft is only looked at when validating: try once.
	if err := r.Validate(map[string]any{}); err != nil && strings.Contains(err.Error(), "cannot validate version") {
		return nil, fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	return &ArgsSchema{schema: &s, resolved: r}, nil
}

// Check checks args (a JSON object) against the schema. Errors: an *Error
// with code "400" naming the argument and what was expected, for example
// `bad arguments: "max_bytes": got a number (1.5), want an integer`.
func (a *ArgsSchema) Check(args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return Errorf("400", "bad arguments: %v", err)
	}
	if err := a.resolved.Validate(v); err != nil {
		return Errorf("400", "bad arguments: %s", describe(err, a.schema))
	}
	return nil
}

// CheckKnown checks arguments some of whose values are not known yet: a
// sequence's literal arguments, where a string such as "$args.path" is
// replaced when the sequence runs. unknown is asked about every string in
// args; a property whose value is (or, for a list or an object, holds) an
// unknown string is left out of the check, and so is the requirement that
// it be present. Everything else is checked as Check does. Errors: as
// Check; ErrBadSchema when the schema cannot be narrowed.
func (a *ArgsSchema) CheckKnown(args json.RawMessage, unknown func(s string) bool) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return Errorf("400", "bad arguments: %v", err)
	}
	s := a.schema.CloneSchemas()
	v = dropUnknown(v, s, unknown)
	r, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSchema, err)
	}
	if err := r.Validate(v); err != nil {
		return Errorf("400", "bad arguments: %s", describe(err, a.schema))
	}
	return nil
}

// dropUnknown removes from the object v the properties that hold an
// unknown string, and their names from s's required list, in nested
// objects too (where s describes them by properties).
func dropUnknown(v any, s *jsonschema.Schema, unknown func(string) bool) any {
	m, ok := v.(map[string]any)
	if !ok || s == nil {
		return v
	}
	for k, x := range m {
		var sub *jsonschema.Schema
		if s.Properties != nil {
			sub = s.Properties[k]
		}
		if _, isObj := x.(map[string]any); isObj && sub != nil && sub.Properties != nil {
			m[k] = dropUnknown(x, sub, unknown)
			continue
		}
		if holdsUnknown(x, unknown) {
			delete(m, k)
			s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return r == k })
		}
	}
	return m
}

func holdsUnknown(v any, unknown func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return unknown(v)
	case []any:
		return slices.ContainsFunc(v, func(x any) bool { return holdsUnknown(x, unknown) })
	case map[string]any:
		for _, x := range v {
			if holdsUnknown(x, unknown) {
				return true
			}
		}
	}
	return false
}

// describe turns a jsonschema-go validation error ("validating root:
// validating /properties/path: type: 7 has type "integer", want "string"")
// into `"path": got an integer (7), want a string`.
func describe(err error, root *jsonschema.Schema) string {
	msg := err.Error()
	loc := ""
	for {
		i := strings.Index(msg, "validating ")
		if i != 0 {
			break
		}
		rest := msg[len("validating "):]
		j := strings.Index(rest, ": ")
		if j < 0 {
			break
		}
		if l := rest[:j]; l != "root" {
			loc = l
		}
		msg = rest[j+2:]
	}
	field, schema := fieldOf(loc, root)
	switch {
	case strings.HasPrefix(msg, "required: missing properties: "):
		var names []string
		_ = json.Unmarshal([]byte(strings.TrimPrefix(msg, "required: missing properties: ")), &names)
		return where(field) + "missing " + plural(len(names), "argument", "arguments") + " " + quoteList(names)
	case strings.HasPrefix(msg, "unexpected additional properties "):
		var names []string
		_ = json.Unmarshal([]byte(strings.TrimPrefix(msg, "unexpected additional properties ")), &names)
		known := []string{}
		if schema != nil {
			for k := range schema.Properties {
				known = append(known, k)
			}
		}
		slices.Sort(known)
		return where(field) + "unknown " + plural(len(names), "argument", "arguments") + " " + quoteList(names) + "; the tool takes " + quoteList(known)
	case strings.HasPrefix(msg, "type: "):
		// type: VALUE has type "GOT", want "WANT" / want one of "A, B"
		if i := strings.LastIndex(msg, " has type "); i > 0 {
			value := strings.TrimPrefix(msg[:i], "type: ")
			rest := msg[i+len(" has type "):]
			if j := strings.Index(rest, ", want "); j > 0 {
				got, _ := strconv.Unquote(rest[:j])
				want := strings.TrimPrefix(rest[j+len(", want "):], "one of ")
				want, _ = strconv.Unquote(want)
				switch got {
				case "object", "array": // printed the Go way: leave it out
					return fmt.Sprintf("%sgot %s, want %s", where(field), article(got), orList(want))
				case "null": // the checker prints a nil value as Go's <invalid reflect.Value>
					return fmt.Sprintf("%sgot null, want %s", where(field), orList(want))
				case "string":
					value = strconv.Quote(value)
				}
				return fmt.Sprintf("%sgot %s (%s), want %s", where(field), article(got), clipValue(value), orList(want))
			}
		}
	}
	return where(field) + msg
}

// fieldOf maps a schema location (/properties/a/items/properties/b) onto an
// argument path (a[].b) and the schema of the object it is in.
func fieldOf(loc string, root *jsonschema.Schema) (string, *jsonschema.Schema) {
	var b strings.Builder
	s := root
	parts := strings.Split(strings.Trim(loc, "/"), "/")
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			if i+1 < len(parts) {
				i++
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(parts[i])
				if s != nil && s.Properties != nil {
					s = s.Properties[parts[i]]
				} else {
					s = nil
				}
			}
		case "items":
			b.WriteString("[]")
			if s != nil {
				s = s.Items
			}
		}
	}
	return b.String(), s
}

func where(field string) string {
	if field == "" {
		return ""
	}
	return strconv.Quote(field) + ": "
}

func article(jsonType string) string {
	switch jsonType {
	case "integer", "object", "array":
		return "an " + jsonType
	case "null":
		return "null"
	}
	return "a " + jsonType
}

// orList turns "null, boolean" into "null or a boolean".
func orList(types string) string {
	parts := strings.Split(types, ", ")
	for i, p := range parts {
		parts[i] = article(p)
	}
	return strings.Join(parts, " or ")
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func clipValue(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
