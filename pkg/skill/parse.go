package skill

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"
	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/internal/yamlplain"
	"github.com/skillbus/skillbus/pkg/sections"
)

// Limits from the Agent Skills specification.
const (
	MaxNameChars          = 64   // name: at most 64 characters (an error beyond)
	MaxDescriptionChars   = 1024 // description: the spec's limit (a warning beyond: real skills exceed it)
	MaxCompatibilityChars = 500  // compatibility: the spec's limit (a warning beyond)
)

// Load reads one skill from path: a SKILL.md or skill.yaml file, or a skill
// directory holding exactly one of them. The skill's name must equal the name
// of the directory that holds the file. Source is set to the file's path.
//
// Its file refs are checked against the file's directory (CheckRefs).
//
// It returns the record and its warnings, or nil, the warnings found so far
// and an error: a read error from the file system, a *FieldError wrapping
// ErrNotFound (no skill file; a file of another name) or ErrConflict (a
// directory with both files), or the joined *FieldErrors of Parse and
// CheckRefs.
func Load(path string) (*Skill, []Warning, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	file := path
	if st.IsDir() {
		md, yml := filepath.Join(path, string(FormatMarkdown)), filepath.Join(path, string(FormatYAML))
		_, errMD := os.Stat(md)
		_, errYML := os.Stat(yml)
		switch {
		case errMD == nil && errYML == nil:
			return nil, nil, &FieldError{File: path, Err: ErrConflict,
				Message: "the directory holds both SKILL.md and skill.yaml; keep one of them"}
		case errMD == nil:
			file = md
		case errYML == nil:
			file = yml
		default:
			return nil, nil, &FieldError{File: path, Err: ErrNotFound,
				Message: "no SKILL.md or skill.yaml in this directory"}
		}
	}
	var format Format
	switch filepath.Base(file) {
	case string(FormatMarkdown):
		format = FormatMarkdown
	case string(FormatYAML):
		format = FormatYAML
	default:
		return nil, nil, &FieldError{File: file, Err: ErrNotFound,
			Message: "a skill file must be named SKILL.md or skill.yaml"}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{file: file}
	s := p.parse(src, format, filepath.Base(filepath.Dir(abs)))
	if s == nil {
		return nil, p.warns, p.err()
	}
	s.Source = file
	warns, err := CheckRefs(s, filepath.Dir(file))
	if err != nil {
		return nil, append(p.warns, warns...), err
	}
	return s, append(p.warns, warns...), nil
}

// Parse reads one skill from src in the given format (FormatMarkdown or
// FormatYAML). dir is the base name of the directory that holds the file:
// the skill's name must equal it; "" skips that rule. Positions in errors and
// warnings name the file by its format ("SKILL.md:3: …"). The returned record
// has Source empty.
//
// On success it returns the record and its warnings (also kept in
// Skill.Warnings). Otherwise it returns nil, the warnings, and an error
// joining one *FieldError per problem (see Problems), each wrapping one of
// the package's sentinel errors.
func Parse(src []byte, format Format, dir string) (*Skill, []Warning, error) {
	p := &parser{file: string(format)}
	s := p.parse(src, format, dir)
	return s, p.warns, p.err()
}

// Fingerprint returns "sha256:" + the hex SHA-256 of src, the value of
// Skill.Fingerprint for a skill read from src.
func Fingerprint(src []byte) string {
	sum := sha256.Sum256(src)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// parser collects the problems of one file.
type parser struct {
	file    string
	lineOff int // added to YAML node lines to give file lines
	errs    []error
	warns   []Warning
	stepPos []stepPos // per step of the skill.yaml being read
	maxLine int       // lines of the YAML text; YAML also ends lines at a lone "\r", we do not
}

func (p *parser) errf(line int, field string, sentinel error, format string, args ...any) {
	if p.maxLine > 0 && line > p.maxLine {
		line = p.maxLine
	}
	if line > 0 {
		line += p.lineOff
	}
	p.errs = append(p.errs, &FieldError{File: p.file, Line: line, Field: field, Err: sentinel,
		Message: fmt.Sprintf(format, args...)})
}

func (p *parser) warnf(line int, field string, format string, args ...any) {
	if p.maxLine > 0 && line > p.maxLine {
		line = p.maxLine
	}
	if line > 0 {
		line += p.lineOff
	}
	p.warns = append(p.warns, Warning{File: p.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) err() error {
	sort.SliceStable(p.errs, func(i, j int) bool {
		return p.errs[i].(*FieldError).Line < p.errs[j].(*FieldError).Line
	})
	return errors.Join(p.errs...)
}

const bom = "\uFEFF"

// parse runs the whole pipeline; it returns nil when any error was found.
func (p *parser) parse(src []byte, format Format, dir string) *Skill {
	text := strings.TrimPrefix(string(src), bom)
	if !utf8.ValidString(text) {
		p.errf(0, "", ErrSyntax, "the file is not valid UTF-8 text; save it as UTF-8")
		return nil
	}
	s := &Skill{Format: format, Fingerprint: Fingerprint(src), Version: 1,
		Invocation: InvocationBoth, Context: ContextInline}
	var yamlText string
	switch format {
	case FormatMarkdown:
		fm, body, ok := p.splitFrontmatter(text)
		if !ok {
			return nil
		}
		yamlText = fm
		s.Body = body
		p.lineOff = 1
	case FormatYAML:
		yamlText = text
	default:
		p.errf(0, "", ErrBadValue, "unknown skill format %q; use SKILL.md or skill.yaml", format)
		return nil
	}
	p.maxLine = max(1, strings.Count(yamlText, "\n"))
	if format == FormatYAML && !strings.HasSuffix(yamlText, "\n") {
		p.maxLine = strings.Count(yamlText, "\n") + 1
	}
	root := p.decode(yamlText, format)
	if root == nil && len(p.errs) > 0 {
		return nil
	}
	p.fields(root, s, format, dir)
	if format == FormatYAML {
		if s.Prompt == "" && len(s.Steps) == 0 {
			p.errf(0, "prompt", ErrMissingField, `a skill.yaml needs a "prompt" or at least one step under "steps"`)
		}
		if order, ok := p.checkSteps(s.Steps); ok && len(p.errs) == 0 {
			s.Body = render(s, order)
		}
	} else if strings.TrimSpace(s.Body) == "" {
		p.warnf(0, "", "the body after the frontmatter is empty: the skill has no instructions to inject")
	}
	if len(p.errs) > 0 {
		return nil
	}
	s.Sections = sections.SplitBody(s.Body)
	s.Warnings = p.warns
	return s
}

// splitFrontmatter finds the YAML frontmatter of a SKILL.md: a first line
// "---" and the next line that is exactly "---" (a "\r" before the line
// ending and trailing spaces ignored; a "---" inside a value is indented or
// has text after it, so it does not close). It returns the YAML text and the
// body (everything after the closing line, as is).
func (p *parser) splitFrontmatter(text string) (fm, body string, ok bool) {
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		p.errf(1, "", ErrNoFrontmatter, `a SKILL.md must start with a "---" line, then YAML fields (at least name and description), then a closing "---" line`)
		return "", "", false
	}
	pos := len(first) + 1
	for pos <= len(text) && pos-len(first)-1 <= len(rest) {
		ln := text[pos:]
		next := len(text)
		if i := strings.IndexByte(ln, '\n'); i >= 0 {
			ln = ln[:i]
			next = pos + i + 1
		}
		if strings.TrimRight(ln, " \t\r") == "---" {
			return text[len(first)+1 : pos], text[next:], true
		}
		if next >= len(text) {
			break
		}
		pos = next
	}
	p.errf(1, "", ErrUnclosedFrontmatter, `the frontmatter opened on line 1 is never closed: add a line that is exactly "---" after the last field`)
	return "", "", false
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decode parses YAML text into its root mapping node (nil for an empty
// document).
func (p *parser) decode(text string, format Format) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		msg, line := err.Error(), 0
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		hint := ""
		if strings.Contains(msg, "mapping values are not allowed") {
			hint = `; a value that contains ": " must be quoted, e.g. description: "Use when: …"`
		}
		where := "the frontmatter"
		if format == FormatYAML {
			where = "the file"
		}
		p.errf(line, "", ErrSyntax, "%s is not valid YAML: %s%s", where, msg, hint)
		return nil
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil
	}
	// Aliases and merge keys are refused as sequences refuse them
	// (internal/yamlplain): a skill's text is what its file shows.
	// The other fields are still read, for their own problems.
	yamlplain.Walk(doc.Content[0], func(line int, msg string) {
		p.errf(line, "", ErrSyntax, "%s", msg)
	})
	root := deref(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		p.errf(root.Line, "", ErrWrongType, "the skill's fields must be a YAML mapping of `key: value` lines, not %s", kindName(root))
		return nil
	}
	return root
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "empty"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		}
		return fmt.Sprintf("the text %q", n.Value)
	}
	return "an unsupported YAML value"
}

// The field names of docs/skills.md ("Fields"). Keys are compared exactly, as the
// formats spell them.
var (
	commonFields = []string{
		"name", "description", "license", "compatibility", "metadata", "allowed-tools",
		"version", "when_to_use", "invocation", "triggers", "paths", "disallowed-tools",
		"context", "agent", "model", "effort", "disable-model-invocation", "user-invocable",
	}
	yamlOnlyFields = []string{"prompt", "steps", "refs", "guardrails"}
)

// fields reads the top-level mapping into s.
func (p *parser) fields(root *yaml.Node, s *Skill, format Format, dir string) {
	known := map[string]bool{}
	for _, f := range commonFields {
		known[f] = true
	}
	if format == FormatYAML {
		for _, f := range yamlOnlyFields {
			known[f] = true
		}
	}
	seen := map[string]int{}
	var nameLine, descLine int
	// nameOK and descOK are false when the field was given with a wrong
	// type: that error is reported, and "missing" would be a second one
	// for the same mistake.
	nameOK, descOK := true, true
	var invocation *yaml.Node
	var dmi, userInv *yaml.Node
	var allowedLine, disallowedLine int
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			kn, vn := deref(root.Content[i]), deref(root.Content[i+1])
			key := kn.Value
			if kn.Kind != yaml.ScalarNode {
				p.errf(kn.Line, "", ErrWrongType, "a field name must be plain text, not %s", kindName(kn))
				continue
			}
			if prev, dup := seen[key]; dup {
				p.errf(kn.Line, key, ErrDuplicate, "field %q is given twice (first on line %d); keep one", key, prev+p.lineOff)
				continue
			}
			seen[key] = kn.Line
			errsBefore := len(p.errs)
			if !known[key] {
				p.unknownField(kn, key, format)
				continue
			}
			switch key {
			case "name":
				s.Name, nameOK = p.str(vn, key)
				nameLine = vn.Line
			case "description":
				s.Description, descOK = p.str(vn, key)
				descLine = vn.Line
			case "license":
				s.License, _ = p.str(vn, key)
			case "compatibility":
				s.Compatibility, _ = p.str(vn, key)
				if n := utf8.RuneCountInString(s.Compatibility); n > MaxCompatibilityChars {
					p.warnf(vn.Line, key, "compatibility is %d characters; the Agent Skills spec allows at most %d", n, MaxCompatibilityChars)
				}
			case "metadata":
				s.Metadata = p.stringMap(vn, key)
			case "allowed-tools":
				s.AllowedTools = p.list(vn, key, splitTools)
				allowedLine = vn.Line
				if len(s.AllowedTools) == 0 && len(p.errs) == errsBefore {
					p.warnf(vn.Line, key, "allowed-tools is empty, which sets no bound: the skill will not narrow the tool surface; list the tools it may use, or remove the field")
				}
			case "disallowed-tools":
				s.DisallowedTools = p.list(vn, key, splitTools)
				disallowedLine = vn.Line
			case "version":
				s.Version = p.version(vn)
			case "when_to_use":
				s.WhenToUse, _ = p.str(vn, key)
			case "invocation":
				invocation = vn
			case "disable-model-invocation":
				dmi = vn
			case "user-invocable":
				userInv = vn
			case "triggers":
				s.Triggers = p.list(vn, key, nil)
			case "paths":
				s.Paths = p.list(vn, key, splitComma)
				for _, g := range s.Paths {
					if !doublestar.ValidatePattern(g) {
						p.errf(vn.Line, key, ErrBadValue, "paths: %q is not a valid glob (check its brackets and braces)", g)
					}
				}
			case "context":
				if v, ok := p.str(vn, key); ok && v != "" {
					switch Context(v) {
					case ContextInline, ContextFork:
						s.Context = Context(v)
					default:
						p.errf(vn.Line, key, ErrBadValue, "context %q is not allowed; use inline (the default) or fork", v)
					}
				}
			case "agent":
				s.Agent, _ = p.str(vn, key)
			case "model":
				s.Model, _ = p.str(vn, key)
			case "effort":
				s.Effort, _ = p.str(vn, key)
			case "prompt":
				if v, ok := p.str(vn, key); ok {
					s.Prompt = strings.TrimSpace(v)
				}
			case "steps":
				s.Steps = p.steps(vn)
			case "refs":
				s.Refs = p.refs(vn)
			case "guardrails":
				s.Guardrails = p.guardrails(vn)
			}
		}
	}

	// name (Agent Skills spec)
	switch {
	case s.Name == "" && !nameOK:
	case s.Name == "":
		example, ok := suggestName(dir)
		if !ok {
			example = "my-skill"
		}
		p.errf(nameLine, "name", ErrMissingField, "name is missing: add `name: %s` (lowercase letters, digits and hyphens)", example)
	default:
		if msg := nameProblem(s.Name); msg != "" {
			p.errf(nameLine, "name", ErrBadValue, "name %q %s", s.Name, msg)
		} else if dir != "" && s.Name != dir {
			p.errf(nameLine, "name", ErrNameMismatch, "name %q differs from its directory %q; rename one so they match", s.Name, dir)
		}
	}
	// description
	if s.Description == "" && descOK {
		p.errf(descLine, "description", ErrMissingField, "description is missing or empty: say what the skill does and when to use it")
	} else if n := utf8.RuneCountInString(s.Description); n > MaxDescriptionChars {
		p.warnf(descLine, "description", "description is %d characters; the Agent Skills spec allows at most %d, and listings may cut it", n, MaxDescriptionChars)
	}
	p.invocation(s, invocation, dmi, userInv)
	// a tool both allowed and disallowed
	if len(s.AllowedTools) > 0 && len(s.DisallowedTools) > 0 {
		dis := map[string]bool{}
		for _, t := range s.DisallowedTools {
			dis[t] = true
		}
		for _, t := range s.AllowedTools {
			if dis[t] {
				line := disallowedLine
				if line == 0 {
					line = allowedLine
				}
				p.errf(line, "disallowed-tools", ErrConflict, "tool %q is both in allowed-tools and in disallowed-tools; remove it from one", t)
			}
		}
	}
}

