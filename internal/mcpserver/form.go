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
	Name        string        `json:"name" jsonschema:"the sequence's name: letters, digits, - and _ (any script), unique among stored sequences"`
	Description string        `json:"description,omitempty" jsonschema:"what the sequence does, for whoever lists it"`
	Boot        bool          `json:"boot,omitempty" jsonschema:"true: run once at every agent boot (may read only the arguments agent and boot_id)"`
	Schedule    scheduleValue `json:"schedule,omitempty" jsonschema:"run on a schedule: a cron expression of 6 fields, seconds first (\"0 0 6 * * *\", 06:00:00 every day) or \"@every 1h\"; or a list of entries, each {name, cron or every, timezone, args, overlap, jitter, start_at, end_at, catchup_window, pause_on_failure} (docs/sequences.md, Schedule entries); leave out to run only on demand"`
	Timezone    string        `json:"timezone,omitempty" jsonschema:"IANA time zone of a cron schedule, such as Europe/Berlin (default UTC)"`
	Groups      []groupForm   `json:"groups" jsonschema:"the steps, run one after another (at least one)"`
}

// scheduleValue is sequenceForm's schedule: a string or a list of entry
// objects (docs/sequences.md, "Schedules"), as JSON decodes them into an
// interface; its schema (schemaOptions) says which.
type scheduleValue interface{}

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
	WaitFor     *waitForm         `json:"wait_for,omitempty" jsonschema:"instead of tools: the run waits here, held by no worker — for a signal (seq_signal; its values fill the group's out) with a timeout, for a duration, or until a time in a string of in"`
	Tools       string            `json:"tools,omitempty" jsonschema:"the tool calls (every group but a wait_for one): ONE STRING of JSON objects, each followed by ; (also the last). Each object: tool (required), args (an object; strings may be exactly \"$args.KEY\" or contain it), as (an out slot), fallback (JSON text, only with missing degrade), for_each (\"$args.LIST\" of a key of in typed array<T>: one call per item, args read $item, $item.FIELD and $index, as gets an array of the results in item order), max_parallel (items in flight, with for_each). Example: {\"tool\":\"fs.read\",\"args\":{\"path\":\"$args.path\"},\"as\":\"text\"};"`
}

// waitForm is a group's wait_for (docs/sequences.md, "wait_for").
type waitForm struct {
	Signal   string `json:"signal,omitempty" jsonschema:"the signal's name; needs timeout"`
	Timeout  string `json:"timeout,omitempty" jsonschema:"how long to wait for the signal, 1s to 144h, such as 24h; then the group fails under its on_error"`
	Duration string `json:"duration,omitempty" jsonschema:"wait this long, 1s to 144h, then go on"`
	Until    string `json:"until,omitempty" jsonschema:"$args.KEY of a string of in holding an RFC 3339 time: wait until then"`
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
	f := sequenceForm{Name: s.Name, Description: s.Description, Boot: s.Boot, Timezone: s.TimeZone}
	switch {
	case len(s.Entries) > 0:
		f.Schedule = s.Entries // the list form, as Encode writes it
	case s.Schedule != "":
		f.Schedule = s.Schedule
	}
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
		if w := g.WaitFor; w != nil {
			gf.WaitFor = &waitForm{Signal: w.Signal, Until: w.Until}
			if w.Timeout != 0 {
				gf.WaitFor.Timeout = w.Timeout.String()
			}
			if w.Duration != 0 {
				gf.WaitFor.Duration = w.Duration.String()
			}
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
