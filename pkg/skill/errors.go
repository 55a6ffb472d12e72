package skill

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every problem that Load and Parse report is a *FieldError
// that wraps exactly one of these, so callers can branch with errors.Is and
// read the position with errors.As. When a file has several problems they
// are joined (errors.Join) in file order; Problems lists them.
var (
	// ErrSyntax: the YAML (frontmatter or skill.yaml) is not well-formed.
	ErrSyntax = errors.New("skill: YAML syntax error")
	// ErrNoFrontmatter: a SKILL.md does not start with a "---" line.
	ErrNoFrontmatter = errors.New("skill: no frontmatter")
	// ErrUnclosedFrontmatter: the frontmatter's closing "---" line is missing.
	ErrUnclosedFrontmatter = errors.New("skill: frontmatter not closed")
	// ErrMissingField: a required field (name, description, …) is absent or
	// empty.
	ErrMissingField = errors.New("skill: missing field")
	// ErrWrongType: a known field holds the wrong kind of YAML value (a list
	// where a string is expected, …).
	ErrWrongType = errors.New("skill: wrong type")
	// ErrBadValue: a known field holds an illegal value: an enum value out of
	// its set, a malformed name or glob, a version below 1.
	ErrBadValue = errors.New("skill: illegal value")
	// ErrNameMismatch: the name differs from the skill's directory name.
	ErrNameMismatch = errors.New("skill: name does not match directory")
	// ErrConflict: two fields contradict each other (a tool both allowed and
	// disallowed; invocation against disable-model-invocation/user-invocable).
	ErrConflict = errors.New("skill: conflicting fields")
	// ErrDuplicate: a key, step name, ref name or guardrail id appears twice.
	ErrDuplicate = errors.New("skill: duplicate")
	// ErrUnknownField: an unknown key inside a skill.yaml step, ref or
	// guardrail (unknown top-level keys are warnings, not errors).
	ErrUnknownField = errors.New("skill: unknown field")
	// ErrUnknownStep: a step's depends names no step.
	ErrUnknownStep = errors.New("skill: unknown step")
	// ErrCycle: the steps' depends form a cycle.
	ErrCycle = errors.New("skill: dependency cycle")
	// ErrNotFound: Load was given a directory with no SKILL.md or
	// skill.yaml, or a file of another name.
	ErrNotFound = errors.New("skill: no skill file")
)

// FieldError is one problem in a skill file: where it is, which field, and
// what is wrong in words a person can act on.
type FieldError struct {
	File    string // the path given to Load, or the format name for Parse
	Line    int    // 1-based line in File; 0 when no single line is at fault
	Field   string // the field's path, e.g. "name", "steps[2].depends"; "" for the whole file
	Message string // what is wrong and how to fix it, without the position
	Err     error  // one of the package's sentinel errors
}

// Error returns "FILE:LINE: MESSAGE" (":LINE" left out when Line is 0).
func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// Unwrap returns the sentinel error.
func (e *FieldError) Unwrap() error { return e.Err }

// Warning is a problem that does not stop a skill from loading: an unknown
// frontmatter key, a description over the Agent Skills length limit. It is
// returned beside the skill and kept in the record, never dropped silently.
type Warning struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"` // 1-based; 0 when no single line
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// String returns "FILE:LINE: warning: MESSAGE".
func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: warning: %s", w.File, w.Line, w.Message)
	}
	return fmt.Sprintf("%s: warning: %s", w.File, w.Message)
}

// Problems returns every *FieldError in err (which Load and Parse build
// with errors.Join), in order; nil for a nil err. An error that holds no
// FieldError is returned as one with only Message set.
func Problems(err error) []*FieldError {
	if err == nil {
		return nil
	}
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		var fe *FieldError
		if errors.As(e, &fe) && fe == e {
			out = append(out, fe)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if errors.As(e, &fe) {
			out = append(out, fe)
			return
		}
		out = append(out, &FieldError{Message: e.Error()})
	}
	walk(err)
	return out
}
