package skill

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func md(front, body string) []byte { return []byte("---\n" + front + "---\n" + body) }

func TestParseMarkdownErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		dir   string
		want  error
		line  int
		field string
	}{
		{"no frontmatter", "# Title\n", "x", ErrNoFrontmatter, 1, ""},
		{"unclosed", "---\nname: x\ndescription: y\n", "x", ErrUnclosedFrontmatter, 1, ""},
		{"indented close does not close", "---\nname: x\ndescription: y\n  ---\n", "x", ErrUnclosedFrontmatter, 1, ""},
		{"yaml syntax", "---\nname: x\ndescription: Use when: deploying\n---\n", "x", ErrSyntax, 3, ""},
		{"not a mapping", "---\n- a\n- b\n---\n", "x", ErrWrongType, 2, ""},
		{"missing name", "---\ndescription: d\n---\n", "x", ErrMissingField, 0, "name"},
		{"missing description", "---\nname: x\n---\n", "x", ErrMissingField, 0, "description"},
		{"empty description", "---\nname: x\ndescription: \"\"\n---\n", "x", ErrMissingField, 3, "description"},
		{"name uppercase", "---\nname: My-Skill\ndescription: d\n---\n", "My-Skill", ErrBadValue, 2, "name"},
		{"name underscore", "---\nname: my_skill\ndescription: d\n---\n", "my_skill", ErrBadValue, 2, "name"},
		{"name leading hyphen", "---\nname: -x\ndescription: d\n---\n", "-x", ErrBadValue, 2, "name"},
		{"name trailing hyphen", "---\nname: x-\ndescription: d\n---\n", "x-", ErrBadValue, 2, "name"},
		{"name double hyphen", "---\nname: a--b\ndescription: d\n---\n", "a--b", ErrBadValue, 2, "name"},
		{"name too long", "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", "", ErrBadValue, 2, "name"},
		{"name not dir", "---\nname: template-skill\ndescription: d\n---\n", "template", ErrNameMismatch, 2, "name"},
		{"name is a list", "---\nname: [a]\ndescription: d\n---\n", "a", ErrWrongType, 2, "name"},
		{"description is a map", "---\nname: x\ndescription: {a: b}\n---\n", "x", ErrWrongType, 3, "description"},
		{"bad invocation", "---\nname: x\ndescription: d\ninvocation: sometimes\n---\n", "x", ErrBadValue, 4, "invocation"},
		{"bad context", "---\nname: x\ndescription: d\ncontext: forked\n---\n", "x", ErrBadValue, 4, "context"},
		{"invocation contradicts dmi", "---\nname: x\ndescription: d\ninvocation: both\ndisable-model-invocation: true\n---\n", "x", ErrConflict, 5, "invocation"},
		{"no way to invoke", "---\nname: x\ndescription: d\ndisable-model-invocation: true\nuser-invocable: false\n---\n", "x", ErrConflict, 4, "disable-model-invocation"},
		{"dmi not bool", "---\nname: x\ndescription: d\ndisable-model-invocation: \"yes\"\n---\n", "x", ErrWrongType, 4, "disable-model-invocation"},
		{"tool allowed and disallowed", "---\nname: x\ndescription: d\nallowed-tools: Read Bash\ndisallowed-tools: [Bash]\n---\n", "x", ErrConflict, 5, "disallowed-tools"},
		{"version text", "---\nname: x\ndescription: d\nversion: 1.2.0\n---\n", "x", ErrWrongType, 4, "version"},
		{"version zero", "---\nname: x\ndescription: d\nversion: 0\n---\n", "x", ErrBadValue, 4, "version"},
		{"triggers string", "---\nname: x\ndescription: d\ntriggers: deploy\n---\n", "x", ErrWrongType, 4, "triggers"},
		{"bad glob", "---\nname: x\ndescription: d\npaths: [\"src/[a\"]\n---\n", "x", ErrBadValue, 4, "paths"},
		{"metadata nested", "---\nname: x\ndescription: d\nmetadata:\n  a:\n    b: c\n---\n", "x", ErrWrongType, 6, "metadata.a"},
		{"duplicate key", "---\nname: x\nname: y\ndescription: d\n---\n", "x", ErrDuplicate, 3, "name"},
		{"crlf error line", "---\r\nname: x\r\ndescription: d\r\ncontext: nope\r\n---\r\n", "x", ErrBadValue, 4, "context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Parse([]byte(tt.src), FormatMarkdown, tt.dir)
			if !errors.Is(err, tt.want) || s != nil {
				t.Fatalf("Parse(%q) = %v, %v; want nil and %v", tt.src, s, err, tt.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse(%q) error %v is not a *FieldError", tt.src, err)
			}
			for _, p := range Problems(err) {
				if errors.Is(p, tt.want) {
					fe = p
					break
				}
			}
			if fe.Line != tt.line || fe.Field != tt.field || fe.File != "SKILL.md" {
				t.Errorf("Parse(%q) error at %s:%d field %q; want SKILL.md:%d field %q (%v)", tt.src, fe.File, fe.Line, fe.Field, tt.line, tt.field, err)
			}
			if strings.Contains(fe.Message, "yaml.Node") || strings.Contains(fe.Message, "[]string") {
				t.Errorf("message %q names a Go type", fe.Message)
			}
		})
	}
}

