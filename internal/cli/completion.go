package cli

// Shell completion uses cobra only to generate the bash, zsh, fish and
// PowerShell scripts and to speak their __complete protocol; the commands
// themselves stay on the standard flag package. cobra is kept on purpose:
// its scripts are what those shells' users already run for kubectl, helm
// and gh, they are tested against real shells here (completion_test.go),
// and writing and maintaining four shells' scripts ourselves would be more
// code than the product gains.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// operandKind says what a command's positional arguments are, for shell
// completion.
type operandKind int

const (
	operandNone      operandKind = iota // none, or nothing worth offering (an agent name)
	operandPaths                        // files and directories (validate)
	operandMarkdown                     // a Markdown file (sections)
	operandSeqOrFile                    // a stored sequence's name or a sequence file (run, seqs show, seqs graph)
	operandSeq                          // a stored sequence's name (seqs rm)
	operandSkill                        // a stored skill's name (skills info)
	operandRun                          // a run id (runs show, runs rerun, watch)
	operandLiveRun                      // a run id of a run not finished yet (runs cancel)
	operandGroup                        // a group name of a stored sequence (call)
	operandCommand                      // a program and its arguments (mcp -- COMMAND)
	operandShell                        // bash, zsh or fish (completion)
)

// completeTimeout bounds the NATS look-ups of one completion request: a
// shell waits for it on every Tab.
const completeTimeout = 2 * time.Second

func completionCommand() command {
	return command{
		summary:  "print a shell completion script (bash, zsh or fish)",
		operands: operandShell,
		usage: `Usage: skillbus completion bash|zsh|fish [--no-descriptions]

Prints a completion script for the shell: commands, subcommands, each
command's flags and their values (-o json|yaml|wide, --status, --format…),
files where a command takes a file, and — when NATS_URL (or --context on the
line) reaches a running skillbus — the stored sequences' names, the skills'
names, group names and recent run ids. Without a reachable skillbus those
are simply not offered. The script asks skillbus itself on every Tab, so it
stays right as commands change.

Install:
  bash   source <(skillbus completion bash)        # in ~/.bashrc; needs the
         bash-completion package (apt/dnf install bash-completion; brew
         install bash-completion@2)
  zsh    skillbus completion zsh > "${fpath[1]}/_skillbus"    # then a new shell;
         or source <(skillbus completion zsh) in ~/.zshrc after compinit
  fish   skillbus completion fish > ~/.config/fish/completions/skillbus.fish

Flags:
  --no-descriptions   candidates without their one-line descriptions (zsh, fish)

Exit codes: 0 success, 2 no or unknown shell.
`,
		run: runCompletion,
	}
}

func runCompletion(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "completion", completionCommand)
	noDesc := fs.Bool("no-descriptions", false, "candidates without descriptions")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "skillbus completion: give one shell: bash, zsh or fish\n%s\n", helpHint("completion"))
		return ExitUsage
	}
	root := cobraTree(ctx, nil)
	var werr error
	switch pos[0] {
	case "bash":
		werr = root.GenBashCompletionV2(env.Stdout, !*noDesc)
	case "zsh":
		if *noDesc {
			werr = root.GenZshCompletionNoDesc(env.Stdout)
		} else {
			werr = root.GenZshCompletion(env.Stdout)
		}
	case "fish":
		werr = root.GenFishCompletion(env.Stdout, !*noDesc)
	default:
		fmt.Fprintf(env.Stderr, "skillbus completion: unknown shell %q: want bash, zsh or fish\n", pos[0])
		return ExitUsage
	}
	if werr != nil {
		fmt.Fprintf(env.Stderr, "skillbus completion: %v\n", werr)
		return ExitFailure
	}
	return ExitOK
}

// isCompleteRequest reports whether arg is the hidden command the
// completion scripts call on every Tab (cobra's __complete).
func isCompleteRequest(arg string) bool {
	return arg == cobra.ShellCompRequestCmd || arg == cobra.ShellCompNoDescRequestCmd
}

// runComplete answers a completion script's request: args are
// [__complete, words..., partial word]; it prints one candidate per line
// and the directive (cobra's protocol).
func runComplete(ctx context.Context, env Env, args []string) int {
	root := cobraTree(ctx, env.conn)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(io.Discard)
	root.SetIn(env.Stdin)
	if err := root.ExecuteContext(ctx); err != nil {
		return ExitFailure
	}
	return ExitOK
}

