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
	code, out, _ := runMain(t, "validate", "--strict", dir)
	if code != ExitFailure || !strings.Contains(out, `one.test.yaml:5: warning: case "a" mocks the tool "t.y", which the sequence one never calls`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	bad := writeTestTree(t, "cases:\n  - name: a\n    mockz: {}\n")
	code, out, _ = runMain(t, "validate", filepath.Join(bad, "one.test.yaml"))
	if code != ExitFailure || !strings.Contains(out, `one.test.yaml:3: unknown case field "mockz"`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
