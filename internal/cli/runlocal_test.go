package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNotesCmdRunNeedsAllowCmd: a local run of a sequence that calls
// cmd.run without --allow-cmd says, before it runs, what to add (its calls
// then find no provider, whose message alone suggested starting one).
func TestRunNotesCmdRunNeedsAllowCmd(t *testing.T) {
	t.Setenv(EnvNATSURL, "")
	dir := t.TempDir()
	p := filepath.Join(dir, "c.seq.yaml")
	if err := os.WriteFile(p, []byte("name: c\ngroups:\n  - name: c-g\n    tools:\n      - tool: cmd.run\n        args: {command: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb := runMain(t, "run", p, "--tools-root", dir, "--data", t.TempDir())
	if code != ExitFailure || !strings.Contains(errb, "note: this sequence calls cmd.run, which runs in this process only for the commands given with --allow-cmd") {
		t.Errorf("run without --allow-cmd = %d, stderr %q; want the note and a failed run", code, errb)
	}
}
