package seq

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Sequence is the parsed, validated form of a sequence (docs/sequences.md): the
// AST that the registry stores in the SEQUENCES bucket and the engine runs.
// Both source forms (JSON with a tools string, YAML with a tools list) parse
// into it; Encode gives its canonical JSON, which Parse reads back into an
// equal Sequence. Defaults are filled in (parallel, missing, timeout,
// on_error), and Signature is derived by the parser.
//
// A *Sequence returned by Parse is immutable by convention: the engine reads
// it from many goroutines and caches compiled `when` programs inside it.
type Sequence struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Boot        bool   `json:"boot,omitempty"`
	Schedule    string `json:"schedule,omitempty"`
	// TimeZone is the IANA time zone (for example "Europe/Berlin") in
	// which a cron Schedule is read; "" means UTC. Only allowed with a
	// cron schedule (not @every), checked with time.LoadLocation when the
	// sequence is stored. Whoever publishes the schedule sends it as the
	// Nats-Schedule-Time-Zone header (docs/sequences.md, "Schedules").
	TimeZone string `json:"timezone,omitempty"`
	// Entries is the list form of `schedule` (docs/sequences.md,
	// "Schedules"), nil for the single-string form (Schedule) or no
	// schedule; ScheduleEntries gives either form as entries. It is
	// written as "schedule" in the JSON (Sequence.MarshalJSON).
	Entries []ScheduleEntry `json:"-"`
	Groups  []Group         `json:"groups"`
	// Signature holds the run arguments: every `in` key that no earlier
	// group's `out` provides, with its type. Derived; see Signature.
	Signature Signature `json:"signature"`
}

// Group is one step of a sequence: its calls run together (or in order when
// Parallel is false), bounded as a whole by Timeout.
type Group struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	In          map[string]Type `json:"in,omitempty"`
	Out         map[string]Type `json:"out,omitempty"`
	// When is the CEL expression deciding whether the group runs; "" means
	// always. It reads only $args.<key> for keys of In.
	When     string   `json:"when,omitempty"`
	Parallel bool     `json:"parallel"`
	Missing  Missing  `json:"missing"`
	Timeout  Duration `json:"timeout"`
	OnError  OnError  `json:"on_error"`
	// Retries is the number of further attempts after the first, 1–10, and
	// only with OnError == OnErrorRetry; 0 otherwise.
	Retries int `json:"retries,omitempty"`
	// WaitFor makes the group a wait instead of calls (docs/sequences.md,
	// "wait_for"): nil for a group of tool calls. A wait group has no
	// Tools; its Out are the values its signal brings.
	WaitFor *WaitFor `json:"wait_for,omitempty"`
	// Tools are the group's calls; empty (not nil: `"tools":[]` in the
	// canonical form, so readers that walk every group's calls need no
	// case of their own) only for a wait group.
	Tools []Call `json:"tools"`

	when *whenProgram // compiled When; nil when When is ""
}

// Call is one tool call of a group.
type Call struct {
	Tool string `json:"tool"`
	// Args is the JSON object sent to the tool. String values may reference
	// $args.<key> (see docs/sequences.md for substitution). Numbers are kept as
	// json.Number so that no precision is lost.
	Args map[string]any `json:"args,omitempty"`
	// As is the out slot the result is written to; "" = result discarded.
	As string `json:"as,omitempty"`
	// Fallback is compact JSON text written to the slot when the tool is
	// missing under `missing: degrade`; "" when none. Under ForEach it is
	// the result of each item whose tool is missing.
	Fallback string `json:"fallback,omitempty"`
	// ForEach is "$args.KEY" naming an `in` value of type array<T> (a run
	// argument or an earlier group's slot): the call is made once per item,
	// its args reading the item as $item (type T; $item.FIELD when T is
	// object) and its 0-based position as $index, and its `as` slot (of an
	// array type) receives the results in item order. "" = one call.
	// docs/sequences.md, "for_each".
	ForEach string `json:"for_each,omitempty"`
	// MaxParallel bounds the items of a ForEach call in flight, 1 to
	// MaxItemsDefault; 0 = the group's own limit (every item at once when
	// the group is parallel, one at a time when it is not). Only with
	// ForEach.
	MaxParallel int `json:"max_parallel,omitempty"`
}