func TestParseMarkdownForms(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		check func(t *testing.T, s *Skill)
	}{
		{"crlf and bom", "\uFEFF---\r\nname: x\r\ndescription: does things\r\n---\r\n# Body\r\n", func(t *testing.T, s *Skill) {
			if s.Description != "does things" || s.Body != "# Body\r\n" || len(s.Sections) != 1 || s.Sections[0].Title != "Body" {
				t.Errorf("got description %q body %q sections %v", s.Description, s.Body, s.Sections)
			}
		}},
		{"block scalar", "---\nname: x\ndescription: |-\n  line one\n  line two\n---\n", func(t *testing.T, s *Skill) {
			if s.Description != "line one\nline two" {
				t.Errorf("description = %q", s.Description)
			}
		}},
		{"folded scalar", "---\nname: x\ndescription: >-\n  one\n  two\n---\n", func(t *testing.T, s *Skill) {
			if s.Description != "one two" {
				t.Errorf("description = %q", s.Description)
			}
		}},
		{"multi-line plain scalar", "---\nname: x\ndescription: first part\n  second part\n---\n", func(t *testing.T, s *Skill) {
			if s.Description != "first part second part" {
				t.Errorf("description = %q", s.Description)
			}
		}},
		{"dashes inside a value", "---\nname: x\ndescription: |\n  before\n  ---\n  after\n---\nbody\n", func(t *testing.T, s *Skill) {
			if s.Description != "before\n---\nafter" || s.Body != "body\n" {
				t.Errorf("description = %q body %q", s.Description, s.Body)
			}
		}},
		{"flow list and map", "---\nname: x\ndescription: d\ntriggers: [deploy, release]\nmetadata: {owner: platform, tier: 1}\n---\n", func(t *testing.T, s *Skill) {
			if !reflect.DeepEqual(s.Triggers, []string{"deploy", "release"}) || !reflect.DeepEqual(s.Metadata, map[string]string{"owner": "platform", "tier": "1"}) {
				t.Errorf("triggers %q metadata %v", s.Triggers, s.Metadata)
			}
		}},
		{"allowed-tools string", "---\nname: x\ndescription: d\nallowed-tools: Bash(git add:*), Read Write\n---\n", func(t *testing.T, s *Skill) {
			if want := []string{"Bash(git add:*)", "Read", "Write"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("allowed tools = %q; want %q", s.AllowedTools, want)
			}
		}},
		{"allowed-tools list", "---\nname: x\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(go test:*)\n---\n", func(t *testing.T, s *Skill) {
			if want := []string{"Read", "Bash(go test:*)"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("allowed tools = %q; want %q", s.AllowedTools, want)
			}
		}},
		{"defaults", "---\nname: x\ndescription: d\n---\n", func(t *testing.T, s *Skill) {
			if s.Version != 1 || s.Invocation != InvocationBoth || s.Context != ContextInline || s.Format != FormatMarkdown {
				t.Errorf("defaults: version %d invocation %q context %q format %q", s.Version, s.Invocation, s.Context, s.Format)
			}
		}},
		{"disable-model-invocation", "---\nname: x\ndescription: d\ndisable-model-invocation: true\n---\n", func(t *testing.T, s *Skill) {
			if s.Invocation != InvocationUserOnly {
				t.Errorf("invocation = %q; want user-only", s.Invocation)
			}
		}},
		{"user-invocable false", "---\nname: x\ndescription: d\nuser-invocable: false\ninvocation: model-only\n---\n", func(t *testing.T, s *Skill) {
			if s.Invocation != InvocationModelOnly {
				t.Errorf("invocation = %q; want model-only", s.Invocation)
			}
		}},
		{"spec fields", "---\nname: x\ndescription: d\nversion: 3\nwhen_to_use: after a deploy\npaths: \"src/**/*.go, go.mod\"\ncontext: fork\nagent: reviewer\nmodel: opus\neffort: high\nlicense: MIT\ncompatibility: needs git\n---\n", func(t *testing.T, s *Skill) {
			want := Skill{Name: "x", Description: "d", Version: 3, WhenToUse: "after a deploy", Paths: []string{"src/**/*.go", "go.mod"},
				Context: ContextFork, Agent: "reviewer", Model: "opus", Effort: "high", License: "MIT", Compatibility: "needs git"}
			got := Skill{Name: s.Name, Description: s.Description, Version: s.Version, WhenToUse: s.WhenToUse, Paths: s.Paths,
				Context: s.Context, Agent: s.Agent, Model: s.Model, Effort: s.Effort, License: s.License, Compatibility: s.Compatibility}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v; want %+v", got, want)
			}
		}},
		{"unicode name length in characters", "---\nname: x\ndescription: " + strings.Repeat("é", 1024) + "\n---\nb\n", func(t *testing.T, s *Skill) {
			if len(s.Warnings) != 0 {
				t.Errorf("1,024 two-byte characters gave warnings %v; the limit counts characters", s.Warnings)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Parse([]byte(tt.src), FormatMarkdown, "x")
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			tt.check(t, s)
		})
	}
}

