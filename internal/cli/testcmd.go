package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/skillbus/skillbus/internal/seqtest"
)

func testCommand() command {
	return command{
		summary: "run the tests of sequences (NAME.test.yaml): mocked tools, the real engine, virtual time",
		usage: `Usage: skillbus test [--run PATTERN] [--junit FILE] [-o json] [PATH...]

Finds the test files (*.test.yaml) under each PATH (default .), and runs
every case in them: the sequence beside the test file (NAME.seq.yaml, or
the file its sequence: field names) runs in process with the real engine,
the same code as the seqworker, against the case's mocked tool results,
with no NATS server. Time is simulated: a timeout: 10m, a retry backoff or
a mock's delay: 1h takes no real time. The format of a test file and
every expectation are in docs/testing.md.

Prints each failing case with the expected and actual values and the
run's trace (groups and calls, in virtual time), then one line
"N passed, N failed".

Flags (anywhere on the line; -- ends them):
  --run PATTERN  run only the cases whose "FILE/CASE" matches the regular
                 expression PATTERN
  --junit FILE   also write the results as JUnit XML to FILE (for CI)
  -o json        print one JSON object (every case, the counts) instead

Examples:
  skillbus test
  skillbus test examples/sequences --run 'repo-survey.*/retries'
  skillbus test . --junit test-results.xml

Exit codes: 0 every case passed, 1 some case failed, 2 bad usage, no test
file found, or a test file that does not parse (FILE:LINE: message).
`,
		run:      runTest,
		operands: operandPaths,
	}
}

func runTest(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "test", testCommand)
	pattern := fs.String("run", "", "run only the cases whose FILE/CASE matches")
	junit := fs.String("junit", "", "write JUnit XML to FILE")
	out := outputFlags(fs, "json")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var filter *regexp.Regexp
	if *pattern != "" {
		if filter, err = regexp.Compile(*pattern); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus test: --run %q is not a regular expression: %v\n", *pattern, err)
			return ExitUsage
		}
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			fmt.Fprintf(env.Stderr, "skillbus test: %s\n", pathProblem(p, err))
			return ExitUsage
		}
	}
	files, err := seqtest.Find(paths)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus test: %v\n", err)
		return ExitUsage
	}
	if len(files) == 0 {
		fmt.Fprintf(env.Stderr, "skillbus test: no test file (*%s) under %v; see docs/testing.md\n", seqtest.Suffix, paths)
		return ExitUsage
	}
	var sum seqtest.Summary
	for _, p := range files {
		if ctx.Err() != nil {
			return ExitFailure
		}
		f, err := seqtest.Load(p)
		if err != nil {
			var pe *seqtest.ParseError
			if !errors.As(err, &pe) {
				pe = &seqtest.ParseError{Path: p, Message: err.Error()}
			}
			sum.Errors = append(sum.Errors, pe.Error())
			continue
		}
		for _, r := range seqtest.RunFile(ctx, f, filter) {
			sum.Add(r)
		}
	}
	if filter != nil && sum.Passed+sum.Failed == 0 && len(sum.Errors) == 0 {
		fmt.Fprintf(env.Stderr, "skillbus test: no case matches --run %q (cases are matched as FILE/CASE)\n", *pattern)
	}
	if *junit != "" {
		jf, err := os.Create(*junit)
		if err == nil {
			err = seqtest.WriteJUnit(jf, &sum)
			if cerr := jf.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus test: --junit %s: %v\n", *junit, err)
			return ExitFailure
		}
	}
	if !out.Structured(env.Stdout, sum) {
		for _, r := range sum.Results {
			if !r.Passed {
				seqtest.WriteFailure(env.Stdout, r)
			}
		}
		for _, e := range sum.Errors {
			fmt.Fprintf(env.Stderr, "skillbus test: %s\n", e)
		}
		fmt.Fprintf(env.Stdout, "%d passed, %d failed\n", sum.Passed, sum.Failed)
	}
	switch {
	case len(sum.Errors) > 0:
		return ExitUsage
	case sum.Failed > 0:
		return ExitFailure
	}
	return ExitOK
}
