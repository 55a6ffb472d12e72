// Package seqtest runs the tests of sequences: NAME.test.yaml files beside
// NAME.seq.yaml (or .seq.yml, .seq.json), each holding cases of run
// arguments, mocked tool results and expectations. A case runs the real
// engine (seq.Run, as the seqworker does) in process, with no NATS server,
// against a Caller that serves the mocks, in virtual time. The format and
// every expectation are in docs/testing.md.
package seqtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Suffix is how a test file's name ends (docs/testing.md).
const Suffix = ".test.yaml"

// File is one parsed test file.
type File struct {
	Path     string // as found
	Sequence string // path of the sequence file under test
	Cases    []Case
}

// Case is one case of a test file.
type Case struct {
	Name   string
	Line   int
	Args   map[string]json.RawMessage
	Mocks  map[string]*Mock
	Expect Expect
}

// Mock is what a case answers for one tool: Missing (no provider), or
// Responses tried in order (docs/testing.md, "Mocks").
type Mock struct {
	Line      int // of the tool's name under mocks:
	Missing   bool
	Responses []Response
}

// Response is one mocked answer. Match, when set, restricts it to calls
// whose arguments contain Match (a JSON subset); responses with the same
// Match form a script: successive calls get successive responses, the
// last one repeats.
type Response struct {
	Match   json.RawMessage // nil: every call
	Result  json.RawMessage // nil: null
	Error   *MockError
	Delay   time.Duration // virtual time before answering
	Missing bool
	Line    int
}

// MockError is a tool's own error: code (HTTP-like, "500" when empty) and message.
type MockError struct {
	Code    string
	Message string
}

// Expect is what a case checks after the run; unset fields are not
// checked (docs/testing.md, "Expectations").
type Expect struct {
	Status      string                     // succeeded, failed
	Error       string                     // substring of the run's error
	Groups      map[string]string          // group → succeeded|partial|skipped|failed|ran
	Slots       map[string]json.RawMessage // exact
	SlotsSubset map[string]json.RawMessage // subset
	Calls       []ExpectCall               // every call made (every attempt), in any order
	CallCounts  map[string]int             // tool → calls made
	Attempts    map[string]int             // "tool" or "group/tool" → attempts
}

// ExpectCall is one expected call: its tool and, when set, its arguments
// after substitution (exact JSON).
type ExpectCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ParseError is a test file that does not parse: where and what.
type ParseError struct {
	Path    string
	Line    int
	Message string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Message)
}

// Find returns the test files under paths (a file named on its own is taken
// as a test file whatever its name), in byte order. Directories named .git,
// node_modules and the like are skipped as the registry skips them.
func Find(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p {
				switch d.Name() {
				case ".git", ".hg", ".svn", ".jj", "node_modules":
					return filepath.SkipDir
				}
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), Suffix) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// Load reads and parses one test file. A file that does not parse gives a
// *ParseError with its line.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ParseError{Path: path, Message: err.Error()}
	}
	return ParseFile(path, data)
}