func TestWarnings(t *testing.T) {
	src := md("name: x\ndescription: "+strings.Repeat("d", 1025)+"\nallowed_tools: Read\nargument-hint: \"[file]\"\nsteps: []\n", "")
	s, warns, err := Parse(src, FormatMarkdown, "x")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.String())
	}
	want := []string{
		"SKILL.md:3: warning: description is 1025 characters; the Agent Skills spec allows at most 1024, and listings may cut it",
		`SKILL.md:4: warning: unknown field "allowed_tools" is ignored; did you mean "allowed-tools"?`,
		`SKILL.md:5: warning: unknown field "argument-hint" is ignored (not an Agent Skills or skillbus field)`,
		`SKILL.md:6: warning: field "steps" belongs to skill.yaml and is ignored in a SKILL.md; put the text in the body instead`,
		"SKILL.md: warning: the body after the frontmatter is empty: the skill has no instructions to inject",
	}
	sortWarn := func(a []string) { // the description check runs after the keys
		for i := range a {
			for j := i + 1; j < len(a); j++ {
				if a[j] < a[i] {
					a[i], a[j] = a[j], a[i]
				}
			}
		}
	}
	sortWarn(got)
	sortWarn(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !reflect.DeepEqual(s.Warnings, warns) {
		t.Errorf("record warnings %v differ from returned %v", s.Warnings, warns)
	}
}

func TestSeveralProblemsReportedTogether(t *testing.T) {
	src := md("name: Bad_Name\ndescription: \"\"\ncontext: nope\n", "b\n")
	_, _, err := Parse(src, FormatMarkdown, "")
	ps := Problems(err)
	var lines []int
	for _, p := range ps {
		lines = append(lines, p.Line)
	}
	if !reflect.DeepEqual(lines, []int{2, 3, 4}) {
		t.Errorf("problems at lines %v; want [2 3 4]: %v", lines, err)
	}
}

