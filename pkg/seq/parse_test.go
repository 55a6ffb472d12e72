package seq

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// equalSeq compares two sequences field by field, ignoring compiled programs.
func equalSeq(a, b *Sequence) bool {
	strip := func(s *Sequence) Sequence {
		c := *s
		c.Groups = append([]Group(nil), s.Groups...)
		for i := range c.Groups {
			c.Groups[i].when = nil
		}
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

func TestParseDefaultsAndSignature(t *testing.T) {
	src := `{"name":"s","groups":[
	 {"name":"a","in":{"repo":"string"},"out":{"meta":"object"},"tools":"{\"tool\":\"gh.info\",\"args\":{\"r\":\"$args.repo\"},\"as\":\"meta\"};"},
	 {"name":"b","in":{"meta":"object","limit":"integer"},"tools":"{\"tool\":\"x\"};"}]}`
	s, err := ParseJSON([]byte(src))
	if err != nil {
		t.Fatalf("ParseJSON: %v", err)
	}
	g := s.Groups[0]
	if !g.Parallel || g.Missing != MissingFail || g.OnError != OnErrorAbort || time.Duration(g.Timeout) != DefaultTimeout || g.Retries != 0 {
		t.Errorf("defaults = parallel %v missing %q on_error %q timeout %v retries %d; want true fail abort 1m0s 0", g.Parallel, g.Missing, g.OnError, g.Timeout, g.Retries)
	}
	if got, want := s.Signature.String(), "(limit: integer, repo: string)"; got != want {
		t.Errorf("Signature = %s; want %s", got, want)
	}
}

// TestStaticRules has one case per static rule of docs/sequences.md: the error
// kind and the location (group/tool) the message must name.
func TestStaticRules(t *testing.T) {
	const ok = `name: s
groups:
  - name: g
    tools: [{tool: t}]
`
	if _, err := ParseYAML([]byte(ok)); err != nil {
		t.Fatalf("base sequence is invalid: %v", err)
	}
	tests := []struct {
		name string
		json bool
		src  string
		kind error
		want []string // substrings of the error text
	}{
		{"yaml syntax", false, "name: [", ErrSyntax, []string{"not valid YAML"}},
		{"json syntax", true, `{"name": }`, ErrSyntax, []string{"not valid JSON"}},
		{"json trailing text", true, `{"name":"s"} x`, ErrSyntax, []string{"after the end"}},
		{"json duplicate key", true, `{"name":"s","name":"t","groups":[]}`, ErrSyntax, []string{`"name" appears twice`}},
		{"yaml duplicate key", false, "name: s\nname: t\n", ErrSyntax, []string{`"name" appears twice`, "line 2"}},
		{"yaml two documents", false, "name: s\n---\nname: t\n", ErrSyntax, []string{"more than one YAML document"}},
		{"yaml alias", false, "name: &n s\ndescription: *n\ngroups: []\n", ErrSyntax, []string{"aliases"}},
		{"not an object", true, `[1]`, ErrSyntax, []string{"a sequence is an object"}},
		{"unknown sequence field", false, "name: s\ngroup: []\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrUnknownField, []string{`unknown field "group"`, `Did you mean "groups"`}},
		{"unknown group field", false, "name: s\ngroups:\n  - name: g\n    retry: 3\n    tools: [{tool: t}]\n", ErrUnknownField, []string{`group 1 "g"`, `unknown field "retry"`, "retries"}},
		{"unknown call field", false, "name: s\ngroups:\n  - name: g\n    tools: [{tool: t, arg: {}}]\n", ErrUnknownField, []string{`group 1 "g": tool 1 "t"`, `unknown field "arg"`, `"args"`}},
		{"missing name", false, "groups:\n  - name: g\n    tools: [{tool: t}]\n", ErrMissingField, []string{"has no name"}},
		{"bad sequence name", false, "name: my seq\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`"my seq" is not allowed`, "letters"}},
		{"missing groups", false, "name: s\n", ErrMissingField, []string{"no groups"}},
		{"empty groups", false, "name: s\ngroups: []\n", ErrInvalidValue, []string{"at least one group"}},
		{"missing group name", false, "name: s\ngroups:\n  - tools: [{tool: t}]\n", ErrMissingField, []string{"group 1", "no name"}},
		{"bad group name", false, "name: s\ngroups:\n  - name: 1st\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "1st"`, "not allowed"}},
		{"duplicate group", false, "name: s\ngroups:\n  - name: g\n    tools: [{tool: t}]\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 2 "g"`, "already used by group 1"}},
		{"boot not bool", false, "name: s\nboot: \"yes\"\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"boot", "true or false"}},
		{"schedule 5 fields", false, "name: s\nschedule: \"0 2 * * *\"\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"schedule", "6 fields", `"0 0 2 * * *"`}},
		{"schedule bad every", false, "name: s\nschedule: \"@every soon\"\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"schedule", "@every"}},
		{"schedule short every", false, "name: s\nschedule: \"@every 10ms\"\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"at least 1s"}},
		{"schedule bad field", false, "name: s\nschedule: \"0 0 25 * * *\"\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"hour field", "0–23"}},
		{"missing enum", false, "name: s\ngroups:\n  - name: g\n    missing: ignore\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": missing`, `"ignore"`, "fail", "skip", "degrade"}},
		{"on_error enum", false, "name: s\ngroups:\n  - name: g\n    on_error: ignore\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": on_error`, "abort", "continue", "retry"}},
		{"parallel not bool", false, "name: s\ngroups:\n  - name: g\n    parallel: \"no\"\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": parallel`}},
		{"timeout not duration", false, "name: s\ngroups:\n  - name: g\n    timeout: 10\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": timeout`, "must be a string", "30s"}},
		{"timeout bad text", false, "name: s\ngroups:\n  - name: g\n    timeout: ten seconds\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": timeout`, "not a duration"}},
		{"timeout negative", false, "name: s\ngroups:\n  - name: g\n    timeout: -5s\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"must be positive"}},
		{"retries without retry", false, "name: s\ngroups:\n  - name: g\n    retries: 3\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": retries`, "only allowed with on_error: retry"}},
		{"retries too many", false, "name: s\ngroups:\n  - name: g\n    on_error: retry\n    retries: 11\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"from 1 to 10"}},
		{"retries zero", false, "name: s\ngroups:\n  - name: g\n    on_error: retry\n    retries: 0\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"from 1 to 10"}},
		{"retries not integer", false, "name: s\ngroups:\n  - name: g\n    on_error: retry\n    retries: 2.5\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"whole number"}},
		{"retry without retries", false, "name: s\ngroups:\n  - name: g\n    on_error: retry\n    tools: [{tool: t}]\n", ErrMissingField, []string{`group 1 "g": retries`, "needs retries"}},
		{"no tools", false, "name: s\ngroups:\n  - name: g\n", ErrMissingField, []string{`group 1 "g": tools`}},
		{"empty tools list", false, "name: s\ngroups:\n  - name: g\n    tools: []\n", ErrInvalidValue, []string{`group 1 "g": tools`, "at least one"}},
		{"tool missing", false, "name: s\ngroups:\n  - name: g\n    tools: [{args: {}}]\n", ErrMissingField, []string{`group 1 "g": tool 1`, "names no tool"}},
		{"bad tool name", false, "name: s\ngroups:\n  - name: g\n    tools: [{tool: \"fs read\"}]\n", ErrInvalidValue, []string{`tool 1 "fs read"`, "not allowed"}},
		{"args not object", false, "name: s\ngroups:\n  - name: g\n    tools: [{tool: t, args: [1]}]\n", ErrInvalidValue, []string{`tool 1 "t": args`, "must be an object"}},
		{"bad type", false, "name: s\ngroups:\n  - name: g\n    in: {x: str}\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`group 1 "g": in.x`, "array<T>"}},
		{"bad key", false, "name: s\ngroups:\n  - name: g\n    in: {my-key: string}\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{`"my-key" is not allowed`}},
		{"scheduled run needs an argument", false, "name: s\nschedule: \"@every 1m\"\ngroups:\n  - name: g\n    in: {repo: string}\n    tools: [{tool: t, args: {r: $args.repo}}]\n", ErrDataflow, []string{`group 1 "g": in.repo`, "single-string schedule gets no arguments", "list of entries", "out slot"}},
		{"boot run needs another argument", false, "name: s\nboot: true\ngroups:\n  - name: g\n    in: {agent: string, repo: string}\n    tools: [{tool: t, args: {a: $args.agent, r: $args.repo}}]\n", ErrDataflow, []string{`group 1 "g": in.repo`, "only agent and boot_id"}},
		{"boot argument mistyped", false, "name: s\nboot: true\ngroups:\n  - name: g\n    in: {boot_id: integer}\n    tools: [{tool: t, args: {b: $args.boot_id}}]\n", ErrDataflow, []string{`in.boot_id`, "declare \"boot_id\": string"}},
		{"undeclared arg ref", false, "name: s\ngroups:\n  - name: g\n    tools: [{tool: t, args: {p: $args.path}}]\n", ErrDataflow, []string{`group 1 "g": tool 1 "t": args`, "$args.path", "`in`"}},
		{"nested undeclared ref", false, "name: s\ngroups:\n  - name: g\n    in: {a: string}\n    tools: [{tool: t, args: {x: [{y: \"see $args.b\"}]}}]\n", ErrDataflow, []string{"$args.b"}},
		{"malformed ref", false, "name: s\ngroups:\n  - name: g\n    tools: [{tool: t, args: {p: \"$args.\"}}]\n", ErrDataflow, []string{"not a valid reference"}},
		{"as undeclared", false, "name: s\ngroups:\n  - name: g\n    out: {a: string}\n    tools: [{tool: t, as: a}, {tool: u, as: b}]\n", ErrDataflow, []string{`group 1 "g": tool 2 "u": as`, `"b"`, "declared: a"}},
		{"slot written twice", false, "name: s\ngroups:\n  - name: g\n    out: {a: string}\n    tools: [{tool: t, as: a}, {tool: u, as: a}]\n", ErrDataflow, []string{`tool 2 "u": as`, "tool 1 also writes", "array<string>", "(line 5)"}},
		{"out never written", false, "name: s\ngroups:\n  - name: g\n    out: {a: string}\n    tools: [{tool: t}]\n", ErrDataflow, []string{`group 1 "g": out.a`, "no tool call writes it"}},
		{"out slot not unique", false, "name: s\ngroups:\n  - name: g\n    out: {a: string}\n    tools: [{tool: t, as: a}]\n  - name: h\n    out: {a: string}\n    tools: [{tool: t, as: a}]\n", ErrDataflow, []string{`group 2 "h": out.a`, "already declared by group 1", "(line 7)"}},
		{"out shadows argument", false, "name: s\ngroups:\n  - name: g\n    in: {a: string}\n    tools: [{tool: t}]\n  - name: h\n    out: {a: string}\n    tools: [{tool: t, as: a}]\n", ErrDataflow, []string{`group 2 "h": out.a`, "run argument"}},
		{"in type vs out type", false, "name: s\ngroups:\n  - name: g\n    out: {a: string}\n    tools: [{tool: t, as: a}]\n  - name: h\n    in: {a: integer}\n    tools: [{tool: t}]\n", ErrDataflow, []string{`group 2 "h": in.a`, "writes it as string"}},
		{"argument two types", false, "name: s\ngroups:\n  - name: g\n    in: {a: string}\n    tools: [{tool: t}]\n  - name: h\n    in: {a: integer}\n    tools: [{tool: t}]\n", ErrDataflow, []string{`group 2 "h": in.a`, `group 1 "g" declares it as string`}},
		{"fallback without degrade", false, "name: s\ngroups:\n  - name: g\n    out: {a: string}\n    tools: [{tool: t, as: a, fallback: '\"x\"'}]\n", ErrInvalidValue, []string{`tool 1 "t": fallback`, "only used under missing: degrade"}},
		{"degrade without fallback", false, "name: s\ngroups:\n  - name: g\n    missing: degrade\n    out: {a: string}\n    tools: [{tool: t, as: a}]\n", ErrMissingField, []string{`tool 1 "t": fallback`, "needs a fallback"}},
		{"fallback invalid json", false, "name: s\ngroups:\n  - name: g\n    missing: degrade\n    out: {a: string}\n    tools: [{tool: t, as: a, fallback: '{x'}]\n", ErrInvalidValue, []string{`tool 1 "t": fallback`, "not valid JSON"}},
		{"fallback not string", false, "name: s\ngroups:\n  - name: g\n    missing: degrade\n    out: {a: array}\n    tools: [{tool: t, as: a, fallback: []}]\n", ErrInvalidValue, []string{"JSON text in a string"}},
		{"fallback wrong type", false, "name: s\ngroups:\n  - name: g\n    missing: degrade\n    out: {a: integer}\n    tools: [{tool: t, as: a, fallback: '\"x\"'}]\n", ErrInvalidValue, []string{`tool 1 "t": fallback`, "receives integer"}},
		{"when undeclared", false, "name: s\ngroups:\n  - name: g\n    when: $args.x > 1\n    tools: [{tool: t}]\n", ErrExpression, []string{`group 1 "g": when`, "$args.x", "not declared"}},
		{"when syntax", false, "name: s\ngroups:\n  - name: g\n    in: {x: integer}\n    when: $args.x >\n    tools: [{tool: t}]\n", ErrExpression, []string{`group 1 "g": when`, "does not compile"}},
		{"when type error", false, "name: s\ngroups:\n  - name: g\n    in: {x: string}\n    when: $args.x > 1\n    tools: [{tool: t}]\n", ErrExpression, []string{`group 1 "g": when`, "(string, int)"}},
		{"when not bool", false, "name: s\ngroups:\n  - name: g\n    in: {x: integer}\n    when: $args.x + 1\n    tools: [{tool: t}]\n", ErrExpression, []string{"yields an integer"}},
		{"when bare identifier", false, "name: s\ngroups:\n  - name: g\n    in: {x: integer}\n    when: x > 1\n    tools: [{tool: t}]\n", ErrExpression, []string{"undeclared reference to 'x'"}},
		{"when reserved name", false, "name: s\ngroups:\n  - name: g\n    in: {x: integer}\n    when: _args_x > 1\n    tools: [{tool: t}]\n", ErrExpression, []string{"reserved"}},
		{"when empty", false, "name: s\ngroups:\n  - name: g\n    when: \" \"\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"expression is empty"}},
		{"signature mismatch", false, "name: s\nsignature: {b: string}\ngroups:\n  - name: g\n    in: {a: string}\n    tools: [{tool: t}]\n", ErrInvalidValue, []string{"signature", "(a: string)"}},
		{"tools string no semicolon", true, `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a\"}"}]}`, ErrSyntax, []string{`group 1 "g": tools`, "tool 1", "not followed by `;`"}},
		{"tools string doubled semicolon", true, `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a\"};;"}]}`, ErrSyntax, []string{`group 1 "g": tools`, "doubled `;`"}},
		{"tools string unclosed quote", true, `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a};"}]}`, ErrSyntax, []string{"tool 1", "never closed"}},
		{"tools string unclosed brace", true, `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a\",\"args\":{\"x\":1};"}]}`, ErrSyntax, []string{"tool 1", "never closed"}},
		{"tools string bad object", true, `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a\"};{\"tool\" \"b\"};"}]}`, ErrSyntax, []string{`group 1 "g": tool 2`, "not valid JSON"}},
		{"tools string unknown field", true, `{"name":"s","groups":[{"name":"g","tools":"{\"tool\":\"a\",\"ass\":\"x\"};"}]}`, ErrUnknownField, []string{`group 1 "g": tool 1 "a"`, `unknown field "ass"`, `Did you mean "as"`}},
		{"tools not string or list", true, `{"name":"s","groups":[{"name":"g","tools":7}]}`, ErrInvalidValue, []string{`group 1 "g": tools`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parse := ParseYAML
			if tt.json {
				parse = ParseJSON
			}
			s, err := parse([]byte(tt.src))
			if err == nil {
				t.Fatalf("parse(%q) = %v, nil; want an error", tt.src, s.Name)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("parse(%q) error = %v; want kind %v", tt.src, err, tt.kind)
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("parse(%q) error %T is not a non-empty Errors", tt.src, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("parse(%q) error =\n%v\nwant it to contain %q", tt.src, err, w)
				}
			}
			if strings.Contains(err.Error(), "seq.") || strings.Contains(err.Error(), "map[") || strings.Contains(err.Error(), "_args_") && !strings.Contains(tt.src, "_args_") {
				t.Errorf("error names Go types or internals: %v", err)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := "name: s\ngroups:\n  - name: g\n    missing: maybe\n    on_error: never\n    timeout: x\n    tools: [{tool: t}]\n  - name: g\n    tools: [{tool: t, bogus: 1}]\n"
	_, err := ParseYAML([]byte(src))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("ParseYAML error = %v; want Errors", err)
	}
	if len(errs) != 5 {
		t.Errorf("got %d problems; want 5:\n%v", len(errs), err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Group != 1 || e.GroupName != "g" || e.Line != 4 {
		t.Errorf("first problem = %+v; want group 1 \"g\" at line 4", e)
	}
}

func TestYAMLAndJSONFormsAgree(t *testing.T) {
	y := `name: s
groups:
  - name: g
    in: {p: string, n: number}
    out: {r: object}
    when: $args.n > 0.5
    timeout: 2s
    tools:
      - tool: fs.read
        args: {path: $args.p, opts: {lines: 10, ratio: 1.5, tags: [a, b], none: null}}
        as: r
`
	j := `{"name":"s","groups":[{"name":"g","in":{"p":"string","n":"number"},"out":{"r":"object"},"when":"$args.n > 0.5","timeout":"2s",
	"tools":"{\"tool\":\"fs.read\",\"args\":{\"path\":\"$args.p\",\"opts\":{\"lines\":10,\"ratio\":1.5,\"tags\":[\"a\",\"b\"],\"none\":null}},\"as\":\"r\"};"}]}`
	sy, err := ParseYAML([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sj, err := ParseJSON([]byte(j))
	if err != nil {
		t.Fatal(err)
	}
	if !equalSeq(sy, sj) {
		ey, _ := Encode(sy)
		ej, _ := Encode(sj)
		t.Errorf("YAML and JSON forms differ:\n%s\n%s", ey, ej)
	}
}

// roundTrip checks the Encode property: Parse(Encode(s)) equals s and
// encodes to the same bytes.
func roundTrip(t testing.TB, s *Sequence) {
	t.Helper()
	enc, err := Encode(s)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	back, err := Parse(enc)
	if err != nil {
		t.Fatalf("Parse(Encode(s)) failed: %v\n%s", err, enc)
	}
	if !equalSeq(s, back) {
		t.Fatalf("Parse(Encode(s)) differs from s:\n%s", enc)
	}
	enc2, _ := Encode(back)
	if string(enc) != string(enc2) {
		t.Fatalf("Encode is not stable:\n%s\n%s", enc, enc2)
	}
}

func exampleFiles(t testing.TB) []string {
	// The names the registry loads: an editor's backup beside them
	// (my.seq.yaml~) is no example.
	var files []string
	var err error
	for _, ext := range []string{".seq.json", ".seq.yaml", ".seq.yml"} {
		m, gerr := filepath.Glob("../../examples/sequences/*" + ext)
		files, err = append(files, m...), errors.Join(err, gerr)
	}
	sort.Strings(files)
	if err != nil || len(files) < 4 {
		t.Fatalf("want at least 4 example sequences, got %v (%v)", files, err)
	}
	return files
}

func TestExamplesRoundTrip(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseFile(f, data)
			if err != nil {
				t.Fatalf("ParseFile(%s): %v", f, err)
			}
			roundTrip(t, s)
			d, err := Decode(mustEncode(t, s))
			if err != nil || !equalSeq(d, s) {
				t.Errorf("Decode(Encode(s)) = %v; want s", err)
			}
		})
	}
}

func mustEncode(t testing.TB, s *Sequence) []byte {
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExamplesUseEveryField checks that the examples together use every
// field of the language (the requirement), so a field dropped from
// the examples is noticed.
func TestExamplesUseEveryField(t *testing.T) {
	used := map[string]bool{}
	types := map[Type]bool{}
	forms := map[string]bool{}
	for _, f := range exampleFiles(t) {
		data, _ := os.ReadFile(f)
		s, err := ParseFile(f, data)
		if err != nil {
			t.Fatal(err)
		}
		forms[filepath.Ext(f)] = true
		if strings.Contains(string(data), `"tools": "`) {
			forms["tools-string"] = true
		}
		mark := func(k string, on bool) {
			if on {
				used[k] = true
			}
		}
		mark("description", s.Description != "")
		mark("boot", s.Boot)
		mark("schedule", s.Schedule != "")
		mark("timezone", s.TimeZone != "")
		for _, g := range s.Groups {
			mark("group.description", g.Description != "")
			mark("in", len(g.In) > 0)
			mark("out", len(g.Out) > 0)
			mark("when", g.When != "")
			mark("parallel:false", !g.Parallel)
			mark("timeout", strings.Contains(string(data), "timeout"))
			mark("retries", g.Retries > 0)
			mark("missing:"+string(g.Missing), true)
			mark("on_error:"+string(g.OnError), true)
			for _, c := range g.Tools {
				mark("args", len(c.Args) > 0)
				mark("as", c.As != "")
				mark("fallback", c.Fallback != "")
				mark("for_each", c.ForEach != "")
				mark("max_parallel", c.MaxParallel > 0)
			}
			for _, ty := range g.In {
				types[ty] = true
			}
			for _, ty := range g.Out {
				types[ty] = true
			}
		}
	}
	for _, k := range []string{"description", "boot", "schedule", "timezone", "group.description", "in", "out", "when", "parallel:false", "timeout", "retries",
		"missing:fail", "missing:skip", "missing:degrade", "on_error:abort", "on_error:continue", "on_error:retry", "args", "as", "fallback", "for_each", "max_parallel"} {
		if !used[k] {
			t.Errorf("no example uses %s", k)
		}
	}
	for _, ty := range []Type{"string", "bool", "integer", "number", "object", "array"} {
		if !types[ty] {
			t.Errorf("no example uses the type %s", ty)
		}
	}
	for _, f := range []string{".json", ".yaml", "tools-string"} {
		if !forms[f] {
			t.Errorf("no example in form %s", f)
		}
	}
}

// TestBootArguments: a boot sequence may read the two arguments a boot run
// gets, agent and boot_id; they make up its signature.
func TestBootArguments(t *testing.T) {
	src := "name: s\nboot: true\ngroups:\n  - name: g\n    in: {agent: string, boot_id: string}\n    tools: [{tool: t, args: {a: $args.agent, b: $args.boot_id}}]\n"
	s, err := ParseYAML([]byte(src))
	if err != nil {
		t.Fatalf("ParseYAML(boot sequence reading agent and boot_id) = %v; want it valid", err)
	}
	if got, want := s.Signature.String(), BootArgs.String(); got != want {
		t.Errorf("signature = %s; want %s", got, want)
	}
}

// TestParseFewerPasses: a problem outside the groups (the schedule) does
// not hide the groups' dataflow and `when` problems; a given signature's
// shape is a field problem, reported with the groups' field problems; and
// a signature that differs from the derived one is reported with the
// dataflow problems, not in a pass of its own (issue 25: validate needed
// up to three rounds for one file).
func TestParseFewerPasses(t *testing.T) {
	for _, tt := range []struct {
		name string
		src  string
		want []string
	}{
		{"schedule and dataflow", "name: bad\nschedule: \"*/5 * * * *\"\ngroups:\n  - name: g\n    when: \"1 +\"\n    tools:\n      - tool: x\n        args:\n          path: $args.nope\n",
			[]string{"schedule: got", `when: "1 +" does not compile`, "reads $args.nope"}},
		{"signature shape and fields", "name: s\nsignature: {x: 5}\ngroups:\n  - name: g\n    in: {x: string}\n    bogus: 1\n    tools: [{tool: t, args: {v: $args.x}}]\n",
			[]string{"signature.x: got the number 5", `unknown field "bogus"`}},
		{"signature and dataflow", "name: s\nsignature: {x: string}\ngroups:\n  - name: g\n    in: {x: string}\n    out: {o: integer}\n    tools: [{tool: t, args: {v: $args.x}, as: o}]\n  - name: h\n    in: {o: string, zz: integer}\n    tools: [{tool: u, args: {z: $args.zz}}]\n",
			[]string{"signature: the given signature (x: string) differs", `group 2 "h": in.o: declares "o" as string, but group 1 "g" writes it as integer`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseYAML([]byte(tt.src))
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != len(tt.want) {
				t.Fatalf("ParseYAML = %d problems:\n%v\nwant %d, all in one pass", len(errs), err, len(tt.want))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseYAML error =\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
