// Package cli implements the skillbus command line (README.md, "Using
// skillbus"; docs/architecture.md, Components): one file per subcommand,
// each a func(ctx, env, args) int returning the exit code. Every command
// parses its flags with newFlags and parseInterleaved (flags anywhere on the
// line; flags.go), prints read results with an output flag (-o
// json|yaml|wide; output.go), and is described to shell completion by its
// entry in commands (completion.go).
//
// Exit codes: 0 success; 1 the command ran and found a problem (an invalid
// file, a failed run); 2 the command line itself was wrong (unknown command
// or flag, missing argument).
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/suggest"
)

// Exit codes shared by every subcommand.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and found a problem
	ExitUsage   = 2 // the command line was wrong
)

// Env is what a subcommand may touch: its standard streams, and the NATS
// connection settings its flags set (nil: the NATS_* variables alone).
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	conn *natsconn.Settings
	// inspect, when set, receives the command's flags and positional
	// arguments at parseInterleaved, and the command stops there (flags.go).
	inspect inspector
}

// command is one subcommand: its one-line summary, usage text and body.
// subs, when set, are its own subcommands (`skillbus seqs show`, `skillbus
// mcp serve`): the first positional argument, flags may come before it;
// their usage is their own, and run is called when no subcommand is named.
// operands says what the positional arguments are, for shell completion.
type command struct {
	summary  string
	usage    string
	run      func(ctx context.Context, env Env, args []string) int
	subs     func() map[string]command
	operands operandKind
}

// commands returns the subcommand table. Each subcommand file adds its entry
// here, keeping this file free of subcommand logic.
func commands() map[string]command {
	return map[string]command{
		"validate":    validateCommand(),
		"test":        testCommand(),
		"sections":    sectionsCommand(),
		"run":         runCommand(),
		"runs":        runsCommand(),
		"schedules":   schedulesCommand(),
		"dev":         devCommand(),
		"skills":      skillsCommand(),
		"seqs":        seqsCommand(),
		"call":        callCommand(),
		"watch":       watchCommand(),
		"tools":       toolsCommand(),
		"agent-ready": agentReadyCommand(),
		"mcp":         mcpCommand(),
		"ui":          uiCommand(),
		"auth":        authCommand(),
		"bench":       benchCommand(),
		"version":     versionCommand(),
		"completion":  completionCommand(),
	}
}

// Main runs the command line args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Every byte of text a command prints passes one terminal-safety step
	// (termsafe.go); structured output is written beneath it (rawWriter).
	env := Env{Stdin: stdin, Stdout: &termWriter{w: stdout}, Stderr: &termWriter{w: &refusalFilter{w: stderr}}, conn: new(natsconn.Settings)}
	*env.conn = natsconn.FromEnv()
	cmds := commands()
	if len(args) > 0 && args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) > 0 && isCompleteRequest(args[0]) {
		return runComplete(ctx, env, args) // the shells' completion callback (completion.go)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if name, c, ok := lookup(cmds, args[1:]); ok {
				fmt.Fprint(stdout, usageOf(name, c))
				return ExitOK
			}
			fmt.Fprintf(stderr, "skillbus help: unknown command %q; the commands are:\n\n", strings.Join(args[1:], " "))
			printHelp(stderr, cmds)
			return ExitUsage
		}
		printHelp(stdout, cmds)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	args, err := globalFlagsFirst(args)
	if err != nil {
		fmt.Fprintf(stderr, "skillbus: %v\n", err)
		return ExitUsage
	}
	name, c, rest, ok := resolve(cmds, args)
	if !ok {
		fmt.Fprintf(stderr, "skillbus: unknown command %q%s; run `skillbus help` for the list of commands\n", args[0], didYouMean(args[0], sortedNames(cmds)))
		return ExitUsage
	}
	if wantsHelp(rest) {
		fmt.Fprint(stdout, usageOf(name, c))
		return ExitOK
	}
	return c.run(ctx, env, rest)
}

