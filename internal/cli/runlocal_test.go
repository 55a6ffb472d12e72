package cli

import (
	"os"
	"path/filepath"
	"regexp"
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

// TestRunLocalSignalSaysWhere: a local run of a sequence that waits for a
// signal names the URL of its own NATS server, the only one that reaches
// the run (without it, `runs signal` from another shell had no NATS_URL).
func TestRunLocalSignalSaysWhere(t *testing.T) {
	t.Setenv(EnvNATSURL, "")
	dir := t.TempDir()
	p := filepath.Join(dir, "w.seq.yaml")
	if err := os.WriteFile(p, []byte("name: w\ngroups:\n  - name: w-ask\n    out: {ok: bool}\n    wait_for: {signal: approve, timeout: 1s}\n    on_error: continue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb := runMain(t, "run", p, "--tools-root", dir, "--data", t.TempDir())
	if code != ExitOK || !regexp.MustCompile(`waits for the signal\(s\) "approve"; .* NATS_URL=nats://127\.0\.0\.1:[0-9]+ skillbus runs signal`).MatchString(errb) {
		t.Errorf("local run of a signal wait = %d, stderr %q; want the server's URL to signal it with", code, errb)
	}
}
