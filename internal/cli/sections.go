package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillbus/skillbus/pkg/sections"
)

func sectionsCommand() command {
	return command{
		summary: "show how a Markdown file (e.g. a SKILL.md) splits into sections",
		usage: `Usage: skillbus sections [-o json|yaml] PATH
       skillbus sections PATH --json

Splits the Markdown file PATH at every heading, of any level (# to ######,
and setext === / ---), as skill_info does: a section runs from its heading
to the next heading of any level, so sections do not contain their
subsections. CommonMark headings only: never inside code blocks, HTML
blocks, block quotes or list items; YAML front matter is left out of the
headings and belongs to the leading untitled section.

Prints one line per section, indented by heading level:

  TITLE  lines START–END (N lines)

with 1-based, inclusive line numbers. With --json, prints an array of
{"level","title","start","end"} objects instead: 0-based lines, end
exclusive; the untitled leading section has level 0 and an empty title.
-o json is --json; -o yaml prints the same array as YAML.

Flags may come before or after PATH; -- ends them (skillbus sections --
--odd-name.md).

Examples:
  skillbus sections examples/skills/jetstream-incident/SKILL.md
  skillbus sections README.md --json | jq '.[] | select(.level == 2) | .title'

Exit codes: 0 success, 1 the file exists but cannot be read (or is not a
regular file: a named pipe, a device), 2 bad usage (no such file, or PATH is
a directory).
`,
		run:      runSections,
		operands: operandMarkdown,
	}
}

func runSections(ctx context.Context, env Env, args []string) int {
	fset := newFlags(env, "sections", sectionsCommand)
	out := outputFlags(fset, "json", "yaml")
	pos, err := parseInterleaved(fset, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "skillbus sections: give exactly one PATH, got %s\n%s\n", gotArgs(pos), helpHint("sections"))
		return ExitUsage
	}
	path := pos[0]
	if st, err := os.Stat(path); err != nil && errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(env.Stderr, "skillbus sections: no file %s; give the path of a Markdown file\n", path)
		return ExitUsage
	} else if err == nil && st.IsDir() {
		fmt.Fprintf(env.Stderr, "skillbus sections: %s is a directory; give the path of a Markdown file (such as %s)\n", path, filepath.Join(path, "SKILL.md"))
		return ExitUsage
	} else if err == nil && !st.Mode().IsRegular() {
		fmt.Fprintf(env.Stderr, "skillbus sections: %s is not a regular file (mode %s); give the path of a Markdown file\n", path, st.Mode())
		return ExitFailure
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus sections: %v\n", err)
		return ExitFailure
	}
	text := string(data)
	secs := sections.Split(text)
	if out.format != "" {
		if secs == nil {
			secs = []sections.Section{}
		}
		out.Structured(env.Stdout, secs)
		return ExitOK
	}
	if len(secs) == 0 {
		fmt.Fprintf(env.Stdout, "%s: empty file, no sections\n", path)
		return ExitOK
	}
	minLevel := 7
	for _, s := range secs {
		if s.Level > 0 {
			minLevel = min(minLevel, s.Level)
		}
	}
	for _, s := range secs {
		title, indent := termSafe(strings.ReplaceAll(s.Title, "\n", " ")), ""
		if s.Level == 0 {
			title = "(before the first heading)"
			if fm := sections.FrontMatterEnd(text); fm > 0 && fm <= s.End {
				title = "(front matter and text before the first heading)"
				if fm == s.End {
					title = "(front matter)"
				}
			}
		} else {
			indent = strings.Repeat("  ", s.Level-minLevel)
			title = strings.Repeat("#", s.Level) + " " + title
		}
		n := s.End - s.Start
		unit := "lines"
		if n == 1 {
			unit = "line"
		}
		fmt.Fprintf(env.Stdout, "%s%s  lines %d–%d (%d %s)\n", indent, title, s.Start+1, s.End, n, unit)
	}
	return ExitOK
}