const yamlSkill = `name: release
description: Cut a release
prompt: |
  You are releasing the service.
steps:
  - name: notes
    prompt: Write the release notes.
    depends: [tag]
  - name: test
    prompt: Run the tests.
  - name: tag
    prompt: Tag the commit.
    depends: [test]
refs:
  - {name: changelog, type: file, value: CHANGELOG.md}
  - {name: runbook, type: url, value: "https://example.com/runbook", optional: true}
guardrails:
  - id: no-force-push
    message: Never force-push to main.
    enforced: true
`

func TestParseYAML(t *testing.T) {
	s, warns, err := Parse([]byte(yamlSkill), FormatYAML, "release")
	if err != nil || len(warns) != 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	want := `You are releasing the service.

## Steps

### 1. test

Run the tests.

### 2. tag

(after: test)

Tag the commit.

### 3. notes

(after: tag)

Write the release notes.

## Guardrails

- **no-force-push** (enforced): Never force-push to main.

## References

- **changelog** (file): CHANGELOG.md
- **runbook** (url, optional): https://example.com/runbook
`
	if s.Body != want {
		t.Errorf("Body =\n%s\nwant\n%s", s.Body, want)
	}
	if Render(s) != s.Body {
		t.Errorf("Render differs from Body")
	}
	var titles []string
	for _, sec := range s.Sections {
		titles = append(titles, sec.Title)
	}
	if want := []string{"", "Steps", "1. test", "2. tag", "3. notes", "Guardrails", "References"}; !reflect.DeepEqual(titles, want) {
		t.Errorf("section titles = %q; want %q", titles, want)
	}
	if s.Steps[0].Name != "notes" || s.Refs[1].Type != RefURL || !s.Guardrails[0].Enforced {
		t.Errorf("structured fields not kept as declared: %+v", s)
	}
}

func TestParseYAMLErrors(t *testing.T) {
	head := "name: x\ndescription: d\n"
	tests := []struct {
		name string
		src  string
		want error
		line int
		msg  string
	}{
		{"cycle", head + "steps:\n  - {name: a, prompt: p, depends: [b]}\n  - {name: b, prompt: p, depends: [c]}\n  - {name: c, prompt: p, depends: [a]}\n", ErrCycle, 4, "a → b → c → a"},
		{"self dependency", head + "steps:\n  - {name: a, prompt: p, depends: [a]}\n", ErrCycle, 4, "depends on itself"},
		{"unknown step", head + "steps:\n  - {name: a, prompt: p, depends: [z]}\n", ErrUnknownStep, 4, `depends on "z"`},
		{"duplicate step", head + "steps:\n  - {name: a, prompt: p}\n  - {name: a, prompt: q}\n", ErrDuplicate, 5, `"a" is already used`},
		{"duplicate guardrail", head + "prompt: p\nguardrails:\n  - {id: g, message: m}\n  - {id: g, message: n}\n", ErrDuplicate, 6, `"g" is used twice`},
		{"unknown step field", head + "steps:\n  - name: a\n    prompt: p\n    depend: [b]\n", ErrUnknownField, 6, `did you mean "depends"?`},
		{"step without prompt", head + "steps:\n  - name: a\n", ErrMissingField, 4, `"prompt" is missing`},
		{"bad ref type", head + "prompt: p\nrefs:\n  - {name: r, type: link, value: v}\n", ErrBadValue, 5, `type "link"`},
		{"bad url", head + "prompt: p\nrefs:\n  - {name: r, type: url, value: not-a-url}\n", ErrBadValue, 5, "absolute http(s) URL"},
		{"no prompt nor steps", head, ErrMissingField, 0, `needs a "prompt"`},
		{"steps not a list", head + "steps: {a: b}\n", ErrWrongType, 3, "list of mappings"},
		{"enforced not bool", head + "prompt: p\nguardrails:\n  - {id: g, message: m, enforced: maybe}\n", ErrWrongType, 5, "true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tt.src), FormatYAML, "x")
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse(%q) error = %v; want %v", tt.src, err, tt.want)
			}
			var fe *FieldError
			for _, p := range Problems(err) {
				if errors.Is(p, tt.want) {
					fe = p
					break
				}
			}
			if fe.Line != tt.line || !strings.Contains(fe.Message, tt.msg) || fe.File != "skill.yaml" {
				t.Errorf("Parse(%q) error = %v (line %d); want line %d containing %q", tt.src, fe, fe.Line, tt.line, tt.msg)
			}
		})
	}
}