// ForEachKey returns KEY of the call's `for_each: $args.KEY`, or "" when the
// call has no for_each.
func (c *Call) ForEachKey() string { return strings.TrimPrefix(c.ForEach, refPrefix) }

// MaxItemsDefault is the default bound on the items of one for_each call
// (docs/sequences.md, "for_each"): a list longer than the bound in force
// (WithMaxItems; the seqworker's --max-items) fails the group before any
// item is called. It also bounds max_parallel.
const MaxItemsDefault = 10000

// Missing is a group's policy for a tool with no provider (docs/sequences.md).
type Missing string

// The legal values of Missing.
const (
	MissingFail    Missing = "fail"    // the run fails at once (the default)
	MissingSkip    Missing = "skip"    // the call is left out; its slot is null
	MissingDegrade Missing = "degrade" // the slot gets the call's fallback
)

// OnError is a group's policy for a failed tool call (docs/sequences.md).
type OnError string

// The legal values of OnError.
const (
	OnErrorAbort    OnError = "abort"    // the run fails; no later group starts (the default)
	OnErrorContinue OnError = "continue" // the call's slot is null, its error recorded
	OnErrorRetry    OnError = "retry"    // up to Retries more attempts, then abort
)

// DefaultTimeout is a group's timeout when it sets none (docs/sequences.md).
const DefaultTimeout = 60 * time.Second

// MaxRetries is the largest legal `retries`.
const MaxRetries = 10

// MaxGroups is the most groups a sequence may have (docs/sequences.md,
// Sequence fields). A run's state — its checkpoint — is one RUNS entry and
// must fit the NATS server's max_payload (1 MiB by default); it grows by
// about 200 bytes per finished one-call group (and about 100 per further
// call), and an inline sequence carries its definition too (about 170
// bytes per one-call group). 1,000 groups keep the worst realistic state
// under 0.75 MiB beside the 256 KiB of slot values kept inline
// (docs/runs.md, Large state); 3,000 one-call groups did not fit.
const MaxGroups = 1000

// Duration is a time.Duration written as a Go duration string ("1m30s") in
// JSON and YAML.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("seq: a duration must be a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String returns the Go duration string.
func (d Duration) String() string { return time.Duration(d).String() }

// Type is a slot or argument type: string, bool, integer, number, object,
// array or array<T> with T one of these (nesting allowed: array<array<string>>).
type Type string

// validType reports whether t is a legal type.
func validType(t Type) bool {
	s := string(t)
	switch s {
	case "string", "bool", "integer", "number", "object", "array":
		return true
	}
	if strings.HasPrefix(s, "array<") && strings.HasSuffix(s, ">") {
		return validType(Type(s[len("array<") : len(s)-1]))
	}
	return false
}

// IsArray reports whether t is array or array<T>: a slot of such a type
// may be written by several calls (docs/sequences.md).
func (t Type) IsArray() bool { return t == "array" || strings.HasPrefix(string(t), "array<") }

// elem returns T of array<T>, or "" for plain array.
func (t Type) elem() Type {
	if strings.HasPrefix(string(t), "array<") {
		return Type(t[len("array<") : len(t)-1])
	}
	return ""
}

const legalTypes = "string, bool, integer, number, object, array, array<T> (T one of these)"

// Signature is the set of run arguments of a sequence with their types: the
// `in` keys that no earlier group's `out` provides (docs/sequences.md).
type Signature map[string]Type

// Keys returns the argument names, sorted.
func (s Signature) Keys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String returns "(key: type, ...)" in key order, "()" when empty.
func (s Signature) String() string {
	parts := make([]string, 0, len(s))
	for _, k := range s.Keys() {
		parts = append(parts, k+": "+string(s[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Group returns the group called name and its 0-based index, or nil, -1.
// Names compare in NFC form (NormalizeName), so a decomposed "é" finds a
// group written with the composed one.
func (s *Sequence) Group(name string) (*Group, int) {
	name = NormalizeName(name)
	i := slices.IndexFunc(s.Groups, func(g Group) bool { return g.Name == name })
	if i < 0 {
		return nil, -1
	}
	return &s.Groups[i], i
}

// Outputs returns every out slot of the sequence with its type.
func (s *Sequence) Outputs() map[string]Type {
	out := map[string]Type{}
	for _, g := range s.Groups {
		for k, t := range g.Out {
			out[k] = t
		}
	}
	return out
}
