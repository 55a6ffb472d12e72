package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTestTree(t *testing.T, cases string) string {
	t.Helper()
	dir := t.TempDir()
	seqText := "name: one\ngroups:\n  - name: g\n    out: {x: object}\n    timeout: 1m\n    tools:\n      - {tool: t.x, as: x}\n"
	if err := os.WriteFile(filepath.Join(dir, "one.seq.yaml"), []byte(seqText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "one.test.yaml"), []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTestCommand(t *testing.T) {
	dir := writeTestTree(t, `cases:
  - name: good
    mocks: {t.x: {result: {a: 1}}}
    expect: {status: succeeded, slots: {x: {a: 1}}}
  - name: bad
    mocks: {t.x: {result: {a: 1}, delay: 2m}}
    expect: {status: succeeded}
`)
	code, out, _ := runMain(t, "test", dir)
	if code != ExitFailure {
		t.Errorf("exit %d; want 1", code)
	}
	for _, want := range []string{"--- FAIL: ", "bad", "expected: succeeded", "group timeout of 1m0s", "\n1 passed, 1 failed\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	junit := filepath.Join(t.TempDir(), "j.xml")
	code, out, _ = runMain(t, "test", "--run", "/good$", "--junit", junit, dir)
	if code != ExitOK || !strings.HasSuffix(out, "1 passed, 0 failed\n") {
		t.Errorf("--run /good$: exit %d, %q", code, out)
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), `<testcase name="good"`) {
		t.Errorf("junit: %v %s", err, x)
	}
	// A --run matching no case fails (a typo must not pass in CI).
	if code, _, errb := runMain(t, "test", "--run", "/nosuch$", dir); code != ExitFailure || !strings.Contains(errb, `no case matches --run "/nosuch$"`) {
		t.Errorf("--run /nosuch$: exit %d, stderr %q; want 1 and the pattern named", code, errb)
	}
	code, out, _ = runMain(t, "test", "-o", "json", dir)
	var sum struct{ Passed, Failed int }
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != ExitFailure || sum.Passed != 1 || sum.Failed != 1 {
		t.Errorf("-o json: exit %d, %v, %s", code, err, out)
	}
}

func TestTestCommandParseError(t *testing.T) {
	dir := writeTestTree(t, "cases:\n  - name: a\n    mocks:\n      t.x: {delay: soon}\n")
	code, _, errOut := runMain(t, "test", dir)
	if code != ExitUsage || !strings.Contains(errOut, "one.test.yaml:4: delay") {
		t.Errorf("exit %d; stderr %q; want 2 and the file's line 4", code, errOut)
	}
}

// validate parses test files and warns of a mocked tool the sequence never calls.
func TestValidateTestFiles(t *testing.T) {
	dir := writeTestTree(t, "cases:\n  - name: a\n    mocks:\n      t.x: {result: {}}\n      t.y: {result: {}}\n")
	code, out, _ := runMain(t, "validate", dir)
	if code != ExitFailure || !strings.Contains(out, `one.test.yaml:5: case "a" mocks the tool "t.y" (did you mean "t.x"?), which the sequence one never calls`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	bad := writeTestTree(t, "cases:\n  - name: a\n    mockz: {}\n")
	code, out, _ = runMain(t, "validate", filepath.Join(bad, "one.test.yaml"))
	if code != ExitFailure || !strings.Contains(out, `one.test.yaml:3: unknown case field "mockz"`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// writeSkillTree writes the skill deploy with its skill.test.yaml.
func writeSkillTree(t *testing.T, cases string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	skillText := "---\nname: deploy\ndescription: Deploys.\ntriggers: [deploy]\nallowed-tools: Read\n---\n# Deploy\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(skillText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skill.test.yaml"), []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// skillbus test runs a skill's skill.test.yaml with the sequence tests:
// the same failure diffs, --run, --junit, -o json and exit codes.
func TestTestCommandSkills(t *testing.T) {
	dir := writeSkillTree(t, `cases:
  - name: good
    message: deploy it
    tools: [Read, Write]
    expect: {skills: {deploy: {outcome: activated, why: ['the trigger "deploy"']}}, tools: [Read]}
  - name: bad
    message: hello
    expect: {skills: {deploy: activated}}
`)
	seqDir := writeTestTree(t, "cases:\n  - name: s\n    mocks: {t.x: {result: {}}}\n    expect: {status: succeeded}\n")
	code, out, _ := runMain(t, "test", dir, seqDir)
	if code != ExitFailure {
		t.Errorf("exit %d; want 1", code)
	}
	for _, want := range []string{"skill.test.yaml:6: bad\n", "skill deploy\n    expected: activated\n    actual:   not activated — none of its triggers", "  assembly:\n", "\n2 passed, 1 failed\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	junit := filepath.Join(t.TempDir(), "j.xml")
	code, out, _ = runMain(t, "test", "--run", "/good$", "--junit", junit, dir)
	if code != ExitOK || !strings.HasSuffix(out, "1 passed, 0 failed\n") {
		t.Errorf("--run /good$: exit %d, %q", code, out)
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), `<testcase name="good"`) {
		t.Errorf("junit: %v %s", err, x)
	}
	code, out, _ = runMain(t, "test", "-o", "json", dir)
	var sum struct {
		Passed, Failed int
		Results        []struct{ Kind string }
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != ExitFailure || sum.Passed != 1 || sum.Failed != 1 || sum.Results[0].Kind != "skill" {
		t.Errorf("-o json: exit %d, %v, %s", code, err, out)
	}
	bad := writeSkillTree(t, "cases:\n  - name: a\n    message: m\n    expect: {skills: {deploy: maybe}}\n")
	code, _, errOut := runMain(t, "test", bad)
	if code != ExitUsage || !strings.Contains(errOut, `skill.test.yaml:4: skill "deploy": outcome "maybe"`) {
		t.Errorf("exit %d; stderr %q; want 2 and the file's line 4", code, errOut)
	}
}

// validate parses a skill's test file and warns of a skill name no loaded
// skill has.
func TestValidateSkillTestFiles(t *testing.T) {
	dir := writeSkillTree(t, "cases:\n  - name: a\n    message: m\n    mounts: [deplyo]\n")
	code, out, _ := runMain(t, "validate", "--strict", dir)
	if code != ExitFailure || !strings.Contains(out, `skill.test.yaml:2: warning: case "a" names the skill "deplyo" in mounts, but no such skill is loaded`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = runMain(t, "validate", dir)
	if code != ExitOK || !strings.Contains(out, "skill.test.yaml: ok: tests of the skill in") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// --update rewrites the expected slots of a case marked update: true, says
// so, and runs the rewritten file; an unmarked case still fails.
func TestTestCommandUpdate(t *testing.T) {
	dir := writeTestTree(t, `cases:
  - name: marked
    update: true
    mocks: {t.x: {result: {a: 2}}}
    expect: {slots: {x: {a: 1}}}   # from the real tool
`)
	code, _, errOut := runMain(t, "test", "--update", dir)
	if code != ExitOK || !strings.Contains(errOut, "--update rewrote 1 expected slot value(s) in ") {
		t.Errorf("exit %d, stderr %q; want 0 and the rewrite said", code, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "one.test.yaml"))
	if !strings.Contains(string(b), "expect: {slots: {x: {a: 2}}} # from the real tool") {
		t.Errorf("test file after --update:\n%s", b)
	}
	unmarked := writeTestTree(t, "cases:\n  - name: u\n    mocks: {t.x: {result: {a: 2}}}\n    expect: {slots: {x: {a: 1}}}\n")
	if code, _, _ := runMain(t, "test", "--update", unmarked); code != ExitFailure {
		t.Errorf("an unmarked case: exit %d; want 1", code)
	}
}

// validate counts test files among the files checked and names the kinds
// (it said "1 file(s) checked" for a sequence and its test file, and
// nothing for a test file alone).
func TestValidateCountsTestFiles(t *testing.T) {
	dir := writeTestTree(t, "cases:\n  - name: a\n    mocks: {t.x: {result: {}}}\n")
	skills := writeSkillTree(t, "cases:\n  - {name: a, message: deploy}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{dir}, "\n2 file(s) checked (1 sequence, 1 test file), 0 invalid\n"},
		{[]string{filepath.Join(dir, "one.test.yaml")}, "\n1 file(s) checked (1 test file), 0 invalid\n"},
		{[]string{dir, skills}, "\n4 file(s) checked (1 sequence, 1 skill, 2 test files), 0 invalid\n"},
		{[]string{filepath.Join(dir, "one.seq.yaml")}, "\n1 file(s) checked, 0 invalid\n"},
	} {
		code, out, _ := runMain(t, append([]string{"validate"}, c.args...)...)
		if code != ExitOK || !strings.HasSuffix(out, c.want) {
			t.Errorf("validate %v: exit %d:\n%s\nwant the last line %q", c.args, code, out, c.want)
		}
	}
	_, out, _ := runMain(t, "validate", "-o", "json", dir, skills)
	var rep struct{ Checked, Sequences, Skills, Tests int }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Checked != 2 || rep.Sequences != 1 || rep.Skills != 1 || rep.Tests != 2 {
		t.Errorf("-o json: %+v, %v", rep, err)
	}
}

// skillbus test prints every problem of a test file that does not parse,
// each on its own line with its FILE:LINE, and exits 2 (issue 23).
func TestTestCommandEveryProblem(t *testing.T) {
	dir := writeTestTree(t, "cases:\n  - name: a\n    mocks:\n      t.x: {reslt: {}}\n      nosuch.tool: {result: {}}\n    expect: {status: succeded, groups: {gg: ran}}\n")
	code, _, errOut := runMain(t, "test", dir)
	p := filepath.Join(dir, "one.test.yaml")
	for _, want := range []string{
		"skillbus test: " + p + `:4: unknown mock field "reslt" (did you mean "result"?)`,
		"skillbus test: " + p + `:5: case "a" mocks the tool "nosuch.tool", which the sequence one never calls; its tools are t.x`,
		"skillbus test: " + p + `:6: status: "succeded" (did you mean "succeeded"?)`,
		"skillbus test: " + p + `:6: case "a": expect.groups: the sequence one has no group "gg" (did you mean "g"?)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("lacks %q", want)
		}
	}
	if code != ExitUsage || t.Failed() {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}
