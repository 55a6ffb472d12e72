package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGlobalFlagsBeforeCommand: the output and connection flags may come
// before the command's name (`skillbus --json seqs`, `skillbus -o yaml
// runs show ID`), as kubectl takes them; any other flag there is an error
// saying where it goes.
func TestGlobalFlagsBeforeCommand(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"--json", "seqs"}, []string{"seqs", "--json"}},
		{[]string{"-o", "yaml", "runs", "show", "r1"}, []string{"runs", "-o", "yaml", "show", "r1"}},
		{[]string{"-ojson", "--context", "prod", "seqs", "show", "x"}, []string{"seqs", "-o=json", "--context", "prod", "show", "x"}},
		{[]string{"--creds=a.creds", "tools"}, []string{"tools", "--creds=a.creds"}},
		{[]string{"seqs", "--json"}, []string{"seqs", "--json"}},
	} {
		got, err := globalFlagsFirst(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("globalFlagsFirst(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	clearNATSEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--quiet", "run", "x"}, "skillbus: --quiet before the command: only the output flags"},
		{[]string{"--json"}, "give the command after the flags"},
		{[]string{"-o"}, "-o needs a value, then the command"},
	} {
		code, _, errb := runMain(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errb, tc.want) {
			t.Errorf("skillbus %q = %d %q; want 2 and %q", tc.args, code, errb, tc.want)
		}
	}
	// The command parses them as its own: sections (no NATS) prints JSON.
	file := filepath.Join(t.TempDir(), "a.md")
	if err := os.WriteFile(file, []byte("# A\n\ntext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range [][]string{{"--json", "sections", file}, {"-ojson", "sections", file}, {"sections", "-ojson", file}, {"-o", "json", "sections", file}} {
		code, out, errb := runMain(t, line...)
		if code != ExitOK || !strings.HasPrefix(out, "[") {
			t.Errorf("skillbus %q = %d, stdout %.40q, stderr %q; want JSON", line, code, out, errb)
		}
	}
	// A command that has no -o says so in its own words.
	if code, _, errb := runMain(t, "--json", "dev"); code != ExitUsage || !strings.Contains(errb, "skillbus dev: unknown flag --json") {
		t.Errorf("skillbus --json dev = %d %q; want 2 and an unknown flag", code, errb)
	}
}

// TestAttachedShortValue: -ojson is -o json, for every command with -o, and
// before a subcommand's name too.
func TestAttachedShortValue(t *testing.T) {
	cmds := commands()
	for _, line := range [][]string{{"seqs", "-ojson", "show", "x"}, {"runs", "-oyaml", "ls"}, {"skills", "info", "x", "-ojson"}} {
		name, c, rest, ok := resolve(cmds, line)
		if want := line[0] + " " + line[2]; !ok || (name != want && name != "skills info") {
			t.Errorf("%q: resolved to %q", line, name)
			continue
		}
		in, ok := inspect(c, rest, nil)
		if !ok || in.err != nil {
			t.Errorf("%q: %v", line, in.err)
			continue
		}
		if got := in.fs.Lookup("o").Value.String(); got != strings.TrimPrefix(line[slices.IndexFunc(line, func(s string) bool { return strings.HasPrefix(s, "-o") })], "-o") {
			t.Errorf("%q: -o = %q", line, got)
		}
	}
}

