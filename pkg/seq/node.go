package seq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/internal/yamlplain"
)

// node is a source-neutral document tree: both the JSON and the YAML form
// are read into it first, keeping key order, duplicate keys and (for YAML)
// line numbers, so that one decoder turns either into a Sequence.
type node struct {
	kind   nodeKind
	line   int      // 1-based YAML line; 0 for JSON
	str    string   // kindString; kindNumber holds the number's text
	b      bool     // kindBool
	keys   []string // kindObject, in source order
	klines []int    // kindObject: the 1-based YAML line of each key (parallel to keys); nil for JSON
	vals   []*node  // kindObject values (parallel to keys) or kindArray items
	isInt  bool     // kindNumber: an integer literal
}

type nodeKind int

const (
	kindNull nodeKind = iota
	kindString
	kindNumber
	kindBool
	kindObject
	kindArray
)

// keyLine returns the 1-based YAML line of the i-th key of an object (the
// line a problem of that field is reported at: the key's, not its value's,
// which may start lines later); 0 for JSON.
func (n *node) keyLine(i int) int {
	if i < len(n.klines) {
		return n.klines[i]
	}
	return 0
}

// describe names a node's kind for messages: "a string", "an object", ...
func (n *node) describe() string {
	switch n.kind {
	case kindNull:
		return "null"
	case kindString:
		return fmt.Sprintf("the string %q", clip(n.str, 60))
	case kindNumber:
		return "the number " + n.str
	case kindBool:
		return strconv.FormatBool(n.b)
	case kindObject:
		return "an object"
	default:
		return "a list"
	}
}

// snippetRunes bounds how much of a document that is not a sequence at
// all (a file read by mistake: /etc/passwd through a symlink) a message
// quotes: enough to recognise it, never its content.
const snippetRunes = 20

// describeShort is describe for a whole document: a string is quoted only
// as a short snippet of its start.
func (n *node) describeShort() string {
	if n.kind != kindString {
		return n.describe()
	}
	return fmt.Sprintf("text starting %q, not a mapping", clip(n.str, snippetRunes))
}

// clip shortens s to at most n runes for messages.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// toValue converts a node to a plain JSON value: map[string]any, []any,
// string, json.Number, bool or nil.
func (n *node) toValue() any {
	switch n.kind {
	case kindString:
		return n.str
	case kindNumber:
		return json.Number(n.str)
	case kindBool:
		return n.b
	case kindObject:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = n.vals[i].toValue()
		}
		return m
	case kindArray:
		a := make([]any, len(n.vals))
		for i, v := range n.vals {
			a[i] = v.toValue()
		}
		return a
	}
	return nil
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 100

// errDepth is returned for documents nested deeper than maxDepth.
var errDepth = fmt.Errorf("nested deeper than %d levels", maxDepth)

// parseJSONNode reads exactly one JSON value from data. Duplicate object
// keys are an error (JSON leaves them undefined; we refuse to guess).
func parseJSONNode(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readJSON(dec, 0)
	if err != nil {
		return nil, jsonErr(dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected text after the end of the JSON value at character %d; the input must be one JSON object", dec.InputOffset())
	}
	return n, nil
}

func jsonErr(dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON at character %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("the JSON text ends early (at character %d): close every string, object and list", dec.InputOffset())
	}
	return err
}

func readJSON(dec *json.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case string:
		return &node{kind: kindString, str: t}, nil
	case bool:
		return &node{kind: kindBool, b: t}, nil
	case json.Number:
		s := string(t)
		return &node{kind: kindNumber, str: s, isInt: !strings.ContainsAny(s, ".eE")}, nil
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kindObject}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key expected at character %d", dec.InputOffset())
				}
				if seen[k] {
					return nil, fmt.Errorf("the key %q appears twice in one object (before character %d); keep one", k, dec.InputOffset())
				}
				seen[k] = true
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '[':
			n := &node{kind: kindArray}
			for dec.More() {
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected %v at character %d", tok, dec.InputOffset())
}

// lineError is a YAML problem at a line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