func TestRenderOrderIsStable(t *testing.T) {
	// Ready steps come in declaration order: b and c both depend only on a.
	s, _, err := Parse([]byte("name: x\ndescription: d\nsteps:\n  - {name: c, prompt: C, depends: [a]}\n  - {name: a, prompt: A}\n  - {name: b, prompt: B, depends: [a]}\n"), FormatYAML, "x")
	if err != nil {
		t.Fatal(err)
	}
	idx := func(sub string) int { return strings.Index(s.Body, sub) }
	if !(idx("1. a") >= 0 && idx("1. a") < idx("2. c") && idx("2. c") < idx("3. b")) {
		t.Errorf("steps not in dependency then declaration order:\n%s", s.Body)
	}
}

func TestJSONEncodingStable(t *testing.T) {
	s, _, err := Parse(md("name: x\ndescription: d\nmetadata: {b: 2, a: 1}\n", "# T\n"), FormatMarkdown, "x")
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(s)
	want := `{"name":"x","description":"d","version":1,"invocation":"both","context":"inline","metadata":{"a":"1","b":"2"},"format":"SKILL.md","body":"# T\n","sections":[{"level":1,"title":"T","start":0,"end":1}],"fingerprint":"` + s.Fingerprint + `"}`
	if string(b1) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", b1, want)
	}
	var back Skill
	if err := json.Unmarshal(b1, &back); err != nil || !reflect.DeepEqual(&back, s) {
		t.Errorf("JSON round trip changed the record: %v", err)
	}
	if !strings.HasPrefix(s.Fingerprint, "sha256:") || len(s.Fingerprint) != 7+64 {
		t.Errorf("fingerprint %q", s.Fingerprint)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := mk("good/SKILL.md", "---\nname: good\ndescription: d\n---\nbody\n")
	for _, path := range []string{p, filepath.Dir(p)} {
		s, _, err := Load(path)
		if err != nil || s.Name != "good" || s.Source != p || s.Fingerprint != Fingerprint([]byte("---\nname: good\ndescription: d\n---\nbody\n")) {
			t.Errorf("Load(%s) = %+v, %v", path, s, err)
		}
	}
	mk("both/SKILL.md", "x")
	mk("both/skill.yaml", "x")
	if _, _, err := Load(filepath.Join(dir, "both")); !errors.Is(err, ErrConflict) {
		t.Errorf("Load(both) error = %v; want ErrConflict", err)
	}
	if _, _, err := Load(filepath.Join(dir, "good", "..")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(dir without skill) error = %v; want ErrNotFound", err)
	}
	bad := mk("template/SKILL.md", "---\nname: template-skill\ndescription: d\n---\n")
	_, _, err := Load(bad)
	var fe *FieldError
	if !errors.Is(err, ErrNameMismatch) || !errors.As(err, &fe) || fe.File != bad || fe.Line != 2 {
		t.Errorf("Load(%s) error = %v; want ErrNameMismatch at %s:2", bad, err, bad)
	}
	y := mk("rel/skill.yaml", "name: rel\ndescription: d\nprompt: do it\n")
	if s, _, err := Load(y); err != nil || s.Format != FormatYAML || s.Body != "do it\n" {
		t.Errorf("Load(%s) = %+v, %v", y, s, err)
	}
}
