package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/skillbus/skillbus/pkg/skill"
)

// validateSkillFile loads and validates one SKILL.md or skill.yaml with
// pkg/skill (DESIGN.md §5). It returns one Problem per error and per warning
// (Warning: true), each with its 1-based line when it has one, and, when the
// skill is valid, the summary `skill NAME (FORMAT, N lines, M sections,
// invocation I)`.
func validateSkillFile(path string) ([]Problem, string) {
	s, warns, err := skill.Load(path)
	var probs []Problem
	for _, fe := range skill.Problems(err) {
		file := fe.File
		if file == "" {
			file = path
		}
		msg := fe.Message
		if errors.Is(fe, fs.ErrNotExist) || errors.Is(fe, fs.ErrPermission) {
			msg = "cannot read the file: " + msg
		}
		probs = append(probs, Problem{File: file, Line: fe.Line, Message: msg})
	}
	for _, w := range warns {
		file := w.File
		if file == "" {
			file = path
		}
		probs = append(probs, Problem{File: file, Line: w.Line, Message: w.Message, Warning: true})
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	if err != nil || s == nil {
		return probs, ""
	}
	lines := 0
	if n := len(s.Sections); n > 0 {
		lines = s.Sections[n-1].End
	}
	titled := 0
	for _, sec := range s.Sections {
		if sec.Level > 0 {
			titled++
		}
	}
	return probs, fmt.Sprintf("skill %s (%s, %d body lines, %d sections, invocation %s)", s.Name, s.Format, lines, titled, s.Invocation)
}