// TestFlagValueErrors: a malformed flag value names the flag with its
// dashes, the value and the form it takes, then points at --help in one
// line instead of printing the whole usage.
func TestFlagValueErrors(t *testing.T) {
	clearNATSEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "--since", "2d"}, `skillbus runs ls: --since "2d": not a duration; use a Go duration such as 48h`},
		{[]string{"runs", "ls", "--limit", "abc"}, `skillbus runs ls: --limit "abc": not a whole number; want one such as 10`},
		{[]string{"bench", "--runs", "x"}, `skillbus bench: --runs "x": not a whole number`},
		{[]string{"validate", "--strict=maybe", "."}, `skillbus validate: --strict "maybe": not a boolean; want true or false`},
		{[]string{"sections", "--jsn", "x.md"}, "skillbus sections: unknown flag --jsn; did you mean --json?"},
		{[]string{"run", "x", "--arg"}, "skillbus run: --arg needs a value"},
	} {
		code, out, errb := runMain(t, tc.args...)
		if code != ExitUsage || !strings.HasPrefix(errb, tc.want) {
			t.Errorf("skillbus %q = %d %q; want 2 and %q first", tc.args, code, errb, tc.want)
		}
		if n := strings.Count(errb, "\n"); n > 2 || out != "" {
			t.Errorf("skillbus %q printed %d lines on stderr and %d bytes on stdout; want the error and a one-line hint", tc.args, n, len(out))
		}
		if strings.Contains(errb, "parse error") || strings.Contains(errb, "for flag -") || strings.Contains(errb, "defined: -") {
			t.Errorf("skillbus %q: the flag package's words leak: %q", tc.args, errb)
		}
	}
}

// TestOperandErrors: wrong positional arguments are said in one line
// (what was given, what to give) and a second pointing at --help — not the
// whole usage, which buried the error under it.
func TestOperandErrors(t *testing.T) {
	clearNATSEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"call"}, "skillbus call: give exactly one GROUP name"},
		{[]string{"run"}, "skillbus run: give exactly one SEQUENCE (a file or a stored name), got 0"},
		{[]string{"seqs", "show"}, "skillbus seqs show: got none: give one NAME (a stored sequence's name, or for show and graph a sequence file)"},
		{[]string{"skills", "info", "a", "b", "c"}, `skillbus skills info: got ["a" "b" "c"]: give a skill's NAME and at most one SECTION`},
		{[]string{"sections"}, "skillbus sections: give exactly one PATH, got none"},
		{[]string{"runs", "show"}, "skillbus runs show: give one RUN_ID (letters, digits, - and _, at most 128 bytes), got none"},
		{[]string{"runs", "cancel", "a.b"}, "skillbus runs cancel: run id \"a.b\" contains '.'; use only letters, digits, '-' and '_' (`skillbus runs` lists the runs)"},
		{[]string{"runs", "rerun", "r1", "--run-id", "a b"}, "skillbus runs rerun: --run-id: run id \"a b\" contains ' '"},
		{[]string{"runs", "frob"}, `skillbus runs: unknown subcommand "frob"; the subcommands are ls, show RUN_ID, cancel RUN_ID, rerun RUN_ID, retry RUN_ID and signal RUN_ID NAME`},
		{[]string{"runs", "canel", "r1"}, `skillbus runs: unknown subcommand "canel" (did you mean cancel?); the subcommands are ls, show RUN_ID, cancel RUN_ID, rerun RUN_ID, retry RUN_ID and signal RUN_ID NAME`},
		{[]string{"seqs", "shwo", "x"}, `skillbus seqs: unknown subcommand "shwo" (did you mean show?); the subcommands are ls, show NAME, graph NAME and rm NAME`},
		{[]string{"seqs", "ls", "a"}, `skillbus seqs: unknown subcommand "a"; the subcommands are ls, show NAME, graph NAME and rm NAME`},
		{[]string{"skills", "inf", "x"}, `skillbus skills: unknown subcommand "inf" (did you mean info?); the subcommands are ls and info NAME [SECTION]`},
		{[]string{"tools", "srve"}, `skillbus tools: unknown subcommand "srve" (did you mean serve?); the subcommands are ls and serve`},
		{[]string{"validate"}, "skillbus validate: no PATH given: give the sequence files, skill files or directories to check"},
		{[]string{"bench", "x"}, `skillbus bench: unexpected argument "x": bench takes flags only`},
		{[]string{"watch", "a", "b"}, "skillbus watch: give at most one RUN_ID"},
		{[]string{"completion"}, "skillbus completion: give one shell: bash, zsh or fish"},
		{[]string{"agent-ready"}, "skillbus agent-ready: give exactly one AGENT name"},
		{[]string{"ui", "x"}, `skillbus ui: unexpected argument "x"`},
	} {
		code, out, errb := runMain(t, tc.args...)
		// The hint names the command the error is about: "skillbus NAME: …".
		name, _, _ := strings.Cut(strings.TrimPrefix(tc.want, "skillbus "), ":")
		hint := "Run `skillbus " + name + " --help` for the usage and examples.\n"
		want := tc.want + "\n" + hint
		if code != ExitUsage || out != "" || !strings.HasPrefix(errb, tc.want) || !strings.HasSuffix(errb, hint) || strings.Count(errb, "\n") != 2 {
			t.Errorf("skillbus %q = %d, stdout %q, stderr %q; want 2 and\n%s", tc.args, code, out, errb, want)
		}
	}
}

