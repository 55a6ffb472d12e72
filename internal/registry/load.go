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
	"strings"

	"github.com/skillbus/skillbus/pkg/events"
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
	// summary is validate's one-line description: a sequence's signature,
	// a skill's format, size and invocation.
	summary string
	// warnings are the problems that did not stop the definition from
	// loading (Warning set), positioned in its file.
	warnings []Problem
}

// Problem is one thing wrong with a definition file: where and what (a
// warning does not stop the file from loading). It is public as
// events.Problem, the type of the seq.create error reply's problems.
type Problem = events.Problem

// hasError reports whether probs holds a problem that is not a warning.
func hasError(probs []Problem) bool {
	for _, p := range probs {
		if !p.Warning {
			return true
		}
	}
	return false
}

// split returns the errors and the warnings of probs, in order.
func split(probs []Problem) (errs, warns []Problem) {
	for _, p := range probs {
		if p.Warning {
			warns = append(warns, p)
		} else {
			errs = append(errs, p)
		}
	}
	return errs, warns
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// loadFile parses one scanned file into a definition, applying every
// per-file rule of the registry (docs/skills.md, docs/sequences.md): the
// file was read as a regular file within the size limit, it parses and
// validates as its kind, and its stored form fits in limit bytes. It
// returns the definition (nil when any problem is an error) and every
// problem, warnings included, errors first in file order.
func loadFile(f *scanned, limit int64) (*definition, []Problem) {
	if f.err != nil {
		// A directory symlink out of the tree is not followed and said as a
		// warning: such links (shared configuration, vendored SDKs) are
		// common in repositories that hold no definition behind them, and
		// must not fail `skillbus validate .` (docs/skills.md, Loading).
		// So is a symlink named like a definition that leads to nothing.
		// Every other refusal, a definition file's included, is an error.
		warn := f.kind == kindTree && (errors.Is(f.err, ErrOutsideTree) || errors.Is(f.err, ErrDanglingLink))
		return nil, []Problem{{File: f.rel, Message: refusalMessage(f.err), Warning: warn}}
	}
	var d *definition
	var probs []Problem
	switch f.kind {
	case kindSkill:
		d, probs, f.refs = loadSkill(f.rel, f.abs, f.dir, f.data)
	default:
		d, probs = loadSequence(f.rel, f.data)
	}
	if d != nil {
		if p := sizeProblem(f.rel, d, limit); p != nil {
			return nil, append([]Problem{*p}, probs...)
		}
	}
	return d, probs
}

// sizeProblem reports a definition too large to be stored: a KV value is
// one message, bounded by the server's max_payload (less room for
// headers); limit is MaxDefinitionBytes.
func sizeProblem(rel string, d *definition, limit int64) *Problem {
	if int64(len(d.value)) <= limit {
		return nil
	}
	return &Problem{File: rel, Message: fmt.Sprintf("the stored %s would be %d bytes, more than the %d bytes a NATS message may carry here (max_payload %d less %d bytes for headers); split the %s, or raise the server's max_payload",
		d.kind, len(d.value), limit, limit+headerRoom, headerRoom, d.kind)}
}

// skillDir is the directory name a skill at rel (abs) must be named after.
func skillDir(rel, abs string) string {
	if dir := path.Dir(rel); dir != "." {
		return path.Base(dir)
	}
	return filepath.Base(filepath.Dir(abs))
}

// loadSkill parses a skill file at rel (read from abs, in the directory
// dir) and checks its file refs against dir (skill.CheckRefs: a ref
// leading out through a symlink is an error, a missing file a warning).
// It also returns the paths of those refs (see scanned.refs).
func loadSkill(rel, abs, dir string, data []byte) (*definition, []Problem, []string) {
	format := skill.FormatMarkdown
	if path.Base(rel) == string(skill.FormatYAML) {
		format = skill.FormatYAML
	}
	s, warns, err := skill.Parse(data, format, skillDir(rel, abs))
	var refs []string
	if err == nil && s != nil && dir != "" {
		for _, r := range s.Refs {
			if r.Type == skill.RefFile {
				refs = append(refs, filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(r.Value, `\`, "/"))))
			}
		}
		var refWarns []skill.Warning
		refWarns, err = skill.CheckRefs(s, dir)
		warns = append(warns, refWarns...)
		if err != nil {
			s = nil
		}
	}
	var probs []Problem
	for _, fe := range skill.Problems(err) {
		probs = append(probs, Problem{File: rel, Line: fe.Line, Message: fe.Message}) // messages name their field
	}
	var warnProbs []Problem
	for _, w := range warns {
		warnProbs = append(warnProbs, Problem{File: rel, Line: w.Line, Message: w.Message, Warning: true})
	}
	probs = append(probs, warnProbs...)
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	if err != nil || s == nil {
		return nil, probs, refs
	}
	s.Source = rel
	v, err := json.Marshal(s)
	if err != nil {
		return nil, append(probs, Problem{File: rel, Message: "cannot encode the skill record: " + err.Error()}), refs
	}
	return &definition{kind: kindSkill, name: s.Name, source: rel, value: v, sum: sum(v), description: s.Description,
		summary: skillSummary(s), warnings: warnProbs}, probs, refs
}

// skillSummary is validate's line for a valid skill: `skill NAME (FORMAT,
// N body lines, M sections, invocation I)`.
func skillSummary(s *skill.Skill) string {
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
	return fmt.Sprintf("skill %s (%s, %d body lines, %d sections, invocation %s)", s.Name, s.Format, lines, titled, s.Invocation)
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
	return &definition{kind: kindSequence, name: s.Name, source: source, value: v, sum: sum(v), groups: groups,
		description: s.Description, summary: "sequence " + s.Name + " " + s.Signature.String()}, nil
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
	d := &definition{kind: kindSkill, name: s.Name, source: source, value: value, sum: sum(value), description: s.Description, summary: skillSummary(&s)}
	for _, w := range s.Warnings {
		d.warnings = append(d.warnings, Problem{File: source, Line: w.Line, Message: w.Message, Warning: true})
	}
	return d, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
