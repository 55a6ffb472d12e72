package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/seqtest"
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
		f, err := seqtest.Load(p)
		if err != nil {
			var pe *seqtest.ParseError
			msg, line := err.Error(), 0
			if errors.As(err, &pe) {
				msg, line = pe.Message, pe.Line
			}
			r.Valid = false
			r.Problems = append(r.Problems, registry.Problem{File: p, Line: line, Message: msg})
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
