package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/seqtest"
	"github.com/skillbus/skillbus/internal/skilltest"
)

// splitTestPaths takes the test files named on validate's command line out
// of paths (the registry would check them as sequences).
func splitTestPaths(paths []string) (defs, tests []string) {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && strings.HasSuffix(p, seqtest.Suffix) {
			tests = append(tests, p)
			continue
		}
		defs = append(defs, p)
	}
	return defs, tests
}

// checkTestFiles checks the sequence test files (*.test.yaml, docs/testing.md)
// under dirs plus the files named: one report of kind "test" each, invalid
// when the file does not parse, with a warning for each mocked tool its
// sequence never calls.
func checkTestFiles(dirs, named []string) []registry.FileReport {
	var walk []string
	for _, p := range dirs {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			walk = append(walk, p)
		}
	}
	found, err := seqtest.Find(walk)
	if err != nil {
		found = nil
	}
	var reps []registry.FileReport
	for _, p := range append(found, named...) {
		r := registry.FileReport{Path: p, Kind: "test", Valid: true, Problems: []registry.Problem{}}
		if skilltest.IsSkillTest(p) {
			reps = append(reps, checkSkillTestFile(p))
			continue
		}
		f, err := seqtest.Load(p)
		if err != nil {
			var pe *seqtest.ParseError
			r.Valid = false
			if errors.As(err, &pe) {
				for _, q := range pe.All() { // every problem of the file, each at its line
					r.Problems = append(r.Problems, registry.Problem{File: p, Line: q.Line, Message: q.Message})
				}
			} else {
				r.Problems = append(r.Problems, registry.Problem{File: p, Message: err.Error()})
			}
			reps = append(reps, r)
			continue
		}
		ws, err := seqtest.Lint(f)
		if err != nil {
			r.Problems = append(r.Problems, registry.Problem{File: p, Message: err.Error(), Warning: true})
		}
		for _, w := range ws {
			r.Problems = append(r.Problems, registry.Problem{File: p, Line: w.Line, Message: w.Message, Warning: true})
		}
		r.Summary = fmt.Sprintf("tests of %s, %d case(s)", f.Sequence, len(f.Cases))
		reps = append(reps, r)
	}
	return reps
}

// checkSkillTestFile checks a skill's test file (skill.test.yaml,
// docs/testing.md): invalid when it does not parse, with a warning for
// each skill name no loaded skill has.
func checkSkillTestFile(p string) registry.FileReport {
	r := registry.FileReport{Path: p, Kind: "test", Valid: true, Problems: []registry.Problem{}}
	f, err := skilltest.Load(p)
	if err != nil {
		var pe *seqtest.ParseError
		msg, line := err.Error(), 0
		if errors.As(err, &pe) {
			msg, line = pe.Message, pe.Line
		}
		r.Valid = false
		r.Problems = append(r.Problems, registry.Problem{File: p, Line: line, Message: msg})
		return r
	}
	ws, err := skilltest.Lint(f)
	if err != nil {
		r.Problems = append(r.Problems, registry.Problem{File: p, Message: err.Error(), Warning: true})
	}
	for _, w := range ws {
		r.Problems = append(r.Problems, registry.Problem{File: p, Line: w.Line, Message: w.Message, Warning: true})
	}
	r.Summary = fmt.Sprintf("tests of the skill in %s, %d case(s)", f.Skill, len(f.Cases))
	return r
}
