package seq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/suggest"
)

// ParseJSON parses the JSON form of a sequence (the form a model writes
// through seq_create, docs/sequences.md): an object whose groups' `tools` field is
// a string of JSON objects each followed by `;`. It also reads the canonical
// form written by Encode, where `tools` is a list of objects and the derived
// `signature` is present (a given signature must equal the derived one).
//
// On success the Sequence has every default filled in and its Signature
// derived. On failure the error is an Errors holding every problem found
// (each an *Error wrapping one of ErrSyntax, ErrUnknownField,
// ErrMissingField, ErrInvalidValue, ErrDataflow or ErrExpression).
func ParseJSON(data []byte) (*Sequence, error) {
	n, err := parseJSONNode(data)
	if err != nil {
		return nil, Errors{{Kind: ErrSyntax, Message: err.Error() + "; a sequence is one JSON object: {\"name\": ..., \"groups\": [...]}"}}
	}
	return fromNode(n)
}

// ParseYAML parses the YAML form of a sequence (the form a person writes in
// a file, docs/sequences.md): the same fields as the JSON form, with `tools` a
// list of mappings. Errors are as for ParseJSON; problems carry their line.
func ParseYAML(data []byte) (*Sequence, error) {
	n, err := parseYAMLNode(data)
	if err != nil {
		e := &Error{Kind: ErrSyntax, Message: err.Error()}
		var le *lineError
		if errors.As(err, &le) {
			e.Line = le.line
		}
		return nil, Errors{e}
	}
	return fromNode(n)
}

// Parse parses either form, choosing JSON when the first non-blank byte is
// `{` and YAML otherwise. Parse(Encode(s)) returns a Sequence equal to s.
func Parse(data []byte) (*Sequence, error) {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return ParseJSON(data)
	}
	return ParseYAML(data)
}

// ParseFile parses data by the file name's extension: *.json with
// ParseJSON, *.yaml and *.yml with ParseYAML (sequence files are named
// *.seq.json, *.seq.yaml, *.seq.yml); any other name with Parse.
func ParseFile(name string, data []byte) (*Sequence, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return ParseJSON(data)
	case ".yaml", ".yml":
		return ParseYAML(data)
	}
	return Parse(data)
}

// Decode reads a stored sequence (the canonical JSON written by Encode, as
// kept in the SEQUENCES bucket) back into a Sequence, validating it again
// and compiling its `when` expressions. It is ParseJSON under a name that
// says what it is for.
func Decode(data []byte) (*Sequence, error) { return ParseJSON(data) }

var (
	toolRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	keyRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	// refRE finds $args references; the key part may be empty or invalid,
	// which is reported.
	refRE = regexp.MustCompile(`\$args\.([A-Za-z0-9_]*)`)
)

const (
	keyRule  = "1 to 64 letters, digits or `_`, not starting with a digit (for example repo_url)"
	toolRule = "letters, digits, `-`, `_`, in dot-separated parts (for example fs.read)"
)

var (
	seqFields   = []string{"name", "description", "groups", "boot", "schedule", "timezone", "signature"}
	groupFields = []string{"name", "description", "in", "out", "when", "parallel", "missing", "timeout", "on_error", "retries", "wait_for", "tools"}
	callFields  = []string{"tool", "args", "as", "fallback", "for_each", "max_parallel"}
)

// at is the location of what is being decoded.
type at struct {
	group int
	gname string
	tool  int
	tname string
}

// decoder turns a node tree into a Sequence, collecting problems.
type decoder struct {
	problems
	lines map[[2]int]int // (group, tool) → YAML line, for problems found after decoding
	// fieldLines holds the YAML line of each field's key — of the
	// sequence (group 0), a group (tool 0) or a call; nested fields as
	// "in.KEY", "out.KEY", "args.KEY" — so a problem found after decoding
	// (dataflow, `when`) is reported at the line of the field it is about,
	// not at its group's or call's first line.
	fieldLines map[fieldAt]int
}

// fieldAt names one field: Group and Tool as in Error (0 = none).
type fieldAt struct {
	group, tool int
	field       string
}

// noteFields records the key line of every field of object n (prefix
// "in.", "out.", "args." for nested ones).
func (d *decoder) noteFields(n *node, a at, prefix string) {
	for i, k := range n.keys {
		if l := n.keyLine(i); l > 0 {
			d.fieldLines[fieldAt{a.group, a.tool, prefix + k}] = l
		}
	}
}

