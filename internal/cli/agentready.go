package cli

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

func agentReadyCommand() command {
	return command{
		summary: "announce that an agent (re)started, so boot sequences run for it",
		usage: `Usage: skillbus agent-ready AGENT [--boot-id ID] [flags]

Publishes agent_ready for AGENT on events.agent_ready.AGENT (EVENTS stream).
Every stored sequence with boot: true then runs once for this agent and boot
id, however many seqworkers there are; publishing the same boot id again
starts nothing new. Prints the boot id. Needs NATS_URL.

AGENT is a name as sequences have them: 1 to 64 letters and digits of any
script, '-' and '_', starting with a letter (docs/sequences.md, "Names");
a name that is not ASCII travels encoded in the subject and in the boot
runs' ids (boot-_5py65Zmo5Lq6-… for 机器人); watch and runs show print it
as it was given (docs/sequences.md, "Boot sequences").

Flags:
  --boot-id ID   the boot's id: ASCII letters, digits, '-' and '_'
                 (default a new one: every call is a new boot)

Examples:
  skillbus agent-ready support-bot
  skillbus agent-ready support-bot --boot-id 2026-11-30-a
  skillbus agent-ready 机器人

Exit codes: 0 published, 1 not published (no NATS, no EVENTS stream),
2 bad command line.
`,
		run: runAgentReady,
	}
}

func runAgentReady(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "agent-ready", agentReadyCommand)
	bootID := fs.String("boot-id", "", "the boot's id")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "skillbus agent-ready: give exactly one AGENT name\n%s\n", helpHint("agent-ready"))
		return ExitUsage
	}
	if err := events.CheckNameLength("agent name", pos[0]); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus agent-ready: %v\n", err)
		return ExitUsage
	}
	pos[0] = seq.NormalizeName(pos[0])
	if err := seq.CheckName(pos[0]); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus agent-ready: agent: %v\n", err)
		return ExitUsage
	}
	if *bootID == "" {
		*bootID = nuid.Next()
	} else if err := checkBootID(*bootID); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus agent-ready: %v\n", err)
		return ExitUsage
	}
	return withConn(env, "agent-ready", func(nc *nats.Conn) int {
		ev, err := publishAgentReady(ctx, nc, pos[0], *bootID)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus agent-ready: %v\n", err)
			return ExitFailure
		}
		fmt.Fprintf(env.Stdout, "agent_ready published for agent %s, boot id %s\n", ev.Agent, ev.BootID)
		return ExitOK
	})
}

// checkBootID checks a --boot-id by the rule agent names follow: one NATS
// subject token (pkg/events token rule) that is also its own KV key
// (events.KeyFor), written only with letters, digits, '-' and '_' — the
// boot id names the boot runs and the agent_ready message id.
func checkBootID(id string) error {
	if len(id) > events.MaxIDLength {
		return fmt.Errorf("--boot-id is %d bytes long; the limit is %d", len(id), events.MaxIDLength)
	}
	if _, err := events.AgentReadySubject(id); err != nil || events.KeyFor(id) != id || !validToken(id) {
		return fmt.Errorf("--boot-id %q: use only letters, digits, '-' and '_' (for example 2026-11-30-a)", id)
	}
	return nil
}