// unknownField records an unknown top-level key as a warning, with a
// suggestion when it looks like a known one.
func (p *parser) unknownField(kn *yaml.Node, key string, format Format) {
	fields := commonFields
	if format == FormatYAML {
		fields = append(append([]string{}, commonFields...), yamlOnlyFields...)
	}
	if format == FormatMarkdown && slices.Contains(yamlOnlyFields, key) {
		p.warnf(kn.Line, key, "field %q belongs to skill.yaml and is ignored in a SKILL.md; put the text in the body instead", key)
		return
	}
	if s := suggest.Closest(key, fields); s != "" {
		p.warnf(kn.Line, key, "unknown field %q is ignored; did you mean %q?", key, s)
		return
	}
	p.warnf(kn.Line, key, "unknown field %q is ignored (not an Agent Skills or skillbus field)", key)
}

// str reads a text field; numbers are taken as their text. Null reads as "".
// Surrounding whitespace is removed.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.errf(n.Line, field, ErrWrongType, "%s must be text, not %s", field, kindName(n))
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	if n.Tag == "!!bool" {
		p.errf(n.Line, field, ErrWrongType, "%s must be text, not %s; quote it if you mean the word", field, kindName(n))
		return "", false
	}
	return strings.TrimSpace(n.Value), true
}

