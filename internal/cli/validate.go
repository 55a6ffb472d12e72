package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skillbus/skillbus/internal/registry"
)

func validateCommand() command {
	return command{
		summary: "check sequence files and skills by the registry's rules; print every problem",
		usage: `Usage: skillbus validate [--strict] [-o json|yaml] [--max-payload BYTES] PATH...

Checks every sequence file (*.seq.json, *.seq.yaml, *.seq.yml) and every
skill (SKILL.md, skill.yaml) under each PATH by the rules the registry
applies when it loads them (skillbus dev, cmd/registry): the same file
names, skipped directories (.git, .hg, .svn, .jj, node_modules), symlink
and file-type rules, size limit, per-file checks and the checks across
files — two skills of one name, two sequences of one name, a group name
used by two sequences (the registry keeps the first path in byte order and
ignores the other). A directory is walked like the registry's tree; a FILE
named on the command line is checked even if its name is not one the
registry loads (as a sequence), with a warning saying so.

Prints one line per problem:

  FILE: group N "name": tool M "tool": field: message (line L)   (sequences)
  FILE:LINE: message                                              (skills)
  FILE:LINE: warning: message                                     (warnings)

and, for each valid file, FILE: ok: SUMMARY (a sequence's signature, the
run arguments it needs). Warnings do not make a file invalid: the registry
loads it (an unknown skill field such as allowed_tools is one: the
restriction it meant is not applied). A file the registry would ignore
because of its name — a sequence in deploy.yaml, a skill.md — is a warning.
Test files of skillbus test (*.test.yaml, docs/testing.md) are parsed too:
one that does not parse is invalid; a mocked tool that its sequence never
calls, and a skill name that no loaded skill has (in a skill.test.yaml),
are warnings.

Flags (anywhere on the line; -- ends them):
  --strict             warnings fail too (exit 1): for CI
  -o json|yaml         print one JSON object (see docs/skills.md,
                       "skillbus validate --json"), or the same as YAML,
                       instead of lines (--json: -o json)
  --max-payload BYTES  the max_payload of your NATS server (default
                       1048576, the server's default): a file or stored
                       definition larger than BYTES - 4096 is an error,
                       as the registry cannot store it

Examples:
  skillbus validate examples/
  skillbus validate examples/sequences/repo-survey.seq.yaml
  skillbus validate . --strict --json | jq '.files[] | select(.valid | not)'

Exit codes: 0 all files valid (and, with --strict, no warning), 1 some file
invalid (or a warning with --strict), 2 bad usage, no such PATH, or no
definition file found.
`,
		run:      runValidate,
		operands: operandPaths,
	}
}

// validateReport is the --json output of validate: every file checked
// (registry.FileReport), the counts and the verdict.
type validateReport struct {
	Files   []registry.FileReport `json:"files"`
	Checked int                   `json:"checked"` // definition files checked (files of kind "" and test files not counted)
	// Sequences, Skills and Tests count the files checked by kind: the
	// definitions (Checked is their sum) and the test files of skillbus
	// test (docs/testing.md).
	Sequences int  `json:"sequences"`
	Skills    int  `json:"skills"`
	Tests     int  `json:"tests"`
	Invalid   int  `json:"invalid"`  // files with an error
	Warnings  int  `json:"warnings"` // warnings, over all files
	Strict    bool `json:"strict"`
	OK        bool `json:"ok"` // exit code 0
}

