package skilltest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/corpus"
	"github.com/skillbus/skillbus/internal/seqtest"
)

const deploySkill = `---
name: deploy
description: Deploy a service and check the rollout.
triggers: [deploy, "roll out"]
paths: ["deploy/**/*.yaml"]
allowed-tools: Read, Bash(kubectl:*)
disallowed-tools: Bash(kubectl delete:*)
---
# Deploy

Run kubectl rollout status first.
`

const notesSkill = `---
name: notes
description: Keep meeting notes.
triggers: [notes]
---
# Notes

Write notes.
`

// tree writes the skills deploy and notes (siblings) and deploy's test
// file, and returns the test file's path.
func tree(t *testing.T, tests string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range map[string]string{"deploy/SKILL.md": deploySkill, "notes/SKILL.md": notesSkill, "deploy/skill.test.yaml": tests} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "deploy", FileName)
}

func runAll(t *testing.T, tests string) []seqtest.Result {
	t.Helper()
	f, err := Load(tree(t, tests))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return RunFile(context.Background(), f, nil)
}

func TestIsSkillTest(t *testing.T) {
	p := tree(t, "cases: []\n")
	if !IsSkillTest(p) {
		t.Errorf("IsSkillTest(%s) = false; want true (beside SKILL.md)", p)
	}
	lone := filepath.Join(t.TempDir(), FileName)
	if IsSkillTest(lone) || IsSkillTest(filepath.Join(filepath.Dir(p), "deploy.test.yaml")) {
		t.Errorf("IsSkillTest is true for a file with no skill beside it, or of another name")
	}
	// Away from its skill, it is read as a sequence's test file, and the
	// error says where it belongs.
	_ = os.WriteFile(lone, []byte("cases: [{name: a, message: m}]\n"), 0o644)
	if _, err := seqtest.Load(lone); err == nil || !strings.Contains(err.Error(), "put it in the skill's directory, beside its SKILL.md or skill.yaml") {
		t.Errorf("seqtest.Load(lone skill.test.yaml) = %v; want the hint", err)
	}
}

// Every expectation met: the outcome and why of both skills, the surface,
// the limits, the injected body, the listing.
func TestPassingCase(t *testing.T) {
	rs := runAll(t, `
skills: [../notes]
cases:
  - name: deploy activates
    system: You are terse.
    message: Please ROLL  OUT the api
    work_files: [deploy/api.yaml]
    tools: [Read, Write, Bash]
    expect:
      skills:
        deploy:
          outcome: activated
          why: ['the trigger "roll out"', 'the work file "deploy/api.yaml" matches its path']
          listed: true
          entry_truncated: false
          body_truncated: false
          injected: ["Run kubectl rollout status first."]
          not_injected: ["Write notes."]
        notes: not activated
      activated: [deploy]
      active: [deploy]
      dropped: []
      tools: [Read, Bash]
      removed: [Write]
      tool_limits: {Bash: {allow: ["kubectl:*"], deny: ["kubectl delete:*"]}}
      listing:
        contains: ["- deploy: Deploy a service and check the rollout."]
        lacks: [".truncated"]
        entries: 2
        entries_truncated: 0
        entries_dropped: 0
`)
	if len(rs) != 1 || !rs[0].Passed {
		t.Fatalf("results = %+v; want one passing case", rs)
	}
	if rs[0].Kind != seqtest.KindSkill {
		t.Errorf("Kind = %q; want %q", rs[0].Kind, seqtest.KindSkill)
	}
}

