package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

func seqsCommand() command {
	return command{
		summary: "list, show, draw or delete stored sequences",
		usage: `Usage: skillbus seqs [ls] [-o json|yaml|wide] [flags]
       skillbus seqs show NAME [-o json|yaml]
       skillbus seqs graph NAME [--format mermaid|dot]
       skillbus seqs rm NAME

ls (the default) lists the stored sequences: name, groups, signature, boot
and schedule, source (-o wide adds the description). show prints one: its signature and each group with
its in/out slots, policies and tool calls (-o json or -o yaml: the stored
AST, as docs/sequences.md describes it; --json is -o json). graph
draws it — groups as stages in order, the parallel calls inside each, and
an edge from the call that writes a slot to every later group that reads
it — as Mermaid (default; paste into Markdown) or Graphviz DOT
(` + "`| dot -Tsvg`" + `). rm deletes a sequence created over NATS (seq_create); a
sequence from a file goes when its file is deleted.

Flags of graph:
  --format F   mermaid (default) or dot

NAME may also be a sequence file for show and graph, which then need no NATS;
otherwise NATS_URL must be set. A NAME is taken in Unicode NFC, as the
registry stores it. Flags may come before or after the arguments.

Examples:
  skillbus seqs
  skillbus seqs show project-survey
  skillbus seqs graph examples/sequences/project-survey.seq.yaml
  skillbus seqs graph project-survey --format dot | dot -Tsvg > survey.svg
  skillbus seqs rm scratch-flow

Exit codes: 0 success, 1 not found / not deletable / no registry answers,
2 bad command line.
`,
		run: runSeqsList,
		subs: func() map[string]command {
			return map[string]command{
				"ls":    seqsSub("list the stored sequences", operandNone, runSeqsList),
				"show":  seqsSub("describe a stored sequence or a sequence file", operandSeqOrFile, runSeqsShow),
				"graph": seqsSub("draw a sequence as Mermaid or Graphviz DOT", operandSeqOrFile, runSeqsGraph),
				"rm":    seqsSub("delete a sequence created over NATS", operandSeq, runSeqsRm),
			}
		},
	}
}

// seqsSub is a subcommand of seqs; its usage is the seqs usage.
func seqsSub(summary string, operands operandKind, run func(context.Context, Env, []string) int) command {
	return command{summary: summary, usage: seqsCommand().usage, run: run, operands: operands}
}

// seqsArgs parses a seqs subcommand's arguments with fs and checks that it
// has n positional arguments.
func seqsArgs(env Env, sub string, fs *flag.FlagSet, args []string, n int) ([]string, int) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, flagExit(err)
	}
	if len(pos) != n {
		if n == 0 {
			return nil, unknownSubcommand(env, "seqs", pos, []string{"ls", "show", "graph", "rm"}, "ls, show NAME, graph NAME and rm NAME")
		}
		fmt.Fprintf(env.Stderr, "skillbus seqs %s: got %s: give one NAME (a stored sequence's name, or for show and graph a sequence file)\n%s\n", sub, gotArgs(pos), helpHint("seqs "+sub))
		return nil, ExitUsage
	}
	return pos, -1
}

func runSeqsList(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "seqs ls", seqsCommand)
	out := outputFlags(fs, "json", "yaml", "wide")
	if _, code := seqsArgs(env, "ls", fs, args, 0); code >= 0 {
		return code
	}
	return withClient(env, "seqs ls", func(c *client.Client) int {
		list, err := c.SeqList(ctx)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus seqs: %v\n", describeRegistry(err, ""))
			return ExitFailure
		}
		if out.Structured(env.Stdout, list) {
			return ExitOK
		}
		if len(list.Sequences) == 0 {
			fmt.Fprintln(env.Stdout, "no sequences stored (the registry loads *.seq.yaml and *.seq.json files from its directory)")
			return ExitOK
		}
		tw := newTable(env.Stdout)
		head := "NAME\tGROUPS\tSIGNATURE\tTRIGGERS\tSOURCE"
		if out.Wide() {
			head += "\tDESCRIPTION"
		}
		fmt.Fprintln(tw, head)
		for _, s := range list.Sequences {
			sig := map[string]seq.Type{}
			for k, v := range s.Signature {
				sig[k] = seq.Type(v)
			}
			var trig []string
			if s.Boot {
				trig = append(trig, "boot")
			}
			if s.Schedule != "" {
				trig = append(trig, scheduleWithZone(s.Schedule, s.TimeZone))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", s.Name, strings.Join(s.Groups, ", "), seq.Signature(sig), strings.Join(trig, ", "), s.Source)
			if out.Wide() {
				fmt.Fprintf(tw, "\t%s", oneLine(s.Description, 200))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		return ExitOK
	})
}

func runSeqsShow(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "seqs show", seqsCommand)
	out := outputFlags(fs, "json", "yaml")
	pos, code := seqsArgs(env, "show", fs, args, 1)
	if code >= 0 {
		return code
	}
	if code := fileTakesNoConn(env, "seqs show", fs, pos[0]); code >= 0 {
		return code
	}
	return withSequence(ctx, env, "seqs show", pos[0], func(s *seq.Sequence, raw json.RawMessage) int {
		if out.Structured(env.Stdout, raw) {
			return ExitOK
		}
		describeSequence(env.Stdout, s)
		if s.Schedule != "" && !looksLikeFile(pos[0]) {
			if line := scheduleState(ctx, env, s.Name); line != "" {
				fmt.Fprintf(env.Stdout, "\n  schedule state: %s\n", line)
			}
		}
		return ExitOK
	})
}