// didYouMean is ` (did you mean "X"?)` for the candidate word most
// likely misspells (suggest.Closest), or "".
func didYouMean(word string, candidates []string) string {
	if c := suggest.Closest(word, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// sortedNames are the names of cmds in byte order.
func sortedNames(cmds map[string]command) []string {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// globalFlags are the flags that may come before the command's name
// (`skillbus -o json seqs`, `skillbus --context prod runs`), as kubectl
// takes them: the output flags of the read commands and the NATS
// connection flags; true for those that take a value.
var globalFlags = map[string]bool{
	"o": true, "output": true, "json": false,
	natsconn.FlagContext: true, natsconn.FlagCreds: true, natsconn.FlagNKey: true,
	natsconn.FlagCert: true, natsconn.FlagKey: true, natsconn.FlagCA: true,
}

// globalFlagsFirst moves the flags written before the command's name
// (globalFlags) to just after it, where the command parses them as its own
// (a command that does not take one says so). Another flag there is an
// error saying to put it after the command.
func globalFlagsFirst(args []string) ([]string, error) {
	if len(args) == 0 || len(args[0]) < 2 || args[0][0] != '-' {
		return args, nil
	}
	lookup := func(name string) *flag.Flag {
		takes, ok := globalFlags[name]
		if !ok {
			return nil
		}
		if takes {
			return &flag.Flag{Name: name, Value: new(stringList)}
		}
		return &flag.Flag{Name: name, Value: jsonFlag{}}
	}
	var lead []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		a = expandShort(lookup, a)
		name := flagName(a)
		takes, ok := globalFlags[name]
		if !ok {
			if c := suggest.Closest(name, []string{"version", "help"}); c != "" {
				return nil, fmt.Errorf("unknown flag %s: did you mean --%s?", a, c)
			}
			return nil, fmt.Errorf("%s before the command: only the output flags (-o, --output, --json) and the connection flags (--context, --creds, --nkey, --tls-cert, --tls-key, --tls-ca) may come before it; write %s after the command's name (`skillbus COMMAND %s ...`)", a, a, a)
		}
		lead = append(lead, a)
		if takes && !strings.Contains(a, "=") {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s needs a value, then the command", a)
			}
			i++
			lead = append(lead, args[i])
		}
	}
	if i >= len(args) || args[i] == "--" {
		return nil, fmt.Errorf("%s: give the command after the flags (`skillbus help` lists the commands)", strings.Join(lead, " "))
	}
	out := append([]string{args[i]}, lead...)
	return append(out, args[i+1:]...), nil
}

// resolve finds the command a command line names: its first word, then
// subcommand by subcommand (findSub: flags may come before a subcommand's
// name). It returns the full name ("runs ls"), the command and the
// arguments left for it; ok is false for an unknown first word.
func resolve(cmds map[string]command, args []string) (name string, c command, rest []string, ok bool) {
	c, ok = cmds[args[0]]
	if !ok {
		return "", command{}, nil, false
	}
	name, rest = args[0], args[1:]
	for {
		i, sc := findSub(c, rest)
		if i < 0 {
			return name, c, rest, true
		}
		name, c = name+" "+rest[i], sc
		rest = append(append([]string(nil), rest[:i]...), rest[i+1:]...)
	}
}

// lookup finds the command a help request names ("seqs", "seqs show"):
// the longest prefix of words that names a command or subcommand.
func lookup(cmds map[string]command, words []string) (string, command, bool) {
	c, ok := cmds[words[0]]
	if !ok {
		return "", command{}, false
	}
	name := words[0]
	for _, w := range words[1:] {
		if c.subs == nil {
			break
		}
		sc, ok := c.subs()[w]
		if !ok {
			break
		}
		name, c = name+" "+w, sc
	}
	return name, c, true
}

// wantsHelp reports whether a command's arguments ask for its usage (-h,
// -help or --help before any "--"), which is printed on stdout with exit 0.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func printHelp(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("skillbus: skills and tool sequences for agent runtimes, on NATS JetStream.\n\nUsage: skillbus COMMAND [ARGS...]\n\nCommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-12s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\nRun `skillbus help COMMAND` or `skillbus COMMAND --help` for a command's usage and examples.\n")
	b.WriteString("Exit codes: 0 success, 1 the command found a problem, 2 bad command line.\n")
	b.WriteString("Flags may come before or after the arguments; -- ends them. Read commands print\n-o json or -o yaml (-o wide: more columns); `skillbus completion bash|zsh|fish`\nprints a shell completion script.\n")
	b.WriteString("Commands other than validate, sections, run and dev talk to a running skillbus\nat NATS_URL; `skillbus dev` starts one on this machine and prints the URL.\n")
	fmt.Fprint(w, b.String())
}