// Each expectation that is not met gives its own failure with the expected
// and the actual value, and the assembly is attached.
func TestEveryExpectationFails(t *testing.T) {
	rs := runAll(t, `
skills: [../notes]
cases:
  - name: all wrong
    message: take notes
    tools: [Read]
    expect:
      skills:
        deploy:
          outcome: activated
          why: [mounted]
          listed: false
          body_truncated: true
          injected: [kubectl]
        notes:
          outcome: not activated
          injected: [nothing like this]
          not_injected: [Write notes]
        ghost: activated
      activated: [deploy]
      active: []
      dropped: [notes]
      tools: []
      removed: [Read]
      tool_limits: {Bash: {allow: [x]}}
      listing: {contains: [zzz], lacks: ["- notes"], entries: 1, entries_truncated: 1, entries_dropped: 1}
`)
	r := rs[0]
	if r.Passed {
		t.Fatal("the case passed; want it to fail")
	}
	text := strings.Join(r.Failures, "\n")
	for _, want := range []string{
		"skill deploy\n    expected: activated\n    actual:   not activated — none of its triggers",
		"why deploy", "listed of deploy", "body_truncated of deploy", "injected deploy",
		"skill notes\n    expected: not activated\n    actual:   activated",
		`a body containing "nothing like this"`, `a body without "Write notes"`,
		"skill ghost\n    expected: a loaded skill",
		"activated (in order)\n    expected: [\"deploy\"]\n    actual:   [\"notes\"]",
		"active (in injection order)", "dropped\n", "tools (the surface", "removed (the caller's", "tool_limits",
		`a listing containing "zzz"`, `a listing without "- notes"`,
		"listing entries\n    expected: 1\n    actual:   2", "listing entries_truncated", "listing entries_dropped",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("failures lack %q:\n%s", want, text)
		}
	}
	if got := len(r.Failures); got != 20 {
		t.Errorf("%d failures; want 20 (one per expectation not met):\n%s", got, text)
	}
	if len(r.Trace) == 0 || !strings.HasPrefix(r.Trace[0], "deploy: not activated — ") {
		t.Errorf("trace = %q; want each skill's outcome", r.Trace)
	}
}

// History turns are earlier rounds of one session: a body stays, the
// caller's tools come back, a full session drops, an unknown mount fails.
func TestHistoryAndErrors(t *testing.T) {
	rs := runAll(t, `
skills: [../notes]
budgets: {session_bodies: 1}
cases:
  - name: retained
    history:
      - {message: deploy it, reply: done}
    message: thanks
    tools: [Read, Write]
    expect:
      skills: {deploy: {outcome: active, why: [earlier round]}, notes: not activated}
      tools: [Read, Write]
  - name: full session drops a later skill
    history:
      - {message: deploy it}
    message: now the notes
    expect:
      skills: {deploy: active, notes: {outcome: dropped, why: ['trigger "notes"', "already holds 1 skill bodies"]}}
      listing: {contains: [".dropped: 1 skill"]}
  - name: the case's budget wins over the file's
    budgets: {session_bodies: 2}
    message: deploy the notes
    expect:
      activated: [deploy, notes]
  - name: unknown mount expected
    message: go
    mounts: [deplyo]
    expect: {error: deplyo}
  - name: unknown mount not expected
    message: go
    history:
      - {message: go, mounts: [deplyo]}
    expect: {skills: {deploy: not activated}}
`)
	for i, r := range rs[:4] {
		if !r.Passed {
			t.Errorf("case %d %q failed: %v", i, r.Case, r.Failures)
		}
	}
	if r := rs[4]; r.Passed || !strings.Contains(r.Failures[0], "history turn 1 (line") || !strings.Contains(r.Failures[0], "deplyo") {
		t.Errorf("the unexpected unknown mount: %+v; want a failure naming the turn and the skill", r)
	}
}

// A test file that does not parse gives FILE:LINE and what is wrong.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown top field", "cases: []\nskils: []\n", `:2: unknown field "skils"`},
		{"no cases", "skills: [../notes]\n", ":1: cases: must be a list of at least one case"},
		{"no message", "cases:\n  - name: a\n", `:2: case "a" needs a message`},
		{"unknown case field", "cases:\n  - name: a\n    message: m\n    mesage: m\n", `:4: unknown case field "mesage"`},
		{"bad outcome", "cases:\n  - name: a\n    message: m\n    expect:\n      skills: {deploy: triggered}\n", `:5: skill "deploy": outcome "triggered"`},
		{"unknown skill field", "cases:\n  - name: a\n    message: m\n    expect:\n      skills:\n        deploy: {reason: x}\n", `:6: unknown skill expectation "reason"`},
		{"bad bool", "cases:\n  - name: a\n    message: m\n    expect:\n      skills:\n        deploy: {listed: maybe}\n", `:6: listed: "maybe" is not true or false`},
		{"bad budget", "budgets: {body_bytes: 0}\ncases:\n  - {name: a, message: m}\n", ":1: body_bytes: must be 1 or more"},
		{"unknown budget", "budgets: {bodies: 2}\ncases:\n  - {name: a, message: m}\n", `:1: unknown budget "bodies"`},
		{"duplicate case", "cases:\n  - {name: a, message: m}\n  - {name: a, message: n}\n", `:3: two cases are named "a" (the other at line 2)`},
		{"history without message", "cases:\n  - name: a\n    message: m\n    history:\n      - {reply: x}\n", ":5: a history turn needs a message"},
		{"absolute skill path", "skills: [/etc]\ncases:\n  - {name: a, message: m}\n", `:1: skills: "/etc" must be a skill directory`},
		{"skill path to another file", "skills: [../notes/notes.txt]\ncases:\n  - {name: a, message: m}\n", `must be a skill directory, SKILL.md or skill.yaml`},
		{"tools not a list", "cases:\n  - name: a\n    message: m\n    tools: {Read: true}\n", ":4: tools must be a list of text"},
		{"unknown expectation", "cases:\n  - name: a\n    message: m\n    expect: {surface: []}\n", `:4: unknown expectation "surface"`},
		{"not YAML", "cases: [\n", "not YAML"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tree(t, c.text)
			_, err := Load(p)
			var pe *seqtest.ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p) {
				t.Errorf("Load = %v; want a ParseError at %s containing %q", err, p, c.want)
			}
		})
	}
}

