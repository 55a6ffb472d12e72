package mcpserver

import (
	"bytes"

	"encoding/json"
	"github.com/google/jsonschema-go/jsonschema"
	"sort"
	"strings"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
)

// sequenceForm is the JSON form of a sequence (docs/sequences.md, "Two
// forms"): what a model writes to seq_create and seq_run's inline, and
// what seq_show gives back so that a model can change it and store it
// again. Only its schema is derived from it for the arguments (the
// registry parses them itself, strictly: every problem comes back as
// `skillbus validate` reports it).
type sequenceForm struct {
	Name        string      `json:"name" jsonschema:"the sequence's name: letters, digits, - and _ (any script), unique among stored sequences"`
	Description string      `json:"description,omitempty" jsonschema:"what the sequence does, for whoever lists it"`
	Boot        bool        `json:"boot,omitempty" jsonschema:"true: run once at every agent boot (may read only the arguments agent and boot_id)"`
	Schedule    string      `json:"schedule,omitempty" jsonschema:"run on a schedule: a cron expression of 6 fields, seconds first (\"0 0 6 * * *\", 06:00:00 every day) or \"@every 1h\"; leave out to run only on demand"`
	Timezone    string      `json:"timezone,omitempty" jsonschema:"IANA time zone of a cron schedule, such as Europe/Berlin (default UTC)"`
	Groups      []groupForm `json:"groups" jsonschema:"the steps, run one after another (at least one)"`
}

// groupForm is one group of sequenceForm.
type groupForm struct {
	Name        string            `json:"name" jsonschema:"the group's name, unique among all stored sequences' groups: seq_call runs the group alone by this name"`
	Description string            `json:"description,omitempty" jsonschema:"what the group does"`
	In          map[string]string `json:"in,omitempty" jsonschema:"the values the group reads as $args.KEY, with their types (string, bool, integer, number, object, array, array<T>): run arguments or slots of earlier groups"`
	Out         map[string]string `json:"out,omitempty" jsonschema:"the slots the group's calls write with as, with their types; later groups read them through their in"`
	When        string            `json:"when,omitempty" jsonschema:"a CEL condition over $args.KEY (keys of in); the group is skipped (its slots null) when false. Example: $args.issues != null"`
	Parallel    *bool             `json:"parallel,omitempty" jsonschema:"false: run the calls one after another, in order (default true: all at once)"`
	Missing     string            `json:"missing,omitempty" jsonschema:"what a tool nobody serves does: fail (default), skip (its slot null) or degrade (its slot gets the call's fallback)"`
	Timeout     string            `json:"timeout,omitempty" jsonschema:"bound of the whole group, a Go duration such as 30s or 2m (default 60s)"`
	OnError     string            `json:"on_error,omitempty" jsonschema:"what a failed call does: abort (default: the run fails), continue (its slot null) or retry (with retries)"`
	Retries     int               `json:"retries,omitempty" jsonschema:"further attempts after the first, 1 to 10; required with on_error retry and allowed only with it"`
	Tools       string            `json:"tools" jsonschema:"the tool calls: ONE STRING of JSON objects, each followed by ; (also the last). Each object: tool (required), args (an object; strings may be exactly \"$args.KEY\" or contain it), as (an out slot), fallback (JSON text, only with missing degrade), for_each (\"$args.LIST\" of a key of in typed array<T>: one call per item, args read $item, $item.FIELD and $index, as gets an array of the results in item order), max_parallel (items in flight, with for_each). Example: {\"tool\":\"fs.read\",\"args\":{\"path\":\"$args.path\"},\"as\":\"text\"};"`
}

// sequenceSchema is the schema of sequenceForm with its enums.
func sequenceSchema() *jsonschema.Schema {
	s := schemaFor[sequenceForm]()
	enum(s, "groups.missing", string(seq.MissingFail), string(seq.MissingSkip), string(seq.MissingDegrade))
	enum(s, "groups.on_error", string(seq.OnErrorAbort), string(seq.OnErrorContinue), string(seq.OnErrorRetry))
	return s
}

// formOf returns the JSON form of a stored sequence: the fields as
// written (defaults left out), each group's calls as one tools string.
// seq.ParseJSON of its JSON gives back s.
func formOf(s *seq.Sequence) sequenceForm {
	f := sequenceForm{Name: s.Name, Description: s.Description, Boot: s.Boot, Schedule: s.Schedule, Timezone: s.TimeZone}
	for _, g := range s.Groups {
		gf := groupForm{Name: g.Name, Description: g.Description, In: typeMap(g.In), Out: typeMap(g.Out), When: g.When, Retries: g.Retries}
		if !g.Parallel {
			f := false
			gf.Parallel = &f
		}
		if g.Missing != seq.MissingFail {
			gf.Missing = string(g.Missing)
		}
		if time.Duration(g.Timeout) != seq.DefaultTimeout {
			gf.Timeout = g.Timeout.String()
		}
		if g.OnError != seq.OnErrorAbort {
			gf.OnError = string(g.OnError)
		}
		var tools strings.Builder
		for _, c := range g.Tools {
			tools.WriteString(compactJSON(struct {
				Tool        string         `json:"tool"`
				Args        map[string]any `json:"args,omitempty"`
				As          string         `json:"as,omitempty"`
				Fallback    string         `json:"fallback,omitempty"`
				ForEach     string         `json:"for_each,omitempty"`
				MaxParallel int            `json:"max_parallel,omitempty"`
			}{c.Tool, c.Args, c.As, c.Fallback, c.ForEach, c.MaxParallel}))
			tools.WriteByte(';')
		}
		gf.Tools = tools.String()
		f.Groups = append(f.Groups, gf)
	}
	return f
}

func typeMap(m map[string]seq.Type) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// compactJSON encodes v without escaping <, > and & (templates keep them).
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// signatureText writes a signature as "(key: type, ...)", keys sorted.
func signatureText(sig map[string]string) string {
	keys := make([]string, 0, len(sig))
	for k := range sig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + sig[k]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