// list reads a list of non-empty strings; when split is not nil a single
// string is accepted too and split with it.
func (p *parser) list(n *yaml.Node, field string, split func(string) []string) []string {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil
	case n.Kind == yaml.ScalarNode && split != nil && n.Tag != "!!bool":
		return split(n.Value)
	case n.Kind == yaml.SequenceNode:
		var out []string
		for i, it := range n.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode || it.Tag == "!!null" || it.Tag == "!!bool" {
				p.errf(it.Line, field, ErrWrongType, "%s item %d must be text, not %s", field, i+1, kindName(it))
				continue
			}
			v := strings.TrimSpace(it.Value)
			if v == "" {
				p.errf(it.Line, field, ErrBadValue, "%s item %d is empty; remove it", field, i+1)
				continue
			}
			out = append(out, v)
		}
		return out
	}
	if split != nil {
		p.errf(n.Line, field, ErrWrongType, "%s must be a list of text items or one text, not %s", field, kindName(n))
	} else {
		p.errf(n.Line, field, ErrWrongType, "%s must be a list of text items, e.g. [deploy, release], not %s", field, kindName(n))
	}
	return nil
}

// stringMap reads metadata: a mapping of text keys to text values.
func (p *parser) stringMap(n *yaml.Node, field string) map[string]string {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n.Line, field, ErrWrongType, "%s must be a mapping of `key: text` pairs, not %s", field, kindName(n))
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.errf(k.Line, field, ErrWrongType, "%s keys must be text, not %s", field, kindName(k))
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.errf(k.Line, field+"."+k.Value, ErrDuplicate, "%s key %q is given twice; keep one", field, k.Value)
			continue
		}
		if v.Kind != yaml.ScalarNode {
			p.errf(v.Line, field+"."+k.Value, ErrWrongType, "%s.%s must be text, not %s (metadata values are strings)", field, k.Value, kindName(v))
			continue
		}
		val := v.Value
		if v.Tag == "!!null" {
			val = ""
		}
		out[k.Value] = val
	}
	return out
}