func runValidate(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "validate", validateCommand)
	strict := fs.Bool("strict", false, "warnings fail too")
	out := outputFlags(fs, "json", "yaml")
	maxPayload := fs.String("max-payload", strconv.Itoa(registry.DefaultMaxPayload), "the NATS server's max_payload in bytes")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	mp, err := strconv.ParseInt(*maxPayload, 10, 64)
	if err != nil || mp <= 4096 || mp > 64<<20 {
		fmt.Fprintf(env.Stderr, "skillbus validate: --max-payload %q: give the server's max_payload in bytes, more than 4096 and at most 67108864 (64 MiB, the most NATS allows)\n", *maxPayload)
		return ExitUsage
	}
	if len(paths) == 0 {
		fmt.Fprintf(env.Stderr, "skillbus validate: no PATH given: give the sequence files, skill files or directories to check\n%s\n", helpHint("validate"))
		return ExitUsage
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus validate: %s\n", pathProblem(p, err))
			return ExitUsage
		}
	}
	defPaths, testPaths := splitTestPaths(paths) // validate_tests.go
	var reports []registry.FileReport
	if len(defPaths) > 0 {
		reports, err = registry.Check(defPaths, registry.CheckOptions{MaxPayload: mp})
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus validate: %v\n", err)
		return ExitFailure
	}
	if ctx.Err() != nil {
		return ExitFailure
	}
	reports = checkToolArgs(ctx, env, reports) // against the cluster's tool schemas, when one is named (validate_schema.go)
	reports = append(reports, checkTestFiles(defPaths, testPaths)...)
	rep := validateReport{Files: reports, Strict: *strict}
	for _, r := range reports {
		switch r.Kind {
		case "test":
			rep.Tests++
		case "sequence":
			rep.Sequences++
		case "skill":
			rep.Skills++
		}
		if r.Kind != "" && r.Kind != "test" {
			rep.Checked++
		}
		if !r.Valid {
			rep.Invalid++
		}
		for _, p := range r.Problems {
			if p.Warning {
				rep.Warnings++
			}
		}
	}
	code := ExitOK
	switch {
	case rep.Checked == 0 && rep.Tests == 0:
		code = ExitUsage
	case rep.Invalid > 0, *strict && rep.Warnings > 0:
		code = ExitFailure
	}
	rep.OK = code == ExitOK
	if !out.Structured(env.Stdout, rep) {
		printValidate(env.Stdout, rep)
	}
	if rep.Checked == 0 && rep.Tests == 0 {
		fmt.Fprintf(env.Stderr, "skillbus validate: no sequence (*.seq.json, *.seq.yaml, *.seq.yml) or skill (SKILL.md, skill.yaml) file under %s\n", strings.Join(paths, " "))
	}
	return code
}

// printValidate prints validate's lines: every problem, each valid file's
// summary, and the counts.
func printValidate(w io.Writer, out validateReport) {
	for _, r := range out.Files {
		for _, p := range r.Problems {
			fmt.Fprintln(w, problemLine(r, p))
		}
		if r.Valid && r.Summary != "" {
			fmt.Fprintf(w, "%s: ok: %s\n", r.Path, r.Summary)
		}
	}
	if out.Checked+out.Tests == 0 {
		return
	}
	fmt.Fprintf(w, "%d file(s) checked", out.Checked+out.Tests)
	if out.Tests > 0 { // with test files among them, say which kinds
		var kinds []string
		for _, k := range []struct {
			n          int
			one, other string
		}{{out.Sequences, "sequence", "sequences"}, {out.Skills, "skill", "skills"}, {out.Tests, "test file", "test files"}} {
			switch {
			case k.n == 1:
				kinds = append(kinds, "1 "+k.one)
			case k.n > 1:
				kinds = append(kinds, fmt.Sprintf("%d %s", k.n, k.other))
			}
		}
		fmt.Fprintf(w, " (%s)", strings.Join(kinds, ", "))
	}
	fmt.Fprintf(w, ", %d invalid", out.Invalid)
	if out.Warnings > 0 {
		fmt.Fprintf(w, ", %d warning(s)", out.Warnings)
		if out.Strict {
			fmt.Fprint(w, " (--strict: warnings fail)")
		}
	}
	fmt.Fprintln(w)
}

// problemLine renders one problem of r: `FILE: [warning: ][WHERE: ]MESSAGE
// (line L)` for a sequence (the form of pkg/seq's errors), else
// `FILE[:LINE]: [warning: ]MESSAGE`.
func problemLine(r registry.FileReport, p registry.Problem) string {
	warn := ""
	if p.Warning {
		warn = "warning: "
	}
	if r.Kind == "sequence" && (p.Where != "" || p.Line > 0) {
		msg := p.Message
		if p.Line > 0 {
			msg += fmt.Sprintf(" (line %d)", p.Line)
		}
		if p.Where != "" {
			msg = p.Where + ": " + msg
		}
		return r.Path + ": " + warn + msg
	}
	prefix := r.Path
	if p.Line > 0 {
		prefix = fmt.Sprintf("%s:%d", r.Path, p.Line)
	}
	return prefix + ": " + warn + p.Message
}

// pathProblem says in words why a PATH given to validate cannot be read:
// it does not exist (naming the first missing directory, if a parent is
// missing), it may not be read, or the system's own words for anything
// else.
func pathProblem(p string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		missing := ""
		for dir := filepath.Dir(p); dir != "." && dir != string(filepath.Separator); dir = filepath.Dir(dir) {
			if _, derr := os.Stat(dir); derr == nil {
				break
			}
			missing = dir
		}
		if missing != "" {
			missing = " (there is no directory " + missing + ")"
		}
		return fmt.Sprintf("%s does not exist%s; give the sequence files, skill files or directories to check (such as examples/)", p, missing)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s may not be read (permission denied); check its mode or run as a user who may read it", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s cannot be read: %v", p, pe.Err)
	}
	return err.Error()
}
