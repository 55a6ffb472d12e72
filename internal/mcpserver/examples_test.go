package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/sections"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/skill"
)

// exampleWords finds the words that introduce an example; exampleMarker
// also a quoted value, which in a field's description is an example too. A
// description holding one must have a checker below, so no example reaches
// a model unchecked.
var (
	exampleWords  = regexp.MustCompile(`(?i)example|such as |e\.g\.`)
	exampleMarker = regexp.MustCompile(exampleWords.String() + `|"`)
)

// TestDescriptionExamples runs every example the model-facing tools show —
// the JSON after "Example:" in each tool's description, and the examples in
// the descriptions of their input and output schemas' fields (schedule,
// timezone, timeout, when, tools) — through the real checks: the tool's
// input schema, the sequence parser the registry stores with
// (seq.ParseJSON), the schedule check (seq.CheckSchedule), the run
// argument check (runargs.Problems) and, for names, the repository's
// example sequences and skills. The instructions and the prompts' argument
// descriptions hold no example. Before, the schedule field's example
// "0 6 * * *" (5 fields) was one the validator refuses.
func TestDescriptionExamples(t *testing.T) {
	seqs := exampleSequences(t)
	tools := (&Server{}).modelTools()
	if len(tools) < 10 {
		t.Fatalf("modelTools() = %d tools; want the skill and sequence tools", len(tools))
	}
	created := map[string]bool{} // sequences named by seq_create's example
	checked := map[string]bool{} // schema fields by path
	for _, td := range tools {
		if td.tool.Name == "seq_create" {
			raw := toolExample(t, td.tool.Description, "seq_create")
			var named struct{ Name string }
			_ = json.Unmarshal(raw, &named)
			created[named.Name] = true
		}
	}
	for _, td := range tools {
		name := td.tool.Name
		in := td.tool.InputSchema.(*jsonschema.Schema)
		raw := toolExample(t, td.tool.Description, name)
		if raw == nil {
			continue
		}
		if err := decodeArgs(name, raw, in, &map[string]json.RawMessage{}); err != nil {
			t.Errorf("%s: the example %s: %v", name, raw, err)
		}
		if res, err := in.Resolve(nil); err != nil {
			t.Errorf("%s: input schema: %v", name, err)
		} else {
			var v any
			_ = json.Unmarshal(raw, &v)
			if err := res.Validate(v); err != nil {
				t.Errorf("%s: the example %s does not fit the input schema: %v", name, raw, err)
			}
		}
		checkToolExample(t, name, raw, seqs, created)
		check := func(where, field, desc string) {
			checked[where] = true
			checkFieldExample(t, where, field, desc)
		}
		walkSchema(in, name+" input", check)
		if out, ok := td.tool.OutputSchema.(*jsonschema.Schema); ok {
			walkSchema(out, name+" output", check)
		}
	}
	// The sequence's form is in three schemas; each copy was checked.
	for _, where := range []string{"seq_create input.schedule", "seq_run input.inline.schedule", "seq_show output.sequence.schedule", "seq_create input.groups[].tools"} {
		if !checked[where] {
			t.Errorf("%s was not checked; the fields checked: %v", where, checked)
		}
	}
	for _, ro := range []bool{false, true} {
		if text := instructions(ro); exampleWords.MatchString(text) {
			t.Errorf("the instructions (read-only %v) hold an example this test does not check: %q", ro, text)
		}
	}
	rec := &skill.Skill{Name: "p", Description: "d", Body: "# A\n\ntext\n\n# B\n\ntext\n"}
	rec.Sections = sections.Split(rec.Body)
	if p := skillPrompt(rec); p == nil || len(p.Arguments) < 2 {
		t.Fatalf("skillPrompt of a skill with two sections = %+v; want the task and section arguments", p)
	} else {
		for _, a := range p.Arguments {
			if exampleWords.MatchString(a.Description) {
				t.Errorf("prompt argument %s holds an example this test does not check: %q", a.Name, a.Description)
			}
		}
	}
}

