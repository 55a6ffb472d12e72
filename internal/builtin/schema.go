package builtin

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/skillbus/skillbus/pkg/tool"
)

// The arguments of each tool. Their JSON Schemas are derived from these
// types (tool.SchemaFor), published in the endpoint metadata (`nats micro
// info`, `skillbus tools --json`) and checked on every call before the
// tool runs, so a call with an unknown argument or a value of the wrong
// type is answered with code "400" naming the argument.

// ListArgs are fs.list's arguments.
type ListArgs struct {
	Path   string `json:"path,omitempty" jsonschema:"directory relative to the tool root; default the root"`
	Hidden bool   `json:"hidden,omitempty" jsonschema:"include names starting with a dot"`
}

// StatArgs are fs.stat's arguments.
type StatArgs struct {
	Path string `json:"path,omitempty" jsonschema:"path relative to the tool root; default the root"`
}

// ReadArgs are fs.read's arguments.
type ReadArgs struct {
	Path     string `json:"path" jsonschema:"file relative to the tool root"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"read at most this many bytes (capped by the provider)"`
}

// GlobArgs are fs.glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern" jsonschema:"glob relative to the tool root; ** matches any depth, {a,b} alternatives"`
	Hidden  bool   `json:"hidden,omitempty" jsonschema:"include paths with a part starting with a dot"`
}

// GrepArgs are fs.grep's arguments.
type GrepArgs struct {
	Pattern    string `json:"pattern" jsonschema:"RE2 regular expression matched against each line"`
	Path       string `json:"path,omitempty" jsonschema:"file or directory relative to the tool root; default the root"`
	Include    string `json:"include,omitempty" jsonschema:"glob the file path or name must match, e.g. *.go"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match letters in any case"`
	MaxMatches int    `json:"max_matches,omitempty" jsonschema:"at most this many matches; default 100"`
	Hidden     bool   `json:"hidden,omitempty" jsonschema:"search hidden files and directories too"`
}

// LinesArgs are fs.lines's arguments.
type LinesArgs struct {
	Path   string `json:"path,omitempty" jsonschema:"directory relative to the tool root; default the root"`
	Hidden bool   `json:"hidden,omitempty" jsonschema:"count hidden files and directories too"`
}

// RunArgs are cmd.run's arguments.
type RunArgs struct {
	Command string   `json:"command" jsonschema:"an allow-listed command"`
	Args    []string `json:"args,omitempty" jsonschema:"the command's arguments"`
	Dir     string   `json:"dir,omitempty" jsonschema:"working directory relative to the tool root"`
	Timeout string   `json:"timeout,omitempty" jsonschema:"Go duration such as 10s, capped by the provider"`
	Stdin   string   `json:"stdin,omitempty" jsonschema:"text sent to the command's standard input"`
	Check   *bool    `json:"check,omitempty" jsonschema:"a non-zero exit status is an error (default true)"`
}

// schemaOf derives the schema of T and sets a minimum of 0 on the named
// integer properties.
func schemaOf[T any](nonNegative ...string) (json.RawMessage, error) {
	raw, err := tool.SchemaFor[T]()
	if err != nil {
		return nil, err
	}
	if len(nonNegative) == 0 {
		return raw, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	for _, name := range nonNegative {
		p := s.Properties[name]
		if p == nil {
			return nil, fmt.Errorf("builtin: schema: no property %q", name)
		}
		p.Minimum = jsonschema.Ptr(0.0)
	}
	return json.Marshal(&s)
}

// Schemas returns the argument schemas of the built-in tools (JSON
// Schema draft 2020-12, derived from their Go argument types), by tool
// name without a prefix: what a provider of them publishes, known without
// one (`skillbus validate` checks calls against them with no cluster).
func Schemas() (map[string]json.RawMessage, error) { return schemas() }

// schemas are the argument schemas of the built-in tools, by tool name.
func schemas() (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for name, f := range map[string]func() (json.RawMessage, error){
		"fs.list":     func() (json.RawMessage, error) { return schemaOf[ListArgs]() },
		"fs.stat":     func() (json.RawMessage, error) { return schemaOf[StatArgs]() },
		"fs.read":     func() (json.RawMessage, error) { return schemaOf[ReadArgs]("max_bytes") },
		"fs.glob":     func() (json.RawMessage, error) { return schemaOf[GlobArgs]() },
		"fs.grep":     func() (json.RawMessage, error) { return schemaOf[GrepArgs]("max_matches") },
		"fs.lines":    func() (json.RawMessage, error) { return schemaOf[LinesArgs]() },
		"cmd.run":     func() (json.RawMessage, error) { return schemaOf[RunArgs]() },
		"text.render": func() (json.RawMessage, error) { return schemaOf[RenderArgs]() },
	} {
		raw, err := f()
		if err != nil {
			return nil, fmt.Errorf("builtin: schema of %s: %w", name, err)
		}
		out[name] = raw
	}
	return out, nil
}