func runSeqsGraph(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "seqs graph", seqsCommand)
	format := choiceFlag(fs, "format", "mermaid", "graph format: mermaid or dot", "mermaid", "dot")
	pos, code := seqsArgs(env, "graph", fs, args, 1)
	if code >= 0 {
		return code
	}
	if code := fileTakesNoConn(env, "seqs graph", fs, pos[0]); code >= 0 {
		return code
	}
	return withSequence(ctx, env, "seqs graph", pos[0], func(s *seq.Sequence, _ json.RawMessage) int {
		if *format == "dot" {
			fmt.Fprint(env.Stdout, GraphDOT(s))
		} else {
			fmt.Fprint(env.Stdout, GraphMermaid(s))
		}
		return ExitOK
	})
}

func runSeqsRm(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "seqs rm", seqsCommand)
	pos, code := seqsArgs(env, "rm", fs, args, 1)
	if code >= 0 {
		return code
	}
	name := seq.NormalizeName(pos[0])
	return withClient(env, "seqs rm", func(c *client.Client) int {
		del, err := c.SeqDelete(ctx, name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus seqs rm: %v\n", describeRegistry(err, ""))
			return ExitFailure
		}
		fmt.Fprintf(env.Stdout, "deleted sequence %s\n", del.Name)
		return ExitOK
	})
}

// fileTakesNoConn refuses connection flags given with a sequence file,
// which is read from disk (the flags would be ignored); -1 when there is
// nothing to refuse.
func fileTakesNoConn(env Env, cmd string, fs *flag.FlagSet, name string) int {
	if st, err := os.Stat(name); err != nil || st.IsDir() {
		return -1
	}
	if f := givenAny(fs, natsconn.FlagNames()...); f != "" {
		fmt.Fprintf(env.Stderr, "skillbus %s: %s is a file, read from disk without NATS, so %s would be ignored; leave %s out, or give a stored sequence's name\n", cmd, name, f, f)
		return ExitUsage
	}
	return -1
}

// withSequence loads a sequence from a file (when name is one) or from the
// registry, and calls fn with it and its canonical JSON.
func withSequence(ctx context.Context, env Env, cmd, name string, fn func(*seq.Sequence, json.RawMessage) int) int {
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		data, code := readSequenceFile(env, cmd, name)
		if code >= 0 {
			return code
		}
		s, err := seq.ParseFile(name, data)
		if err != nil {
			printSeqProblems(env, name, err)
			return ExitFailure
		}
		raw, _ := seq.Encode(s)
		return fn(s, raw)
	} else if looksLikeFile(name) {
		fmt.Fprintf(env.Stderr, "skillbus %s: no sequence file %s\n", cmd, name)
		return ExitUsage
	}
	name = seq.NormalizeName(name)
	return withClient(env, cmd, func(c *client.Client) int {
		raw, err := c.SeqGet(ctx, name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", cmd, describeRegistry(err, clientSeqHint(ctx, c, name)))
			return ExitFailure
		}
		s, err := seq.Decode(raw)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus %s: stored sequence %q cannot be read: %v\n", cmd, name, err)
			return ExitFailure
		}
		return fn(s, raw)
	})
}