// toolExample returns the JSON value after "Example:" in a tool's
// description, which must end the description.
func toolExample(t *testing.T, desc, tool string) json.RawMessage {
	t.Helper()
	_, after, ok := strings.Cut(desc, "Example:")
	if !ok {
		t.Errorf("%s: the description has no \"Example:\"", tool)
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(after))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		t.Errorf("%s: the example %q is not JSON: %v", tool, after, err)
		return nil
	}
	if rest := strings.TrimSpace(after[dec.InputOffset():]); rest != "" {
		t.Errorf("%s: text after the example: %q", tool, rest)
	}
	return raw
}

// checkToolExample checks what a tool's example names and holds.
func checkToolExample(t *testing.T, tool string, raw json.RawMessage, seqs map[string]*seq.Sequence, created map[string]bool) {
	t.Helper()
	var ex struct {
		Name, Sequence, Group, Section string
		Inline                         json.RawMessage
		Args                           map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &ex); err != nil {
		t.Errorf("%s: %v", tool, err)
		return
	}
	switch tool {
	case "seq_create":
		if _, err := seq.ParseJSON(raw); err != nil {
			t.Errorf("seq_create: the example does not store: %v\n%s", err, raw)
		}
	case "seq_show":
		if seqs[ex.Name] == nil {
			t.Errorf("seq_show: the example names %q, not one of the repository's example sequences", ex.Name)
		}
	case "seq_delete":
		if !created[ex.Name] {
			t.Errorf("seq_delete: the example names %q, not the sequence seq_create's example stores", ex.Name)
		}
	case "seq_run":
		s := seqs[ex.Sequence]
		if len(ex.Inline) > 0 {
			var err error
			if s, err = seq.ParseJSON(ex.Inline); err != nil {
				t.Errorf("seq_run: the example's inline sequence: %v", err)
			}
		}
		if s == nil {
			t.Errorf("seq_run: the example runs %q, not one of the repository's example sequences", ex.Sequence)
		} else if p := runargs.Problems(s.Signature, ex.Args); len(p) > 0 {
			t.Errorf("seq_run: the example's args %s do not fit %s's signature: %v", ex.Args, s.Name, p)
		}
	case "seq_call":
		var g *seq.Group
		for _, s := range seqs {
			for i := range s.Groups {
				if s.Groups[i].Name == ex.Group {
					g = &s.Groups[i]
				}
			}
		}
		if g == nil {
			t.Errorf("seq_call: the example calls group %q, not a group of the repository's example sequences", ex.Group)
		} else if p := runargs.Problems(seq.Signature(g.In), ex.Args); len(p) > 0 {
			t.Errorf("seq_call: the example's args %s do not fit group %s's in: %v", ex.Args, g.Name, p)
		}
	case "skill_info":
		s, _, err := skill.Load(filepath.Join("..", "..", "examples", "skills", ex.Name))
		if err != nil {
			t.Errorf("skill_info: the example names %q, not one of the repository's example skills: %v", ex.Name, err)
		} else if _, err := sections.Info(s.Body, ex.Section); err != nil {
			t.Errorf("skill_info: the example's section %q of %s: %v", ex.Section, ex.Name, err)
		}
	}
}

// walkSchema calls fn for every field of s with a description, by its
// path (where) and its own name (field).
func walkSchema(s *jsonschema.Schema, where string, fn func(where, field, desc string)) {
	var walk func(s *jsonschema.Schema, where, field string)
	walk = func(s *jsonschema.Schema, where, field string) {
		if s == nil {
			return
		}
		if s.Description != "" && field != "" {
			fn(where, field, s.Description)
		}
		for k, p := range s.Properties {
			walk(p, where+"."+k, k)
		}
		walk(s.Items, where+"[]", field)
		walk(s.AdditionalProperties, where+"{}", field)
	}
	walk(s, where, "")
}

var (
	quoted     = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	suchAs     = regexp.MustCompile(`such as ([^()]+?)(?: \(|$|;)`)
	argsKeys   = regexp.MustCompile(`\$args\.([A-Za-z_][A-Za-z0-9_]*)`)
	asSlots    = regexp.MustCompile(`"as"\s*:\s*"([^"]+)"`)
	cronDaily  = "0 0 6 * * *"
	groupTools = `{"tool":"fs.list","args":{"path":"."}};`
)

