package cli

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

// cmdPath is one command or subcommand of the table: its words and itself.
type cmdPath struct {
	words []string
	c     command
}

// allCommands returns every command and subcommand of the table, sorted.
func allCommands() []cmdPath {
	var out []cmdPath
	var walk func(words []string, c command)
	walk = func(words []string, c command) {
		out = append(out, cmdPath{words, c})
		if c.subs == nil {
			return
		}
		subs := c.subs()
		for _, n := range sortedKeys(subs) {
			walk(append(slices.Clone(words), n), subs[n])
		}
	}
	cmds := commands()
	for _, n := range sortedKeys(cmds) {
		walk([]string{n}, cmds[n])
	}
	return out
}

// opaque marks a sample value that the flag does not show back through
// String (a flag.Func): the test then checks that it was set.
const opaque = "\x00"

// sampleValue returns a value the flag accepts, other than its default
// ("" for a boolean flag), with the opaque mark when its String does not
// show it.
func sampleValue(t *testing.T, p cmdPath, name string) string {
	in, ok := inspect(p.c, nil, nil)
	if !ok {
		t.Fatalf("%s: not inspectable", strings.Join(p.words, " "))
	}
	f := in.fs.Lookup(name)
	if isBoolFlag(f) {
		return ""
	}
	if c, ok := f.Value.(interface{ Choices() []string }); ok {
		ch := c.Choices()
		return ch[len(ch)-1]
	}
	for _, v := range []string{"7", "2s", "v"} {
		if f.Value.Set(v) == nil {
			if f.Value.String() != v {
				return opaque + v
			}
			return v
		}
	}
	t.Fatalf("%s --%s: no sample value is accepted", strings.Join(p.words, " "), name)
	return ""
}

// TestFlagsAnywhere runs every flag of every command and subcommand (the
// table itself, so a command added later is covered) in every position a
// user may put it — before the arguments, after them, between them, before
// the subcommand's name, as --flag value, --flag=value and -flag value —
// and checks that the command sees the same flag value and the same
// positional arguments each time, and that after "--" a flag is an
// argument.
func TestFlagsAnywhere(t *testing.T) {
	clearNATSEnv(t)
	cmds := commands()
	paths := allCommands()
	if len(paths) < 20 {
		t.Fatalf("only %d commands and subcommands found", len(paths))
	}
	for _, p := range paths {
		name := strings.Join(p.words, " ")
		in, ok := inspect(p.c, nil, nil)
		if !ok {
			t.Errorf("%s: does not parse its flags with newFlags and parseInterleaved (flags anywhere, completion and this test depend on it)", name)
			continue
		}
		// An unknown flag is a usage error wherever it is.
		for _, args := range [][]string{{"--no-such-flag", "X1"}, {"X1", "--no-such-flag"}} {
			if r, _ := inspect(p.c, args, nil); r.err == nil {
				t.Errorf("%s %q: no error for an unknown flag", name, args)
			}
		}
		var flags []*flag.Flag
		in.fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
		if len(flags) == 0 && len(p.words) == 1 && p.c.subs == nil {
			t.Logf("%s has no flags", name)
		}
		for _, f := range flags {
			v := sampleValue(t, p, f.Name)
			v, isOpaque := strings.CutPrefix(v, opaque)
			want := v
			tok := []string{"--" + f.Name}
			if v == "" {
				want = "true"
			} else {
				tok = append(tok, v)
			}
			if f.Name == "json" {
				want = "true"
			}
			eq := "--" + f.Name
			if v != "" {
				eq += "=" + v
			}
			single := append([]string{"-" + f.Name}, tok[1:]...)
			variants := []struct {
				label string
				args  []string
				pos   []string
			}{
				{"before", append(slices.Clone(tok), "X1"), []string{"X1"}},
				{"after", append([]string{"X1"}, tok...), []string{"X1"}},
				{"between", append(append([]string{"X1"}, tok...), "X2"), []string{"X1", "X2"}},
				{"--flag=value", []string{"X1", eq}, []string{"X1"}},
				{"-flag value", append([]string{"X1"}, single...), []string{"X1"}},
			}
			for _, vt := range variants {
				// Through the whole command line: the first word, flags
				// before a subcommand's name too.
				lines := [][]string{append(slices.Clone(p.words), vt.args...)}
				if len(p.words) > 1 {
					line := []string{p.words[0]}
					line = append(line, tok...)
					line = append(line, p.words[1:]...)
					line = append(line, slices.DeleteFunc(slices.Clone(vt.args), func(a string) bool { return slices.Contains(tok, a) || a == eq })...)
					if vt.label == "before" {
						lines = append(lines, line)
					}
				}
				for _, line := range lines {
					gotName, c, rest, ok := resolve(cmds, line)
					if !ok || gotName != name {
						t.Errorf("%q: resolved to %q; want %q", line, gotName, name)
						continue
					}
					r, ok := inspect(c, rest, nil)
					if !ok || r.err != nil {
						t.Errorf("%q: %v", line, r.err)
						continue
					}
					if isOpaque {
						if !given(r.fs, f.Name) {
							t.Errorf("%q (%s): --%s not set", line, vt.label, f.Name)
						}
					} else if got := r.fs.Lookup(f.Name).Value.String(); got != want {
						t.Errorf("%q (%s): --%s = %q; want %q", line, vt.label, f.Name, got, want)
					}
					if !slices.Equal(r.pos, vt.pos) {
						t.Errorf("%q (%s): positional %q; want %q", line, vt.label, r.pos, vt.pos)
					}
				}
			}
			// After "--" the flag is an argument.
			args := append([]string{"X1", "--"}, tok...)
			r, _ := inspect(p.c, args, nil)
			if r.err != nil || !slices.Equal(r.pos, append([]string{"X1"}, tok...)) || given(r.fs, f.Name) {
				t.Errorf("%s %q: positional %q, error %v, --%s set %v; want %q as arguments", name, args, r.pos, r.err, f.Name, given(r.fs, f.Name), args[2:])
			}
		}
		// --help anywhere before "--" prints the usage on stdout, exit 0.
		for _, args := range [][]string{{"--help", "X1"}, {"X1", "--help"}, {"X1", "-h"}} {
			code, out, errb := runMain(t, append(slices.Clone(p.words), args...)...)
			if code != ExitOK || !strings.Contains(out, "Usage: skillbus "+p.words[0]) || errb != "" {
				t.Errorf("skillbus %s %q = %d, %.60q, %q; want 0 and the usage", name, args, code, out, errb)
			}
		}
	}
}