// TestHelpUnknownCommand: `skillbus help nosuch` is a usage error (exit 2),
// with the list of commands on stderr.
func TestHelpUnknownCommand(t *testing.T) {
	code, out, errb := runMain(t, "help", "nosuch")
	if code != ExitUsage || out != "" || !strings.Contains(errb, `unknown command "nosuch"`) || !strings.Contains(errb, "validate") {
		t.Errorf("skillbus help nosuch = %d, stdout %q, stderr %q; want 2 and the commands on stderr", code, out, errb)
	}
	if code, out, _ := runMain(t, "help", "seqs", "show"); code != ExitOK || !strings.Contains(out, "seqs show") {
		t.Errorf("skillbus help seqs show = %d %q", code, out)
	}
}

// TestBuiltinSettingsAreUsageErrors: a tool root that does not exist and
// an --allow-cmd entry that cannot be a command are configuration errors,
// exit 2 like every bad command line (README.md, "Exit codes"), naming the
// flag — for run, dev and tools serve alike.
func TestBuiltinSettingsAreUsageErrors(t *testing.T) {
	clearNATSEnv(t)
	seqFile := filepath.Join(t.TempDir(), "s.seq.yaml")
	if err := os.WriteFile(seqFile, []byte("name: s\ngroups:\n  - name: g\n    tools: [{tool: fs.stat, args: {path: .}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := seqFile
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", seqFile, "--tools-root", "/nonexistent"}, "skillbus run: --tools-root /nonexistent: no such directory"},
		{[]string{"run", seqFile, "--tools-root", file}, "is a file"},
		{[]string{"run", seqFile, "--allow-cmd", "ec ho"}, `skillbus run: --allow-cmd "ec ho": give a command name (git) or an absolute path, without arguments`},
		{[]string{"dev", "--tools-root", "/nonexistent", "--port", "0"}, "skillbus dev: --tools-root /nonexistent: no such directory"},
		{[]string{"dev", "--allow-cmd", "bin/x", "--port", "0"}, `skillbus dev: --allow-cmd "bin/x": a command with a path must be absolute`},
	} {
		code, _, errb := runMain(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errb, tc.want) {
			t.Errorf("skillbus %q = %d %q; want 2 and %q", tc.args, code, errb, tc.want)
		}
		if strings.Contains(errb, "AllowCommands") || strings.Contains(errb, "builtin:") || strings.Contains(errb, "Root") {
			t.Errorf("skillbus %q: Go names leak: %q", tc.args, errb)
		}
	}
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	if code, _, errb := runMain(t, "tools", "serve", "--root", "/nonexistent"); code != ExitUsage || !strings.Contains(errb, "skillbus tools serve: --root /nonexistent: no such directory") {
		t.Errorf("tools serve --root /nonexistent = %d %q; want 2", code, errb)
	}
}

// TestTypoSuggestions: a misspelt command or leading flag gets a "did you
// mean" (exit 2); a word far from every command gets none.
func TestTypoSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rnu", "hello"}, `skillbus: unknown command "rnu" (did you mean "run"?)`},
		{[]string{"seq"}, `skillbus: unknown command "seq" (did you mean "seqs"?)`},
		{[]string{"--versoin"}, "skillbus: unknown flag --versoin: did you mean --version?"},
		{[]string{"frobnicate"}, `skillbus: unknown command "frobnicate"; run`},
	} {
		code, out, errb := runMain(t, tc.args...)
		if code != ExitUsage || out != "" || !strings.HasPrefix(errb, tc.want) {
			t.Errorf("skillbus %q = %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errb, tc.want)
		}
	}
}