// cobraTree builds a cobra command tree from the command table, for
// completion only: each command and subcommand with its summary, its flags
// (read from the command itself: inspect) and completion functions for its
// operands and flag values. The commands themselves never run through
// cobra. conn receives the connection flags given on the line being
// completed (nil: the NATS_* variables only).
func cobraTree(ctx context.Context, conn *natsconn.Settings) *cobra.Command {
	if conn == nil {
		conn = new(natsconn.Settings)
	}
	*conn = natsconn.FromEnv()
	root := &cobra.Command{
		Use:           "skillbus",
		Short:         "skills and tool sequences for agent runtimes, on NATS JetStream",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.Flags().Bool("version", false, "print the version (skillbus version)")
	root.SetHelpCommand(&cobra.Command{Use: "help", Short: "print a command's usage and examples", Run: func(*cobra.Command, []string) {},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []string
			for n, c := range commands() {
				names = append(names, cobra.CompletionWithDesc(n, c.summary))
			}
			slices.Sort(names)
			return names, cobra.ShellCompDirectiveNoFileComp
		}})
	cmds := commands()
	for _, name := range sortedKeys(cmds) {
		root.AddCommand(cobraCommand(ctx, name, cmds[name], conn))
	}
	return root
}

func sortedKeys(m map[string]command) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cobraCommand is one command of cobraTree, with its subcommands.
func cobraCommand(ctx context.Context, name string, c command, conn *natsconn.Settings) *cobra.Command {
	cc := &cobra.Command{Use: name, Short: c.summary, Run: func(*cobra.Command, []string) {}}
	l := &lookups{ctx: ctx, conn: conn}
	if in, ok := inspect(c, nil, conn); ok {
		addGoFlags(cc, in.fs, l)
	}
	cc.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return l.operands(c.operands, args, toComplete)
	}
	if c.subs != nil {
		subs := c.subs()
		for _, sn := range sortedKeys(subs) {
			cc.AddCommand(cobraCommand(ctx, sn, subs[sn], conn))
		}
	}
	return cc
}

// addGoFlags adds a command's Go flags to cc as pflags (sharing their
// values, so the connection flags on the line reach l), with completion of
// their values: the choices of a choice flag (-o, --format, --status), the
// stored sequences for --sequence, the nats contexts for --context, files
// for the rest that take a value.
func addGoFlags(cc *cobra.Command, fs *flag.FlagSet, l *lookups) {
	pfs := cc.Flags()
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "o" && fs.Lookup("output") != nil {
			return // the shorthand of --output
		}
		pf := pflag.PFlagFromGoFlag(f)
		if f.Name == "output" && fs.Lookup("o") != nil {
			pf.Shorthand = "o"
		}
		pf.Usage = strings.SplitN(pf.Usage, "\n", 2)[0]
		pfs.AddFlag(pf)
		var fn cobra.CompletionFunc
		switch v := f.Value.(type) {
		case interface{ Choices() []string }:
			fn = cobra.FixedCompletions(v.Choices(), cobra.ShellCompDirectiveNoFileComp)
		}
		switch f.Name {
		case "sequence":
			fn = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return l.sequences(), cobra.ShellCompDirectiveNoFileComp
			}
		case natsconn.FlagContext:
			fn = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return natsContexts(), cobra.ShellCompDirectiveDefault
			}
		}
		if fn != nil {
			_ = cc.RegisterFlagCompletionFunc(pf.Name, fn)
		}
	})
}

// lookups fetches the dynamic candidates from the skillbus at the
// connection settings, each at most once per request; any problem (no
// NATS_URL, unreachable, no registry) gives no candidates.
type lookups struct {
	ctx  context.Context
	conn *natsconn.Settings
	c    *client.Client
	nc   *nats.Conn
	fail bool
}

func (l *lookups) client() *client.Client {
	if l.c != nil || l.fail {
		return l.c
	}
	l.fail = true
	if !l.conn.Given() {
		return nil
	}
	nc, _, err := natsconn.Connect(*l.conn, "skillbus completion", nats.Timeout(completeTimeout), nats.NoReconnect())
	if err != nil {
		return nil
	}
	c, err := client.New(nc, client.WithTimeout(completeTimeout))
	if err != nil {
		nc.Close()
		return nil
	}
	l.c, l.nc, l.fail = c, nc, false
	context.AfterFunc(l.ctx, nc.Close)
	return c
}

func (l *lookups) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(l.ctx, completeTimeout)
}

