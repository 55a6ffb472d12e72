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
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Suffix is how a test file's name ends (docs/testing.md).
const Suffix = ".test.yaml"

// File is one parsed test file.
type File struct {
	Path     string // as found
	Sequence string // path of the sequence file under test
	Cases    []Case
	// Schedules are the file's schedule checks (schedule.go): an entry's
	// next fire times for a given now.
	Schedules []ScheduleCheck
	doc       *yaml.Node // the parsed document, edited by Update
}

// Case is one case of a test file.
type Case struct {
	Name string
	Line int
	Args map[string]json.RawMessage
	// ArgLines are the lines of Args' keys; ArgsLine that of args: (0
	// when the case has none), where a missing argument is reported.
	ArgLines map[string]int
	ArgsLine int
	Mocks    map[string]*Mock
	// Update marks a case whose expected slots `skillbus test --update`
	// may rewrite from the actual ones (docs/testing.md).
	Update bool
	// Signals are what the case sends the run's signal waits, taken in
	// order (docs/testing.md, "Waits and signals").
	Signals []Signal
	// StopWhenWaiting ends the case when the run waits for a signal the
	// case has none left for, leaving the run waiting, instead of timing
	// the wait out at its deadline.
	StopWhenWaiting bool
	Expect          Expect
}

// Mock is what a case answers for one tool: Missing (no provider), or
// Responses tried in order (docs/testing.md, "Mocks").
type Mock struct {
	Line      int // of the tool's name under mocks:
	Missing   bool
	Responses []Response
}

// Response is one mocked answer. Match, when set, restricts it to calls
// whose arguments contain Match (a JSON subset); Group, Position, Item and
// Index to calls of that group, at that position among its tools, of a
// for_each item containing Item or at Index. Responses with the same
// selectors form a script: successive calls get successive responses, the
// last one repeats.
type Response struct {
	Match    json.RawMessage // nil: every call
	Group    string          // "": any group
	Position int             // 1-based position in the group's tools; 0: any
	Item     json.RawMessage // a subset of the for_each item ($item); nil: any call
	Index    *int            // the for_each item's 0-based index ($index); nil: any call
	Result   json.RawMessage // nil: null
	Error    *MockError
	Delay    time.Duration // virtual time before answering
	Missing  bool
	Line     int
}

// MockError is a tool's own error: code (HTTP-like, "500" when empty) and message.
type MockError struct {
	Code    string
	Message string
}

// Expect is what a case checks after the run; unset fields are not
// checked (docs/testing.md, "Expectations").
type Expect struct {
	Status    string                     // succeeded, failed
	Error     string                     // substring of the run's error
	Groups    map[string]string          // group → succeeded|partial|skipped|failed|ran
	Slots     map[string]json.RawMessage // exact
	slotNodes map[string]*yaml.Node      // each slot's value node, for Update
	// SlotPredicates are the slots expected as {cel: EXPR} under slots
	// (not in Slots): a CEL predicate over the slot.
	SlotPredicates map[string]*slotPredicate
	SlotsSubset    map[string]json.RawMessage // subset
	Calls          []ExpectCall               // every call made (every attempt), in any order
	CallCounts     map[string]int             // tool → calls made
	Attempts       map[string]int             // "tool" or "group/tool" → attempts
	// Waits are the wait groups' outcomes: group → signalled, rejected,
	// timed_out, elapsed or waiting (docs/testing.md, "Waits and signals").
	Waits map[string]string
	// VirtualTime is the virtual time the run took (HasVirtualTime: set).
	VirtualTime    time.Duration
	HasVirtualTime bool
	// names are the groups, tools and slots the expectations name, with
	// their lines, checked against the sequence when the file is read.
	names []nameRef
}

// nameRef is a name an expectation gives: under which field (groups,
// waits, calls, call_counts, attempts, slots), and the line.
type nameRef struct {
	field, name string
	line        int
}

func (e *Expect) name(field, name string, line int) {
	e.names = append(e.names, nameRef{field: field, name: name, line: line})
}

// ExpectCall is one expected call: its tool and, when set, its arguments
// after substitution (exact JSON).
type ExpectCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ParseError is a test file that does not parse: where and what. A file
// with several problems gives the first (by line) with the others in More,
// so that one run of `skillbus test` or `validate` names every problem
// (docs/testing.md, "A test file").
type ParseError struct {
	Path    string
	Line    int
	Message string
	// More are the file's other problems, in line order; nil for one.
	More []*ParseError
}