// TestFlagValueTakenForSubcommand: a flag's value before the subcommand is
// not taken for the subcommand (runs --sequence show ls lists the runs of
// sequence "show").
func TestFlagValueTakenForSubcommand(t *testing.T) {
	cmds := commands()
	for _, tc := range []struct {
		line []string
		name string
		flag string
		pos  []string
	}{
		{[]string{"runs", "--sequence", "show", "ls"}, "runs ls", "sequence=show", nil},
		{[]string{"runs", "--sequence=show"}, "runs", "sequence=show", nil},
		{[]string{"seqs", "--json", "show", "x"}, "seqs show", "json=true", []string{"x"}},
		{[]string{"tools", "--root", "serve", "serve"}, "tools serve", "root=serve", nil},
		{[]string{"tools", "--wait", "1s"}, "tools", "wait=1s", nil},
		{[]string{"mcp", "--prefix", "p", "--", "serve", "--x"}, "mcp", "prefix=p", []string{"serve", "--x"}},
		{[]string{"skills", "-o", "yaml", "info", "--", "-odd", "sec"}, "skills info", "o=yaml", []string{"-odd", "sec"}},
	} {
		name, c, rest, ok := resolve(cmds, tc.line)
		if !ok || name != tc.name {
			t.Errorf("%q: resolved to %q; want %q", tc.line, name, tc.name)
			continue
		}
		r, ok := inspect(c, rest, nil)
		if !ok || r.err != nil {
			t.Errorf("%q: %v", tc.line, r.err)
			continue
		}
		k, v, _ := strings.Cut(tc.flag, "=")
		if got := r.fs.Lookup(k).Value.String(); got != v {
			t.Errorf("%q: --%s = %q; want %q", tc.line, k, got, v)
		}
		if !slices.Equal(r.pos, tc.pos) {
			t.Errorf("%q: positional %q; want %q", tc.line, r.pos, tc.pos)
		}
	}
}