// lineOf is the line of a problem about field at a found without a node:
// the field's key line (for "in.x" that of in.x, else of in), else the
// line of the call or group.
func (d *decoder) lineOf(a at, field string) int {
	for f := field; f != ""; {
		if l := d.fieldLines[fieldAt{a.group, a.tool, f}]; l > 0 {
			return l
		}
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return d.lines[[2]int{a.group, a.tool}]
}

// errf records a problem at the line of node n (the value at fault) or,
// when n is nil, at the line of field (lineOf).
func (d *decoder) errf(kind error, a at, field string, n *node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.line
	}
	d.errfLine(kind, a, field, line, format, args...)
}

// errfLine records a problem at line, or at lineOf(a, field) when line is 0.
func (d *decoder) errfLine(kind error, a at, field string, line int, format string, args ...any) {
	e := &Error{Kind: kind, Group: a.group, GroupName: a.gname, Tool: a.tool, ToolName: a.tname, Field: field, Message: fmt.Sprintf(format, args...)}
	if line == 0 {
		line = d.lineOf(a, field)
	}
	e.Line = line
	d.add(e)
}

// fail returns the problems found, ordered by line (stable: problems on
// one line, and every problem of the JSON form, which has no lines, keep
// the order they were found in).
func (d *decoder) fail() error {
	sort.SliceStable(d.list, func(i, j int) bool { return d.list[i].Line < d.list[j].Line })
	return d.err()
}

// fields checks an object's keys against the allowed ones. An unknown
// field is reported at its key's line (its value may start lines later).
func (d *decoder) fields(n *node, allowed []string, what string, a at) {
	for i, k := range n.keys {
		if !slices.Contains(allowed, k) {
			hint := ""
			if s := suggest.Closest(k, allowed); s != "" {
				hint = fmt.Sprintf(" Did you mean %q?", s)
			}
			line := n.keyLine(i)
			if line == 0 {
				line = n.vals[i].line
			}
			d.errfLine(ErrUnknownField, a, "", line, "unknown field %q in %s; the allowed fields are %s.%s Remove it or rename it.", k, what, strings.Join(allowed, ", "), hint)
		}
	}
}

func (n *node) get(k string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i, key := range n.keys {
		if key == k {
			return n.vals[i]
		}
	}
	return nil
}

func (d *decoder) str(n *node, a at, field, example string) (string, bool) {
	if n == nil {
		return "", false
	}
	if n.kind != kindString {
		d.errf(ErrInvalidValue, a, field, n, "got %s; %s must be a string, for example %s", n.describe(), field, example)
		return "", false
	}
	return n.str, true
}

func (d *decoder) boolean(n *node, a at, field string) (bool, bool) {
	if n == nil {
		return false, false
	}
	if n.kind != kindBool {
		d.errf(ErrInvalidValue, a, field, n, "got %s; %s must be true or false (without quotes)", n.describe(), field)
		return false, false
	}
	return n.b, true
}

func fromNode(root *node) (*Sequence, error) {
	d := &decoder{lines: map[[2]int]int{}, fieldLines: map[fieldAt]int{}}
	if root.kind != kindObject {
		d.errf(ErrSyntax, at{}, "", root, "got %s; a sequence is an object with the fields %s", root.describeShort(), strings.Join(seqFields, ", "))
		return nil, d.fail()
	}
	s := &Sequence{}
	d.noteFields(root, at{}, "")
	d.fields(root, seqFields, "the sequence", at{})
	if v, ok := d.str(root.get("name"), at{}, "name", `"repo-survey"`); ok {
		v = NormalizeName(v)
		if msg := checkName(v); msg != "" {
			d.errf(ErrInvalidValue, at{}, "name", root.get("name"), "the sequence name %q is not allowed: %s", clip(v, 80), msg)
		}
		s.Name = v
	} else if root.get("name") == nil {
		d.errf(ErrMissingField, at{}, "name", root, "the sequence has no name; add \"name\": %s", nameRule)
	}
	s.Description, _ = d.str(root.get("description"), at{}, "description", `"Survey a repository"`)
	s.Boot, _ = d.boolean(root.get("boot"), at{}, "boot")
	d.scheduleField(root, s) // entries.go
	gs := root.get("groups")
	switch {
	case gs == nil:
		d.errf(ErrMissingField, at{}, "groups", root, "the sequence has no groups; add \"groups\": a list of at least one group")
	case gs.kind != kindArray:
		d.errf(ErrInvalidValue, at{}, "groups", gs, "got %s; groups must be a list of groups", gs.describe())
	case len(gs.vals) == 0:
		d.errf(ErrInvalidValue, at{}, "groups", gs, "the list is empty; a sequence needs at least one group")
	case len(gs.vals) > MaxGroups:
		d.errf(ErrInvalidValue, at{}, "groups", gs, "%d groups; a sequence has at most %d (its run state, kept in one RUNS entry, must fit the server's max_payload: docs/runs.md, Large state); split it into several sequences", len(gs.vals), MaxGroups)
	default:
		seen := map[string]int{}
		for i, gn := range gs.vals {
			g := d.group(i+1, gn)
			if g.Name != "" {
				if prev, dup := seen[g.Name]; dup {
					d.errf(ErrInvalidValue, at{group: i + 1, gname: g.Name}, "name", gn.get("name"), "the group name %q is already used by group %d; group names must be unique (each is callable by seq_call); rename one", g.Name, prev)
				} else {
					seen[g.Name] = i + 1
				}
			}
			s.Groups = append(s.Groups, g)
		}
	}
	// A given signature's shape is a field problem, reported with the
	// others; its agreement with the groups is checked with the dataflow.
	sn := root.get("signature")
	var given Signature
	givenOK := false
	if sn != nil {
		given, givenOK = d.signatureField(sn)
	}
	// The dataflow checks need every group decoded; a problem outside the
	// groups (the schedule, the name, a signature's shape) does not keep
	// them from running, so one pass reports both.
	if len(d.list) > 0 && !groupsClean(d.list, gs, s) {
		return nil, d.fail()
	}
	d.check(s)
	d.checkEntryArgs(s) // entries.go
	if givenOK {
		d.checkSignature(s, given, sn)
	}
	if len(d.list) > 0 {
		return nil, d.fail()
	}
	return s, nil
}