// Error gives "FILE:LINE: message", one line per problem.
func (e *ParseError) Error() string {
	var b strings.Builder
	for i, p := range e.All() {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.one())
	}
	return b.String()
}

func (e *ParseError) one() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Message)
}

// All returns every problem of e: e itself (without More) and then More.
func (e *ParseError) All() []*ParseError {
	first := *e
	first.More = nil
	return append([]*ParseError{&first}, e.More...)
}

// problems collects a file's problems from the joined errors of the
// parsing functions (fields joins the problems of every field).
type problems []*ParseError

func (ps *problems) add(err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			ps.add(e)
		}
		return
	}
	var pe *ParseError
	if errors.As(err, &pe) {
		for _, p := range pe.All() {
			*ps = append(*ps, p)
		}
		return
	}
	*ps = append(*ps, &ParseError{Message: err.Error()})
}

// err returns the problems as one *ParseError of path (nil for none),
// sorted by line.
func (ps problems) err(path string) error {
	if len(ps) == 0 {
		return nil
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
	for _, p := range ps {
		p.Path = path
	}
	first := ps[0]
	first.More = append([]*ParseError(nil), ps[1:]...)
	return first
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
	f := &File{Path: path, doc: &doc}
	var probs problems
	root := doc.Content[0]
	var cases *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "sequence":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				probs.add(perr(v.Line, "sequence: must be the path of the sequence file, relative to the test file"))
				continue
			}
			// Only a sequence file, named relative to the test file: a
			// test file from someone else's repository cannot have the
			// runner read (and quote in its errors) any other file.
			if filepath.IsAbs(v.Value) || !isSequenceFile(v.Value) {
				probs.add(perr(v.Line, "sequence: %q must be a sequence file (*.seq.yaml, *.seq.yml or *.seq.json) named relative to the test file", v.Value))
				continue
			}
			f.Sequence = filepath.Join(filepath.Dir(path), v.Value)
		case "cases":
			cases = v
		case "schedules":
			sc, err := parseSchedules(v)
			probs.add(err)
			f.Schedules = sc
		default:
			probs.add(perr(k.Line, "unknown field %q%s; a test file has sequence, cases and schedules", k.Value, didYouMean(k.Value, []string{"sequence", "cases", "schedules"})))
		}
	}
	if f.Sequence == "" && len(probs) == 0 {
		base := strings.TrimSuffix(path, Suffix)
		for _, ext := range []string{".seq.yaml", ".seq.yml", ".seq.json"} {
			if _, err := os.Stat(base + ext); err == nil {
				f.Sequence = base + ext
				break
			}
		}
		if f.Sequence == "" {
			hint := ""
			if filepath.Base(base) == "skill" {
				// internal/skilltest's FileName, away from its skill.
				hint = "; or, if it holds a skill's tests, put it in the skill's directory, beside its SKILL.md or skill.yaml (docs/testing.md)"
			}
			return nil, bad(1, "no sequence beside the test file (%s.seq.yaml, .seq.yml or .seq.json); name it with sequence: FILE%s", filepath.Base(base), hint)
		}
	}
	switch {
	case cases == nil && len(f.Schedules) > 0:
		// schedule checks only
	case cases == nil || cases.Kind != yaml.SequenceNode || len(cases.Content) == 0:
		line := 1
		if cases != nil {
			line = cases.Line
		}
		probs.add(perr(line, "cases: must be a list of at least one case"))
	default:
		names := map[string]int{}
		for _, cn := range cases.Content {
			c, err := parseCase(cn)
			probs.add(err)
			if c == nil {
				continue
			}
			if l, dup := names[c.Name]; dup && c.Name != "" {
				probs.add(perr(cn.Line, "two cases are named %q (the other at line %d); give each case its own name", c.Name, l))
			}
			names[c.Name] = cn.Line
			f.Cases = append(f.Cases, *c)
		}
	}
	if f.Sequence != "" {
		probs = append(probs, checkAgainstSequence(f)...)
	}
	if err := probs.err(path); err != nil {
		return nil, err
	}
	return f, nil
}

func perr(line int, format string, a ...any) error {
	return &ParseError{Line: line, Message: fmt.Sprintf(format, a...)}
}

