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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/seq"
)

// File is the content of --args-file: Name as the user gave it ("-" for
// standard input), Data what was read.
type File struct {
	Name string
	Data []byte
}

// Build turns --args-file (file, nil when not given) and --arg values into
// run arguments for a signature (key → type). Unknown keys, malformed
// values, a key given twice (in the file, as with a repeated --arg) and
// missing keys are errors that say which key, what was expected and how to
// write it. want is nil when the signature is not known (a group of a
// stored sequence that the caller did not fetch): values are then read as
// JSON when they are valid JSON, else as strings.
func Build(want map[string]seq.Type, file *File, kvs []string, requireAll bool) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if file != nil {
		where := file.where()
		obj, err := decodeObject(file.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		// In file order, so the first problem reported is the first in the file.
		sort.Slice(keys, func(i, j int) bool {
			return obj[keys[i]].line < obj[keys[j]].line || obj[keys[i]].line == obj[keys[j]].line && keys[i] < keys[j]
		})
		for _, k := range keys {
			a := obj[k]
			if want != nil {
				if _, ok := want[k]; !ok {
					return nil, fmt.Errorf("%s: line %d: %s", where, a.line, unknown(k, want))
				}
			}
			if t, ok := want[k]; ok {
				if err := CheckJSON(t, a.raw); err != nil {
					return nil, fmt.Errorf("%s: line %d: %s is declared %s; %v", where, a.line, k, t, err)
				}
			}
			args[k] = a.raw
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
			return nil, fmt.Errorf("--arg %s: %s", kv, unknown(k, want))
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

// Problems checks run arguments given as JSON values (a program's, a
// model's: the console's API, MCP's seq_run) against the signature sig by
// the rules of --args-file (CheckJSON), and returns the problem of each
// key that is wrong: an unknown key ("unknown argument "k"; the sequence
// takes …"), a value of another type ("k is declared T; give …"), a
// missing key ("missing: k is a run argument of type T; give a value such
// as …"). nil when every argument fits.
func Problems(sig map[string]seq.Type, args map[string]json.RawMessage) map[string]string {
	var probs map[string]string
	add := func(k, msg string) {
		if probs == nil {
			probs = map[string]string{}
		}
		probs[k] = msg
	}
	for k, raw := range args {
		t, ok := sig[k]
		if !ok {
			add(k, fmt.Sprintf("unknown argument %q; the sequence takes %s", k, SignatureText(sig)))
		} else if err := CheckJSON(t, raw); err != nil {
			add(k, fmt.Sprintf("%s is declared %s; %v", k, t, err))
		}
	}
	for k, t := range sig {
		if _, ok := args[k]; !ok {
			add(k, fmt.Sprintf("missing: %s is a run argument of type %s; give a value such as %s", k, t, Example(t)))
		}
	}
	return probs
}

// DecodeObject reads a JSON object of arguments, keeping each value's
// JSON. Errors say what is wrong in words, never in Go types: not valid
// JSON (with the line and column), not an object ("want a JSON object of
// arguments such as {"root": "."}, not an array"), a key that appears
// twice (JSON parsers would silently keep the last; the error names the
// key and both lines), data after the object.
func DecodeObject(b []byte) (map[string]json.RawMessage, error) {
	obj, err := decodeObject(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(obj))
	for k, a := range obj {
		out[k] = a.raw
	}
	return out, nil
}

// fileArg is one argument of an --args-file: its JSON value and the line
// (from 1) its key is on.
type fileArg struct {
	raw  json.RawMessage
	line int
}

func decodeObject(b []byte) (map[string]fileArg, error) {
	// A UTF-8 byte-order mark (Windows editors, PowerShell's Out-File)
	// is not part of the JSON: skipped, as validate skips it.
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxText(b, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		kind := seq.JSONKind(json.RawMessage(bytes.TrimSpace(b)))
		if kind == "" {
			kind = "something else"
		}
		return nil, fmt.Errorf("want a JSON object of arguments such as {\"root\": \".\"}, not %s", article(kind))
	}
	obj := map[string]fileArg{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, syntaxText(b, err)
		}
		key, _ := kt.(string)
		// InputOffset is just past the key: its line is the key's.
		line := lineOf(b, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxText(b, err)
		}
		if first, dup := obj[key]; dup {
			return nil, fmt.Errorf("line %d: the argument %q is given twice (first at line %d); give each argument once", line, key, first.line)
		}
		obj[key] = fileArg{raw: raw, line: line}
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxText(b, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("there is more after the JSON object (line %d); give one object of arguments", lineOf(b, dec.InputOffset()))
	}
	return obj, nil
}

// lineOf returns the line (from 1) of byte offset off in b.
func lineOf(b []byte, off int64) int {
	return 1 + bytes.Count(b[:min(max(int(off), 0), len(b))], []byte{'\n'})
}

// Shadowed returns a note for each --arg KEY=VALUE whose KEY the
// --args-file also gives: the --arg wins (README.md, `skillbus run`), and
// the note says so, with the file's line and value, so a value the user
// meant from the file is not replaced unseen. It returns nil when file is
// nil or cannot be read (Build reports that).
func Shadowed(file *File, kvs []string) []string {
	if file == nil || len(kvs) == 0 {
		return nil
	}
	obj, err := decodeObject(file.Data)
	if err != nil {
		return nil
	}
	var notes []string
	seen := map[string]bool{}
	for _, kv := range kvs {
		k, _, ok := strings.Cut(kv, "=")
		a, inFile := obj[k]
		if !ok || !inFile || seen[k] {
			continue
		}
		seen[k] = true
		notes = append(notes, fmt.Sprintf("--arg %s replaces %q: %s from %s line %d (--arg wins over --args-file)", clipText(kv, 60), k, clipText(string(a.raw), 40), file.where(), a.line))
	}
	return notes
}

// where names the file in messages.
func (f *File) where() string {
	if f.Name == "-" {
		return "--args-file - (standard input)"
	}
	return "--args-file " + f.Name
}

// syntaxText says where JSON stops being valid, by line and column (of
// characters, from 1). The decoder's own offsets are relative to the value
// it was reading, so the place is that of encoding/json's check of the
// whole input, which counts from the start.
func syntaxText(b []byte, err error) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("the file is empty; give a JSON object of arguments such as {\"root\": \".\"}")
	}
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(b, new(any)), &se) {
		err = se
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the JSON ends early: an object, string or list is not closed")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if !errors.As(err, &se) {
		return fmt.Errorf("not valid JSON: %s", msg)
	}
	if strings.HasPrefix(msg, "unexpected end of JSON input") {
		return errors.New("the JSON ends early: an object, string or list is not closed")
	}
	// Offset counts the bytes read up to and including the bad one.
	at := min(max(int(se.Offset)-1, 0), len(b))
	start := bytes.LastIndexByte(b[:at], '\n') + 1
	line := 1 + bytes.Count(b[:at], []byte{'\n'})
	col := 1 + utf8.RuneCount(b[start:at])
	return fmt.Errorf("not valid JSON at line %d, column %d: %s", line, col, msg)
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
		// The items too (array<T>), as --args-file and seq.run check them,
		// so a wrong item is a usage error before anything runs.
		if err := CheckJSON(t, json.RawMessage(v)); err != nil {
			return nil, err
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
	case "null":
		return kind
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

// unknown says that k is not an argument of the signature want, with the
// argument it most likely misspells (internal/suggest) and the signature.
func unknown(k string, want map[string]seq.Type) string {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	// A key of 3 characters or fewer is within 2 edits of any short name:
	// no suggestion then.
	if m := suggest.Closest(k, names); m != "" && len(k) > 3 {
		return fmt.Sprintf("unknown argument %q (did you mean %s?); the sequence takes %s", k, m, SignatureText(want))
	}
	return fmt.Sprintf("unknown argument %q; the sequence takes %s", k, SignatureText(want))
}

// SignatureText writes a signature for messages: "(a: string, n: integer)",
// or "no arguments".
func SignatureText(want map[string]seq.Type) string {
	if len(want) == 0 {
		return "no arguments"
	}
	return seq.Signature(want).String()
}