// groupsClean reports whether every group of the groups node gs decoded
// into s and none of the problems found so far is about a group, so the
// dataflow checks see the groups as written.
func groupsClean(list Errors, gs *node, s *Sequence) bool {
	if gs == nil || gs.kind != kindArray || len(gs.vals) == 0 || len(s.Groups) != len(gs.vals) {
		return false
	}
	for _, e := range list {
		if e.Group > 0 {
			return false
		}
	}
	return true
}

func (d *decoder) group(idx int, gn *node) Group {
	g := Group{Parallel: true, Missing: MissingFail, Timeout: Duration(DefaultTimeout), OnError: OnErrorAbort}
	a := at{group: idx}
	if gn.line > 0 {
		d.lines[[2]int{idx, 0}] = gn.line
	}
	if gn.kind != kindObject {
		d.errf(ErrInvalidValue, a, "", gn, "got %s; each group is an object with the fields %s", gn.describe(), strings.Join(groupFields, ", "))
		return g
	}
	d.noteFields(gn, a, "")
	if v, ok := d.str(gn.get("name"), a, "name", `"fetch"`); ok {
		v = NormalizeName(v)
		a.gname = v
		g.Name = v
		if msg := checkName(v); msg != "" {
			d.errf(ErrInvalidValue, a, "name", gn.get("name"), "the group name %q is not allowed: %s", clip(v, 80), msg)
		}
	} else if gn.get("name") == nil {
		d.errf(ErrMissingField, a, "name", gn, "the group has no name; add \"name\": %s", nameRule)
	}
	d.fields(gn, groupFields, "a group", a)
	g.Description, _ = d.str(gn.get("description"), a, "description", `"Fetch the issues"`)
	g.In = d.slots(gn.get("in"), a, "in")
	g.Out = d.slots(gn.get("out"), a, "out")
	if w, ok := d.str(gn.get("when"), a, "when", `"$args.count > 0"`); ok {
		if strings.TrimSpace(w) == "" {
			d.errf(ErrInvalidValue, a, "when", gn.get("when"), "the expression is empty; remove `when` to always run the group, or write one such as \"$args.count > 0\"")
		}
		g.When = w
	}
	if v, ok := d.boolean(gn.get("parallel"), a, "parallel"); ok {
		g.Parallel = v
	}
	if v, ok := d.str(gn.get("missing"), a, "missing", `"skip"`); ok {
		if !slices.Contains([]string{"fail", "skip", "degrade"}, v) {
			d.errf(ErrInvalidValue, a, "missing", gn.get("missing"), "got %q;%s missing must be one of fail (the default: the run fails), skip (the call is left out, its slot is null), degrade (the slot gets the call's fallback)", clip(v, 40), didYouMean(v, []string{"fail", "skip", "degrade"}))
		}
		g.Missing = Missing(v)
	}
	if v, ok := d.str(gn.get("timeout"), a, "timeout", `"30s" or "2m"`); ok {
		t, err := time.ParseDuration(v)
		switch {
		case err != nil:
			d.errf(ErrInvalidValue, a, "timeout", gn.get("timeout"), "got %q, which is not a duration; write a number with a unit (ms, s, m, h), for example \"30s\" or \"1m30s\"", clip(v, 40))
		case t <= 0:
			d.errf(ErrInvalidValue, a, "timeout", gn.get("timeout"), "got %q; the timeout must be positive, for example \"30s\" (remove it for the default %s)", v, DefaultTimeout)
		default:
			g.Timeout = Duration(t)
		}
	}
	if v, ok := d.str(gn.get("on_error"), a, "on_error", `"continue"`); ok {
		if !slices.Contains([]string{"abort", "continue", "retry"}, v) {
			d.errf(ErrInvalidValue, a, "on_error", gn.get("on_error"), "got %q;%s on_error must be one of abort (the default: the run fails), continue (the failed call's slot is null), retry (retry with backoff, then abort; needs retries: 1–%d)", clip(v, 40), didYouMean(v, []string{"abort", "continue", "retry"}), MaxRetries)
		}
		g.OnError = OnError(v)
	}
	if rn := gn.get("retries"); rn != nil {
		r, err := strconv.Atoi(rn.str)
		switch {
		case rn.kind != kindNumber || !rn.isInt || err != nil:
			d.errf(ErrInvalidValue, a, "retries", rn, "got %s; retries must be a whole number from 1 to %d", rn.describe(), MaxRetries)
		case g.OnError != OnErrorRetry:
			d.errf(ErrInvalidValue, a, "retries", rn, "retries is only allowed with on_error: retry (on_error is %q); set on_error to retry or remove retries", g.OnError)
		case r < 1 || r > MaxRetries:
			d.errf(ErrInvalidValue, a, "retries", rn, "got %d; retries must be from 1 to %d (the number of further attempts after the first)", r, MaxRetries)
		default:
			g.Retries = r
		}
	} else if g.OnError == OnErrorRetry {
		d.errf(ErrMissingField, a, "retries", gn, "on_error: retry needs retries: the number of further attempts after the first, from 1 to %d; add for example \"retries\": 3", MaxRetries)
	}
	if wn := gn.get("wait_for"); wn != nil { // a wait instead of calls (waitfor.go)
		d.waitFor(&g, a, gn, wn)
		return g
	}
	tn := gn.get("tools")
	switch {
	case tn == nil:
		d.errf(ErrMissingField, a, "tools", gn, "the group has no tools; add at least one tool call, e.g. \"tools\": \"{\\\"tool\\\":\\\"fs.read\\\"};\"")
	case tn.kind == kindString:
		spans, err := SplitTools(tn.str)
		if err != nil {
			d.errf(ErrSyntax, a, "tools", tn, "%s", strings.TrimPrefix(err.Error(), ErrSyntax.Error()+": "))
			return g
		}
		for i, sp := range spans {
			cn, err := parseJSONNode([]byte(sp.Text))
			if err != nil {
				d.errf(ErrSyntax, at{group: idx, gname: g.Name, tool: i + 1}, "", tn, "the tool object starting at character %d of the tools string is %s", sp.Offset+1, err)
				continue
			}
			g.Tools = append(g.Tools, d.call(g, at{group: idx, gname: g.Name, tool: i + 1}, cn))
		}
	case tn.kind == kindArray:
		if len(tn.vals) == 0 {
			d.errf(ErrInvalidValue, a, "tools", tn, "the list is empty; a group needs at least one tool call")
		}
		for i, cn := range tn.vals {
			g.Tools = append(g.Tools, d.call(g, at{group: idx, gname: g.Name, tool: i + 1}, cn))
		}
	default:
		d.errf(ErrInvalidValue, a, "tools", tn, "got %s; tools must be a string of JSON objects each followed by `;` (JSON form) or a list of tool calls (YAML form)", tn.describe())
	}
	return g
}

