package seqtest

import (
	"fmt"
	"os"
	"sort"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Warning is a problem of a test file that does not stop it from running.
type Warning struct {
	Line    int
	Message string
}

// Lint checks f against its sequence: a mocked tool that the sequence never
// calls is a warning (a renamed tool, a typo: the mock is dead and the case
// may not test what it says). A sequence that does not parse gives an
// error (skillbus validate reports it at the sequence file too).
func Lint(f *File) ([]Warning, error) {
	data, err := os.ReadFile(f.Sequence)
	if err != nil {
		return nil, err
	}
	s, err := seq.ParseFile(f.Sequence, data)
	if err != nil {
		return nil, fmt.Errorf("the sequence under test %s does not parse", f.Sequence)
	}
	calls := map[string]bool{}
	for _, g := range s.Groups {
		for _, c := range g.Tools {
			calls[c.Tool] = true
		}
	}
	var ws []Warning
	for _, c := range f.Cases {
		for _, tool := range sortedKeys(c.Mocks) {
			if !calls[tool] {
				ws = append(ws, Warning{Line: c.Mocks[tool].Line, Message: fmt.Sprintf("case %q mocks the tool %q, which the sequence %s never calls", c.Name, tool, s.Name)})
			}
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Line < ws[j].Line })
	return ws, nil
}