// fields iterates a mapping node, failing on a non-mapping. It calls f for
// every field, even after one failed, and returns the problems joined.
func fields(n *yaml.Node, what string, f func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return perr(n.Line, "%s must be a mapping", what)
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		if err := f(n.Content[i], n.Content[i+1]); err != nil {
			errs = append(errs, err) // and go on: every problem is reported
		}
	}
	return errors.Join(errs...)
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
			c.ArgLines = map[string]int{}
			c.ArgsLine = k.Line
			return fields(v, "args", func(ak, av *yaml.Node) error {
				j, err := toJSON(av)
				c.Args[ak.Value] = j
				c.ArgLines[ak.Value] = ak.Line
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
		case "update":
			if v.Kind != yaml.ScalarNode || v.Decode(&c.Update) != nil {
				return perr(v.Line, "update: %q is not true or false", v.Value)
			}
		case "expect":
			return parseExpect(v, &c.Expect)
		case "signals":
			var err error
			c.Signals, err = parseSignals(v)
			return err
		case "stop_when_waiting":
			if v.Kind != yaml.ScalarNode || v.Decode(&c.StopWhenWaiting) != nil {
				return perr(v.Line, "stop_when_waiting: %q is not true or false", v.Value)
			}
		default:
			return perr(k.Line, "unknown case field %q%s; a case has name, args, mocks, signals, stop_when_waiting, update and expect", k.Value, didYouMean(k.Value, caseFields))
		}
		return nil
	})
	if n.Kind != yaml.MappingNode {
		return nil, err
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if c.Name == "" {
		errs = append(errs, perr(n.Line, "a case needs a name"))
	}
	if err := checkWaitExpect(n, c); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// The fields of a case, a mock, a mock's error, an expected call and of
// expect, for "did you mean" (docs/testing.md).
var (
	caseFields   = []string{"name", "args", "mocks", "signals", "stop_when_waiting", "update", "expect"}
	mockFields   = []string{"result", "error", "delay", "missing", "match", "group", "position", "item", "index"}
	expectFields = []string{"status", "error", "groups", "slots", "slots_subset", "calls", "call_counts", "attempts", "waits", "virtual_time"}
	groupStates  = []string{"ran", "succeeded", "partial", "skipped", "failed", "pending", "waiting"}
	runStates    = []string{"succeeded", "failed", "waiting"}
	waitStates   = []string{seq.WaitSignalled, seq.WaitRejected, seq.WaitTimedOut, seq.WaitElapsed, "waiting"}
)

func parseMock(n *yaml.Node) (*Mock, error) {
	if n.Kind == yaml.ScalarNode && n.Value == "missing" {
		return &Mock{Missing: true}, nil
	}
	m := &Mock{}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
		if len(items) == 0 {
			return nil, perr(n.Line, "a mock list needs at least one response (a result, an error, missing, ...); to say that no provider serves the tool, write missing")
		}
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
			case "group":
				if v.Kind != yaml.ScalarNode || v.Value == "" {
					return perr(v.Line, "group: must be the name of a group of the sequence")
				}
				r.Group = v.Value
			case "position":
				if v.Kind != yaml.ScalarNode || v.Decode(&r.Position) != nil || r.Position < 1 {
					return perr(v.Line, "position: %q is not a call's position in its group's tools (1 for the first)", v.Value)
				}
			case "item":
				r.Item, err = toJSON(v)
			case "index":
				var i int
				if v.Kind != yaml.ScalarNode || v.Decode(&i) != nil || i < 0 {
					return perr(v.Line, "index: %q is not a for_each item's index ($index: 0 for the first item)", v.Value)
				}
				r.Index = &i
			case "missing":
				r.Missing = v.Value == "true"
			case "delay":
				r.Delay, err = time.ParseDuration(v.Value)
				if err != nil || v.Kind != yaml.ScalarNode {
					return perr(v.Line, "delay: %q is not a duration such as 500ms, 10s, 1h", v.Value)
				}
				if r.Delay < 0 {
					return perr(v.Line, "delay: %q is negative; a delay is the virtual time before the answer, 0s or more (such as 500ms, 10s, 1h)", v.Value)
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
						return perr(ek.Line, "unknown error field %q%s; an error has code and message", ek.Value, didYouMean(ek.Value, []string{"code", "message"}))
					}
					return nil
				})
			default:
				return perr(k.Line, "unknown mock field %q%s; a mock has result, error, delay, missing and, to choose the calls it answers, match, group, position, item and index", k.Value, didYouMean(k.Value, mockFields))
			}
			return err
		})
		if err != nil {
			return m, err
		}
		if r.Error != nil && r.Result != nil {
			return m, perr(it.Line, "a mock has either result or error, not both")
		}
		m.Responses = append(m.Responses, r)
	}
	return m, nil
}