// slots decodes an in/out map of key → type.
func (d *decoder) slots(n *node, a at, field string) map[string]Type {
	if n == nil {
		return nil
	}
	if n.kind != kindObject {
		d.errf(ErrInvalidValue, a, field, n, "got %s; %s must be an object of key: type, for example {\"repo\": \"string\", \"limit\": \"integer\"}", n.describe(), field)
		return nil
	}
	d.noteFields(n, a, field+".")
	m := make(map[string]Type, len(n.keys))
	for i, k := range n.keys {
		v := n.vals[i]
		if !keyRE.MatchString(k) {
			d.errf(ErrInvalidValue, a, field, v, "the key %q is not allowed; use %s", clip(k, 80), keyRule)
			continue
		}
		if v.kind != kindString || !validType(Type(v.str)) {
			hint := ""
			if v.kind == kindString {
				if t := suggestType(v.str); t != "" {
					hint = fmt.Sprintf(" did you mean %q?", t)
				}
			}
			d.errf(ErrInvalidValue, a, field+"."+k, v, "got %s;%s the type must be one of %s", v.describe(), hint, legalTypes)
			continue
		}
		m[k] = Type(v.str)
	}
	if len(m) == 0 {
		return nil // `in: {}` and no `in` are the same sequence
	}
	return m
}

