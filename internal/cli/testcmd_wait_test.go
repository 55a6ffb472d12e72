package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestCommandWaits: skillbus test runs the example with a wait_for
// (approved, rejected, timed out, left waiting) in virtual time, prints a
// failing case's trace with its waiting and signal lines, and validate
// warns of a signal no group waits for.
func TestTestCommandWaits(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "sequences", "approve-restarts.test.yaml")
	code, out, errOut := runMain(t, "test", ex)
	if code != ExitOK || !strings.HasSuffix(out, "6 passed, 0 failed\n") {
		t.Fatalf("test %s: exit %d\n%s%s", ex, code, out, errOut)
	}
	dir := t.TempDir()
	seqText, err := os.ReadFile(filepath.Join("..", "..", "examples", "sequences", "approve-restarts.seq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.seq.yaml"), seqText, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := `cases:
  - name: expects the wrong outcome
    args: {services: [api]}
    mocks: {svc.health: {result: {ok: true}}}
    signals: [{name: approve, after: 3h, reject: freeze}]
    expect: {waits: {approve: signalled}}
  - name: a typo in the signal
    args: {services: [api]}
    mocks: {svc.health: {result: {ok: true}}}
    signals: [{name: aprove, values: {approved: true, restart: [], note: x}}]
`
	if err := os.WriteFile(filepath.Join(dir, "a.test.yaml"), []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runMain(t, "test", dir)
	for _, want := range []string{
		"wait of approve\n    expected: signalled\n    actual:   rejected",
		`group "approve" waiting for the signal "approve" (timeout 24h0m0s`,
		`3h0m0s  signal "approve" (line 5) rejects: freeze`,
		`a.test.yaml:10: case "a typo in the signal": the signal "aprove": no group of the sequence approve-restarts waits for it`,
		"0 passed, 2 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != ExitFailure {
		t.Errorf("exit %d; want 1", code)
	}
	code, out, errOut = runMain(t, "validate", "--strict", dir)
	if code == ExitOK || !strings.Contains(out+errOut, `the signal "aprove": no group`) {
		t.Errorf("validate --strict: exit %d\n%s%s", code, out, errOut)
	}
}