// TestSubcommandFlagsAreTheirOwn: a flag of one subcommand given to
// another is refused, not ignored.
func TestSubcommandFlagsAreTheirOwn(t *testing.T) {
	clearNATSEnv(t)
	for _, line := range [][]string{
		{"runs", "show", "r1", "--status", "failed"},
		{"runs", "ls", "--reason", "x"},
		{"runs", "cancel", "r1", "-o", "json"},
		{"seqs", "rm", "x", "-o", "json"},
		{"seqs", "show", "x", "--format", "dot"},
		{"seqs", "graph", "x", "--json"},
		{"tools", "--root", "."},
		{"skills", "info", "x", "-o", "wide"},
	} {
		code, _, errb := runMain(t, line...)
		if code != ExitUsage || !strings.Contains(errb, "skillbus "+line[0]) {
			t.Errorf("skillbus %q = %d %q; want 2", line, code, errb)
		}
	}
}

// TestOutputFlagErrors: an unknown -o value, and two different formats, are
// usage errors that list the choices.
func TestOutputFlagErrors(t *testing.T) {
	clearNATSEnv(t)
	for _, p := range allCommands() {
		in, _ := inspect(p.c, nil, nil)
		f := in.fs.Lookup("o")
		if f == nil || in.fs.Lookup("output") == nil {
			continue // no output flags (auth's -o is files|k8s)
		}
		choices := f.Value.(interface{ Choices() []string }).Choices()
		name := strings.Join(p.words, " ")
		for _, args := range [][]string{{"-o", "xml"}, {"--output=table"}, {"--json", "-o", choices[len(choices)-1]}} {
			if choices[len(choices)-1] == "json" && args[0] == "--json" {
				continue
			}
			code, _, errb := runMain(t, append(slices.Clone(p.words), args...)...)
			want := "want " + orList(choices)
			if args[0] == "--json" {
				want = "give one output format"
			}
			if code != ExitUsage || !strings.Contains(errb, want) {
				t.Errorf("skillbus %s %q = %d %q; want 2 and %q", name, args, code, errb, want)
			}
		}
	}
}

// TestEveryReadCommandHasOutput: the read commands take -o with json and
// yaml (and wide where a table has more to show), and keep --json.
func TestEveryReadCommandHasOutput(t *testing.T) {
	want := map[string]string{
		"seqs": "json yaml wide", "seqs ls": "json yaml wide", "seqs show": "json yaml",
		"skills": "json yaml wide", "skills ls": "json yaml wide", "skills info": "json yaml",
		"runs": "json yaml wide", "runs ls": "json yaml wide", "runs list": "json yaml wide", "runs show": "json yaml",
		"tools": "json yaml wide", "tools ls": "json yaml wide",
		"run": "json yaml", "call": "json yaml", "validate": "json yaml", "sections": "json yaml",
		"watch": "json", "version": "json yaml", "bench": "json yaml",
	}
	seen := map[string]bool{}
	for _, p := range allCommands() {
		name := strings.Join(p.words, " ")
		in, _ := inspect(p.c, nil, nil)
		f := in.fs.Lookup("o")
		if name == "auth" {
			continue // its -o (files|k8s) says what to write, not how to print
		}
		if f == nil {
			if w, ok := want[name]; ok {
				t.Errorf("%s has no -o; want %s", name, w)
			}
			continue
		}
		seen[name] = true
		got := strings.Join(f.Value.(interface{ Choices() []string }).Choices(), " ")
		if w, ok := want[name]; ok && got != w {
			t.Errorf("%s -o takes %s; want %s", name, got, w)
		}
		if in.fs.Lookup("output") == nil || in.fs.Lookup("json") == nil {
			t.Errorf("%s has -o but not --output and --json", name)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s: not a command with -o", name)
		}
	}
}

// TestChoiceFlagDidYouMean: a near miss of a choice flag's value names the
// value it most likely meant (`runs --status faild`), after the list.
func TestChoiceFlagDidYouMean(t *testing.T) {
	clearNATSEnv(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"typo", []string{"runs", "--status", "faild"}, `--status "faild": want queued, running, waiting, interrupted, succeeded, failed or cancelled; did you mean "failed"?`},
		{"case", []string{"runs", "ls", "--status", "Waiting"}, `did you mean "waiting"?`},
		{"far", []string{"runs", "--status", "broken"}, `--status "broken": want queued, running, waiting, interrupted, succeeded, failed or cancelled` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errb := runMain(t, tc.args...)
			if code != ExitUsage || !strings.Contains(errb, tc.want) {
				t.Errorf("skillbus %s = %d %q; want %d with %q", strings.Join(tc.args, " "), code, errb, ExitUsage, tc.want)
			}
		})
	}
}
