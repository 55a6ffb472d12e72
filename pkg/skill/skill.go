// Package skill reads, validates and normalises the two skill formats of
// docs/skills.md — SKILL.md (YAML frontmatter + Markdown body, the Agent
// Skills format with Claude Code's extensions) and skill.yaml (prompt, steps,
// refs, guardrails) — into the Skill record that the registry stores and
// skillface injects. It has no NATS dependency.
//
// Load reads a file or a skill directory; Parse reads bytes. Both return the
// record, the warnings (unknown keys and other problems that must not stop a
// real file from loading) and an error that joins every *FieldError found,
// each wrapping one sentinel (ErrBadValue, ErrCycle, …).
package skill

import "github.com/skillbus/skillbus/pkg/sections"

// Invocation says who may activate a skill (docs/skills.md).
type Invocation string

// The legal Invocation values. The zero value is not legal in a Skill; a
// loader normalises an absent field to InvocationBoth.
const (
	// InvocationBoth: listed to the model with its description, activated by
	// the model (triggers, paths) or by the user (explicit mount). Default.
	InvocationBoth Invocation = "both"
	// InvocationModelOnly: listed by name only; activated by triggers, paths
	// or mounts (Claude Code `user-invocable: false`).
	InvocationModelOnly Invocation = "model-only"
	// InvocationUserOnly: listed, never auto-activated; only an explicit mount
	// activates it (Claude Code `disable-model-invocation: true`).
	InvocationUserOnly Invocation = "user-only"
)

// Context says where an activated skill runs (docs/skills.md).
type Context string

// The legal Context values; absent means ContextInline.
const (
	ContextInline Context = "inline" // in the current conversation (default)
	ContextFork   Context = "fork"   // in a forked sub-agent conversation
)

// Format names the source format of a skill.
type Format string

// The two skill source formats of docs/skills.md.
const (
	FormatMarkdown Format = "SKILL.md"   // YAML frontmatter + Markdown body
	FormatYAML     Format = "skill.yaml" // structured prompt/steps/refs/guardrails
)

// Skill is the validated, normalised skill record: what the registry stores
// as JSON in the SKILLS KV bucket (key = Name) and what skillface reads
// (docs/skills.md). Its JSON encoding is stable: field names never
// change meaning; new fields are added with omitempty.
type Skill struct {
	// Name: lowercase letters, digits and single hyphens, 1–64 characters,
	// equal to the skill's directory name (Agent Skills spec).
	Name string `json:"name"`
	// Description: what the skill does; non-empty.
	Description string `json:"description"`
	// WhenToUse: extra guidance shown in the listing after the description.
	WhenToUse string `json:"when_to_use,omitempty"`
	// Version of the skill definition; 1 when absent.
	Version int `json:"version"`
	// Invocation: both | model-only | user-only; never empty in a record.
	Invocation Invocation `json:"invocation"`
	// Triggers: words or phrases that activate the skill when they appear in
	// the latest user message (word-boundary, case-insensitive).
	Triggers []string `json:"triggers,omitempty"`
	// Paths: doublestar globs; a work file matching one activates the skill.
	Paths []string `json:"paths,omitempty"`
	// AllowedTools: an upper bound on the tool surface while the skill is
	// active (tool names or patterns such as `Bash(git:*)`); nil = no bound.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// DisallowedTools: tools removed from the surface while active.
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
	// Context: inline | fork; never empty in a record.
	Context Context `json:"context"`
	// Agent, Model, Effort: hints for the runtime, passed through as given.
	Agent  string `json:"agent,omitempty"`
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`
	// License and Compatibility: Agent Skills spec fields, passed through.
	License       string `json:"license,omitempty"`
	Compatibility string `json:"compatibility,omitempty"`
	// Metadata: free string key/values (Agent Skills spec `metadata`).
	Metadata map[string]string `json:"metadata,omitempty"`

	// Format is the source format; Source the path it was loaded from
	// (relative to the registry root; informational).
	Format Format `json:"format"`
	Source string `json:"source,omitempty"`
	// Body is the text injected when the skill activates: a SKILL.md's body
	// as is (frontmatter removed), or the deterministic rendering of a
	// skill.yaml (prompt, steps in dependency order, guardrails, refs).
	Body string `json:"body"`
	// Sections indexes Body's headings (pkg/sections), for skill_info.
	Sections []sections.Section `json:"sections,omitempty"`
	// Fingerprint is "sha256:" + hex sha256 of the source bytes; it changes
	// whenever the file changes and keys skillface's render cache.
	Fingerprint string `json:"fingerprint"`

	// Prompt, Steps, Refs and Guardrails are the structured parts of a
	// skill.yaml, kept as declared (Steps in file order; Body holds them in
	// dependency order). Empty for a SKILL.md.
	Prompt     string      `json:"prompt,omitempty"`
	Steps      []Step      `json:"steps,omitempty"`
	Refs       []Ref       `json:"refs,omitempty"`
	Guardrails []Guardrail `json:"guardrails,omitempty"`
	// Warnings are the problems that did not stop the skill from loading
	// (unknown keys, an over-long description), kept so that the registry
	// and `skillbus skills` can show them.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Step is one step of a skill.yaml (docs/skills.md).
type Step struct {
	// Name: non-empty, unique among the skill's steps.
	Name string `json:"name"`
	// Prompt: the step's instructions; non-empty.
	Prompt string `json:"prompt"`
	// Depends: names of steps that must come before this one; each must
	// exist, and the steps must not form a cycle.
	Depends []string `json:"depends,omitempty"`
}

// RefType says what a Ref points at.
type RefType string

// The legal RefType values.
const (
	RefFile     RefType = "file"     // a path relative to the skill's directory, inside it (CheckRefs)
	RefURL      RefType = "url"      // an absolute http(s) URL
	RefSkill    RefType = "skill"    // another skill, by name
	RefTool     RefType = "tool"     // a tool, by name (tool.<name> on NATS)
	RefSequence RefType = "sequence" // a tool sequence, by name
)

// Ref is one reference of a skill.yaml: something the skill relies on.
type Ref struct {
	Name     string  `json:"name"`               // non-empty, unique among refs
	Type     RefType `json:"type"`               // file | url | skill | tool | sequence
	Value    string  `json:"value"`              // the path, URL or name; non-empty
	Optional bool    `json:"optional,omitempty"` // the skill still works without it

	line int // of the value in the skill.yaml; 0 for a record read back from JSON
}

// Guardrail is one rule of a skill.yaml that the model must follow while
// the skill is active.
type Guardrail struct {
	ID       string `json:"id"`                 // non-empty, unique among guardrails
	Message  string `json:"message"`            // the rule, in words; non-empty
	Enforced bool   `json:"enforced,omitempty"` // checked by the runtime, not only advised
}