func (d *decoder) call(g Group, a at, cn *node) Call {
	var c Call
	if cn.line > 0 {
		d.lines[[2]int{a.group, a.tool}] = cn.line
	}
	if cn.kind != kindObject {
		d.errf(ErrInvalidValue, a, "", cn, "got %s; a tool call is an object with the fields %s", cn.describe(), strings.Join(callFields, ", "))
		return c
	}
	d.noteFields(cn, a, "")
	if v, ok := d.str(cn.get("tool"), a, "tool", `"fs.read"`); ok {
		a.tname = v
		c.Tool = v
		if len(v) > 128 || !toolRE.MatchString(v) {
			d.errf(ErrInvalidValue, a, "tool", cn.get("tool"), "the tool name %q is not allowed; use %s, at most 128 characters", clip(v, 80), toolRule)
		}
	} else if cn.get("tool") == nil {
		d.errf(ErrMissingField, a, "tool", cn, "the call names no tool; add \"tool\": the tool's name, for example \"fs.read\"")
	}
	d.fields(cn, callFields, "a tool call", a)
	if an := cn.get("args"); an != nil {
		if an.kind != kindObject {
			d.errf(ErrInvalidValue, a, "args", an, "got %s; args must be an object, for example {\"path\": \"$args.path\"}", an.describe())
		} else {
			d.noteFields(an, a, "args.")
			if len(an.keys) > 0 { // `args: {}` and no args are the same call
				c.Args = an.toValue().(map[string]any)
			}
		}
	}
	if v, ok := d.str(cn.get("as"), a, "as", `"issues"`); ok {
		c.As = v
	}
	if v, ok := d.str(cn.get("for_each"), a, "for_each", `"$args.files"`); ok {
		if k := strings.TrimPrefix(v, refPrefix); !strings.HasPrefix(v, refPrefix) || !keyRE.MatchString(k) {
			d.errf(ErrInvalidValue, a, "for_each", cn.get("for_each"), "got %q; for_each is exactly $args.KEY, a list the group declares in `in` as array<T> (a run argument or an earlier group's slot), for example \"$args.files\" with in: {files: array<string>}", clip(v, 60))
		}
		c.ForEach = v
	}
	if mn := cn.get("max_parallel"); mn != nil {
		m, err := strconv.Atoi(mn.str)
		switch {
		case mn.kind != kindNumber || !mn.isInt || err != nil:
			d.errf(ErrInvalidValue, a, "max_parallel", mn, "got %s; max_parallel must be a whole number from 1 to %d", mn.describe(), MaxItemsDefault)
		case cn.get("for_each") == nil:
			d.errf(ErrInvalidValue, a, "max_parallel", mn, "max_parallel bounds the items of a for_each call in flight, and this call has no for_each; add for_each: $args.LIST or remove max_parallel (the calls of a group run together unless parallel: false)")
		case m < 1 || m > MaxItemsDefault:
			d.errf(ErrInvalidValue, a, "max_parallel", mn, "got %d; max_parallel must be from 1 to %d (the items of the call in flight at once; remove it for the group's own limit)", m, MaxItemsDefault)
		default:
			c.MaxParallel = m
		}
	}
	if fn := cn.get("fallback"); fn != nil {
		if fn.kind != kindString {
			d.errf(ErrInvalidValue, a, "fallback", fn, "got %s; fallback is JSON text in a string, for example \"[]\" or \"{\\\"items\\\":[]}\"", fn.describe())
		} else {
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(fn.str)); err != nil || !json.Valid([]byte(fn.str)) {
				d.errf(ErrInvalidValue, a, "fallback", fn, "%q is not valid JSON text; write a JSON value such as \"[]\", \"null\", \"{\\\"items\\\":[]}\" or \"\\\"n/a\\\"\"", clip(fn.str, 60))
			} else {
				c.Fallback = buf.String()
			}
		}
	}
	return c
}
