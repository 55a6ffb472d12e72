package cli

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Problem is one thing wrong with a file, printed by `skillbus validate` as
// "FILE:LINE: MESSAGE" (LINE omitted when 0) or, for sequences,
// `FILE: group N "name": message` (the group prefix is part of Message).
type Problem struct {
	File    string
	Line    int // 1-based; 0 when the problem has no single line
	Message string
	Warning bool // a warning does not make the file invalid
}

func (p Problem) String() string {
	prefix := p.File
	if p.Line > 0 {
		prefix = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Warning {
		return prefix + ": warning: " + p.Message
	}
	return prefix + ": " + p.Message
}

// fileKind classifies a path for validate and for the registry's loader:
// sequences are *.seq.json, *.seq.yaml and *.seq.yml files; skills are files
// named SKILL.md or skill.yaml.
func fileKind(path string) string {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".seq.json"), strings.HasSuffix(base, ".seq.yaml"), strings.HasSuffix(base, ".seq.yml"):
		return "sequence"
	case base == "SKILL.md", base == "skill.yaml":
		return "skill"
	}
	return ""
}

func validateCommand() command {
	return command{
		summary: "check sequence files and skills; print every problem",
		usage: `Usage: skillbus validate PATH...

Checks every sequence file (*.seq.json, *.seq.yaml, *.seq.yml) and every
skill (SKILL.md, skill.yaml) under each PATH (a file or a directory, walked
recursively). Prints one line per problem:

  FILE: group N "name": message      (sequences)
  FILE:LINE: message                 (skills)

and, for each valid sequence, its signature (the run arguments it needs).

Examples:
  skillbus validate examples/
  skillbus validate examples/sequences/repo-survey.seq.yaml

Exit codes: 0 all files valid, 1 some file invalid, 2 bad usage or no file found.
`,
		run: runValidate,
	}
}

func runValidate(ctx context.Context, env Env, args []string) int {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(env.Stderr)
	fset.Usage = func() { fmt.Fprint(env.Stderr, validateCommand().usage) }
	if err := fset.Parse(args); err != nil {
		return ExitUsage
	}
	if fset.NArg() == 0 {
		fmt.Fprint(env.Stderr, "skillbus validate: no PATH given\n\n"+validateCommand().usage)
		return ExitUsage
	}
	var files []string
	for _, root := range fset.Args() {
		st, err := os.Stat(root)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus validate: %v\n", err)
			return ExitUsage
		}
		if !st.IsDir() {
			files = append(files, root)
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && fileKind(p) != "" {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus validate: %v\n", err)
			return ExitFailure
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		fmt.Fprintf(env.Stderr, "skillbus validate: no sequence (*.seq.json, *.seq.yaml) or skill (SKILL.md, skill.yaml) file under %s\n", strings.Join(fset.Args(), " "))
		return ExitUsage
	}
	invalid := 0
	for _, f := range files {
		if ctx.Err() != nil {
			return ExitFailure
		}
		var probs []Problem
		var summary string
		switch fileKind(f) {
		case "skill":
			probs, summary = validateSkillFile(f)
		default: // explicitly named files are treated as sequences
			probs, summary = validateSequenceFile(f)
		}
		bad := false
		for _, p := range probs {
			fmt.Fprintln(env.Stdout, p.String())
			if !p.Warning {
				bad = true
			}
		}
		if bad {
			invalid++
		} else if summary != "" {
			fmt.Fprintf(env.Stdout, "%s: ok: %s\n", f, summary)
		}
	}
	fmt.Fprintf(env.Stdout, "%d file(s) checked, %d invalid\n", len(files), invalid)
	if invalid > 0 {
		return ExitFailure
	}
	return ExitOK
}
