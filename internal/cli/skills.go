package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

func skillsCommand() command {
	return command{
		summary: "list the stored skills, or show one (its table of contents or a section)",
		usage: `Usage: skillbus skills [ls] [--json]
       skillbus skills info NAME [SECTION] [--json]

ls (the default) lists the skills in the SKILLS bucket: name, source file and
description, then the warnings of the skills that have any (an unknown field
such as allowed_tools, which the registry ignores: the restriction it meant
is not applied; skillbus validate shows the same). info prints a skill as
skill_info gives it to a model: the whole text of a short skill, or the
first 30 lines and a table of contents of a long one; with SECTION, that
section and its subsections (title matched exactly, then as a substring,
case and spaces ignored); a part longer than 64 KiB is cut with a note. Its
warnings go to stderr, so stdout is exactly what a model reads. Flags may
come before or after the arguments. Needs NATS_URL.

Examples:
  skillbus skills
  skillbus skills info jetstream-incident
  skillbus skills info jetstream-incident "consumer lag"

Exit codes: 0 success, 1 not found or no registry answers, 2 bad command line.
`,
		run: runSkills,
	}
}

func runSkills(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "skills", skillsCommand)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	sub := "ls"
	if len(pos) > 0 {
		sub, pos = pos[0], pos[1:]
	}
	switch {
	case sub == "ls" && len(pos) == 0:
		return withClient(env, "skills", func(c *client.Client) int {
			list, err := c.SkillList(ctx)
			if err != nil {
				fmt.Fprintf(env.Stderr, "skillbus skills: %v\n", describeRegistry(err, ""))
				return ExitFailure
			}
			if *asJSON {
				writeJSON(env.Stdout, list)
				return ExitOK
			}
			if len(list.Skills) == 0 {
				fmt.Fprintln(env.Stdout, "no skills stored (the registry loads SKILL.md and skill.yaml files from its directory)")
				return ExitOK
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
			var warned []events.SkillSummary
			for _, s := range list.Skills {
				desc := oneLine(s.Description, 80)
				if len(s.Warnings) > 0 {
					warned = append(warned, s)
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
	case sub == "info" && (len(pos) == 1 || len(pos) == 2):
		name, section := pos[0], ""
		if len(pos) == 2 {
			section = pos[1]
		}
		return withClient(env, "skills", func(c *client.Client) int {
			info, err := c.SkillInfo(ctx, name, section)
			if err != nil {
				fmt.Fprintf(env.Stderr, "skillbus skills info: %v\n", describeRegistry(err, "list the skills with `skillbus skills`"))
				return ExitFailure
			}
			if *asJSON {
				writeJSON(env.Stdout, info)
				return ExitOK
			}
			for _, w := range info.Warnings {
				fmt.Fprintf(env.Stderr, "skillbus skills info: warning: %s\n", oneLine(w, 300))
			}
			fmt.Fprint(env.Stdout, info.Text)
			if info.Text != "" && info.Text[len(info.Text)-1] != '\n' {
				fmt.Fprintln(env.Stdout)
			}
			return ExitOK
		})
	}
	fmt.Fprintf(env.Stderr, "skillbus skills: bad arguments %q\n\n%s", args, skillsCommand().usage)
	return ExitUsage
}
