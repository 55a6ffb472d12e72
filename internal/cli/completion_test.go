package cli

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// complete asks the completion callback (as the shell scripts do) and
// returns the candidates (without descriptions) and the directive line.
func complete(t *testing.T, words ...string) ([]string, string) {
	t.Helper()
	code, out, errb := runMain(t, append([]string{"__complete"}, words...)...)
	if code != ExitOK {
		t.Fatalf("__complete %q = %d %q", words, code, errb)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		cands = append(cands, name)
	}
	return cands, lines[len(lines)-1]
}

func hasAll(got []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// TestCompleteStatic: commands, subcommands, flags and flag values come
// from the command table, with no NATS.
func TestCompleteStatic(t *testing.T) {
	clearNATSEnv(t)
	for _, tc := range []struct {
		words []string
		want  []string
		not   []string
	}{
		{[]string{""}, []string{"run", "runs", "seqs", "skills", "tools", "validate", "completion", "version", "help", "watch", "call", "dev"}, []string{"__complete"}},
		{[]string{"se"}, []string{"seqs", "sections"}, []string{"run"}},
		{[]string{"seqs", ""}, []string{"ls", "show", "graph", "rm"}, nil},
		{[]string{"runs", ""}, []string{"ls", "show", "cancel", "rerun"}, nil},
		{[]string{"tools", ""}, []string{"ls", "serve"}, nil},
		{[]string{"skills", ""}, []string{"ls", "info"}, nil},
		{[]string{"runs", "ls", "--status", ""}, []string{"queued", "running", "interrupted", "succeeded", "failed", "cancelled"}, nil},
		{[]string{"runs", "ls", "--status="}, []string{"failed"}, nil}, // the script puts --status= back
		{[]string{"seqs", "-o", ""}, []string{"json", "yaml", "wide"}, nil},
		{[]string{"seqs", "show", "x", "-o", ""}, []string{"json", "yaml"}, []string{"wide"}},
		{[]string{"seqs", "graph", "x", "--format", ""}, []string{"mermaid", "dot"}, nil},
		{[]string{"seqs", "graph", "--"}, []string{"--format", "--context", "--creds"}, []string{"--output", "--json"}},
		{[]string{"runs", "cancel", "--"}, []string{"--reason", "--by", "--no-wait"}, []string{"--status", "--output"}},
		{[]string{"runs", "ls", "-"}, []string{"-o", "--output", "--json", "--status", "--since"}, []string{"--reason"}},
		{[]string{"run", "x", "--"}, []string{"--arg", "--args-file", "--local", "--tools-root", "--detach", "--output"}, nil},
		{[]string{"validate", "--"}, []string{"--strict", "--max-payload", "--output"}, []string{"--context"}},
		{[]string{"tools", "serve", "--"}, []string{"--root", "--allow-cmd", "--prefix", "--health-addr"}, []string{"--wait"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
		{[]string{"help", ""}, []string{"seqs", "run"}, nil},
		// With no NATS_URL, no stored names: quietly nothing.
		{[]string{"seqs", "show", "zz"}, nil, nil},
	} {
		got, dir := complete(t, tc.words...)
		if !hasAll(got, tc.want...) {
			t.Errorf("complete %q = %q (%s); want %q among them", tc.words, got, dir, tc.want)
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("complete %q = %q; want no %q", tc.words, got, n)
			}
		}
	}
}

// TestCompleteDynamic: with a reachable skillbus, stored names and run ids
// are offered; with an unreachable one, nothing, quickly.
func TestCompleteDynamic(t *testing.T) {
	readStack(t)
	if code, out, errb := runMain(t, "run", nfcSeq, "--arg", "root=.", "--quiet", "--run-id", "complete-run-1"); code != ExitOK {
		t.Fatalf("run = %d %s %s", code, out, errb)
	}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"seqs", "show", ""}, []string{nfcSeq}},
		{[]string{"seqs", "rm", ""}, []string{nfcSeq}},
		{[]string{"run", ""}, []string{nfcSeq}},
		{[]string{"run", "--arg", "root=.", ""}, []string{nfcSeq}},
		{[]string{"skills", "info", ""}, []string{"read-demo"}},
		{[]string{"call", ""}, []string{nfcGroup}},
		{[]string{"runs", "show", ""}, []string{"complete-run-1"}},
		{[]string{"runs", "rerun", "comp"}, []string{"complete-run-1"}},
		{[]string{"watch", ""}, []string{"complete-run-1"}},
		{[]string{"runs", "ls", "--sequence", ""}, []string{nfcSeq}},
	} {
		got, dir := complete(t, tc.words...)
		if !hasAll(got, tc.want...) {
			t.Errorf("complete %q = %q (%s); want %q among them", tc.words, got, dir, tc.want)
		}
	}
	// A finished run is not offered to cancel.
	if got, _ := complete(t, "runs", "cancel", ""); slices.Contains(got, "complete-run-1") {
		t.Errorf("complete runs cancel = %q; want no finished run", got)
	}
	// The candidates are filtered by what is typed (by the shell; cobra
	// passes them on), and a path being typed is left to the shell.
	if got, dir := complete(t, "run", "./ex"); len(got) != 0 || dir != ":0" {
		t.Errorf("complete run ./ex = %q %s; want nothing and file completion (:0)", got, dir)
	}
	// Unreachable: nothing, within the completion timeout.
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	start := time.Now()
	if got, _ := complete(t, "seqs", "rm", ""); len(got) != 0 {
		t.Errorf("complete with NATS unreachable = %q; want nothing", got)
	}
	if d := time.Since(start); d > 3*completeTimeout {
		t.Errorf("complete with NATS unreachable took %v", d)
	}
}