// checkFieldExample checks the examples in one field's description by the
// rules of that field, building the smallest sequence that holds each and
// parsing it as the registry does. A field with an example and no rule
// here fails: add its rule.
func checkFieldExample(t *testing.T, where, field, desc string) {
	t.Helper()
	parse := func(what string, form map[string]any, group map[string]any) {
		t.Helper()
		g := map[string]any{"name": "ex-g", "tools": groupTools}
		for k, v := range group {
			g[k] = v
		}
		s := map[string]any{"name": "ex", "groups": []any{g}}
		for k, v := range form {
			s[k] = v
		}
		b, _ := json.Marshal(s)
		if _, err := seq.ParseJSON(b); err != nil {
			t.Errorf("%s: the example %s does not store: %v\n%s", where, what, err, b)
		}
	}
	example := func() string {
		_, after, ok := strings.Cut(desc, "Example: ")
		if !ok {
			t.Errorf("%s: no \"Example: \" in %q", where, desc)
		}
		return strings.TrimSpace(after)
	}
	switch field {
	case "schedule":
		found := 0
		for _, m := range quoted.FindAllStringSubmatch(desc, -1) {
			found++
			if err := seq.CheckSchedule(m[1], ""); err != nil {
				t.Errorf("%s: the example schedule %q: %v", where, m[1], err)
			}
			parse(fmt.Sprintf("schedule %q", m[1]), map[string]any{"schedule": m[1]}, nil)
		}
		if found == 0 {
			t.Errorf("%s: no quoted example in %q", where, desc)
		}
	case "timezone":
		for _, z := range examplesAfterSuchAs(t, where, desc) {
			if err := seq.CheckSchedule(cronDaily, z); err != nil {
				t.Errorf("%s: the example time zone %q: %v", where, z, err)
			}
		}
	case "timeout":
		for _, d := range examplesAfterSuchAs(t, where, desc) {
			parse(fmt.Sprintf("timeout %q", d), nil, map[string]any{"timeout": d})
		}
	case "when":
		w := example()
		in := map[string]string{}
		for _, m := range argsKeys.FindAllStringSubmatch(w, -1) {
			in[m[1]] = "array"
		}
		parse(fmt.Sprintf("when %q", w), nil, map[string]any{"when": w, "in": in})
	case "tools":
		tools := example()
		in, out := map[string]string{}, map[string]string{}
		for _, m := range argsKeys.FindAllStringSubmatch(tools, -1) {
			in[m[1]] = "string"
		}
		for _, m := range asSlots.FindAllStringSubmatch(tools, -1) {
			out[m[1]] = "object"
		}
		if _, err := seq.SplitTools(tools); err != nil {
			t.Errorf("%s: the example tools string %q: %v", where, tools, err)
		}
		parse(fmt.Sprintf("tools %q", tools), nil, map[string]any{"tools": tools, "in": in, "out": out})
	default:
		if exampleMarker.MatchString(desc) {
			t.Errorf("%s: the description %q holds an example (or a quoted value) this test has no rule for: add one to checkFieldExample", where, desc)
		}
	}
}

// examplesAfterSuchAs returns the values after "such as" ("30s or 2m" is
// two).
func examplesAfterSuchAs(t *testing.T, where, desc string) []string {
	t.Helper()
	m := suchAs.FindStringSubmatch(desc)
	if m == nil {
		t.Errorf("%s: no \"such as\" example in %q", where, desc)
		return nil
	}
	return strings.Split(strings.TrimSpace(m[1]), " or ")
}

// exampleSequences parses the repository's example sequences by name.
func exampleSequences(t *testing.T) map[string]*seq.Sequence {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "sequences")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*seq.Sequence{}
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".seq.") {
			continue // a sequence's test file (NAME.test.yaml, docs/testing.md)
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s, err := seq.ParseFile(e.Name(), bytes.TrimSpace(b))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out[s.Name] = s
	}
	return out
}