// parseYAMLNode reads exactly one YAML document. Anchors/aliases, custom
// tags, non-string keys and values that JSON cannot hold (.inf, .nan) are
// errors, so that every YAML sequence has an exact JSON equivalent.
func parseYAMLNode(data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, errors.New("the file is empty; write a sequence: name, groups, ...")
		}
		return nil, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if frontmatter(data, &doc) {
			return nil, errors.New("the file is Markdown with YAML frontmatter (between two `---` lines, then text), as a skill's SKILL.md is, not a sequence; a sequence file is one YAML document: name, groups, ...")
		}
		return nil, errors.New("the file holds more than one YAML document (a second `---`); keep one sequence per file")
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("the file is empty; write a sequence: name, groups, ...")
	}
	return fromYAML(doc.Content[0], 0)
}

// frontmatter reports whether a file whose first YAML document is doc
// looks like a Markdown file with YAML frontmatter (a SKILL.md): its first
// line is "---" and that document is a mapping without the sequence's
// `groups`.
func frontmatter(data []byte, doc *yaml.Node) bool {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if string(bytes.TrimRight(first, " \r")) != "---" || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "groups" {
			return false
		}
	}
	return true
}

func fromYAML(y *yaml.Node, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, &lineError{y.Line, errDepth.Error()}
	}
	switch y.Kind {
	case yaml.AliasNode:
		return nil, &lineError{y.Line, yamlplain.Alias(y)}
	case yaml.MappingNode:
		n := &node{kind: kindObject, line: y.Line}
		seen := map[string]bool{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "!!int" && k.Tag != "!!bool" && k.Tag != "!!float") {
				return nil, &lineError{k.Line, "a mapping key must be a plain name"}
			}
			if msg := yamlplain.MergeKey(k); msg != "" {
				return nil, &lineError{k.Line, msg}
			}
			if seen[k.Value] {
				return nil, &lineError{k.Line, fmt.Sprintf("the key %q appears twice in one mapping; keep one", k.Value)}
			}
			seen[k.Value] = true
			vn, err := fromYAML(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, k.Value)
			n.klines = append(n.klines, k.Line)
			n.vals = append(n.vals, vn)
		}
		return n, nil
	case yaml.SequenceNode:
		n := &node{kind: kindArray, line: y.Line}
		for _, c := range y.Content {
			cn, err := fromYAML(c, depth+1)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, cn)
		}
		return n, nil
	case yaml.ScalarNode:
		n := &node{line: y.Line}
		switch y.Tag {
		case "!!null":
			n.kind = kindNull
		case "!!str", "!!binary", "!!timestamp":
			n.kind, n.str = kindString, y.Value
		case "!!bool":
			var b bool
			if err := y.Decode(&b); err != nil {
				return nil, &lineError{y.Line, fmt.Sprintf("%q is not a boolean; write true or false", y.Value)}
			}
			n.kind, n.b = kindBool, b
		case "!!int", "!!float":
			if isJSONNumber(y.Value) {
				// Written as JSON writes numbers: keep the exact text, so
				// that 9007199254740993 and 9007199254740993.0 keep every
				// digit, as in the JSON form.
				n.kind, n.str, n.isInt = kindNumber, y.Value, isIntLiteral(y.Value)
				break
			}
			if y.Tag == "!!float" {
				var f float64
				if err := y.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
					return nil, &lineError{y.Line, fmt.Sprintf("%s is not a finite number (JSON has no infinity or NaN)", y.Value)}
				}
				n.kind, n.str = kindNumber, strconv.FormatFloat(f, 'g', -1, 64)
				if !strings.ContainsAny(n.str, ".eE") {
					n.str += ".0" // keep it a non-integer literal, as written
				}
				break
			}
			var i int64
			if err := y.Decode(&i); err != nil {
				return nil, &lineError{y.Line, fmt.Sprintf("the integer %s does not fit in 64 bits", y.Value)}
			}
			n.kind, n.str, n.isInt = kindNumber, strconv.FormatInt(i, 10), true
		default:
			return nil, &lineError{y.Line, fmt.Sprintf("the YAML tag %s is not supported; use plain values", y.Tag)}
		}
		return n, nil
	}
	return nil, &lineError{y.Line, "unsupported YAML construct"}
}

// isJSONNumber reports whether s is a number as JSON writes it: an
// optional minus, digits without a leading zero, an optional fraction and
// exponent.
func isJSONNumber(s string) bool {
	if s == "" || strings.TrimSpace(s) != s || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	return json.Valid([]byte(s))
}