// ParseFile parses the text of the test file at path.
func ParseFile(path string, data []byte) (*File, error) {
	bad := func(line int, format string, a ...any) error {
		return &ParseError{Path: path, Line: line, Message: fmt.Sprintf(format, a...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		var te *yaml.TypeError
		line := 0
		if !errors.As(err, &te) {
			fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line)
		}
		return nil, bad(line, "not YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, bad(1, "a test file is a mapping: {sequence: FILE (optional), cases: [...]}")
	}
	f := &File{Path: path}
	root := doc.Content[0]
	var cases *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "sequence":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return nil, bad(v.Line, "sequence: must be the path of the sequence file, relative to the test file")
			}
			// Only a sequence file, named relative to the test file: a
			// test file from someone else's repository cannot have the
			// runner read (and quote in its errors) any other file.
			if filepath.IsAbs(v.Value) || !isSequenceFile(v.Value) {
				return nil, bad(v.Line, "sequence: %q must be a sequence file (*.seq.yaml, *.seq.yml or *.seq.json) named relative to the test file", v.Value)
			}
			f.Sequence = filepath.Join(filepath.Dir(path), v.Value)
		case "cases":
			cases = v
		default:
			return nil, bad(k.Line, "unknown field %q; a test file has sequence and cases", k.Value)
		}
	}
	if f.Sequence == "" {
		base := strings.TrimSuffix(path, Suffix)
		for _, ext := range []string{".seq.yaml", ".seq.yml", ".seq.json"} {
			if _, err := os.Stat(base + ext); err == nil {
				f.Sequence = base + ext
				break
			}
		}
		if f.Sequence == "" {
			return nil, bad(1, "no sequence beside the test file (%s.seq.yaml, .seq.yml or .seq.json); name it with sequence: FILE", filepath.Base(base))
		}
	}
	if cases == nil || cases.Kind != yaml.SequenceNode || len(cases.Content) == 0 {
		line := 1
		if cases != nil {
			line = cases.Line
		}
		return nil, bad(line, "cases: must be a list of at least one case")
	}
	names := map[string]int{}
	for _, cn := range cases.Content {
		c, err := parseCase(cn)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				pe.Path = path
			}
			return nil, err
		}
		if l, dup := names[c.Name]; dup {
			return nil, bad(cn.Line, "two cases are named %q (the other at line %d); give each case its own name", c.Name, l)
		}
		names[c.Name] = cn.Line
		f.Cases = append(f.Cases, *c)
	}
	return f, nil
}

func perr(line int, format string, a ...any) error {
	return &ParseError{Line: line, Message: fmt.Sprintf(format, a...)}
}

