// Package runargs reads run arguments by the types of a sequence's
// signature, with one set of rules for every surface that takes them: the
// command line's --arg KEY=VALUE and --args-file (internal/cli) and the web
// console's run form (internal/console). The rules are those of
// docs/sequences.md ("Types") and the README's `skillbus run`: a string is
// taken literally, bool is true or false, integer and number a JSON number,
// object, array and array<T> a JSON value; null fits every type but a
// string given as text.
package runargs

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Build turns --args-file and --arg values into run arguments for a
// signature (key → type). Unknown keys, malformed values and missing keys
// are errors that say which key, what was expected and how to write it.
// want is nil when the signature is not known (a group of a stored
// sequence that the caller did not fetch): values are then read as JSON
// when they are valid JSON, else as strings.
func Build(want map[string]seq.Type, file string, kvs []string, requireAll bool) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--args-file: %v", err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("--args-file %s: want a JSON object of arguments such as {\"root\": \".\"}: %v", file, errText(err))
		}
		for k, v := range obj {
			if want != nil {
				if _, ok := want[k]; !ok {
					return nil, fmt.Errorf("--args-file %s: unknown argument %q; the sequence takes %s", file, k, SignatureText(want))
				}
			}
			if t, ok := want[k]; ok {
				if err := CheckJSON(t, v); err != nil {
					return nil, fmt.Errorf("--args-file %s: %s is declared %s; %v", file, k, t, err)
				}
			}
			args[k] = v
		}
	}
	seen := map[string]bool{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--arg %q: write KEY=VALUE, for example --arg root=.", kv)
		}
		if seen[k] {
			return nil, fmt.Errorf("--arg %s: argument %q is given more than once; give each --arg KEY once (an array or object type takes a JSON value, e.g. --arg 'tags=[\"a\",\"b\"]')", kv, k)
		}
		seen[k] = true
		if want == nil {
			if json.Valid([]byte(v)) {
				args[k] = json.RawMessage(v)
			} else {
				args[k], _ = json.Marshal(v)
			}
			continue
		}
		t, ok := want[k]
		if !ok {
			return nil, fmt.Errorf("--arg %s: unknown argument %q; the sequence takes %s", kv, k, SignatureText(want))
		}
		raw, err := Value(t, v)
		if err != nil {
			return nil, fmt.Errorf("--arg %s: %s is declared %s; %v", kv, k, t, err)
		}
		args[k] = raw
	}
	if requireAll && want != nil {
		var missing []string
		for k := range want {
			if _, ok := args[k]; !ok {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			var b strings.Builder
			for _, k := range missing {
				fmt.Fprintf(&b, " --arg %s=%s", k, Example(want[k]))
			}
			return nil, fmt.Errorf("missing argument(s) %s: the sequence takes %s; add%s", strings.Join(missing, ", "), SignatureText(want), b.String())
		}
	}
	return args, nil
}

func errText(err error) string {
	if err == nil {
		return "got null"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// Value reads one --arg value (the text after KEY=) as type t and returns
// its JSON: a string literally, "null" as null for every other type, bool
// as true or false, integer and number as a JSON number (an integer may be
// written 007, +7, 5.0 or 1e3), object and array as a JSON value. The
// error says what to give instead, e.g. `give a whole number such as 10,
// not "ten"`.
func Value(t seq.Type, v string) (json.RawMessage, error) {
	if t == "string" {
		return json.Marshal(v)
	}
	if v == "null" {
		return json.RawMessage("null"), nil
	}
	s := string(t)
	switch {
	case s == "bool":
		if v != "true" && v != "false" {
			return nil, fmt.Errorf("give true or false, not %q", v)
		}
	case s == "integer":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return json.RawMessage(strconv.FormatInt(n, 10)), nil // "007", "+7" → 7
		}
		// Any JSON number without fraction is an integer (5.0, 1e3), as in
		// --args-file and docs/sequences.md's Types table.
		if t := strings.TrimSpace(v); seq.JSONKind(json.RawMessage(t)) == "integer" {
			return json.RawMessage(t), nil
		}
		return nil, fmt.Errorf("give a whole number such as 10, not %q", v)
	case s == "number":
		var n json.Number
		if err := json.Unmarshal([]byte(v), &n); err != nil {
			return nil, fmt.Errorf("give a number such as 2.5, not %q", v)
		}
	case s == "object":
		if !json.Valid([]byte(v)) || !strings.HasPrefix(strings.TrimSpace(v), "{") {
			return nil, fmt.Errorf(`give a JSON object such as '{"k": 1}', not %q`, v)
		}
	case s == "array" || strings.HasPrefix(s, "array<"):
		if !json.Valid([]byte(v)) || !strings.HasPrefix(strings.TrimSpace(v), "[") {
			return nil, fmt.Errorf(`give a JSON array such as '["a", "b"]', not %q`, v)
		}
	default:
		if !json.Valid([]byte(v)) {
			return nil, fmt.Errorf("give a JSON value, not %q", v)
		}
	}
	return json.RawMessage(v), nil
}

// CheckJSON checks one JSON value (an --args-file value) against type t,
// by the rules the engine applies to run arguments (docs/sequences.md,
// "Types"): null fits every type; a number without fraction is an integer and also fits number; an
// array<T>'s items must each fit T. The error says what to give instead.
func CheckJSON(t seq.Type, raw json.RawMessage) error {
	got := seq.JSONKind(raw)
	if got == "null" {
		return nil
	}
	s := string(t)
	ok := false
	switch {
	case s == "string", s == "bool", s == "object":
		ok = got == s
	case s == "integer":
		ok = got == "integer"
	case s == "number":
		ok = got == "integer" || got == "number"
	case t.IsArray():
		ok = got == "array"
		if el := strings.TrimSuffix(strings.TrimPrefix(s, "array<"), ">"); ok && s != "array" {
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil {
				return fmt.Errorf("give a JSON array of %s, not %s", el, clipText(string(raw), 40))
			}
			for i, it := range items {
				if err := CheckJSON(seq.Type(el), it); err != nil {
					return fmt.Errorf("item %d: %v", i+1, err)
				}
			}
		}
	default:
		ok = true
	}
	if ok {
		return nil
	}
	want := map[string]string{
		"string":  `give a JSON string such as "text"`,
		"bool":    "give true or false",
		"integer": "give a whole number such as 10",
		"number":  "give a number such as 2.5",
		"object":  `give a JSON object such as {"k": 1}`,
	}[s]
	if want == "" {
		want = `give a JSON array such as ["a", "b"]`
	}
	return fmt.Errorf("%s, not %s %s", want, article(got), clipText(string(raw), 40))
}

func article(kind string) string {
	switch kind {
	case "integer", "object", "array":
		return "an " + kind
	}
	return "a " + kind
}

// clipText cuts s to n runes for an error message.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Example returns a sample --arg VALUE of type t, for messages.
func Example(t seq.Type) string {
	switch s := string(t); {
	case s == "string":
		return "TEXT"
	case s == "bool":
		return "true"
	case s == "integer":
		return "10"
	case s == "number":
		return "2.5"
	case s == "object":
		return "'{}'"
	default:
		return "'[]'"
	}
}

// SignatureText writes a signature for messages: "(a: string, n: integer)",
// or "no arguments".
func SignatureText(want map[string]seq.Type) string {
	if len(want) == 0 {
		return "no arguments"
	}
	return seq.Signature(want).String()
}
