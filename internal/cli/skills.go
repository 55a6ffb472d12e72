package cli

import (
	"context"
	"fmt"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

func skillsCommand() command {
	return command{
		summary: "list the stored skills, or show one (its table of contents or a section)",
		usage: `Usage: skillbus skills [ls] [-o json|yaml|wide] [flags]
       skillbus skills info NAME [SECTION] [-o json|yaml]

ls (the default) lists the skills in the SKILLS bucket: name, source file and
description, then the warnings of the skills that have any (an unknown field
such as allowed_tools, which the registry ignores: the restriction it meant
is not applied; skillbus validate shows the same); -o wide shows the whole
description and the number of warnings. info prints a skill as
skill_info gives it to a model: the whole text of a short skill, or the
first 30 lines and a table of contents of a long one; with SECTION, that
section and its subsections (title matched exactly, then as a substring,
case and spaces ignored); a part longer than 64 KiB is cut with a note. Its
warnings go to stderr, so stdout is exactly what a model reads. -o json or
-o yaml prints the registry's reply instead (--json is -o json). Flags may
come before or after the arguments. Needs NATS_URL.

Examples:
  skillbus skills
  skillbus skills info jetstream-incident
  skillbus skills info jetstream-incident "consumer lag"

Exit codes: 0 success, 1 not found or no registry answers, 2 bad command line.
`,
		run: runSkillsList,
		subs: func() map[string]command {
			return map[string]command{
				"ls":   skillsSub("list the stored skills", operandNone, runSkillsList),
				"info": skillsSub("show a skill as a model reads it: whole, its contents, or a section", operandSkill, runSkillsInfo),
			}
		},
	}
}

// skillsSub is a subcommand of skills; its usage is the skills usage.
func skillsSub(summary string, operands operandKind, run func(context.Context, Env, []string) int) command {
	return command{summary: summary, usage: skillsCommand().usage, run: run, operands: operands}
}

func runSkillsList(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "skills ls", skillsCommand)
	out := outputFlags(fs, "json", "yaml", "wide")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		return unknownSubcommand(env, "skills", pos, []string{"ls", "info"}, "ls and info NAME [SECTION]")
	}
	return withClient(env, "skills ls", func(c *client.Client) int {
		list, err := c.SkillList(ctx)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus skills: %v\n", describeRegistry(err, ""))
			return ExitFailure
		}
		if out.Structured(env.Stdout, list) {
			return ExitOK
		}
		if len(list.Skills) == 0 {
			fmt.Fprintln(env.Stdout, "no skills stored (the registry loads SKILL.md and skill.yaml files from its directory)")
			return ExitOK
		}
		tw := newTable(env.Stdout)
		if out.Wide() {
			fmt.Fprintln(tw, "NAME\tSOURCE\tWARNINGS\tDESCRIPTION")
		} else {
			fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
		}
		var warned []events.SkillSummary
		for _, s := range list.Skills {
			if len(s.Warnings) > 0 {
				warned = append(warned, s)
			}
			if out.Wide() {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", s.Name, s.Source, len(s.Warnings), oneLine(s.Description, 1024))
				continue
			}
			desc := oneLine(s.Description, 80)
			if len(s.Warnings) > 0 {
				desc = fmt.Sprintf("(%d warning(s), below) %s", len(s.Warnings), desc)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Source, desc)
		}
		tw.Flush()
		if len(warned) > 0 {
			fmt.Fprintln(env.Stdout, "\nWarnings (the skill is loaded, but may not do what its author meant):")
			for _, s := range warned {
				for _, w := range s.Warnings {
					fmt.Fprintf(env.Stdout, "  %s: %s\n", s.Name, oneLine(w, 300))
				}
			}
		}
		return ExitOK
	})
}

func runSkillsInfo(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "skills info", skillsCommand)
	out := outputFlags(fs, "json", "yaml")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 && len(pos) != 2 {
		fmt.Fprintf(env.Stderr, "skillbus skills info: got %s: give a skill's NAME and at most one SECTION\n%s\n", gotArgs(pos), helpHint("skills info"))
		return ExitUsage
	}
	name, section := pos[0], ""
	if len(pos) == 2 {
		section = pos[1]
	}
	return withClient(env, "skills info", func(c *client.Client) int {
		info, err := c.SkillInfo(ctx, name, section)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus skills info: %v\n", describeRegistry(err, clientSkillHint(ctx, c, name)))
			return ExitFailure
		}
		if out.Structured(env.Stdout, info) {
			return ExitOK
		}
		for _, w := range info.Warnings {
			fmt.Fprintf(env.Stderr, "skillbus skills info: warning: %s\n", oneLine(w, 300))
		}
		fmt.Fprint(env.Stdout, termSafe(info.Text)) // a skill from anyone's repository: no raw escapes
		if info.Text != "" && info.Text[len(info.Text)-1] != '\n' {
			fmt.Fprintln(env.Stdout)
		}
		return ExitOK
	})
}
