package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/skillbus/skillbus/internal/seqtest"
	"github.com/skillbus/skillbus/internal/skilltest"
	"github.com/skillbus/skillbus/pkg/tool"
)

func testCommand() command {
	return command{
		summary: "run the tests of sequences (NAME.test.yaml: mocked tools, virtual time) and skills (skill.test.yaml)",
		usage: `Usage: skillbus test [--run PATTERN] [--junit FILE] [-o json] [--update] [--cluster] [PATH...]

Finds the test files (*.test.yaml) under each PATH (default .), and runs
every case in them, in process with no NATS server:

- a sequence's NAME.test.yaml: the sequence beside it (NAME.seq.yaml, or
  the file its sequence: field names) runs with the real engine, the same
  code as the seqworker, against the case's mocked tool results. Time is
  simulated: a timeout: 10m, a retry backoff or a mock's delay: 1h takes
  no real time.
- a skill's skill.test.yaml (in the skill's directory, beside SKILL.md or
  skill.yaml): each case's message is assembled by the real skillface
  assembler, and the case checks which skills activate and why, the tool
  surface, the injected bodies and the listing.

The format of both and every expectation are in docs/testing.md.

Prints each failing case with the expected and actual values and the
run's trace (groups and calls, in virtual time; for a skill test, each
skill's outcome and reasons), then one line "N passed, N failed".

Flags (anywhere on the line; -- ends them):
  --run PATTERN  run only the cases whose "FILE/CASE" matches the regular
                 expression PATTERN (one that matches no case fails: exit 1)
  --junit FILE   also write the results as JUnit XML to FILE (for CI)
  -o json        print one JSON object (every case, the counts) instead
  --cluster      call the tools a case does not mock on the cluster at
                 NATS_URL (real providers) instead of failing the case;
                 virtual time stands still during such a call
  --update       rewrite the expected slot values (expect.slots) of the
                 sequence cases marked update: true from the actual ones,
                 keeping the file's comments, then run them again

Examples:
  skillbus test
  skillbus test examples/sequences --run 'repo-survey.*/retries'
  skillbus test examples/skills/k8s-rollout-check
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
	update := fs.Bool("update", false, "rewrite expected slots of cases marked update: true")
	cluster := fs.Bool("cluster", false, "call the tools a case does not mock on the cluster at NATS_URL")
	out := outputFlags(fs, "json")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	var opt seqtest.Options
	if *cluster {
		nc, err := connect(env, "test")
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus test: --cluster: %v\n", err)
			return connectExit(err)
		}
		defer drainWait(nc, 5*time.Second)
		tc, err := tool.NewClient(nc)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus test: --cluster: %v\n", err)
			return ExitFailure
		}
		opt.Tools = tc
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
		results, err := runTestFile(ctx, p, filter, *update, opt, env)
		if err != nil {
			var pe *seqtest.ParseError
			if !errors.As(err, &pe) {
				pe = &seqtest.ParseError{Path: p, Message: err.Error()}
			}
			for _, q := range pe.All() { // every problem of the file, each at its line
				sum.Errors = append(sum.Errors, q.Error())
			}
			continue
		}
		for _, r := range results {
			sum.Add(r)
		}
	}
	// A --run that selects nothing fails: a mistyped pattern must not pass
	// in CI as if every case passed.
	noMatch := filter != nil && sum.Passed+sum.Failed == 0 && len(sum.Errors) == 0
	if noMatch {
		fmt.Fprintf(env.Stderr, "skillbus test: no case matches --run %q (cases are matched as FILE/CASE); nothing was tested, so this is a failure\n", *pattern)
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
	case sum.Failed > 0, noMatch:
		return ExitFailure
	}
	return ExitOK
}

// runTestFile parses and runs one test file: a skill's skill.test.yaml
// (internal/skilltest) or a sequence's NAME.test.yaml (internal/seqtest).
// With update, a sequence test file's cases marked update: true get their
// expected slots rewritten from the actual ones, and the file runs again.
// A file that does not parse gives its *seqtest.ParseError.
func runTestFile(ctx context.Context, path string, filter *regexp.Regexp, update bool, opt seqtest.Options, env Env) ([]seqtest.Result, error) {
	if skilltest.IsSkillTest(path) {
		f, err := skilltest.Load(path)
		if err != nil {
			return nil, err
		}
		return skilltest.RunFile(ctx, f, filter), nil
	}
	f, err := seqtest.Load(path)
	if err != nil {
		return nil, err
	}
	results := seqtest.RunFileWith(ctx, f, filter, opt)
	if !update {
		return results, nil
	}
	n, err := seqtest.Update(f, results)
	if err != nil {
		return nil, fmt.Errorf("--update: %w", err)
	}
	if n == 0 {
		return results, nil
	}
	fmt.Fprintf(env.Stderr, "skillbus test: --update rewrote %d expected slot value(s) in %s\n", n, path)
	if f, err = seqtest.Load(path); err != nil {
		return nil, err
	}
	return seqtest.RunFileWith(ctx, f, filter, opt), nil
}
