package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

func callCommand() command {
	return command{
		summary: "run one group of a stored sequence by its name (seq_call) and print its slots",
		usage: `Usage: skillbus call GROUP [--arg KEY=VALUE ...] [--args-file FILE] [-o json|yaml] [flags]

Runs the single group GROUP (group names are unique among the stored
sequences: they are signatures callable by a model with seq_call) with its
` + "`in`" + ` values, and prints its calls and its out slots. Every ` + "`in`" + ` key must
be given. GROUP is taken in Unicode NFC, as names are stored. -o json
(--json) or -o yaml prints the seqworker's reply (pkg/events SeqCallReply)
instead of the table; an error is also said on stderr. Needs NATS_URL.

` + argsUsage + `
Examples:
  skillbus call survey-inventory --arg root=.
  skillbus call fetch-repo --arg repo=nats-io/nats.go --arg limit=5 --json

Exit codes: 0 the group succeeded, 1 it failed (or no such group),
2 bad command line.
`,
		run:      runCall,
		operands: operandGroup,
	}
}

func runCall(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "call", callCommand)
	var argv stringList
	fs.Var(&argv, "arg", "argument KEY=VALUE (repeatable)")
	argsFile := fs.String("args-file", "", "JSON object of arguments")
	out := outputFlags(fs, "json", "yaml")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "skillbus call: give exactly one GROUP name\n%s\n", helpHint("call"))
		return ExitUsage
	}
	af, err := readArgsFile(env, *argsFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus call: %v\n", err)
		return ExitUsage
	}
	noteShadowed(env, "call", af, argv.values)
	group := seq.NormalizeName(pos[0])
	return withConn(env, "call", func(nc *nats.Conn) int {
		want, err := groupInputs(ctx, nc, group)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus call: %v\n", err)
			return ExitFailure
		}
		callArgs, err := buildArgs(want, af, argv.values, true)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus call: group %s: %v\n", group, err)
			return ExitUsage
		}
		raw, _ := json.Marshal(callArgs)
		c, err := client.New(nc, client.WithTimeout(requestTimeout))
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus call: %v\n", err)
			return ExitFailure
		}
		b, _ := json.Marshal(events.SeqCallRequest{Group: group, Args: raw})
		if err := checkPayload(nc, "the call request", len(b), af); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus call: group %s was not called: %v\n", group, err)
			return ExitFailure
		}
		reply, err := c.Call(ctx, group, raw)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus call: %v\n", describeClient(err, ""))
			return ExitFailure
		}
		if reply.Error != "" && len(reply.Result) == 0 {
			// The group never ran (a wait_for group, which only a run
			// can do): there is no table to show, only the error — on
			// stderr, also with -o json or yaml, whose stdout is the
			// reply (with the error in it), as for a group that failed.
			out.Structured(env.Stdout, reply)
			fmt.Fprintf(env.Stderr, "skillbus call: group %s was not run: %s\n", group, reply.Error)
			return ExitFailure
		}
		if !out.Structured(env.Stdout, reply) {
			var gr seq.GroupResult
			_ = json.Unmarshal(reply.Result, &gr)
			fmt.Fprintf(env.Stdout, "Group %s of %s: %s\n\n", reply.Group, reply.Sequence, gr.Status)
			printResultTable(env.Stdout, []seq.GroupResult{gr}, "")
			printSlots(env.Stdout, reply.Slots, nil)
		}
		if reply.Error != "" {
			fmt.Fprintf(env.Stderr, "skillbus call: group %s failed: %s\n", group, reply.Error)
			return ExitFailure
		}
		return ExitOK
	})
}

// groupInputs finds the stored sequence holding group and returns the
// group's `in` types. Errors: no such group (with how to list them), or the
// registry's.
func groupInputs(ctx context.Context, nc *nats.Conn, group string) (map[string]seq.Type, error) {
	var list registry.SeqList
	if err := request(ctx, nc, registry.SubjectSeqList, struct{}{}, &list); err != nil {
		return nil, err
	}
	for _, sum := range list.Sequences {
		for _, g := range sum.Groups {
			if g != group {
				continue
			}
			var raw json.RawMessage
			if err := request(ctx, nc, registry.SubjectSeqGet, registry.NameRequest{Name: sum.Name}, &raw); err != nil {
				return nil, err
			}
			s, err := seq.Decode(raw)
			if err != nil {
				return nil, fmt.Errorf("stored sequence %q cannot be read: %v", sum.Name, err)
			}
			if g, _ := s.Group(group); g != nil {
				if g.In == nil {
					return map[string]seq.Type{}, nil
				}
				return g.In, nil
			}
		}
	}
	return nil, fmt.Errorf("no stored sequence has a group named %q; %s", group, withDidYouMean(group, seqNames(&list, true), listGroupsHint))
}