// describeRegistry turns an error of a pkg/client registry method into
// text: the registry's own message (with hint404 added to a "not found"
// that names no command), or what to start when no registry answers.
func describeRegistry(err error, hint404 string) string {
	var te *toolcall.Error
	if errors.As(err, &te) {
		return describe(te, hint404)
	}
	if errors.Is(err, client.ErrUnavailable) {
		return errtext.Error(err) + ": " + whoServes(events.RegistryPrefix)
	}
	return errtext.Error(err)
}

// scheduleWithZone is a schedule as a reader needs it: a cron expression
// with the zone it is read in ("0 0 3 * * * (Europe/Berlin)", "(UTC)" when
// the sequence names none), an interval (@every 10m) as it is, since an
// interval is the same in every zone (docs/sequences.md, Schedules).
func scheduleWithZone(schedule, tz string) string {
	if strings.HasPrefix(schedule, "@every") {
		return schedule
	}
	if tz == "" {
		tz = "UTC"
	}
	return schedule + " (" + tz + ")"
}

// describeSequence prints a sequence for a person.
func describeSequence(w io.Writer, s *seq.Sequence) {
	fmt.Fprintf(w, "%s %s\n", s.Name, s.Signature)
	if s.Description != "" {
		fmt.Fprintf(w, "  %s\n", s.Description)
	}
	if s.Boot {
		fmt.Fprintln(w, "  runs at every agent boot")
	}
	if s.Schedule != "" {
		fmt.Fprintf(w, "  schedule: %s\n", scheduleWithZone(s.Schedule, s.TimeZone))
	}
	for _, e := range s.Entries { // the list form (docs/sequences.md, Schedule entries)
		fmt.Fprintf(w, "  schedule %s: %s, overlap %s%s\n", e.Name, scheduleWithZone(e.Pattern(), e.TimeZone), e.Overlap, entryArgsText(e))
	}
	for i, g := range s.Groups {
		mode := "parallel"
		if !g.Parallel {
			mode = "in order"
		}
		if wf := g.WaitFor; wf != nil {
			// A wait has no calls: no parallelism, group timeout or
			// missing policy applies (docs/sequences.md, "wait_for").
			fmt.Fprintf(w, "\n%d. %s  (waits %s, on_error: %s", i+1, g.Name, waitForText(wf), g.OnError)
		} else {
			fmt.Fprintf(w, "\n%d. %s  (%s, timeout %s, missing: %s, on_error: %s", i+1, g.Name, mode, g.Timeout, g.Missing, g.OnError)
		}
		if g.Retries > 0 {
			fmt.Fprintf(w, ", retries %d", g.Retries)
		}
		fmt.Fprintln(w, ")")
		if g.Description != "" {
			fmt.Fprintf(w, "   %s\n", oneLine(g.Description, 200))
		}
		if len(g.In) > 0 {
			fmt.Fprintf(w, "   in:   %s\n", typesString(g.In))
		}
		if len(g.Out) > 0 {
			fmt.Fprintf(w, "   out:  %s\n", typesString(g.Out))
		}
		if g.When != "" {
			fmt.Fprintf(w, "   when: %s\n", g.When)
		}
		for _, c := range g.Tools {
			args, _ := json.Marshal(c.Args)
			fmt.Fprintf(w, "   - %s %s", c.Tool, oneLine(string(args), 120))
			if c.ForEach != "" {
				fmt.Fprintf(w, " for each of %s", c.ForEach)
				if c.MaxParallel > 0 {
					fmt.Fprintf(w, " (at most %d at once)", c.MaxParallel)
				}
			}
			if c.As != "" {
				fmt.Fprintf(w, " → %s", c.As)
			}
			if c.Fallback != "" {
				fmt.Fprintf(w, " (fallback %s)", c.Fallback)
			}
			fmt.Fprintln(w)
		}
	}
}

// waitForText says what a wait_for group waits for, in the words of
// docs/sequences.md: `for the signal "approve" (timeout 1h0m0s)`, `for
// 10m0s`, `until $args.at`.
func waitForText(wf *seq.WaitFor) string {
	switch wf.Kind() {
	case seq.WaitSignal:
		return fmt.Sprintf("for the signal %q (timeout %s)", wf.Signal, wf.Timeout)
	case seq.WaitUntil:
		return "until " + wf.Until
	}
	return "for " + wf.Duration.String()
}

func typesString(m map[string]seq.Type) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + string(m[k])
	}
	return strings.Join(parts, ", ")
}