func (p *parser) version(n *yaml.Node) int {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return 1
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errf(n.Line, "version", ErrWrongType, "version must be a whole number of at least 1 (the skill definition's revision), not %s", kindName(n))
		return 1
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || v < 1 {
		p.errf(n.Line, "version", ErrBadValue, "version %s is not allowed; use a whole number of at least 1", n.Value)
		return 1
	}
	return v
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.errf(n.Line, field, ErrWrongType, "%s must be true or false, not %s", field, kindName(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		p.errf(n.Line, field, ErrWrongType, "%s must be true or false, not %s", field, kindName(n))
		return false, false
	}
	return b, true
}

// invocation sets s.Invocation from `invocation` and Claude Code's
// disable-model-invocation / user-invocable (docs/skills.md):
// disable-model-invocation: true means user-only, user-invocable: false
// means model-only; both at once leave no one to invoke the skill.
func (p *parser) invocation(s *Skill, inv, dmi, userInv *yaml.Node) {
	var explicit Invocation
	if inv != nil {
		if v, ok := p.str(inv, "invocation"); ok && v != "" {
			switch Invocation(v) {
			case InvocationBoth, InvocationModelOnly, InvocationUserOnly:
				explicit = Invocation(v)
			default:
				p.errf(inv.Line, "invocation", ErrBadValue, "invocation %q is not allowed; use both (the default), model-only or user-only", v)
				return
			}
		}
	}
	mapped, from, line := Invocation(""), "", 0
	var noModel, noUser bool
	if dmi != nil {
		if b, ok := p.boolean(dmi, "disable-model-invocation"); ok {
			noModel = b
		}
	}
	if userInv != nil {
		if b, ok := p.boolean(userInv, "user-invocable"); ok {
			noUser = !b
		}
	}
	switch {
	case noModel && noUser:
		p.errf(dmi.Line, "disable-model-invocation", ErrConflict,
			"disable-model-invocation: true and user-invocable: false together leave no way to activate the skill; remove one")
		return
	case noModel:
		mapped, from, line = InvocationUserOnly, "disable-model-invocation: true", dmi.Line
	case noUser:
		mapped, from, line = InvocationModelOnly, "user-invocable: false", userInv.Line
	case dmi != nil || userInv != nil:
		mapped = InvocationBoth
		from = "disable-model-invocation/user-invocable"
		if dmi != nil {
			line = dmi.Line
		} else {
			line = userInv.Line
		}
	}
	switch {
	case explicit != "" && mapped != "" && explicit != mapped:
		p.errf(line, "invocation", ErrConflict, "invocation: %s contradicts %s (which means %s); keep only invocation", explicit, from, mapped)
	case explicit != "":
		s.Invocation = explicit
	case mapped != "":
		s.Invocation = mapped
	}
}

var nameRe = regexp.MustCompile(`^[a-z0-9-]+$`)

// nameProblem checks the Agent Skills name rule; "" when the name is fine.
// A name with a character outside a–z, 0–9 and '-' is told which
// character (the first such), and given a corrected name only when the
// correction is plausible (suggestName).
func nameProblem(name string) string {
	switch {
	case utf8.RuneCountInString(name) > MaxNameChars:
		return fmt.Sprintf("is %d characters long; at most %d are allowed", utf8.RuneCountInString(name), MaxNameChars)
	case !nameRe.MatchString(name):
		msg := "may hold only lowercase letters a–z, digits and hyphens"
		for i, r := range []rune(name) {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				msg += fmt.Sprintf(", and character %d %s is not one of them", i+1, describeRune(r))
				break
			}
		}
		if s, ok := suggestName(name); ok {
			msg += "; e.g. " + strconv.Quote(s)
		}
		return msg
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return "must not start or end with a hyphen"
	case strings.Contains(name, "--"):
		return "must not contain two hyphens in a row"
	}
	return ""
}

