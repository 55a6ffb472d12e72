package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

func seqsCommand() command {
	return command{
		summary: "list, show, draw or delete stored sequences",
		usage: `Usage: skillbus seqs [ls] [--json]
       skillbus seqs show NAME [--json]
       skillbus seqs graph NAME [--format mermaid|dot]
       skillbus seqs rm NAME

ls (the default) lists the stored sequences: name, groups, signature, boot
and schedule, source. show prints one: its signature and each group with
its in/out slots, policies and tool calls (--json: the stored AST). graph
draws it — groups as stages in order, the parallel calls inside each, and
an edge from the call that writes a slot to every later group that reads
it — as Mermaid (default; paste into Markdown) or Graphviz DOT
(` + "`| dot -Tsvg`" + `). rm deletes a sequence created over NATS (seq_create); a
sequence from a file goes when its file is deleted.

NAME may also be a sequence file for show and graph, which then need no NATS;
otherwise NATS_URL must be set.

Examples:
  skillbus seqs
  skillbus seqs show project-survey
  skillbus seqs graph examples/sequences/project-survey.seq.yaml
  skillbus seqs graph project-survey --format dot | dot -Tsvg > survey.svg
  skillbus seqs rm scratch-flow

Exit codes: 0 success, 1 not found / not deletable / no registry answers,
2 bad command line.
`,
		run: runSeqs,
	}
}

func runSeqs(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "seqs", seqsCommand)
	asJSON := fs.Bool("json", false, "print JSON")
	format := fs.String("format", "mermaid", "graph format: mermaid or dot")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	sub := "ls"
	if len(pos) > 0 {
		sub, pos = pos[0], pos[1:]
	}
	bad := func() int {
		fmt.Fprintf(env.Stderr, "skillbus seqs: bad arguments %q\n\n%s", args, seqsCommand().usage)
		return ExitUsage
	}
	switch sub {
	case "ls":
		if len(pos) != 0 {
			return bad()
		}
		return withClient(env, "seqs", func(c *client.Client) int {
			list, err := c.SeqList(ctx)
			if err != nil {
				fmt.Fprintf(env.Stderr, "skillbus seqs: %v\n", describeRegistry(err, ""))
				return ExitFailure
			}
			if *asJSON {
				writeJSON(env.Stdout, list)
				return ExitOK
			}
			if len(list.Sequences) == 0 {
				fmt.Fprintln(env.Stdout, "no sequences stored (the registry loads *.seq.yaml and *.seq.json files from its directory)")
				return ExitOK
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tGROUPS\tSIGNATURE\tTRIGGERS\tSOURCE")
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
					trig = append(trig, s.Schedule)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, strings.Join(s.Groups, ", "), seq.Signature(sig), strings.Join(trig, ", "), s.Source)
			}
			tw.Flush()
			return ExitOK
		})
	case "show", "graph":
		if len(pos) != 1 {
			return bad()
		}
		if sub == "graph" && *format != "mermaid" && *format != "dot" {
			fmt.Fprintf(env.Stderr, "skillbus seqs graph: --format %q: use mermaid or dot\n", *format)
			return ExitUsage
		}
		return withSequence(ctx, env, "seqs "+sub, pos[0], func(s *seq.Sequence, raw json.RawMessage) int {
			switch {
			case sub == "graph" && *format == "dot":
				fmt.Fprint(env.Stdout, GraphDOT(s))
			case sub == "graph":
				fmt.Fprint(env.Stdout, GraphMermaid(s))
			case *asJSON:
				var v any
				_ = json.Unmarshal(raw, &v)
				writeJSON(env.Stdout, v)
			default:
				describeSequence(env.Stdout, s)
				if s.Schedule != "" && !looksLikeFile(pos[0]) {
					if line := scheduleState(ctx, env, s.Name); line != "" {
						fmt.Fprintf(env.Stdout, "\n  schedule state: %s\n", line)
					}
				}
			}
			return ExitOK
		})
	case "rm":
		if len(pos) != 1 {
			return bad()
		}
		return withClient(env, "seqs", func(c *client.Client) int {
			del, err := c.SeqDelete(ctx, pos[0])
			if err != nil {
				fmt.Fprintf(env.Stderr, "skillbus seqs rm: %v\n", describeRegistry(err, ""))
				return ExitFailure
			}
			fmt.Fprintf(env.Stdout, "deleted sequence %s\n", del.Name)
			return ExitOK
		})
	}
	return bad()
}

// withSequence loads a sequence from a file (when name is one) or from the
// registry, and calls fn with it and its canonical JSON.
func withSequence(ctx context.Context, env Env, cmd, name string, fn func(*seq.Sequence, json.RawMessage) int) int {
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", cmd, err)
			return ExitFailure
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
	return withClient(env, cmd, func(c *client.Client) int {
		raw, err := c.SeqGet(ctx, name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", cmd, describeRegistry(err, "list the stored sequences with `skillbus seqs`"))
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
		return err.Error() + ": " + whoServes(events.RegistryPrefix)
	}
	return err.Error()
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
		fmt.Fprintf(w, "  schedule: %s\n", s.Schedule)
	}
	for i, g := range s.Groups {
		mode := "parallel"
		if !g.Parallel {
			mode = "in order"
		}
		fmt.Fprintf(w, "\n%d. %s  (%s, timeout %s, missing: %s, on_error: %s", i+1, g.Name, mode, g.Timeout, g.Missing, g.OnError)
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