// A skill that does not load fails every case with its problem.
func TestSkillThatDoesNotLoad(t *testing.T) {
	rs := runAll(t, "skills: [../missing]\ncases:\n  - {name: a, message: m}\n  - {name: b, message: m}\n")
	if len(rs) != 2 || rs[0].Passed || rs[1].Passed || !strings.Contains(rs[0].Failures[0], "missing does not load") {
		t.Errorf("results = %+v; want both cases failed naming the skill", rs)
	}
}

func TestLint(t *testing.T) {
	f, err := Load(tree(t, `
skills: [../notes]
cases:
  - name: a
    message: m
    mounts: [deplyo]
    expect:
      skills: {note: activated}
      activated: [deploy]
  - name: refused on purpose
    message: m
    mounts: [deplyo]
    expect: {error: deplyo}
`))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Lint(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Line != 4 || !strings.Contains(ws[0].Message, `names the skill "deplyo" in mounts`) ||
		ws[1].Line != 8 || !strings.Contains(ws[1].Message, `names the skill "note" in expect.skills`) {
		t.Errorf("warnings = %+v; want deplyo at line 4 and note at line 8", ws)
	}
}

// TestCorpusSkills runs cases against the public skills corpus: each
// skill mounted on its own activates with the reason "it is mounted", its
// body injected (cut to the budget when longer) and every skill listed.
func TestCorpusSkills(t *testing.T) {
	root := corpus.Skills(t)
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "SKILL.md" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &File{Skill: dirs[0]}
	seen := map[string]bool{}
	for _, d := range dirs[1:] {
		if !seen[filepath.Base(d)] { // skill-creator is published twice
			f.Skills = append(f.Skills, d)
			seen[filepath.Base(d)] = true
		}
	}
	skills, err := LoadSkills(f)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, s := range skills {
		c := &Case{Name: s.Name, Turn: Turn{Message: "go", Mounts: []string{s.Name}}, Expect: Expect{
			Skills:     map[string]*SkillExpect{s.Name: {Outcome: "activated", Why: []string{"it is mounted"}, Listed: ptr(true)}},
			SkillOrder: []string{s.Name},
			Listing:    &ListingExpect{Entries: ptr(len(skills)), EntriesDropped: ptr(0)},
		}}
		if r := RunCase(context.Background(), skills, Budgets{BodyBytes: 4096}, c); !r.Passed {
			t.Errorf("%s: %v", s.Name, r.Failures)
		}
	}
	t.Logf("%d corpus skills, one case each, in %v", len(skills), time.Since(start))
}

func ptr[T any](v T) *T { return &v }

// Every skill in examples/skills has its skill.test.yaml, and its cases
// pass (.ci/run runs them too, with skillbus test examples).
func TestExamples(t *testing.T) {
	dirs, err := os.ReadDir("../../examples/skills")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		p := filepath.Join("../../examples/skills", d.Name(), FileName)
		if !IsSkillTest(p) {
			t.Errorf("examples/skills/%s has no %s", d.Name(), FileName)
			continue
		}
		f, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range RunFile(context.Background(), f, nil) {
			if !r.Passed {
				t.Errorf("%s: %s: %v", p, r.Case, r.Failures)
			}
		}
	}
}