// sequences returns the stored sequences' names, with descriptions.
func (l *lookups) sequences() []cobra.Completion {
	c := l.client()
	if c == nil {
		return nil
	}
	ctx, cancel := l.timeout()
	defer cancel()
	list, err := c.SeqList(ctx)
	if err != nil {
		return nil
	}
	out := make([]cobra.Completion, 0, len(list.Sequences))
	for _, s := range list.Sequences {
		out = append(out, cobra.CompletionWithDesc(s.Name, oneLine(s.Description, 60)))
	}
	return out
}

// groups returns the group names of the stored sequences.
func (l *lookups) groups() []cobra.Completion {
	c := l.client()
	if c == nil {
		return nil
	}
	ctx, cancel := l.timeout()
	defer cancel()
	list, err := c.SeqList(ctx)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, s := range list.Sequences {
		for _, g := range s.Groups {
			out = append(out, cobra.CompletionWithDesc(g, "group of "+s.Name))
		}
	}
	return out
}

// skills returns the stored skills' names, with descriptions.
func (l *lookups) skills() []cobra.Completion {
	c := l.client()
	if c == nil {
		return nil
	}
	ctx, cancel := l.timeout()
	defer cancel()
	list, err := c.SkillList(ctx)
	if err != nil {
		return nil
	}
	out := make([]cobra.Completion, 0, len(list.Skills))
	for _, s := range list.Skills {
		out = append(out, cobra.CompletionWithDesc(s.Name, oneLine(s.Description, 60)))
	}
	return out
}

// runs returns the ids of the newest runs (only unfinished ones when live),
// described by sequence and status.
func (l *lookups) runs(live bool) []cobra.Completion {
	c := l.client()
	if c == nil {
		return nil
	}
	ctx, cancel := l.timeout()
	defer cancel()
	reply, err := c.List(ctx, events.SeqListRequest{Limit: 100})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, r := range reply.Runs {
		switch r.Status {
		case events.StatusSucceeded, events.StatusFailed, events.StatusCancelled:
			if live {
				continue
			}
		}
		out = append(out, cobra.CompletionWithDesc(r.RunID, r.Sequence+" "+r.Status))
	}
	return out
}

// operands completes a positional argument of a command whose earlier
// positional arguments are args.
func (l *lookups) operands(kind operandKind, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	switch kind {
	case operandPaths:
		return nil, cobra.ShellCompDirectiveDefault
	case operandMarkdown:
		if len(args) > 0 {
			return nil, none
		}
		return []cobra.Completion{"md", "markdown"}, cobra.ShellCompDirectiveFilterFileExt
	case operandCommand:
		return nil, cobra.ShellCompDirectiveDefault
	case operandShell:
		if len(args) > 0 {
			return nil, none
		}
		return []cobra.Completion{"bash", "zsh", "fish"}, none
	}
	if len(args) > 0 {
		return nil, none // one operand (skills info's SECTION is free text)
	}
	switch kind {
	case operandSeqOrFile:
		if looksLikePath(toComplete) {
			return nil, cobra.ShellCompDirectiveDefault
		}
		names, dir := sequenceFiles(toComplete)
		names = append(l.sequences(), names...)
		if dir {
			return names, none | cobra.ShellCompDirectiveNoSpace
		}
		return names, none
	case operandSeq:
		return l.sequences(), none
	case operandSkill:
		return l.skills(), none
	case operandRun:
		return l.runs(false), none
	case operandLiveRun:
		return l.runs(true), none
	case operandGroup:
		return l.groups(), none
	}
	return nil, none
}

// looksLikePath reports whether a partial operand is a path being typed
// (./x, ../x, /x, ~/x, dir/x): the shell completes those itself.
func looksLikePath(s string) bool {
	return strings.ContainsRune(s, '/') || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~")
}

// sequenceFiles returns the sequence files (*.seq.yaml, *.seq.yml,
// *.seq.json) and directories (with a trailing /) of the working directory
// that start with prefix; dir is true when a directory is among them.
func sequenceFiles(prefix string) (out []cobra.Completion, dir bool) {
	entries, err := os.ReadDir(".")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || strings.HasPrefix(n, ".") && !strings.HasPrefix(prefix, ".") {
			continue
		}
		switch {
		case e.IsDir():
			out, dir = append(out, n+string(filepath.Separator)), true
		case strings.HasSuffix(n, ".seq.yaml"), strings.HasSuffix(n, ".seq.yml"), strings.HasSuffix(n, ".seq.json"):
			out = append(out, n)
		}
	}
	return out, dir
}

// natsContexts returns the nats CLI context names (ContextDir).
func natsContexts() []cobra.Completion {
	dir, err := natsconn.ContextDir()
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			out = append(out, n)
		}
	}
	return out
}