func parseExpect(n *yaml.Node, e *Expect) error {
	slots := func(v *yaml.Node) (map[string]json.RawMessage, error) {
		m := map[string]json.RawMessage{}
		err := fields(v, "slots", func(sk, sv *yaml.Node) error {
			e.name("slots", sk.Value, sk.Line)
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
			if err := sv.Decode(&i); err != nil || sv.Kind != yaml.ScalarNode {
				return perr(sv.Line, "%s: %q is not a whole number", what, sv.Value)
			}
			if i < 0 {
				return perr(sv.Line, "%s: %s: %d is negative; a count is 0 or more (0: never called)", what, sk.Value, i)
			}
			m[sk.Value] = i
			e.name(what, sk.Value, sk.Line)
			return nil
		})
		return m, err
	}
	return fields(n, "expect", func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "status":
			e.Status = v.Value
			if !slices.Contains(runStates, e.Status) {
				return perr(v.Line, "status: %q%s; expect succeeded, failed or waiting (with stop_when_waiting: true)", v.Value, didYouMean(v.Value, runStates))
			}
		case "error":
			e.Error = v.Value
		case "groups":
			e.Groups = map[string]string{}
			return fields(v, "groups", func(gk, gv *yaml.Node) error {
				e.name("groups", gk.Value, gk.Line)
				if !slices.Contains(groupStates, gv.Value) {
					return perr(gv.Line, "group %q: %q%s; expect ran, succeeded, partial, skipped, failed, pending (not run) or waiting (with stop_when_waiting: true)", gk.Value, gv.Value, didYouMean(gv.Value, groupStates))
				}
				e.Groups[gk.Value] = gv.Value
				return nil
			})
		case "slots":
			e.Slots, err = slots(v)
			if err != nil {
				return err
			}
			e.slotNodes = map[string]*yaml.Node{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k, sv := v.Content[i].Value, v.Content[i+1]
				if expr, ok := celNode(sv); ok {
					p, err := compilePredicate(expr)
					if err != nil {
						return perr(sv.Line, "slot %s: %v", k, err)
					}
					if e.SlotPredicates == nil {
						e.SlotPredicates = map[string]*slotPredicate{}
					}
					e.SlotPredicates[k] = p
					delete(e.Slots, k)
					continue
				}
				e.slotNodes[k] = sv
			}
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
						e.name("calls", cv.Value, cv.Line)
					case "args":
						j, err := toJSON(cv)
						ec.Args = j
						return err
					default:
						return perr(ck.Line, "unknown call field %q%s; a call has tool and args", ck.Value, didYouMean(ck.Value, []string{"tool", "args"}))
					}
					return nil
				})
				e.Calls = append(e.Calls, ec)
				if err != nil {
					return err
				}
			}
		case "call_counts":
			e.CallCounts, err = ints(v, "call_counts")
		case "attempts":
			e.Attempts, err = ints(v, "attempts")
		case "waits":
			e.Waits = map[string]string{}
			return fields(v, "waits", func(wk, wv *yaml.Node) error {
				e.name("waits", wk.Value, wk.Line)
				if !slices.Contains(waitStates, wv.Value) {
					return perr(wv.Line, "waits: group %q: %q%s; expect signalled, rejected, timed_out, elapsed or waiting (with stop_when_waiting: true)", wk.Value, wv.Value, didYouMean(wv.Value, waitStates))
				}
				e.Waits[wk.Value] = wv.Value
				return nil
			})
		case "virtual_time":
			d, perr2 := time.ParseDuration(v.Value)
			if v.Kind != yaml.ScalarNode || perr2 != nil || d < 0 {
				return perr(v.Line, "virtual_time: %q is not a duration such as 90s, 24h or 26h30m", v.Value)
			}
			e.VirtualTime, e.HasVirtualTime = d, true
		default:
			return perr(k.Line, "unknown expectation %q%s; expect has status, error, groups, slots, slots_subset, calls, call_counts, attempts, waits and virtual_time", k.Value, didYouMean(k.Value, expectFields))
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

// celNode reports whether n is a slot predicate, {cel: EXPR} (a mapping of
// the one key cel with a text value), and returns EXPR.
func celNode(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 || n.Content[0].Value != "cel" || n.Content[1].Kind != yaml.ScalarNode {
		return "", false
	}
	return n.Content[1].Value, true
}
