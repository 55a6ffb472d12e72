package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"

	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/skill"
)

// definition is one valid skill or sequence, ready for its bucket.
type definition struct {
	kind   string // kindSkill or kindSequence
	name   string
	source string // rel path of its file; "" when created over NATS
	value  []byte // the JSON stored in the bucket
	sum    string // sha256 of value: change detection
	// For sequences: group names (unique across stored sequences).
	groups []string
	// For listings.
	description string
}

// Problem is one thing wrong with a definition file: where and what.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"` // 1-based; 0 when unknown
	Where   string `json:"where,omitempty"`
	Message string `json:"message"`
}

// String returns "FILE:LINE: WHERE: MESSAGE", the parts that are empty left
// out.
func (p Problem) String() string {
	s := p.File
	if p.Line > 0 {
		s = fmt.Sprintf("%s:%d", s, p.Line)
	}
	if p.Where != "" {
		if s != "" {
			s += ": "
		}
		s += p.Where
	}
	if s != "" {
		s += ": "
	}
	return s + p.Message
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// loadFile parses one scanned file into a definition, or returns its
// problems.
func loadFile(f *scanned) (*definition, []Problem) {
	if f.err != nil {
		return nil, []Problem{{File: f.rel, Message: "cannot read the file: " + f.err.Error()}}
	}
	switch f.kind {
	case kindSkill:
		return loadSkill(f.rel, f.abs, f.data)
	default:
		return loadSequence(f.rel, f.data)
	}
}

func loadSkill(rel, abs string, data []byte) (*definition, []Problem) {
	format := skill.FormatMarkdown
	if filepath.Base(rel) == "skill.yaml" {
		format = skill.FormatYAML
	}
	dir := path.Base(path.Dir(rel))
	if path.Dir(rel) == "." {
		dir = filepath.Base(filepath.Dir(abs))
	}
	s, _, err := skill.Parse(data, format, dir)
	if err != nil {
		var probs []Problem
		for _, fe := range skill.Problems(err) {
			probs = append(probs, Problem{File: rel, Line: fe.Line, Where: fe.Field, Message: fe.Message})
		}
		if len(probs) == 0 {
			probs = []Problem{{File: rel, Message: err.Error()}}
		}
		return nil, probs
	}
	s.Source = rel
	v, err := json.Marshal(s)
	if err != nil {
		return nil, []Problem{{File: rel, Message: "cannot encode the skill record: " + err.Error()}}
	}
	return &definition{kind: kindSkill, name: s.Name, source: rel, value: v, sum: sum(v), description: s.Description}, nil
}

func loadSequence(rel string, data []byte) (*definition, []Problem) {
	s, err := seq.ParseFile(rel, data)
	if err != nil {
		return nil, seqProblems(rel, err)
	}
	d, err := sequenceDefinition(s, rel)
	if err != nil {
		return nil, []Problem{{File: rel, Message: err.Error()}}
	}
	return d, nil
}

// seqProblems turns pkg/seq's errors into Problems (one per *seq.Error).
func seqProblems(file string, err error) []Problem {
	var es seq.Errors
	if errors.As(err, &es) {
		probs := make([]Problem, 0, len(es))
		for _, e := range es {
			probs = append(probs, Problem{File: file, Line: e.Line, Where: e.Where(), Message: e.Message})
		}
		return probs
	}
	var e *seq.Error
	if errors.As(err, &e) {
		return []Problem{{File: file, Line: e.Line, Where: e.Where(), Message: e.Message}}
	}
	return []Problem{{File: file, Message: err.Error()}}
}

func sequenceDefinition(s *seq.Sequence, source string) (*definition, error) {
	v, err := seq.Encode(s)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the sequence: %v", err)
	}
	groups := make([]string, 0, len(s.Groups))
	for _, g := range s.Groups {
		groups = append(groups, g.Name)
	}
	return &definition{kind: kindSequence, name: s.Name, source: source, value: v, sum: sum(v), groups: groups, description: s.Description}, nil
}

// definitionFromStored rebuilds a definition from a bucket value (used at
// start-up for definitions created over NATS, and to keep the stored
// version of a file that is invalid now).
func definitionFromStored(kind, source string, value []byte) (*definition, error) {
	if kind == kindSequence {
		s, err := seq.Decode(value)
		if err != nil {
			return nil, err
		}
		d, err := sequenceDefinition(s, source)
		if err != nil {
			return nil, err
		}
		d.value, d.sum = value, sum(value) // keep the stored bytes exactly
		return d, nil
	}
	var s skill.Skill
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, errors.New("stored skill has no name")
	}
	return &definition{kind: kindSkill, name: s.Name, source: source, value: value, sum: sum(value), description: s.Description}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