// fields iterates a mapping node, failing on a non-mapping.
func fields(n *yaml.Node, what string, f func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return perr(n.Line, "%s must be a mapping", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if err := f(n.Content[i], n.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// toJSON converts a YAML value to compact JSON.
func toJSON(n *yaml.Node) (json.RawMessage, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, perr(n.Line, "%v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, perr(n.Line, "this value cannot be JSON: %v", err)
	}
	return b, nil
}

func parseCase(n *yaml.Node) (*Case, error) {
	c := &Case{Line: n.Line, Mocks: map[string]*Mock{}}
	err := fields(n, "a case", func(k, v *yaml.Node) error {
		switch k.Value {
		case "name":
			c.Name = v.Value
		case "args":
			c.Args = map[string]json.RawMessage{}
			return fields(v, "args", func(ak, av *yaml.Node) error {
				j, err := toJSON(av)
				c.Args[ak.Value] = j
				return err
			})
		case "mocks":
			return fields(v, "mocks", func(mk, mv *yaml.Node) error {
				m, err := parseMock(mv)
				if m != nil {
					m.Line = mk.Line
				}
				c.Mocks[mk.Value] = m
				return err
			})
		case "expect":
			return parseExpect(v, &c.Expect)
		default:
			return perr(k.Line, "unknown case field %q; a case has name, args, mocks and expect", k.Value)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c.Name == "" {
		return nil, perr(n.Line, "a case needs a name")
	}
	return c, nil
}

func parseMock(n *yaml.Node) (*Mock, error) {
	if n.Kind == yaml.ScalarNode && n.Value == "missing" {
		return &Mock{Missing: true}, nil
	}
	m := &Mock{}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for _, it := range items {
		if it.Kind == yaml.ScalarNode && it.Value == "missing" {
			m.Responses = append(m.Responses, Response{Missing: true, Line: it.Line})
			continue
		}
		r := Response{Line: it.Line}
		err := fields(it, `a mock (missing, a mapping of result/error/delay/match, or a list of them)`, func(k, v *yaml.Node) error {
			var err error
			switch k.Value {
			case "result":
				r.Result, err = toJSON(v)
			case "match":
				r.Match, err = toJSON(v)
			case "missing":
				r.Missing = v.Value == "true"
			case "delay":
				r.Delay, err = time.ParseDuration(v.Value)
				if err != nil || r.Delay < 0 {
					return perr(v.Line, "delay: %q is not a duration such as 500ms, 10s, 1h", v.Value)
				}
			case "error":
				r.Error = &MockError{}
				if v.Kind == yaml.ScalarNode {
					r.Error.Message = v.Value
					return nil
				}
				return fields(v, "error", func(ek, ev *yaml.Node) error {
					switch ek.Value {
					case "code":
						r.Error.Code = ev.Value
					case "message":
						r.Error.Message = ev.Value
					default:
						return perr(ek.Line, "unknown error field %q; an error has code and message", ek.Value)
					}
					return nil
				})
			default:
				return perr(k.Line, "unknown mock field %q; a mock has result, error, delay, match or missing", k.Value)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if r.Error != nil && r.Result != nil {
			return nil, perr(it.Line, "a mock has either result or error, not both")
		}
		m.Responses = append(m.Responses, r)
	}
	return m, nil
}

func parseExpect(n *yaml.Node, e *Expect) error {
	slots := func(v *yaml.Node) (map[string]json.RawMessage, error) {
		m := map[string]json.RawMessage{}
		err := fields(v, "slots", func(sk, sv *yaml.Node) error {
			j, err := toJSON(sv)
			m[sk.Value] = j
			return err
		})
		return m, err
	}
	ints := func(v *yaml.Node, what string) (map[string]int, error) {
		m := map[string]int{}
		err := fields(v, what, func(sk, sv *yaml.Node) error {
			var i int
			if err := sv.Decode(&i); err != nil {
				return perr(sv.Line, "%s: %q is not a whole number", what, sv.Value)
			}
			m[sk.Value] = i
			return nil
		})
		return m, err
	}
	return fields(n, "expect", func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "status":
			e.Status = v.Value
			if e.Status != "succeeded" && e.Status != "failed" {
				return perr(v.Line, "status: %q; expect succeeded or failed", v.Value)
			}
		case "error":
			e.Error = v.Value
		case "groups":
			e.Groups = map[string]string{}
			return fields(v, "groups", func(gk, gv *yaml.Node) error {
				switch gv.Value {
				case "succeeded", "partial", "skipped", "failed", "ran", "pending":
				default:
					return perr(gv.Line, "group %q: %q; expect ran, succeeded, partial, skipped, failed or pending (not run)", gk.Value, gv.Value)
				}
				e.Groups[gk.Value] = gv.Value
				return nil
			})
		case "slots":
			e.Slots, err = slots(v)
		case "slots_subset":
			e.SlotsSubset, err = slots(v)
		case "calls":
			if v.Kind != yaml.SequenceNode {
				return perr(v.Line, "calls must be a list of {tool, args}")
			}
			e.Calls = []ExpectCall{}
			for _, cn := range v.Content {
				var ec ExpectCall
				err := fields(cn, "a call", func(ck, cv *yaml.Node) error {
					switch ck.Value {
					case "tool":
						ec.Tool = cv.Value
					case "args":
						j, err := toJSON(cv)
						ec.Args = j
						return err
					default:
						return perr(ck.Line, "unknown call field %q; a call has tool and args", ck.Value)
					}
					return nil
				})
				if err != nil {
					return err
				}
				e.Calls = append(e.Calls, ec)
			}
		case "call_counts":
			e.CallCounts, err = ints(v, "call_counts")
		case "attempts":
			e.Attempts, err = ints(v, "attempts")
		default:
			return perr(k.Line, "unknown expectation %q; expect has status, error, groups, slots, slots_subset, calls, call_counts and attempts", k.Value)
		}
		return err
	})
}

// isSequenceFile reports whether name ends as a sequence file does
// (docs/sequences.md: *.seq.yaml, *.seq.yml, *.seq.json).
func isSequenceFile(name string) bool {
	for _, ext := range []string{".seq.yaml", ".seq.yml", ".seq.json"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