// describeRune names a character for a message: quoted with its code
// point ('é' (U+00E9)), a space or an invisible character by its code point
// alone.
func describeRune(r rune) string {
	switch {
	case r == ' ':
		return "(a space, U+0020)"
	case unicode.IsSpace(r) || !unicode.IsPrint(r):
		return fmt.Sprintf("(an invisible character, U+%04X)", r)
	}
	return fmt.Sprintf("%q (U+%04X)", r, r)
}

// suggestName turns s into a legal name (for messages only), when that can
// be done without guessing: upper case is lowered, a Latin letter with an
// accent loses it (é → e), and spaces and punctuation become hyphens. A
// character of another kind — a letter of another script, a symbol, an
// emoji — has no plausible replacement, and dropping it would suggest a
// different name ("émoji" is not "moji"): then ok is false.
func suggestName(s string) (name string, ok bool) {
	var b strings.Builder
	sep := false
	for _, r := range norm.NFD.String(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case unicode.Is(unicode.Mn, r):
			continue // an accent of the letter before it
		case r == '-' || unicode.IsSpace(r) || unicode.IsPunct(r):
			sep = true
			continue
		default:
			return "", false
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	name = b.String()
	if name == "" || utf8.RuneCountInString(name) > MaxNameChars {
		return "", false
	}
	return name, true
}
