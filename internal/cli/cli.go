// Package cli implements the skillbus command line (docs/architecture.md, Components): one file
// per subcommand, each a func(ctx, env, args) int returning the exit code.
//
// Exit codes: 0 success; 1 the command ran and found a problem (an invalid
// file, a failed run); 2 the command line itself was wrong (unknown command
// or flag, missing argument).
package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/version"
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
}

// command is one subcommand: its one-line summary, usage text and body.
// subs, when set, are its own subcommands (`skillbus mcp serve`), found by
// the next argument before run is called; their usage is their own.
type command struct {
	summary string
	usage   string
	run     func(ctx context.Context, env Env, args []string) int
	subs    func() map[string]command
}

// commands returns the subcommand table. Each subcommand file adds its entry
// here, keeping this file free of subcommand logic.
func commands() map[string]command {
	return map[string]command{
		"validate":    validateCommand(),
		"sections":    sectionsCommand(),
		"run":         runCommand(),
		"runs":        runsCommand(),
		"dev":         devCommand(),
		"skills":      skillsCommand(),
		"seqs":        seqsCommand(),
		"call":        callCommand(),
		"watch":       watchCommand(),
		"tools":       toolsCommand(),
		"agent-ready": agentReadyCommand(),
		"mcp":         mcpCommand(),
		"auth":        authCommand(),
	}
}

// Main runs the command line args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, conn: new(natsconn.Settings)}
	*env.conn = natsconn.FromEnv()
	cmds := commands()
	if len(args) > 0 && (args[0] == "--version" || args[0] == "version") {
		fmt.Fprintf(stdout, "skillbus %s\n", version.String())
		return ExitOK
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := cmds[args[1]]; ok {
				fmt.Fprint(stdout, usageOf(args[1], c))
				return ExitOK
			}
		}
		printHelp(stdout, cmds)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "skillbus: unknown command %q; run `skillbus help` for the list of commands\n", args[0])
		return ExitUsage
	}
	name := args[0]
	if c.subs != nil && len(args) > 1 {
		if sc, ok := c.subs()[args[1]]; ok {
			name, c, args = args[0]+" "+args[1], sc, args[1:]
		}
	}
	if wantsHelp(args[1:]) {
		fmt.Fprint(stdout, usageOf(name, c))
		return ExitOK
	}
	return c.run(ctx, env, args[1:])
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
	b.WriteString("`skillbus --version` prints the version.\n")
	b.WriteString("Commands other than validate, sections, run and dev talk to a running skillbus\nat NATS_URL; `skillbus dev` starts one on this machine and prints the URL.\n")
	fmt.Fprint(w, b.String())
}
